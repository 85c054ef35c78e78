//! One run's sections: the summary, one row per function that ran, and each
//! such function's lines with their source and bars.
//!
//! Figures are those of memprof's tables: a line's Increment is summed over
//! the calls, its Peak the highest of any one call; the `fn` row's are the
//! whole call's.

use crate::diff::figures::{per_call, to_i64};
use crate::diff::format::bytes;
use crate::printable::printable;
use maud::{Markup, html};
use memprof_runtime::{FunctionReport, LineReport, Report};
use std::cmp::Reverse;

/// The functions that ran, with their index in the report (their anchor).
fn ran(report: &Report) -> impl Iterator<Item = (usize, &FunctionReport)> {
    report
        .functions
        .iter()
        .enumerate()
        .filter(|(_, f)| f.calls > 0 && f.fn_row().is_some())
}

/// The anchor of the report's `index`th function.
pub fn anchor(index: usize) -> String {
    format!("fn-{index}")
}

/// A cell with a figure, sorted by its value; empty where there is none.
pub fn figure_cell(value: Option<i64>, text: impl Fn(i64) -> String) -> Markup {
    match value {
        Some(v) => html! { td.num data-sort=(v) { (text(v)) } },
        None => html! { td.num data-sort="" {} },
    }
}

/// The summary: calls, kept bytes (the `fn` row's increment) in all and per
/// call, peak, and where the run has them, GPU peak, a framework's pool
/// (the `fn` row's Pool allocated), bytes still in use (Live) and the
/// calls' allocations (the `fn` row's); by peak, largest first.
pub fn summary(report: &Report) -> Markup {
    let mut rows: Vec<(usize, &FunctionReport, &LineReport)> = ran(report)
        .filter_map(|(i, f)| f.fn_row().map(|row| (i, f, row)))
        .collect();
    rows.sort_by_key(|&(_, f, row)| (Reverse(row.peak.unwrap_or(0)), f.name.as_str()));
    let gpu = rows.iter().any(|(_, _, row)| row.gpu_peak.is_some());
    let allocs = rows.iter().any(|(_, _, row)| row.allocations.is_some());
    let pool = rows.iter().any(|(_, _, row)| row.pool_allocated.is_some());
    let live = rows.iter().any(|(_, _, row)| row.in_use_bytes.is_some());
    html! {
        section #summary {
            h2 { "Summary" }
            @if rows.is_empty() {
                p.empty { "No profiled function ran." }
            } @else {
                p.meta {
                    (rows.len()) " functions ran. Kept is what the calls left allocated \
                    (the " code { "fn" } " row's increment); Peak is the highest of any one \
                    call. Click a column's header to sort by it."
                }
                table.sortable.summary {
                    thead {
                        tr {
                            th { "Function" }
                            th.num { "Calls" }
                            th.num { "Kept" }
                            th.num { "Kept/call" }
                            th.num aria-sort="descending" { "Peak" }
                            @if gpu { th.num { "GPU peak" } }
                            @if pool { th.num { "Pool allocated" } }
                            @if live { th.num { "Live" } }
                            @if allocs { th.num { "Allocs" } }
                        }
                    }
                    tbody {
                        @for (index, function, row) in &rows {
                            @let kept = row.increment.unwrap_or(0);
                            tr {
                                td.name data-sort=(printable(&function.name)) {
                                    a href={ "#" (anchor(*index)) } { code { (printable(&function.name)) } }
                                }
                                td.num data-sort=(function.calls) { (function.calls) }
                                (figure_cell(Some(kept), bytes))
                                (figure_cell(Some(per_call(kept, function.calls)), bytes))
                                (figure_cell(row.peak.map(to_i64), bytes))
                                @if gpu { (figure_cell(row.gpu_peak.map(to_i64), bytes)) }
                                @if pool { (figure_cell(row.pool_allocated.map(to_i64), bytes)) }
                                @if live { (figure_cell(row.in_use_bytes.map(to_i64), bytes)) }
                                @if allocs { (count_cell(row.allocations)) }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// Each function that ran, in the report's order: its lines, with their Mem
/// usage, a bar for Increment and Peak on every line that has figures, and
/// the line's Occurrences and, where the run has them, its Pool columns,
/// bytes still in use (Live) and allocations,
/// as memprof's tables show them; under a line's source, its allocation
/// sites where the run recorded them ([`super::sites`]).
pub fn functions(report: &Report) -> Markup {
    html! {
        section #functions {
            h2 { "Functions" }
            @for (index, function) in ran(report) {
                (function_table(index, function))
            }
        }
    }
}

fn function_table(index: usize, function: &FunctionReport) -> Markup {
    let lines = &function.lines;
    let increment_scale = lines
        .iter()
        .filter_map(|l| l.increment)
        .map(i64::unsigned_abs)
        .max()
        .unwrap_or(0);
    let peak_scale = lines.iter().filter_map(|l| l.peak).max().unwrap_or(0);
    let gpu_scale = lines.iter().filter_map(|l| l.gpu_peak).max();
    let allocs = lines.iter().any(|l| l.allocations.is_some());
    // A framework's pool, and bytes still in use, where the run has them.
    let pool = lines.iter().any(|l| l.pool_allocated.is_some());
    let live = lines.iter().any(|l| l.in_use_bytes.is_some());
    html! {
        section.function id=(anchor(index)) {
            h3 { code { (printable(&function.name)) } }
            p.meta {
                code { (printable(&function.file)) } " · " (function.calls)
                @if function.calls == 1 { " call" } @else { " calls" }
            }
            table.lines {
                thead {
                    tr {
                        th.num { "Line #" }
                        th.num { "Mem usage" }
                        th.num { "Increment" }
                        th.num { "Peak" }
                        @if gpu_scale.is_some() { th.num { "GPU peak" } }
                        @if pool {
                            th.num { "Pool allocated" }
                            th.num { "Pool increment" }
                            th.num { "Pool reserved" }
                        }
                        @if live { th.num { "Live" } }
                        @if allocs { th.num { "Allocs" } }
                        th.num { "Occurrences" }
                        th { "Line Contents" }
                    }
                }
                tbody {
                    @for line in lines {
                        tr class=[line.increment.is_some().then_some("ran")] {
                            td.num { (line.line) }
                            (figure_cell(line.mem_usage.filter(|_| line.increment.is_some()), bytes))
                            (bar_cell(line.increment, increment_scale, "increment"))
                            (bar_cell(line.peak.map(to_i64), peak_scale, "peak"))
                            @if let Some(scale) = gpu_scale {
                                (bar_cell(line.gpu_peak.map(to_i64), scale, "gpu"))
                            }
                            @let ran = line.increment.is_some();
                            @if pool {
                                (figure_cell(line.pool_allocated.map(to_i64), bytes))
                                (figure_cell(line.pool_increment, bytes))
                                (figure_cell(line.pool_reserved.map(to_i64), bytes))
                            }
                            @if live { (figure_cell(line.in_use_bytes.map(to_i64), bytes)) }
                            @if allocs { (count_cell(line.allocations.filter(|_| ran))) }
                            (count_cell(ran.then_some(line.occurrences)))
                            td.src { code { (printable(&line.contents)) } (super::sites::details(line)) }
                        }
                    }
                }
            }
        }
    }
}

/// A count, sorted by its value; empty where there is none.
fn count_cell(count: Option<u64>) -> Markup {
    figure_cell(count.map(to_i64), |n| n.to_string())
}

/// A figure with a bar behind it, as long as the figure's share of `scale`
/// (the largest of its column in the function); bytes freed get their own
/// colour.
fn bar_cell(value: Option<i64>, scale: u64, kind: &str) -> Markup {
    let Some(value) = value else {
        return html! { td.num.bar {} };
    };
    let width = match scale {
        0 => 0.0,
        s => value.unsigned_abs() as f64 * 100.0 / s as f64,
    };
    let class = match value < 0 {
        true => "fill freed".to_owned(),
        false => format!("fill {kind}"),
    };
    html! {
        td.num.bar {
            div {
                span class=(class) style=(format!("width:{width:.1}%")) {}
                span.value { (bytes(value)) }
            }
        }
    }
}
