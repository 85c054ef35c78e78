//! Whether a function's growth is its own or only its callees': a buffer
//! that grew in one function shows in every profiled caller's `fn` row too
//! (a caller's figures include its callees'), and one `reserve(16)` once
//! flagged five functions. A grown function whose every grown line calls
//! another grown profiled function (its name followed by `(`, in the line's
//! text: the runtime's `line_calls`, the summary's rule too) grew only
//! through them; it is marked so, and the callees named.

use super::compare::{FunctionDiff, Presence};
use super::lines::match_lines;
use memprof_runtime::line_calls;

/// Sets `callees` on each grown function that grew through its callees
/// only.
pub fn attribute(diffs: &mut [FunctionDiff]) {
    let grown: Vec<String> = diffs
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
        for text in grown_lines(diff) {
            let called: Vec<&String> = grown
                .iter()
                .filter(|name| *name != diff.name && line_calls(&text, name))
                .collect();
            if called.is_empty() {
                own = true;
                break;
            }
            callees.extend(called.into_iter().cloned());
        }
        if !own && !callees.is_empty() {
            callees.sort();
            callees.dedup();
            diff.callees = callees;
        }
    }
}

/// The text of each statement line of `diff` that grew per call: more kept
/// above 0, or a higher peak.
fn grown_lines(diff: &FunctionDiff) -> Vec<String> {
    let (Some(base), Some(head)) = (diff.base, diff.head) else {
        return Vec::new();
    };
    // The `fn` row holds the whole call: only the statements tell.
    let fn_rows = (base.fn_row().map(|r| r.line), head.fn_row().map(|r| r.line));
    match_lines(&base.lines, &head.lines)
        .into_iter()
        .filter_map(|pair| match (pair.base, pair.head) {
            (Some(b), Some(h)) if (Some(b.line), Some(h.line)) != fn_rows => {
                let grew = pair.grew(base.calls, head.calls);
                (grew && h.increment.is_some()).then(|| h.contents.trim().to_owned())
            }
            (None, Some(h))
                if h.increment.is_some_and(|i| i > 0) || h.peak.is_some_and(|p| p > 0) =>
            {
                Some(h.contents.trim().to_owned())
            }
            _ => None,
        })
        .collect()
}
