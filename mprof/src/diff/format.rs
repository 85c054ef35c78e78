//! Figures as text, as memprof's tables write them: binary units chosen by
//! size, one decimal (`64.0 KiB`, `512 B`), and signed changes.

use super::compare::{Limit, Threshold};
use super::figures::{Change, to_i64};
use std::fmt;

/// A byte count, e.g. `1.5 MiB`, `-512 B`.
pub fn bytes(n: i64) -> String {
    const UNITS: [(u64, &str); 3] = [(1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")];
    match UNITS.iter().find(|&&(size, _)| n.unsigned_abs() >= size) {
        Some(&(size, name)) => format!("{:.1} {name}", n as f64 / size as f64),
        None => format!("{n} B"),
    }
}

/// One side of a change: bytes, or a count for calls; empty where missing.
pub fn side(change: &Change, value: Option<i64>) -> String {
    match value {
        None => String::new(),
        Some(v) if change.figure.is_bytes() => bytes(v),
        Some(v) if change.figure.is_millionths() => millionths(v),
        Some(v) => v.to_string(),
    }
}

/// A count kept in millionths: whole where it is (`11`), else two
/// significant digits, at least one decimal, no trailing zero (`1.5`,
/// `0.00018`, `11.3`).
pub fn millionths(v: i64) -> String {
    if v % 1_000_000 == 0 {
        return (v / 1_000_000).to_string();
    }
    let x = v as f64 / 1e6;
    let digits = (1 - x.abs().log10().floor() as i32).max(1) as usize;
    let text = format!("{x:.digits$}");
    let trimmed = text.trim_end_matches('0');
    match trimmed.ends_with('.') {
        true => format!("{trimmed}0"),
        false => trimmed.to_owned(),
    }
}

/// The change, signed: `+256.0 KiB`, `-1`, `0 B`.
pub fn delta(change: &Change) -> String {
    let delta = change.delta();
    let text = match change.figure.is_millionths() {
        true => millionths(delta),
        false => delta.to_string(),
    };
    match change.figure.is_bytes() {
        true => signed_bytes(delta),
        false if delta > 0 => format!("+{text}"),
        false => text,
    }
}

/// A change in bytes, signed: `+256.0 KiB`, `-512 B`, `0 B`.
pub fn signed_bytes(delta: i64) -> String {
    match delta {
        d if d > 0 => format!("+{}", bytes(d)),
        d => bytes(d),
    }
}

/// The change in percent: `+400.0%`, `-75.0%`, `0.0%`; `n/a` from nothing.
pub fn percent(change: &Change) -> String {
    match change.percent() {
        None => "n/a".to_owned(),
        // A change that rounds to zero is written without a sign.
        Some(p) if format!("{:.1}", p.abs()) == "0.0" => "0.0%".to_owned(),
        Some(p) if p > 0.0 => format!("+{p:.1}%"),
        Some(p) => format!("{p:.1}%"),
    }
}

/// The last line of a report that left `unchanged` functions out: empty if
/// none.
pub fn unchanged_line(unchanged: usize) -> String {
    match unchanged {
        0 => String::new(),
        1 => "1 function unchanged, not shown (--all shows it)\n".to_owned(),
        n => format!("{n} functions unchanged, not shown (--all shows them)\n"),
    }
}

impl fmt::Display for Limit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Limit::Percent(p) => write!(f, "{p}%"),
            Limit::Bytes(n) => f.write_str(&bytes(to_i64(n))),
        }
    }
}

/// `10%`, or `10% --min 64.0 KiB` with a floor.
impl fmt::Display for Threshold {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.floor {
            0 => write!(f, "{}", self.limit),
            floor => write!(f, "{} --min {}", self.limit, bytes(to_i64(floor))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_are_binary_as_in_the_runtime() {
        assert_eq!(bytes(0), "0 B");
        assert_eq!(bytes(1023), "1023 B");
        assert_eq!(bytes(1024), "1.0 KiB");
        assert_eq!(bytes(-1536), "-1.5 KiB");
        assert_eq!(bytes(8 << 20), "8.0 MiB");
        assert_eq!(bytes(3 << 30), "3.0 GiB");
    }

    #[test]
    fn allocations_per_call_below_one_are_not_zero() {
        // 20 allocations over 113,331 calls.
        assert_eq!(millionths(20 * 1_000_000 / 113_331), "0.00018");
        assert_eq!(millionths(11_000_000), "11");
        assert_eq!(millionths(1_500_000), "1.5");
        assert_eq!(millionths(11_333_333), "11.3");
        assert_eq!(millionths(-500_000), "-0.5");
        assert_eq!(millionths(0), "0");
    }

    #[test]
    fn a_change_that_rounds_to_zero_percent_has_no_sign() {
        use super::super::figures::Figure;
        let change = |base, head| Change {
            figure: Figure::Peak,
            base: Some(base),
            head: Some(head),
        };
        assert_eq!(percent(&change(100_000, 99_999)), "0.0%");
        assert_eq!(percent(&change(100_000, 100_001)), "0.0%");
        assert_eq!(percent(&change(1000, 900)), "-10.0%");
        assert_eq!(percent(&change(1000, 1100)), "+10.0%");
    }
}
