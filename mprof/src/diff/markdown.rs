//! The `--format markdown` report: one compact table to paste into a pull
//! request, functions past `--fail-over` first, and with `--lines` each
//! changed function's line table folded under it.

use super::figures::{Change, FunctionDiff};
use super::format::{delta, percent, side, unchanged_line};
use super::table::line_table;
use crate::printable::printable;

/// The report of the functions `diffs` as Markdown, and a line counting
/// the `unchanged` ones left out.
pub fn report(diffs: &[&FunctionDiff], unchanged: usize, lines: bool) -> String {
    if diffs.is_empty() {
        return unchanged_line(unchanged);
    }
    let figures: Vec<&str> = diffs
        .first()
        .map(|d| d.changes.iter().skip(1).map(|c| c.figure.name()).collect())
        .unwrap_or_default();
    let mut header = vec![
        "Function".to_owned(),
        "Status".to_owned(),
        "Calls".to_owned(),
    ];
    let mut rule = vec![":--", ":--", "--:"];
    for name in &figures {
        header.push((*name).to_owned());
        header.push(format!("{name} change"));
        rule.extend(["--:", "--:"]);
    }
    let mut out = row(&header);
    out.push_str(&row(&rule));
    for diff in diffs.iter().copied() {
        let status = match diff.over.is_empty() {
            true => diff.status().to_owned(),
            false => "**past --fail-over**".to_owned(),
        };
        let mut name = code_in_cell(diff.name);
        if let Some(base_name) = diff.base_name {
            name.push_str(&format!(" (in the base: {})", code_in_cell(base_name)));
        }
        let mut cells = vec![name, status];
        let calls = &diff.changes[0];
        cells.push(match calls.base == calls.head {
            true => side(calls, calls.head),
            false => sides(calls),
        });
        for change in &diff.changes[1..] {
            cells.push(sides(change));
            cells.push(match (change.base, change.head) {
                (Some(_), Some(_)) => format!("{} ({})", delta(change), percent(change)),
                _ => String::new(),
            });
        }
        out.push_str(&row(&cells));
    }
    if unchanged > 0 {
        out.push('\n');
        out.push_str(&unchanged_line(unchanged));
    }
    if lines {
        for diff in diffs.iter().filter(|d| d.changed()) {
            let table = line_table(diff);
            let fence = fence_for(&table);
            out.push_str(&format!(
                "\n<details><summary><code>{}</code>: lines</summary>\n\n{fence}text\n{table}{fence}\n\n</details>\n",
                html_escape(diff.name),
            ));
        }
    }
    out
}

/// `base → head`, with `none` for a side the function is missing from.
fn sides(change: &Change) -> String {
    let or_none = |v: Option<i64>| match v {
        None => "none".to_owned(),
        v => side(change, v),
    };
    format!("{} → {}", or_none(change.base), or_none(change.head))
}

/// A name as inline code in a table cell: a code span long enough for any
/// backticks in it, with `|` escaped so that it does not end the cell.
/// (Inside a code span, `<` and `&` are shown as written.) [`printable`]
/// first.
fn code_in_cell(text: &str) -> String {
    let text = &*printable(text);
    let ticks = "`".repeat(longest_run(text, '`') + 1);
    let pad = if text.starts_with('`') || text.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{ticks}{pad}{}{pad}{ticks}", text.replace('|', "\\|"))
}

/// Text for raw HTML (a `<summary>`): names such as
/// `<S as serde::Serializer>::serialize_map` would otherwise be taken for
/// tags and vanish. [`printable`] first.
fn html_escape(text: &str) -> String {
    printable(text)
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A code fence longer than any run of backticks in `text`.
fn fence_for(text: &str) -> String {
    "`".repeat(longest_run(text, '`').max(2) + 1)
}

fn longest_run(text: &str, c: char) -> usize {
    text.split(|x| x != c).map(str::len).max().unwrap_or(0)
}

fn row(cells: &[impl AsRef<str>]) -> String {
    let cells: Vec<&str> = cells.iter().map(AsRef::as_ref).collect();
    format!("| {} |\n", cells.join(" | "))
}
