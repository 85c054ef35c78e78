//! The text report: per function, a table of its figures and, with
//! `--lines`, one of its lines; in the style of memprof's own tables
//! (figures right-aligned, a `=` rule as wide as the header).

use super::figures::{FunctionDiff, to_i64};
use super::format::{bytes, delta, percent, side, signed_bytes, unchanged_line};
use super::lines::{LinePair, match_lines};
use crate::printable::printable;
use memprof_runtime::{FunctionReport, LineReport};
use std::ops::Range;
use tabled::builder::Builder;
use tabled::settings::object::Columns;
use tabled::settings::{Alignment, Modify, Style};

/// Source text beyond this many columns is cut, as in memprof's tables.
const CONTENTS_WIDTH: usize = 100;

/// The tables of the functions `diffs`, one after another, and a line
/// counting the `unchanged` ones left out.
pub fn report(diffs: &[&FunctionDiff], unchanged: usize, lines: bool) -> String {
    let mut out = String::new();
    for (i, diff) in diffs.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(&function(diff, lines));
    }
    if unchanged > 0 && !out.is_empty() {
        out.push('\n');
    }
    out.push_str(&unchanged_line(unchanged));
    out
}

/// One function: its header, figures and, with `lines`, its changed lines.
fn function(diff: &FunctionDiff, lines: bool) -> String {
    let mut out = format!(
        "Filename: {}   Function: {}   Status: {}",
        printable(diff.file),
        printable(diff.name),
        diff.status()
    );
    if !diff.over.is_empty() {
        let names: Vec<&str> = diff.over.iter().map(|c| c.figure.name()).collect();
        out.push_str(&format!("   Past --fail-over: {}", names.join(", ")));
    }
    if !diff.callees.is_empty() {
        out.push_str(&format!(
            "\n(each line that grew calls a function that grew: {})",
            diff.callees
                .iter()
                .map(|name| printable(name))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    if let Some(base_name) = diff.base_name {
        out.push_str(&format!(
            "\n(matched by file and `fn` line; in the base: {})",
            printable(base_name)
        ));
    }
    out.push_str("\n\n");
    let rows = diff.changes.iter().map(|c| {
        vec![
            c.figure.name().to_owned(),
            side(c, c.base),
            side(c, c.head),
            // A function in one run only has no change to show: its
            // status says new or removed.
            match c.base.is_some() && c.head.is_some() {
                true => delta(c),
                false => String::new(),
            },
            match c.base.is_some() && c.head.is_some() {
                true => percent(c),
                false => String::new(),
            },
        ]
    });
    out.push_str(&aligned(
        &["Figure", "Base", "Head", "Change", "Change %"],
        1..5,
        rows.collect(),
    ));
    if lines && diff.changed() {
        out.push('\n');
        out.push_str(&line_table(diff));
    }
    out
}

/// The rows that ran in either run, and lines added or removed, matched by
/// text (see `lines`).
/// Increments are per call, as kept bytes are; peaks are per call already.
/// Where either run has bytes in use (`MEMPROF_SITES`: two snapshots of a
/// running program), each line's Live too, a total as the function's is:
/// the line a leak grows in reads its growth.
pub fn line_table(diff: &FunctionDiff) -> String {
    let empty: &[LineReport] = &[];
    let base = diff.base.map_or(empty, |f| &f.lines);
    let head = diff.head.map_or(empty, |f| &f.lines);
    let calls = |f: Option<&FunctionReport>| f.map_or(0, |f| f.calls);
    let (base_calls, head_calls) = (calls(diff.base), calls(diff.head));
    let figure = |v: Option<i64>| v.map(bytes).unwrap_or_default();
    let live = base.iter().chain(head).any(|l| l.in_use_bytes.is_some());
    let mut rows = Vec::new();
    for pair in match_lines(base, head) {
        if !pair.shown() {
            continue;
        }
        let [kept, peak] = pair.changes(base_calls, head_calls);
        let increment = (kept.base, kept.head);
        let peaks = (peak.base, peak.head);
        let number = |l: Option<&LineReport>| l.map(|l| l.line.to_string()).unwrap_or_default();
        let (marker, text) = match (pair.base, pair.head) {
            (Some(_), None) => ("removed", pair.base),
            (None, Some(_)) => ("added", pair.head),
            _ => ("", pair.head),
        };
        let contents = text.map_or("", |l| l.contents.as_str());
        let mut row = vec![
            number(pair.base),
            number(pair.head),
            figure(increment.0),
            figure(increment.1),
            change_cell(increment, &pair),
            figure(peaks.0),
            figure(peaks.1),
            change_cell(peaks, &pair),
        ];
        if live {
            let in_use = |l: Option<&LineReport>| l.and_then(|l| l.in_use_bytes).map(to_i64);
            let lives = (in_use(pair.base), in_use(pair.head));
            row.extend([figure(lives.0), figure(lives.1), change_cell(lives, &pair)]);
        }
        row.extend([
            marker.to_owned(),
            truncate(&printable(contents).replace('\t', "    ")),
        ]);
        rows.push(row);
    }
    let mut header = vec![
        "Base #",
        "Head #",
        "Base incr.",
        "Head incr.",
        "Incr. change",
        "Base peak",
        "Head peak",
        "Peak change",
    ];
    if live {
        header.extend(["Base live", "Head live", "Live change"]);
    }
    let figures = header.len();
    header.extend(["Diff", "Line Contents"]);
    aligned(&header, 0..figures, rows)
}

/// The change between two line figures; empty unless the line is in both.
fn change_cell((base, head): (Option<i64>, Option<i64>), pair: &LinePair) -> String {
    if pair.base.is_none() || pair.head.is_none() || (base.is_none() && head.is_none()) {
        return String::new();
    }
    signed_bytes(head.unwrap_or(0).saturating_sub(base.unwrap_or(0)))
}

fn truncate(text: &str) -> String {
    match text.char_indices().nth(CONTENTS_WIDTH - 1) {
        Some((end, _)) if text.chars().count() > CONTENTS_WIDTH => {
            format!("{}…", &text[..end])
        }
        _ => text.to_owned(),
    }
}

/// A table with `header`, in memprof's style: the columns in `right` (the
/// figures) right-aligned, the others left-aligned.
pub fn aligned(header: &[&str], right: Range<usize>, rows: Vec<Vec<String>>) -> String {
    let mut builder = Builder::default();
    builder.push_record(header.iter().copied());
    for row in rows {
        builder.push_record(row);
    }
    let mut table = builder.build();
    table
        .with(Style::blank())
        .with(Modify::new(Columns::new(..)).with(Alignment::left()))
        .with(Modify::new(Columns::new(right)).with(Alignment::right()));
    let text = table.to_string();
    let mut out = String::new();
    let mut lines = text.lines().map(str::trim_end);
    if let Some(header) = lines.next() {
        // The rule spans the header, as memprof's does.
        out.push_str(header);
        out.push('\n');
        out.push_str(&"=".repeat(header.len()));
        out.push('\n');
    }
    for line in lines {
        out.push_str(line);
        out.push('\n');
    }
    out
}
