//! The comparison with a base run: `mprof diff --lines` as HTML. Functions
//! whose figures changed, in `mprof diff`'s order (largest growth first),
//! then each one's lines matched by text; what grew is highlighted.

use super::run::figure_cell;
use crate::diff::compare;
use crate::diff::figures::FunctionDiff;
use crate::diff::format::{bytes, delta, percent, side, signed_bytes};
use crate::diff::lines::match_lines;
use crate::printable::printable;
use maud::{Markup, html};
use memprof_runtime::{FunctionReport, LineReport, Report};
use std::path::Path;

/// The comparison of `head` (the page's run) with `base`.
pub fn comparison(base: &Report, base_path: &Path, head: &Report) -> Markup {
    let diffs = compare::compare(base, head, None);
    let shown: Vec<&FunctionDiff> = diffs.iter().filter(|d| d.changed()).collect();
    let unchanged = diffs.len() - shown.len();
    html! {
        section #comparison {
            h2 { "Comparison" }
            p.meta {
                "With the base run " code { (base_path.display()) } ". Figures are per call, \
                as " code { "mprof diff" } " shows them; what grew is in red."
                @if unchanged == 1 {
                    " 1 function that did not change (or never ran) is not shown."
                } @else if unchanged > 1 {
                    " " (unchanged) " functions that did not change (or never ran) are not shown."
                }
            }
            @if shown.is_empty() {
                p.empty { "No function changed." }
            } @else {
                (functions_table(&shown))
                @for diff in &shown {
                    (line_table(diff))
                }
            }
        }
    }
}

/// One row per function: calls as `base → head`, and each byte figure as
/// `base → head` and its change, red where it grew.
fn functions_table(diffs: &[&FunctionDiff]) -> Markup {
    let figures = &diffs[0].changes;
    html! {
        table.sortable.compare {
            thead {
                tr {
                    th { "Function" }
                    th { "Status" }
                    @for change in figures {
                        th.num { (change.figure.name()) }
                        @if change.figure.is_bytes() {
                            th.num { (change.figure.name()) " change" }
                        }
                    }
                }
            }
            tbody {
                @for diff in diffs {
                    tr class=(diff.status()) {
                        td.name data-sort=(printable(diff.name)) {
                            code { (printable(diff.name)) }
                            @if let Some(base_name) = diff.base_name {
                                br; span.meta { "in the base: " code { (printable(base_name)) } }
                            }
                        }
                        td { (diff.status()) }
                        @for change in &diff.changes {
                            td.num data-sort=(change.head.or(change.base).unwrap_or(0)) {
                                (side(change, change.base)) " → " (side(change, change.head))
                            }
                            @if change.figure.is_bytes() {
                                td.num.change.grew[change.growth() > 0] data-sort=(change.delta()) {
                                    (delta(change)) " (" (percent(change)) ")"
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// One function's lines in both runs, matched by text, as `mprof diff
/// --lines` shows them: the lines that ran in either run, and lines added
/// or removed. Increments are per call.
fn line_table(diff: &FunctionDiff) -> Markup {
    let empty: &[LineReport] = &[];
    let base = diff.base.map_or(empty, |f| &f.lines);
    let head = diff.head.map_or(empty, |f| &f.lines);
    let calls = |f: Option<&FunctionReport>| f.map_or(0, |f| f.calls);
    let (base_calls, head_calls) = (calls(diff.base), calls(diff.head));
    let pairs: Vec<_> = match_lines(base, head)
        .into_iter()
        .filter(|pair| pair.shown())
        .collect();
    html! {
        section.function.compared {
            h3 { code { (printable(diff.name)) } " " span class={ "status " (diff.status()) } { (diff.status()) } }
            p.meta { code { (printable(diff.file)) } }
            table.lines {
                thead {
                    tr {
                        th.num { "Base #" }
                        th.num { "Head #" }
                        th.num { "Base incr." }
                        th.num { "Head incr." }
                        th.num { "Incr. change" }
                        th.num { "Base peak" }
                        th.num { "Head peak" }
                        th.num { "Peak change" }
                        th { "Diff" }
                        th { "Line Contents" }
                    }
                }
                tbody {
                    @for pair in &pairs {
                        @let [kept, peak] = pair.changes(base_calls, head_calls);
                        @let increments = (kept.base, kept.head);
                        @let peaks = (peak.base, peak.head);
                        @let both = pair.base.is_some() && pair.head.is_some();
                        @let grown = pair.grew(base_calls, head_calls);
                        @let (marker, text) = match (pair.base, pair.head) {
                            (Some(_), None) => ("removed", pair.base),
                            (None, Some(_)) => ("added", pair.head),
                            _ => ("", pair.head),
                        };
                        @let kind = if grown { "grew" } else { marker };
                        @let ran = if pair.ran() { "ran" } else { "" };
                        @let class = format!("{kind} {ran}");
                        tr class=[Some(class.trim()).filter(|c| !c.is_empty())] {
                            td.num { (number(pair.base)) }
                            td.num { (number(pair.head)) }
                            (figure_cell(increments.0, bytes))
                            (figure_cell(increments.1, bytes))
                            (change_cell(increments, both, kept.growth() > 0))
                            (figure_cell(peaks.0, bytes))
                            (figure_cell(peaks.1, bytes))
                            (change_cell(peaks, both, peak.growth() > 0))
                            td { (marker) }
                            td.src { code { (printable(text.map_or("", |l| l.contents.as_str()))) } }
                        }
                    }
                }
            }
        }
    }
}

fn number(line: Option<&LineReport>) -> String {
    line.map(|l| l.line.to_string()).unwrap_or_default()
}

/// The change of a line's figure, red where it `grew`; empty unless the
/// line is in both runs with a figure in either.
fn change_cell((base, head): (Option<i64>, Option<i64>), both: bool, grew: bool) -> Markup {
    if !both || (base.is_none() && head.is_none()) {
        return html! { td.num.change data-sort="" {} };
    }
    let change = head.unwrap_or(0).saturating_sub(base.unwrap_or(0));
    html! {
        td.num.change.grew[grew] data-sort=(change) { (signed_bytes(change)) }
    }
}
