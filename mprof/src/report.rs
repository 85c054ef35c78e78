//! A run's report as text: the summary of its functions, highest peak
//! first, then the tables of the ones with the highest peaks. What
//! `cargo memprof` prints at the end of a run, and what `mprof report FILE`
//! prints from a saved report (`MEMPROF_JSON`, `cargo memprof --json`, a
//! snapshot).

use crate::error::Error;
use memprof_runtime::{FunctionReport, Report};
use std::io::Write;
use std::path::Path;

/// How many functions the summary lists; the JSON keeps them all.
pub const SUMMARY_ROWS: usize = 20;

#[derive(miniserde::Deserialize)]
struct Document {
    functions: Vec<FunctionReport>,
}

/// A report document's functions (`MEMPROF_JSON`'s schema), or `None` for
/// a text that is not one.
pub fn parse(text: &str) -> Option<Report> {
    let document: Document = miniserde::json::from_str(text).ok()?;
    Some(Report {
        functions: document.functions,
    })
}

/// Reads the report at `path`, refused as `mprof diff` refuses one it
/// cannot read (one line, exit 2).
pub fn read(path: &Path) -> Result<Report, Error> {
    crate::diff::input::read(path)?;
    let text = std::fs::read_to_string(path).map_err(|e| Error::io("read", path, e))?;
    parse(&text).ok_or_else(|| Error::Report {
        path: path.to_path_buf(),
        problem: "not a memprof report".to_owned(),
    })
}

/// `report`'s summary (its first [`SUMMARY_ROWS`] functions; `kept` says
/// where the rest are), then the tables of the `top` functions with the
/// highest peaks.
pub fn text(report: &Report, top: usize, kept: &str) -> String {
    let mut summary = report.summary();
    let tables: Vec<&FunctionReport> = summary
        .functions
        .iter()
        .take(top)
        .filter_map(|s| {
            report
                .functions
                .iter()
                .find(|f| f.name == s.name && f.file == s.file)
        })
        .collect();
    let ran = summary.functions.len();
    summary.functions.truncate(SUMMARY_ROWS);
    let summary = summary.to_string();
    let mut out = match summary.split_once('\n') {
        // The header counts the rows it holds: it is told them all.
        Some((_, rest)) if ran > SUMMARY_ROWS => format!(
            "Summary: {ran} functions ran, highest peak first (the first {SUMMARY_ROWS}; {kept})\n{rest}"
        ),
        _ => summary,
    };
    for function in tables {
        out.push('\n');
        out.push_str(&function.to_string());
    }
    out
}

/// `mprof report FILE --top N`.
pub fn report(path: &Path, top: usize) -> Result<(), Error> {
    let text = text(&read(path)?, top, "the JSON keeps them all");
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        // A reader that stopped early (`| head`) is no error.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        result => result.map_err(|e| Error::io("write", Path::new("stdout"), e)),
    }
}
