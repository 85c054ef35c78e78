//! A profiled function's table in `memprof::report()`, and a row's figures,
//! for the behaviour tests. Include it with
//! `#[path = "support/tables.rs"] mod tables;`.

// Each test crate that includes this file uses a different part of it.
#![allow(dead_code)]

use memprof::{FunctionReport, LineReport};

/// The aggregated table of the function `name` (a path, or its end).
pub fn table(name: &str) -> FunctionReport {
    let report = memprof::report();
    report
        .function(name)
        .unwrap_or_else(|| panic!("no table for {name}:\n{report}"))
        .clone()
}

/// The first row of `table` whose text contains `text`.
pub fn row<'a>(table: &'a FunctionReport, text: &str) -> &'a LineReport {
    table
        .line_containing(text)
        .unwrap_or_else(|| panic!("no row containing {text:?} in\n{table}"))
}

/// (increment, peak, occurrences) of the row containing `text`.
pub fn figures(table: &FunctionReport, text: &str) -> (i64, u64, u64) {
    let row = row(table, text);
    (
        row.increment
            .unwrap_or_else(|| panic!("row {text:?} has no figures in\n{table}")),
        row.peak.unwrap(),
        row.occurrences,
    )
}
