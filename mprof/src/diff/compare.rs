//! Comparing two runs function by function: each function's figures, their
//! changes, the order functions are shown in, and which changes are past
//! `--fail-over`.
//!
//! Figures are per call, so that runs with different call counts compare:
//! a function's peak is already the highest of any one call, and its kept
//! bytes, a sum over calls, are divided by its calls.

use super::input::{FunctionRun, RunReport};
use memprof_runtime::units::{SIZE_HELP, parse_size};
use std::cmp::Reverse;

/// A figure that `mprof diff` compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Figure {
    Calls,
    Peak,
    KeptPerCall,
    GpuPeak,
}

impl Figure {
    pub fn name(self) -> &'static str {
        match self {
            Figure::Calls => "Calls",
            Figure::Peak => "Peak",
            Figure::KeptPerCall => "Kept/call",
            Figure::GpuPeak => "GPU peak",
        }
    }

    /// Whether the figure is bytes (and so checked against `--fail-over`).
    pub fn is_bytes(self) -> bool {
        self != Figure::Calls
    }
}

/// One figure in both runs; `None` where the run has no such figure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Change {
    pub figure: Figure,
    pub base: Option<i64>,
    pub head: Option<i64>,
}

impl Change {
    /// Head less base, a missing side counting as 0.
    pub fn delta(&self) -> i64 {
        self.head
            .unwrap_or(0)
            .saturating_sub(self.base.unwrap_or(0))
    }

    /// The change in percent of the base's size; `None` where the base is
    /// missing or 0 and the figure changed.
    pub fn percent(&self) -> Option<f64> {
        let base = self.base?;
        match (base, self.delta()) {
            (_, 0) => Some(0.0),
            (0, _) => None,
            (base, delta) => Some(delta as f64 * 100.0 / base.unsigned_abs() as f64),
        }
    }
}

/// Whether a function ran in both runs, or only in one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Presence {
    Both,
    New,
    Removed,
}

/// One function's comparison.
#[derive(Debug)]
pub struct FunctionDiff<'a> {
    pub name: &'a str,
    pub file: &'a str,
    pub presence: Presence,
    pub base: Option<&'a FunctionRun>,
    pub head: Option<&'a FunctionRun>,
    /// Calls, peak, kept per call and, where either run counted device
    /// allocations, GPU peak.
    pub changes: Vec<Change>,
    /// The byte figures that grew past `--fail-over`.
    pub over: Vec<Change>,
}

impl FunctionDiff<'_> {
    /// The largest growth of a byte figure (negative when all shrank).
    pub fn growth(&self) -> i64 {
        self.byte_changes().map(|c| c.delta()).max().unwrap_or(0)
    }

    fn byte_changes(&self) -> impl Iterator<Item = &Change> {
        self.changes.iter().filter(|c| c.figure.is_bytes())
    }

    /// A word for the function's change: new, removed, grew, shrank or same.
    pub fn status(&self) -> &'static str {
        match self.presence {
            Presence::New => "new",
            Presence::Removed => "removed",
            Presence::Both if self.byte_changes().any(|c| c.delta() > 0) => "grew",
            Presence::Both if self.byte_changes().any(|c| c.delta() < 0) => "shrank",
            Presence::Both => "same",
        }
    }

    /// Whether any figure differs, or the function is in one run only.
    pub fn changed(&self) -> bool {
        self.presence != Presence::Both || self.changes.iter().any(|c| c.base != c.head)
    }
}

/// The per-call figures of one run of a function: calls, peak, kept per
/// call, GPU peak. A function that never ran has 0 of each but GPU peak.
fn figures(function: &FunctionRun) -> [Option<i64>; 4] {
    let row = function.fn_row();
    let calls = function.calls;
    let peak = row.and_then(|r| r.peak).unwrap_or(0);
    let kept = per_call(row.and_then(|r| r.increment).unwrap_or(0), calls);
    let gpu_peak = row.and_then(|r| r.gpu_peak);
    [
        Some(to_i64(calls)),
        Some(to_i64(peak)),
        Some(kept),
        gpu_peak.map(to_i64),
    ]
}

/// `total` bytes over `calls` calls, rounded toward zero to whole bytes; 0
/// without calls.
pub fn per_call(total: i64, calls: u64) -> i64 {
    match calls {
        0 => 0,
        n => total / to_i64(n),
    }
}

pub fn to_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// Every function of either run, compared: those past `threshold` first,
/// then by largest growth, then by name.
pub fn compare<'a>(
    base: &'a RunReport,
    head: &'a RunReport,
    threshold: Option<Threshold>,
) -> Vec<FunctionDiff<'a>> {
    let has_gpu = |run: &RunReport| {
        run.functions
            .iter()
            .any(|f| f.fn_row().is_some_and(|r| r.gpu_peak.is_some()))
    };
    let gpu = has_gpu(base) || has_gpu(head);
    let mut names: Vec<&str> = base
        .functions
        .iter()
        .chain(&head.functions)
        .map(|f| f.name.as_str())
        .collect();
    names.sort_unstable();
    names.dedup();
    let find = |run: &'a RunReport, name: &str| run.functions.iter().find(|f| f.name == name);
    let mut diffs: Vec<FunctionDiff<'a>> = names
        .into_iter()
        .map(|name| {
            let (b, h) = (find(base, name), find(head, name));
            let presence = match (b, h) {
                (Some(_), None) => Presence::Removed,
                (None, Some(_)) => Presence::New,
                _ => Presence::Both,
            };
            let (bf, hf) = (b.map(figures), h.map(figures));
            let figures = [
                Figure::Calls,
                Figure::Peak,
                Figure::KeptPerCall,
                Figure::GpuPeak,
            ];
            let changes: Vec<Change> = figures
                .iter()
                .enumerate()
                .filter(|&(_, &figure)| figure != Figure::GpuPeak || gpu)
                .map(|(i, &figure)| Change {
                    figure,
                    base: bf.and_then(|f| f[i]),
                    head: hf.and_then(|f| f[i]),
                })
                .collect();
            let over = match (presence, threshold) {
                (Presence::Both, Some(threshold)) => changes
                    .iter()
                    .filter(|c| c.figure.is_bytes() && threshold.is_past(c))
                    .copied()
                    .collect(),
                _ => Vec::new(),
            };
            let file = h.or(b).map_or("", |f| f.file.as_str());
            FunctionDiff {
                name,
                file,
                presence,
                base: b,
                head: h,
                changes,
                over,
            }
        })
        .collect();
    diffs.sort_by_key(|d| (d.over.is_empty(), Reverse(d.growth())));
    diffs
}

/// How much a byte figure may grow before `--fail-over` fails.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Threshold {
    /// Percent of the base's figure.
    Percent(f64),
    /// Bytes.
    Bytes(u64),
}

impl Threshold {
    /// Whether `change` grew past the threshold. A figure that grew from 0
    /// is past any percentage.
    pub fn is_past(self, change: &Change) -> bool {
        let delta = change.delta();
        if delta <= 0 || change.base.is_none() || change.head.is_none() {
            return false;
        }
        match self {
            Threshold::Percent(limit) => change.percent().is_none_or(|p| p > limit),
            Threshold::Bytes(limit) => delta.unsigned_abs() > limit,
        }
    }
}

/// Parses `--fail-over`: `10%` or a size such as `1MiB`.
pub fn parse_threshold(text: &str) -> Result<Threshold, String> {
    if let Some(number) = text.trim().strip_suffix('%') {
        return match number.trim().parse::<f64>() {
            Ok(p) if p.is_finite() && p >= 0.0 => Ok(Threshold::Percent(p)),
            _ => Err("expected a percentage of 0 or more, such as 10%".to_owned()),
        };
    }
    parse_size(text)
        .map(Threshold::Bytes)
        .map_err(|_| format!("expected a percentage such as 10%, or {SIZE_HELP}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds_parse_as_percent_or_binary_size() {
        assert_eq!(parse_threshold("10%"), Ok(Threshold::Percent(10.0)));
        assert_eq!(parse_threshold(" 2.5 % "), Ok(Threshold::Percent(2.5)));
        assert_eq!(parse_threshold("1MiB"), Ok(Threshold::Bytes(1 << 20)));
        assert_eq!(parse_threshold("1 MB"), Ok(Threshold::Bytes(1 << 20)));
        assert_eq!(parse_threshold("512"), Ok(Threshold::Bytes(512)));
        assert!(parse_threshold("-5%").is_err());
        assert!(parse_threshold("ten%").is_err());
        assert!(parse_threshold("1 TB").is_err());
    }

    fn change(base: Option<i64>, head: Option<i64>) -> Change {
        Change {
            figure: Figure::Peak,
            base,
            head,
        }
    }

    #[test]
    fn past_means_grew_by_more_than_the_threshold() {
        let ten = Threshold::Percent(10.0);
        assert!(!ten.is_past(&change(Some(100), Some(110))));
        assert!(ten.is_past(&change(Some(100), Some(111))));
        assert!(ten.is_past(&change(Some(0), Some(1))));
        assert!(!ten.is_past(&change(Some(100), Some(50))));
        assert!(!ten.is_past(&change(None, Some(500))));
        let kib = Threshold::Bytes(1024);
        assert!(!kib.is_past(&change(Some(0), Some(1024))));
        assert!(kib.is_past(&change(Some(0), Some(1025))));
    }

    #[test]
    fn percent_of_a_negative_base_is_of_its_size() {
        assert_eq!(change(Some(-200), Some(-100)).percent(), Some(50.0));
        assert_eq!(change(Some(0), Some(0)).percent(), Some(0.0));
        assert_eq!(change(Some(0), Some(5)).percent(), None);
    }
}
