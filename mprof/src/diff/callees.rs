//! Whether a function's growth is its own or only its callees': a buffer
//! that grew in one function shows in every profiled caller's `fn` row too
//! (a caller's figures include its callees'), and one `reserve(16)` once
//! flagged five functions. A grown function whose every grown line calls
//! another grown profiled function (its name followed by `(`, in the line's
//! text: the runtime's `line_calls`, the summary's rule too) grew only
//! through them; it is marked so, and the callees named.

use super::figures::{FunctionDiff, Presence};
use super::lines::match_lines;
use memprof_runtime::line_calls;
use std::collections::HashMap;

/// Sets `callees` on each grown function that grew through its callees
/// only.
pub fn attribute(diffs: &mut [FunctionDiff]) {
    let grown: Vec<String> = diffs
        .iter()
        .filter(|d| d.presence == Presence::Both && d.growth() > 0)
        .map(|d| d.name.to_owned())
        .collect();
    // PERF: a line's calls are looked up by the identifiers it calls, not
    // tried against every grown function (a diff of 40,000 functions).
    // Names whose own name is no plain identifier (`{{closure}}`,
    // `pick<&str>`) are tried one by one, as `line_calls` reads them.
    let mut by_own: HashMap<&str, Vec<&str>> = HashMap::new();
    let mut odd: Vec<&str> = Vec::new();
    for name in &grown {
        let own = name.rsplit("::").next().unwrap_or(name);
        match !own.is_empty() && own.chars().all(identifier) {
            true => by_own.entry(own).or_default().push(name),
            false => odd.push(name),
        }
    }
    for diff in diffs.iter_mut() {
        if diff.presence != Presence::Both || diff.growth() <= 0 {
            continue;
        }
        let mut callees: Vec<String> = Vec::new();
        let mut own = false;
        for text in grown_lines(diff) {
            let called: Vec<&str> = called_identifiers(&text)
                .filter_map(|ident| by_own.get(ident))
                .flatten()
                .chain(odd.iter().filter(|name| line_calls(&text, name)))
                .copied()
                .filter(|name| *name != diff.name)
                .collect();
            if called.is_empty() {
                own = true;
                break;
            }
            callees.extend(called.into_iter().map(str::to_owned));
        }
        if !own && !callees.is_empty() {
            callees.sort();
            callees.dedup();
            diff.callees = callees;
        }
    }
}

fn identifier(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The identifiers in `text` that are called: followed by `(` or `::<`
/// (`line_calls`'s rule, for every name at once).
fn called_identifiers(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !identifier(c))
        .filter(|ident| !ident.is_empty())
        .filter(move |ident| {
            // Where `ident` ends in `text`, of which it is a slice.
            let end = ident.as_ptr() as usize - text.as_ptr() as usize + ident.len();
            let after = &text[end..];
            after.starts_with('(') || after.starts_with("::<")
        })
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
