//! Whether a function's growth is its own or only its callees': a buffer
//! that grew in one function shows in every profiled caller's `fn` row too
//! (a caller's figures include its callees'), and one `reserve(16)` once
//! flagged five functions. A grown function whose every grown line called
//! another grown profiled function (the line's `calls` in the head run: the
//! call edges memprof recorded, the summary's rule too, never the line's
//! text) grew only through them; it is marked so, and the callees named.

use super::figures::{FunctionDiff, Presence};
use super::lines::match_lines;
use std::collections::HashSet;

/// Sets `callees` on each grown function that grew through its callees
/// only.
pub fn attribute(diffs: &mut [FunctionDiff]) {
    let grown: HashSet<String> = diffs
        .iter()
        .filter(|d| d.presence == Presence::Both && d.growth() > 0)
        .map(|d| d.name.to_owned())
        .collect();
    for diff in diffs.iter_mut() {
        if diff.presence != Presence::Both || diff.growth() <= 0 {
            continue;
        }
        let mut callees: Vec<String> = Vec::new();
        let mut own = false;
        for called in grown_lines(diff) {
            let called: Vec<String> = called
                .into_iter()
                .filter(|name| *name != diff.name && grown.contains(name))
                .collect();
            if called.is_empty() {
                own = true;
                break;
            }
            callees.extend(called);
        }
        if !own && !callees.is_empty() {
            callees.sort();
            callees.dedup();
            diff.callees = callees;
        }
    }
}

/// The functions that each statement line of `diff` that grew per call
/// (more kept above 0, or a higher peak) called in the head run.
fn grown_lines(diff: &FunctionDiff) -> Vec<Vec<String>> {
    let (Some(base), Some(head)) = (diff.base, diff.head) else {
        return Vec::new();
    };
    let called = |row: &memprof_runtime::LineReport| -> Vec<String> {
        row.calls
            .iter()
            .flatten()
            .map(|c| c.function.clone())
            .collect()
    };
    // The `fn` row holds the whole call: only the statements tell.
    let fn_rows = (base.fn_row().map(|r| r.line), head.fn_row().map(|r| r.line));
    match_lines(&base.lines, &head.lines)
        .into_iter()
        .filter_map(|pair| match (pair.base, pair.head) {
            (Some(b), Some(h)) if (Some(b.line), Some(h.line)) != fn_rows => {
                let grew = pair.grew(base.calls, head.calls);
                (grew && h.increment.is_some()).then(|| called(h))
            }
            (None, Some(h))
                if h.increment.is_some_and(|i| i > 0) || h.peak.is_some_and(|p| p > 0) =>
            {
                Some(called(h))
            }
            _ => None,
        })
        .collect()
}
