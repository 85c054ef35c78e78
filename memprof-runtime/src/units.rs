//! Sizes written as text: `"24 MiB"`, `"1.5GB"`, `"512 b"`.
//!
//! Units follow pytest-memray's parser: B, KB, MB, GB, KiB, MiB and GiB,
//! case-insensitive, with decimals allowed. As in pytest-memray, KB, MB and
//! GB are binary: `"1 MB"` is 2^20 bytes, the same as `"1 MiB"`. A bare
//! number is bytes. Fractions of a byte are dropped. `MEMPROF_UNIT` takes
//! the same unit names ([`unit_bytes`]).
//!
//! Also intervals (`MEMPROF_SNAPSHOT_EVERY`): a whole number of `s`, `m`
//! or `h`.
//!
//! Sizes written in macro input are parsed by the macros while expanding,
//! with the same grammar (memprof-macros/src/size.rs; a proc-macro crate
//! cannot share code with the runtime); this parser reads the `MEMPROF_*`
//! variables at run time. The two are tested on the same cases.

/// Why a size did not parse.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SizeError {
    /// No digits where the number should be.
    NoNumber,
    /// A minus sign: sizes are 0 or more.
    Negative,
    /// Digits and points that are not one number, such as `1.5.2`.
    MalformedNumber,
    /// Not one of B, KB, MB, GB, KiB, MiB, GiB.
    UnknownUnit,
    /// More than `u64::MAX` bytes.
    TooLarge,
}

/// The accepted forms, for messages.
pub const SIZE_HELP: &str =
    "a size such as \"24 MiB\" or \"1.5 GB\" (units B, KB, MB, GB, KiB, MiB, GiB; MB = MiB)";

const fn unit_is(bytes: &[u8], unit: &[u8]) -> bool {
    if bytes.len() != unit.len() {
        return false;
    }
    let mut i = 0;
    while i < unit.len() {
        if bytes[i].to_ascii_lowercase() != unit[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// The bytes in one unit named as sizes name it (B, KB, MB, GB, KiB, MiB,
/// GiB, case-insensitive; MB = MiB): the one vocabulary of sizes and of
/// `MEMPROF_UNIT`. `None` for anything else, the empty name included.
pub const fn unit_bytes(name: &str) -> Option<u64> {
    let name = name.as_bytes();
    if unit_is(name, b"b") {
        Some(1)
    } else if unit_is(name, b"kb") || unit_is(name, b"kib") {
        Some(1 << 10)
    } else if unit_is(name, b"mb") || unit_is(name, b"mib") {
        Some(1 << 20)
    } else if unit_is(name, b"gb") || unit_is(name, b"gib") {
        Some(1 << 30)
    } else {
        None
    }
}

/// Parses a size; see the module documentation for the accepted forms.
///
/// ```
/// use memprof_runtime::units::{SizeError, parse_size};
///
/// assert_eq!(parse_size("24 MiB"), Ok(24 << 20));
/// assert_eq!(parse_size("1.5GB"), Ok(3 << 29));
/// assert_eq!(parse_size("1 MB"), parse_size("1 MiB"));
/// assert_eq!(parse_size("512 b"), Ok(512));
/// assert_eq!(parse_size("2 TB"), Err(SizeError::UnknownUnit));
/// assert_eq!(parse_size("-1 KiB"), Err(SizeError::Negative));
/// ```
pub const fn parse_size(text: &str) -> Result<u64, SizeError> {
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() && b[i].is_ascii_whitespace() {
        i += 1;
    }
    if i < b.len() && b[i] == b'-' {
        return Err(SizeError::Negative);
    }
    let mut whole: u128 = 0;
    let mut digits = 0;
    while i < b.len() && b[i].is_ascii_digit() {
        whole = whole * 10 + (b[i] - b'0') as u128;
        if whole > u64::MAX as u128 {
            return Err(SizeError::TooLarge);
        }
        digits += 1;
        i += 1;
    }
    let mut fraction: u128 = 0;
    let mut scale: u128 = 1;
    let point = i < b.len() && b[i] == b'.';
    if point {
        i += 1;
        while i < b.len() && b[i].is_ascii_digit() {
            // Digits beyond a billionth of a unit cannot change the bytes.
            if scale < 1_000_000_000_000_000_000 {
                fraction = fraction * 10 + (b[i] - b'0') as u128;
                scale *= 10;
            }
            digits += 1;
            i += 1;
        }
    }
    if (point && digits == 0) || (i < b.len() && b[i] == b'.') {
        return Err(SizeError::MalformedNumber);
    }
    if digits == 0 {
        return Err(SizeError::NoNumber);
    }
    while i < b.len() && b[i].is_ascii_whitespace() {
        i += 1;
    }
    let mut end = b.len();
    while end > i && b[end - 1].is_ascii_whitespace() {
        end -= 1;
    }
    let unit: u128 = if end == i {
        1
    } else {
        let name = b.split_at(end).0.split_at(i).1;
        // The unit is ASCII letters or it is unknown either way.
        let Ok(name) = core::str::from_utf8(name) else {
            return Err(SizeError::UnknownUnit);
        };
        match unit_bytes(name) {
            Some(bytes) => bytes as u128,
            None => return Err(SizeError::UnknownUnit),
        }
    };
    let bytes = whole * unit + fraction * unit / scale;
    if bytes > u64::MAX as u128 {
        return Err(SizeError::TooLarge);
    }
    Ok(bytes as u64)
}

/// `MEMPROF_SNAPSHOT_EVERY`: `30s`, `10m`, `1h`; a second at least.
pub(crate) fn parse_every(v: &str) -> Option<std::time::Duration> {
    let split = v.find(|c: char| !c.is_ascii_digit())?;
    let (count, unit) = v.split_at(split);
    let seconds: u64 = match unit.trim() {
        "s" => 1,
        "m" | "min" => 60,
        "h" => 3600,
        _ => return None,
    };
    let total = count.parse::<u64>().ok()?.checked_mul(seconds)?;
    (total >= 1).then(|| std::time::Duration::from_secs(total))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_are_binary_and_case_insensitive() {
        assert_eq!(parse_size("24 MiB"), Ok(24 << 20));
        assert_eq!(parse_size("24 MB"), Ok(24 << 20));
        assert_eq!(parse_size("24mb"), Ok(24 << 20));
        assert_eq!(parse_size("1 kb"), Ok(1024));
        assert_eq!(parse_size("1KiB"), Ok(1024));
        assert_eq!(parse_size("2 GiB"), Ok(2 << 30));
        assert_eq!(parse_size("2 gb"), Ok(2 << 30));
        assert_eq!(parse_size("512 B"), Ok(512));
        assert_eq!(parse_size("512"), Ok(512));
        assert_eq!(parse_size("  7  b  "), Ok(7));
    }

    #[test]
    fn unit_names_are_those_of_sizes() {
        for (name, bytes) in [("B", 1), ("kb", 1024), ("KiB", 1024), ("MB", 1 << 20)] {
            assert_eq!(unit_bytes(name), Some(bytes), "{name}");
            assert_eq!(parse_size(&format!("1 {name}")), Ok(bytes), "{name}");
        }
        assert_eq!(unit_bytes("gib"), Some(1 << 30));
        assert_eq!(unit_bytes(""), None);
        assert_eq!(unit_bytes("TB"), None);
        assert_eq!(unit_bytes("K"), None);
    }

    #[test]
    fn decimals_are_exact_down_to_the_byte() {
        assert_eq!(parse_size("1.5 MiB"), Ok(3 << 19));
        assert_eq!(parse_size("0.5KB"), Ok(512));
        assert_eq!(parse_size(".25 KiB"), Ok(256));
        assert_eq!(parse_size("3. KiB"), Ok(3072));
        assert_eq!(parse_size("1.0009765625 KiB"), Ok(1025));
        assert_eq!(parse_size("2.7 B"), Ok(2));
        assert_eq!(parse_size("16 GiB"), Ok(16 << 30));
    }

    #[test]
    fn malformed_sizes_say_why() {
        assert_eq!(parse_size(""), Err(SizeError::NoNumber));
        assert_eq!(parse_size("MiB"), Err(SizeError::NoNumber));
        assert_eq!(parse_size("12 parsecs"), Err(SizeError::UnknownUnit));
        assert_eq!(parse_size("12 TB"), Err(SizeError::UnknownUnit));
        assert_eq!(parse_size("  "), Err(SizeError::NoNumber));
        assert_eq!(parse_size("-1 MiB"), Err(SizeError::Negative));
        assert_eq!(parse_size("."), Err(SizeError::MalformedNumber));
        assert_eq!(parse_size("1.5.2 MiB"), Err(SizeError::MalformedNumber));
        assert_eq!(parse_size("1,5 MiB"), Err(SizeError::UnknownUnit));
        assert_eq!(parse_size("99999999999 GiB"), Err(SizeError::TooLarge));
        assert_eq!(parse_size("99999999999999999999"), Err(SizeError::TooLarge));
        assert_eq!(parse_size("18446744073709551615"), Ok(u64::MAX));
    }
}
