//! Text rendering: byte figures and line tables.

mod left_out;
mod sites;

pub(crate) use left_out::left_out_note;

use crate::alloc::untracked;
use crate::calls::CallFacts;
use crate::config::{RenderSettings, Unit};
use crate::region::{OTHERS_NOTED, Scope};
use crate::report::{FunctionReport, Report};
use crate::summary::Summary;
use crate::text::printable;
use std::fmt;
use tabled::builder::Builder;
use tabled::settings::object::Columns;
use tabled::settings::{Alignment, Modify, Style};

/// Writes a byte count in `settings`' unit, e.g. `1.5 MiB`, `-512 B`.
pub fn bytes(n: i64, settings: &RenderSettings) -> String {
    let unit = settings.unit.unwrap_or_else(|| auto_unit(n.unsigned_abs()));
    if unit == Unit::B {
        return format!("{n} B");
    }
    let value = n as f64 / unit.size();
    let mut text = format!("{value:.prec$}", prec = settings.precision);
    // A small negative figure rounds to zero: no sign on it.
    if text.starts_with('-') && text[1..].bytes().all(|b| b == b'0' || b == b'.') {
        text.remove(0);
    }
    format!("{text} {}", unit.name())
}

/// A byte count that only grows (bytes allocated) as [`bytes`] takes it,
/// held at `i64::MAX` beyond.
fn as_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn auto_unit(n: u64) -> Unit {
    match n {
        0..=1023 => Unit::B,
        1024..=1_048_575 => Unit::KiB,
        1_048_576..=1_073_741_823 => Unit::MiB,
        _ => Unit::GiB,
    }
}

/// Source text beyond this many columns is cut, ending in `…`: rustfmt's
/// default `max_width`, so formatted code shows whole.
pub(crate) const CONTENTS_WIDTH: usize = 100;

/// The widest figure `settings` writes for a heap of ordinary size: four
/// digits (auto units switch at 1024), the decimals, a unit of up to three
/// letters, and a sign where the column has one. Figure columns are at least
/// this wide, so that tables line up with one another.
fn figure_width(settings: &RenderSettings, signed: bool) -> usize {
    let decimals = match (settings.unit, settings.precision) {
        (Some(Unit::B), _) | (_, 0) => 0,
        (_, p) => p + 1,
    };
    usize::from(signed) + 4 + decimals + 4
}

/// A line of source as a table shows it: tabs as four spaces (a tab would
/// throw the columns off), made [`printable`], then cut to
/// [`CONTENTS_WIDTH`]. The escaped text is what is measured and cut.
fn contents_cell(contents: &str) -> String {
    truncate(&printable(&contents.replace('\t', "    ")), CONTENTS_WIDTH)
}

/// `text` cut to `width` display columns, the last one an ellipsis.
fn truncate(text: &str, width: usize) -> String {
    use tabled::settings::width::Truncate;
    if tabled::grid::util::string::get_text_width(text) <= width {
        return text.to_owned();
    }
    format!("{}…", Truncate::truncate(text, width - 1))
}

/// A function's table in memory_profiler's shape.
pub(crate) fn table(
    function: &FunctionReport,
    aggregated: bool,
    settings: &RenderSettings,
) -> String {
    let gpu = function.gpu.is_some();
    // Counted device allocations have a peak; NVML's samples do not.
    let counted = function.lines.iter().any(|l| l.gpu_peak.is_some());
    // Each column before the contents, with the width its figures take at
    // least (0 for counts, which their header covers).
    let (unsigned, signed) = (figure_width(settings, false), figure_width(settings, true));
    let mut columns = vec![
        ("Line #", 0),
        ("Mem usage", unsigned),
        ("Increment", signed),
        ("Peak", unsigned),
        ("Occurrences", 0),
    ];
    if settings.allocs {
        columns.push(("Allocs", 0));
    }
    if settings.allocated {
        columns.push(("Allocated", unsigned));
    }
    if counted {
        columns.extend([
            ("GPU alloc", unsigned),
            ("GPU increment", signed),
            ("GPU peak", unsigned),
        ]);
    } else if gpu {
        columns.extend([("GPU usage", unsigned), ("GPU increment", signed)]);
    }
    let pool = function.pool.is_some();
    if pool {
        columns.extend([
            ("Pool allocated", unsigned),
            ("Pool increment", signed),
            ("Pool reserved", unsigned),
        ]);
    }
    let figures = columns.len();
    let fn_row = function.fn_row_index();
    let mut records: Vec<Vec<String>> = Vec::new();
    for (i, line) in function.lines.iter().enumerate() {
        if let Some(min) = settings.min_increment {
            let loud = line.increment.is_some_and(|v| v.unsigned_abs() >= min)
                || line.peak.is_some_and(|v| v >= min);
            if !loud && Some(i) != fn_row {
                continue;
            }
        }
        let figure = |v: Option<i64>| v.map(|v| bytes(v, settings)).unwrap_or_default();
        let mut record = vec![
            line.line.to_string(),
            figure(line.mem_usage),
            figure(line.increment),
            figure(line.peak.map(|v| v as i64)),
            if line.increment.is_some() {
                line.occurrences.to_string()
            } else {
                String::new()
            },
        ];
        if settings.allocs {
            record.push(line.allocations.map(|n| n.to_string()).unwrap_or_default());
        }
        if settings.allocated {
            record.push(figure(line.allocated_bytes.map(as_i64)));
        }
        if gpu {
            record.push(figure(line.gpu_usage.map(|v| v as i64)));
            record.push(figure(line.gpu_increment));
            if counted {
                record.push(figure(line.gpu_peak.map(|v| v as i64)));
            }
        }
        if pool {
            record.push(figure(line.pool_allocated.map(as_i64)));
            record.push(figure(line.pool_increment));
            record.push(figure(line.pool_reserved.map(as_i64)));
        }
        record.push(contents_cell(&line.contents));
        records.push(record);
    }
    // Figure columns: as wide as their header, a figure of ordinary size, and
    // any wider figure this table holds; right-aligned here.
    for (column, &(name, least)) in columns.iter().enumerate() {
        let mut width = name.len().max(least);
        for record in &records {
            width = width.max(record[column].chars().count());
        }
        for record in &mut records {
            record[column] = format!("{:>width$}", record[column]);
        }
    }

    let header: Vec<&str> = columns
        .iter()
        .map(|&(name, _)| name)
        .chain(["Line Contents"])
        .collect();
    let table = simple_table(&header, figures, records);

    let mut out = format!(
        "Filename: {}   Function: {}",
        printable(&function.file),
        printable(&function.name)
    );
    if aggregated {
        let calls = match (function.calls, function.running) {
            (0, running) => format!("{running} running"),
            (1, 0) => "1".to_owned(),
            (n, 0) => format!("{n} (aggregated)"),
            (n, running) => format!("{n} (aggregated), {running} running"),
        };
        out.push_str(&format!("   Calls: {calls}"));
    }
    out.push('\n');
    if let Some(description) = &function.gpu {
        out.push_str(&printable(description));
        out.push('\n');
    }
    // The driver's view, read at call entry and exit: the `fn` row's.
    if let Some(description) = &function.gpu_driver
        && let Some(row) = function.lines.iter().find(|l| l.gpu_driver_usage.is_some())
    {
        let usage = row.gpu_driver_usage.unwrap_or(0) as i64;
        let increment = row.gpu_driver_increment.unwrap_or(0);
        let sign = if increment >= 0 { "+" } else { "" };
        out.push_str(&format!(
            "{}: {} at call exit, {sign}{} over the call{}\n",
            printable(description),
            bytes(usage, settings),
            bytes(increment, settings),
            if function.calls > 1 && aggregated {
                "s"
            } else {
                ""
            },
        ));
    }
    if let Some(description) = &function.pool {
        out.push_str(&printable(description));
        out.push('\n');
    }
    out.push('\n');
    out.push_str(&table);
    if let Some(note) = quiet_note(function) {
        out.push_str(&note);
    }
    out.push_str(&sites::under_table(function, settings));
    if let Some(note) = function
        .sites_left_out
        .as_ref()
        .and_then(|l| left_out_note(l, Some(settings)))
    {
        out.push_str(&note);
    }
    out
}

/// Under a table of a function some of whose calls ran quiet, or stopped
/// stepping their rows part way: what its statements' rows leave out.
fn quiet_note(function: &FunctionReport) -> Option<String> {
    let mut parts = Vec::new();
    if function.quiet_calls > 0 {
        parts.push(format!(
            "{} of {} calls ran as written (quiet): the statements' Occurrences, Mem usage and Peak leave them out",
            function.quiet_calls, function.calls,
        ));
    }
    if function.events_calls > 0 {
        parts.push(format!(
            "{} of {} calls stopped stepping their rows after {} turns of their loops: the statements' Occurrences, Mem usage and Peak leave out the rest of those calls, Increment, Allocs and Allocated hold it",
            function.events_calls,
            function.calls,
            crate::kernel::layout::EVENTS_AFTER_TURNS,
        ));
    }
    if parts.is_empty() {
        return None;
    }
    let mut note = parts.join("; ");
    if function.quiet_unplaced > 0 {
        note.push_str(&format!(
            "; {} of their allocations and frees are on no statement's row (the fn row holds them)",
            function.quiet_unplaced
        ));
    }
    note.push('\n');
    Some(note)
}

/// A blank-style table's text with a `=` rule under its header. The rule
/// spans the header, as memory_profiler's does, not the longest source line.
fn ruled(text: &str) -> String {
    let mut out = String::new();
    let mut lines = text.lines().map(str::trim_end);
    if let Some(header) = lines.next() {
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

/// A table of `records` under `header`: the first `figures` columns
/// right-aligned, the rest left-aligned, with a rule under the header.
fn simple_table(header: &[&str], figures: usize, records: Vec<Vec<String>>) -> String {
    let mut builder = Builder::default();
    builder.push_record(header.iter().copied());
    for record in records {
        builder.push_record(record);
    }
    let mut table = builder.build();
    table
        .with(Style::blank())
        .with(Modify::new(Columns::new(0..figures)).with(Alignment::right()))
        .with(Modify::new(Columns::new(figures..)).with(Alignment::left()));
    ruled(&table.to_string())
}

/// The summary's text: its functions, then its lists of top lines (by
/// Increment, by Peak, and by Live where sites were recorded).
pub(crate) fn summary(summary: &Summary, settings: &RenderSettings) -> String {
    let figure = |v: i64| bytes(v, settings);
    let gpu = summary.functions.iter().any(|f| f.gpu_peak.is_some());
    let ran = summary.functions.len();
    let mut out = format!(
        "Summary: {ran} function{} ran, {}\n\n",
        if ran == 1 { "" } else { "s" },
        summary.order()
    );
    // Bytes still in use, and a framework's pool, where the run has them.
    let live = summary.functions.iter().any(|f| f.live.is_some());
    let pool = summary.functions.iter().any(|f| f.pool_allocated.is_some());
    let optional = |v: Option<u64>| v.map(|v| figure(as_i64(v))).unwrap_or_default();
    let mut header = vec!["Peak", "Kept/call", "Kept", "Allocs", "Allocated", "Calls"];
    if live {
        header.insert(3, "Live");
    }
    if pool {
        header.insert(1, "Pool alloc");
    }
    if gpu {
        header.insert(1, "GPU peak");
    }
    let figures = header.len();
    header.extend(["Function", "File"]);
    let records = summary.functions.iter().map(|f| {
        let mut record = vec![
            figure(f.peak as i64),
            figure(f.kept_per_call),
            figure(f.kept),
            f.allocations.to_string(),
            figure(as_i64(f.allocated_bytes)),
            f.calls.to_string(),
        ];
        if live {
            record.insert(3, optional(f.live));
        }
        if pool {
            record.insert(1, optional(f.pool_allocated));
        }
        if gpu {
            record.insert(1, optional(f.gpu_peak));
        }
        record.extend([
            printable(&f.name).into_owned(),
            printable(&f.file).into_owned(),
        ]);
        record
    });
    out.push_str(&simple_table(&header, figures, records.collect()));
    for (title, lines) in [
        ("Top lines by Increment", &summary.top_increment),
        ("Top lines by Peak", &summary.top_peak),
        ("Top lines by Live (still in use)", &summary.top_live),
    ] {
        if lines.is_empty() {
            continue;
        }
        out.push_str(&format!("\n{title}\n\n"));
        let records = lines.iter().map(|l| {
            let mut record = vec![
                figure(l.increment),
                figure(l.peak as i64),
                l.allocations.to_string(),
                l.occurrences.to_string(),
                l.line.to_string(),
                printable(&l.function).into_owned(),
                {
                    let mut contents = contents_cell(&l.contents);
                    // Its bytes are in the callees' lines too.
                    if !l.callees.is_empty() {
                        let names: Vec<std::borrow::Cow<'_, str>> =
                            l.callees.iter().map(|c| printable(&c.function)).collect();
                        contents.push_str(&format!("   [calls {}]", names.join(", ")));
                    }
                    // Its bytes are in a line listed with it, which holds it.
                    if let Some(holder) = l.within {
                        contents.push_str(&format!("   [in line {holder}]"));
                    }
                    // A second line in the cell, under the source.
                    if let Some(site) = &l.site {
                        contents.push('\n');
                        contents.push_str(&truncate(
                            &sites::top_site_within(site, CONTENTS_WIDTH),
                            CONTENTS_WIDTH,
                        ));
                    }
                    contents
                },
            ];
            if live {
                record.insert(0, optional(l.in_use_bytes));
            }
            record
        });
        let mut header = vec![
            "Increment",
            "Peak",
            "Allocs",
            "Occurrences",
            "Line #",
            "Function",
            "Line Contents",
        ];
        if live {
            header.insert(0, "Live");
        }
        out.push_str(&simple_table(&header, header.len() - 2, records.collect()));
    }
    out
}

/// The line under a thread-scope table whose calls freed more than their
/// thread allocated during them, when `others_moved`: other threads or tasks
/// changed the heap during them, so that the memory freed may be theirs and
/// process scope would count otherwise (Mem usage reads low, even below
/// zero). `None` otherwise: freeing memory allocated before the call, by its
/// own thread or any other, is counted right in either scope.
pub(crate) fn freed_more_note(
    function: &FunctionReport,
    others_moved: bool,
    settings: &RenderSettings,
) -> Option<String> {
    let freed = function.fn_row()?.increment?;
    let below_zero = function
        .lines
        .iter()
        .any(|l| l.mem_usage.is_some_and(|m| m < 0));
    // NOTE: Mem usage below zero is the heap at entry plus the thread's
    // change: it takes other threads that allocated meanwhile.
    let said = below_zero || (freed < 0 && others_moved);
    if !said {
        return None;
    }
    let (who, whose) = match function.calls {
        1 => ("this call".to_owned(), "its thread allocated during it"),
        n => (
            format!("these {n} calls"),
            "their threads allocated during them",
        ),
    };
    let freed = match freed {
        f if f < 0 => format!("freed {} more", bytes(f.saturating_neg(), settings)),
        _ => "freed more".to_owned(),
    };
    Some(format!(
        "(memprof: {who} {freed} than {whose}: memory allocated before, or by other \
         threads or tasks, which thread scope does not count, so Mem usage can read low \
         or below zero; #[profile(scope = \"process\")] counts every thread)\n"
    ))
}

/// The note under one call's table, if any: in thread scope, what it freed
/// of memory it did not allocate, what other threads or tasks freed during
/// it while it kept memory (which may be its own blocks, whose frees its
/// figures do not count), or else what they left allocated during it, which
/// its figures do not count either (the result of a task it spawned and
/// awaited, say). Empty when there is nothing to say.
pub(crate) fn call_note(
    scope: Scope,
    function: &FunctionReport,
    facts: &CallFacts,
    settings: &RenderSettings,
) -> String {
    if scope == Scope::Process {
        return String::new();
    }
    // Other threads or tasks changed the heap by enough to matter beside
    // what the call freed: at least that, or 1 KiB.
    let freed = function
        .fn_row()
        .and_then(|l| l.increment)
        .map_or(0, i64::unsigned_abs);
    let others_moved = facts.others_kept.unsigned_abs() >= OTHERS_NOTED.min(freed.max(1));
    if let Some(note) = freed_more_note(function, others_moved, settings) {
        return note;
    }
    let others = facts.others_kept;
    let kept = function.fn_row().and_then(|l| l.increment).unwrap_or(0);
    // Blocks this thread allocated and another freed (a queue's, a buffer
    // handed to a worker) stay in its Kept: said where other threads or
    // tasks freed at least 1 KiB and half of it more than they allocated.
    if kept > 0 && others <= -(OTHERS_NOTED as i64) && others.saturating_neg() >= kept / 2 {
        return format!(
            "(memprof: other threads or tasks freed {} more than they allocated during this \
             call, perhaps blocks it kept: thread scope leaves a block kept where it was \
             allocated; #[profile(scope = \"process\")] counts every thread)\n",
            bytes(others.saturating_neg(), settings)
        );
    }
    let own_peak = function.fn_row().and_then(|l| l.peak).unwrap_or(0);
    if others < OTHERS_NOTED as i64 || (others as u64) < own_peak {
        return String::new();
    }
    format!(
        "(memprof: other threads or tasks allocated {} more than they freed during this call, \
         which thread scope does not count; #[profile(scope = \"process\")] counts them)\n",
        bytes(others, settings)
    )
}

/// Marks a call's table, in its title, as ended by a panic: its rows hold
/// what ran until then, the panicking line included.
pub(crate) fn mark_panicked(table: &mut String) {
    if let Some(end) = table.find('\n') {
        table.insert_str(end, "   (panicked)");
    }
}

// ---- `Display` for the report types: their tables ------------------------------

// NOTE: the text is built with counting paused, as the report itself is:
// only what the formatter writes (the caller's `String`, say) counts.

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = untracked(|| {
            let settings = crate::settings::get().render;
            let tables: Vec<String> = self
                .functions
                .iter()
                .map(|function| table(function, true, &settings))
                .collect();
            tables.join("\n")
        });
        let written = f.write_str(&text);
        untracked(|| drop(text));
        written
    }
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = untracked(|| summary(self, &crate::settings::get().render));
        let written = f.write_str(&text);
        untracked(|| drop(text));
        written
    }
}

impl fmt::Display for FunctionReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = untracked(|| table(self, true, &crate::settings::get().render));
        let written = f.write_str(&text);
        untracked(|| drop(text));
        written
    }
}

#[cfg(test)]
mod tests;
