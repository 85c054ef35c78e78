//! Sizes written in macro input (`limit = "24 MiB"`, `peak < 10 MiB`),
//! parsed while expanding so that a bad one is an error at its own tokens
//! and the generated code holds a plain integer.
//!
//! The grammar is the runtime's (`memprof-runtime/src/units.rs`, which parses
//! the `MEMPROF_*` variables at run time): a number with at most one decimal
//! point, then B, KB, MB, GB, KiB, MiB or GiB, case-insensitive, binary
//! throughout (MB = MiB, as in pytest-memray). A bare number is bytes.
//! NOTE: the macro crate must not depend on the runtime, so the two parsers
//! are kept side by side, with the same cases tested in both.

use proc_macro2::{Literal, Span, TokenStream};
use quote::ToTokens;

/// A size as written, and its bytes.
pub(crate) struct Size {
    pub(crate) bytes: u64,
    span: Span,
}

impl Size {
    /// Parses `text`, written at `span`, for `owner` (e.g. "`#[profile]`
    /// argument `limit`"), which starts the error message.
    pub(crate) fn parse(text: &str, span: Span, owner: &str) -> syn::Result<Size> {
        match parse_size(text) {
            Ok(bytes) => Ok(Size { bytes, span }),
            Err(err) => Err(syn::Error::new(
                span,
                format!("{owner}: {}", err.describe(text)),
            )),
        }
    }
}

impl ToTokens for Size {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        let mut lit = Literal::u64_suffixed(self.bytes);
        lit.set_span(self.span);
        lit.to_tokens(tokens);
    }
}

/// What is wrong with a size.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum SizeError {
    Empty,
    Negative,
    /// A unit, or something else, where the number should be.
    NoNumber,
    /// Digits and points that are not one number, such as `1.5.2`.
    MalformedNumber(String),
    UnknownUnit(String),
    TooLarge,
}

const UNITS: &str = "B, KB, MB, GB, KiB, MiB or GiB (KB, MB and GB mean KiB, MiB and GiB)";

impl SizeError {
    /// The message for `text`, in lowercase, naming what is wrong with it.
    pub(crate) fn describe(&self, text: &str) -> String {
        match self {
            SizeError::Empty => {
                "the size is empty: expected a number and a unit, as in \"24 MiB\"".to_owned()
            }
            SizeError::Negative => {
                format!("size {text:?} is negative: a size is a number of bytes, 0 or more")
            }
            SizeError::NoNumber => format!(
                "size {text:?} does not start with a number: expected a number and a unit, \
                 as in \"24 MiB\""
            ),
            SizeError::MalformedNumber(number) => format!(
                "size {text:?} has a malformed number `{number}`: expected digits with at \
                 most one decimal point, as in \"1.5 MiB\""
            ),
            SizeError::UnknownUnit(unit) => {
                format!("size {text:?} has an unknown unit `{unit}`: expected {UNITS}")
            }
            SizeError::TooLarge => format!(
                "size {text:?} is too large: the most is 18446744073709551615 bytes \
                 (u64::MAX, just under 16 EiB)"
            ),
        }
    }
}

/// Bytes of a size; see the module documentation for the accepted forms.
/// Fractions of a byte are dropped.
pub(crate) fn parse_size(text: &str) -> Result<u64, SizeError> {
    let text = text.trim();
    if text.is_empty() {
        return Err(SizeError::Empty);
    }
    if text.starts_with('-') {
        return Err(SizeError::Negative);
    }
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = (&text[..split], text[split..].trim());
    if !number.bytes().any(|b| b.is_ascii_digit()) {
        return Err(if number.is_empty() {
            SizeError::NoNumber
        } else {
            SizeError::MalformedNumber(number.to_owned())
        });
    }
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    if fraction.contains('.') {
        return Err(SizeError::MalformedNumber(number.to_owned()));
    }
    let scale: u128 = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "kb" | "kib" => 1 << 10,
        "mb" | "mib" => 1 << 20,
        "gb" | "gib" => 1 << 30,
        _ => return Err(SizeError::UnknownUnit(unit.to_owned())),
    };
    let mut bytes: u128 = 0;
    for digit in whole.bytes() {
        bytes = bytes * 10 + u128::from(digit - b'0');
        if bytes > u128::from(u64::MAX) {
            return Err(SizeError::TooLarge);
        }
    }
    bytes *= scale;
    // Digits past the 18th after the point cannot change whole bytes of a
    // unit of at most 2^30 bytes.
    let (mut part, mut denominator) = (0u128, 1u128);
    for digit in fraction.bytes().take(18) {
        part = part * 10 + u128::from(digit - b'0');
        denominator *= 10;
    }
    bytes += part * scale / denominator;
    u64::try_from(bytes).map_err(|_| SizeError::TooLarge)
}

#[cfg(test)]
mod tests {
    use super::*;

    // NOTE: the same cases as the runtime's units.rs tests.
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
        use SizeError::*;
        assert_eq!(parse_size(""), Err(Empty));
        assert_eq!(parse_size("  "), Err(Empty));
        assert_eq!(parse_size("MiB"), Err(NoNumber));
        assert_eq!(parse_size("-1 MiB"), Err(Negative));
        assert_eq!(parse_size("."), Err(MalformedNumber(".".into())));
        assert_eq!(
            parse_size("1.5.2 MiB"),
            Err(MalformedNumber("1.5.2".into()))
        );
        assert_eq!(parse_size("12 parsecs"), Err(UnknownUnit("parsecs".into())));
        assert_eq!(parse_size("12 TB"), Err(UnknownUnit("TB".into())));
        assert_eq!(parse_size("1,5 MiB"), Err(UnknownUnit(",5 MiB".into())));
        assert_eq!(parse_size("99999999999 GiB"), Err(TooLarge));
        assert_eq!(parse_size("99999999999999999999"), Err(TooLarge));
        assert_eq!(parse_size("18446744073709551615"), Ok(u64::MAX));
    }

    #[test]
    fn messages_name_the_string_and_the_fault() {
        let message = |text: &str| parse_size(text).unwrap_err().describe(text);
        assert_eq!(
            message("12 parsecs"),
            "size \"12 parsecs\" has an unknown unit `parsecs`: expected B, KB, MB, GB, \
             KiB, MiB or GiB (KB, MB and GB mean KiB, MiB and GiB)"
        );
        assert_eq!(
            message("-5 MiB"),
            "size \"-5 MiB\" is negative: a size is a number of bytes, 0 or more"
        );
    }
}
