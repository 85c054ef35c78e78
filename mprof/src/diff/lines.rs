//! Matching one function's lines across two runs by their text, so that a
//! line that moved (code added above it) still pairs with itself.
//!
//! Lines match when their trimmed text is equal: the first line of a text
//! in the base with the first of that text in the head, the second with the
//! second, and so on. A line whose text changed is therefore a removed line
//! and an added one.

use super::input::LineRun;
use std::collections::HashMap;

/// A line in both runs, or in one only.
#[derive(Debug, Clone, Copy)]
pub struct LinePair<'a> {
    pub base: Option<&'a LineRun>,
    pub head: Option<&'a LineRun>,
}

impl LinePair<'_> {
    /// Whether either run has figures for the line.
    pub fn ran(&self) -> bool {
        let ran = |l: Option<&LineRun>| l.is_some_and(|l| l.increment.is_some());
        ran(self.base) || ran(self.head)
    }
}

/// Every line of either run, paired, in the head's order; a removed line
/// comes after the head line that its preceding base line matched.
pub fn match_lines<'a>(base: &'a [LineRun], head: &'a [LineRun]) -> Vec<LinePair<'a>> {
    let mut unmatched: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, line) in base.iter().enumerate().rev() {
        unmatched.entry(line.contents.trim()).or_default().push(i);
    }
    // For each head line, the base line it matched; and the reverse.
    let head_match: Vec<Option<usize>> = head
        .iter()
        .map(|l| unmatched.get_mut(l.contents.trim()).and_then(Vec::pop))
        .collect();
    let mut base_match: Vec<Option<usize>> = vec![None; base.len()];
    for (h, b) in head_match.iter().enumerate() {
        if let Some(b) = *b {
            base_match[b] = Some(h);
        }
    }
    // Removed base lines, anchored after a head line (None: before all).
    let mut removed_after: HashMap<Option<usize>, Vec<usize>> = HashMap::new();
    let mut anchor = None;
    for (b, matched) in base_match.iter().enumerate() {
        match matched {
            Some(h) => anchor = Some(*h),
            None => removed_after.entry(anchor).or_default().push(b),
        }
    }
    let removed = |anchor: Option<usize>| {
        removed_after
            .get(&anchor)
            .into_iter()
            .flatten()
            .map(|&b| LinePair {
                base: Some(&base[b]),
                head: None,
            })
    };
    let mut pairs: Vec<LinePair<'a>> = removed(None).collect();
    for (h, line) in head.iter().enumerate() {
        pairs.push(LinePair {
            base: head_match[h].map(|b| &base[b]),
            head: Some(line),
        });
        pairs.extend(removed(Some(h)));
    }
    pairs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(texts: &[&str]) -> Vec<LineRun> {
        texts
            .iter()
            .enumerate()
            .map(|(i, t)| LineRun {
                line: i as u32 + 1,
                increment: Some(0),
                peak: Some(0),
                gpu_peak: None,
                contents: (*t).to_owned(),
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
