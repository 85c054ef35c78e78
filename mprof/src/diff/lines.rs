//! Matching one function's lines across two runs by their text, so that a
//! line that moved (code added above it) still pairs with itself.
//!
//! Lines are aligned as `git diff` aligns them: the longest common
//! subsequence of their trimmed texts pairs, in order, the most lines that
//! can be paired without crossing; the others are removed (base only) or
//! added (head only). A line whose text changed is therefore a removed line
//! and an added one, and a copy of a line added above the original does not
//! take the original's place.

use super::figures::{Change, Figure, per_call, to_i64};
use memprof_runtime::LineReport;

/// A line in both runs, or in one only.
#[derive(Debug, Clone, Copy)]
pub struct LinePair<'a> {
    pub base: Option<&'a LineReport>,
    pub head: Option<&'a LineReport>,
}

impl LinePair<'_> {
    /// Whether either run has figures for the line.
    pub fn ran(&self) -> bool {
        let ran = |l: Option<&LineReport>| l.is_some_and(|l| l.increment.is_some());
        ran(self.base) || ran(self.head)
    }

    /// Whether a line comparison shows the line: it ran, or it was added
    /// or removed and is not blank. A line without figures that changed
    /// continues a statement (whose figures are on its first line) or
    /// changes one, and is what changed there.
    pub fn shown(&self) -> bool {
        let edited = self.base.is_none() != self.head.is_none()
            && self
                .base
                .or(self.head)
                .is_some_and(|l| !l.contents.trim().is_empty());
        self.ran() || edited
    }

    /// The line's kept bytes per call (its increment over the calls) and its
    /// peak, in both runs, as [`Change`]s: what `mprof diff` judges growth
    /// on.
    pub fn changes(&self, base_calls: u64, head_calls: u64) -> [Change; 2] {
        let kept = |l: Option<&LineReport>, calls: u64| {
            l.and_then(|l| l.increment)
                .filter(|_| calls > 0)
                .map(|v| per_call(v, calls))
        };
        let peak = |l: Option<&LineReport>| l.and_then(|l| l.peak).map(to_i64);
        [
            Change {
                figure: Figure::KeptPerCall,
                base: kept(self.base, base_calls),
                head: kept(self.head, head_calls),
            },
            Change {
                figure: Figure::Peak,
                base: peak(self.base),
                head: peak(self.head),
            },
        ]
    }

    /// Whether the line, in both runs, grew as `mprof diff` judges a
    /// function: kept more above 0, or peaked higher.
    pub fn grew(&self, base_calls: u64, head_calls: u64) -> bool {
        self.base.is_some()
            && self.head.is_some()
            && self
                .changes(base_calls, head_calls)
                .iter()
                .any(|c| c.growth() > 0)
    }
}

/// Every line of either run, paired, in source order; where lines were
/// removed and added at one place, the removed ones come first.
pub fn match_lines<'a>(base: &'a [LineReport], head: &'a [LineReport]) -> Vec<LinePair<'a>> {
    let text = |l: &LineReport| l.contents.trim().to_owned();
    let (b, h): (Vec<String>, Vec<String>) = (
        base.iter().map(text).collect(),
        head.iter().map(text).collect(),
    );
    // common[i][j]: the longest common subsequence of b[i..] and h[j..].
    // NOTE: quadratic in a function's lines: 300 lines each are 90,000
    // cells, nothing beside reading the reports.
    let width = h.len() + 1;
    let mut common = vec![0u32; (b.len() + 1) * width];
    for i in (0..b.len()).rev() {
        for j in (0..h.len()).rev() {
            common[i * width + j] = if b[i] == h[j] {
                common[(i + 1) * width + j + 1] + 1
            } else {
                common[(i + 1) * width + j].max(common[i * width + j + 1])
            };
        }
    }
    let mut pairs = Vec::with_capacity(b.len().max(h.len()));
    let (mut i, mut j) = (0, 0);
    while i < b.len() || j < h.len() {
        let pair = if i < b.len() && j < h.len() && b[i] == h[j] {
            i += 1;
            j += 1;
            (Some(&base[i - 1]), Some(&head[j - 1]))
        } else if j == h.len()
            || (i < b.len() && common[(i + 1) * width + j] >= common[i * width + j + 1])
        {
            i += 1;
            (Some(&base[i - 1]), None)
        } else {
            j += 1;
            (None, Some(&head[j - 1]))
        };
        pairs.push(LinePair {
            base: pair.0,
            head: pair.1,
        });
    }
    pairs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(texts: &[&str]) -> Vec<LineReport> {
        texts
            .iter()
            .enumerate()
            .map(|(i, t)| LineReport {
                line: i as u32 + 1,
                mem_usage: None,
                increment: Some(0),
                peak: Some(0),
                gpu_peak: None,
                allocations: None,
                allocated_bytes: None,
                occurrences: 1,
                in_use_bytes: None,
                in_use_allocations: None,
                pool_allocated: None,
                pool_increment: None,
                pool_reserved: None,
                gpu_usage: None,
                gpu_increment: None,
                gpu_driver_usage: None,
                gpu_driver_increment: None,
                contents: (*t).to_owned(),
                sites: None,
                calls: None,
                within: None,
            })
            .collect()
    }

    /// (base line, head line) of each pair.
    fn numbers(pairs: &[LinePair]) -> Vec<(Option<u32>, Option<u32>)> {
        pairs
            .iter()
            .map(|p| (p.base.map(|l| l.line), p.head.map(|l| l.line)))
            .collect()
    }

    #[test]
    fn a_moved_line_matches_by_its_trimmed_text() {
        let base = rows(&["fn f() {", "let a = 1;", "}"]);
        let head = rows(&["fn f() {", "let b = 2;", "    let a = 1;", "}"]);
        let pairs = match_lines(&base, &head);
        assert_eq!(
            numbers(&pairs),
            [
                (Some(1), Some(1)),
                (None, Some(2)),
                (Some(2), Some(3)),
                (Some(3), Some(4))
            ]
        );
    }

    #[test]
    fn a_changed_line_is_removed_and_added() {
        let base = rows(&["fn f() {", "let a = 1;", "}"]);
        let head = rows(&["fn f() {", "let a = 2;", "}"]);
        assert_eq!(
            numbers(&match_lines(&base, &head)),
            [
                (Some(1), Some(1)),
                (Some(2), None),
                (None, Some(2)),
                (Some(3), Some(3))
            ]
        );
    }

    /// A refactor that handles the first element before the loop: the
    /// copy of the loop's line in the new `if` is added, and the loop's line
    /// and closing braces still pair with themselves.
    #[test]
    fn a_copy_added_above_does_not_take_the_original_place() {
        let base = rows(&["fn f() {", "for e in items {", "v.push(e);", "}", "}"]);
        let head = rows(&[
            "fn f() {",
            "if let Some(e) = first {",
            "v.push(e);",
            "}",
            "for e in items {",
            "v.push(e);",
            "}",
            "}",
        ]);
        assert_eq!(
            numbers(&match_lines(&base, &head)),
            [
                (Some(1), Some(1)),
                (None, Some(2)),
                (None, Some(3)),
                (None, Some(4)),
                (Some(2), Some(5)),
                (Some(3), Some(6)),
                (Some(4), Some(7)),
                (Some(5), Some(8))
            ]
        );
    }

    #[test]
    fn repeated_text_matches_in_order() {
        let base = rows(&["x();", "y();", "x();"]);
        let head = rows(&["x();", "x();"]);
        assert_eq!(
            numbers(&match_lines(&base, &head)),
            [(Some(1), Some(1)), (Some(2), None), (Some(3), Some(2))]
        );
    }
}
