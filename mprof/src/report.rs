//! A run's report as text: the summary of its functions, highest peak
//! first, then the tables of the ones with the highest peaks. What
//! `cargo memprof` prints at the end of a run, and what `mprof report FILE`
//! prints from a saved report (`MEMPROF_JSON`, `cargo memprof --json`, a
//! snapshot).

use crate::error::{Error, describe};
use memprof_runtime::{FunctionReport, Report, ReportDocument};
use std::io::Write;
use std::path::Path;

/// How many functions the summary lists; the JSON keeps them all.
pub const SUMMARY_ROWS: usize = 20;

/// The report document `text` holds (`MEMPROF_JSON`'s schema, or a
/// snapshot's), read once by the runtime's one reader
/// ([`ReportDocument::read`]) through serde_json, whose errors say where
/// the text went wrong; or why it is not one, as mprof says it.
pub fn parse(text: &str) -> Result<ReportDocument, String> {
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let read = ReportDocument::read(&mut deserializer).and_then(|document| {
        deserializer.end()?;
        Ok(document)
    });
    match read {
        Ok(document) => document.map_err(|refused| refused.to_string()),
        Err(e) if e.is_data() => {
            // A field of the wrong type, unless the document is of a
            // schema this mprof does not read, its `schema` after its
            // functions (a writer other than memprof's).
            let outline = ReportDocument::refusal(&mut serde_json::Deserializer::from_str(text));
            match outline {
                Ok(Some(refused)) => Err(refused.to_string()),
                _ => Err(format!("not a memprof report ({e})")),
            }
        }
        Err(e) => Err(format!("not JSON ({e})")),
    }
}

/// Reads the document at `path`, refused in one line (exit 2) where it
/// cannot be read: every command that reads a report file reads it here.
pub fn read_document(path: &Path) -> Result<ReportDocument, Error> {
    let fail = |problem: String| Error::Report {
        path: path.to_path_buf(),
        problem,
    };
    let text = std::fs::read_to_string(path).map_err(|e| fail(describe(&e)))?;
    parse(&text).map_err(fail)
}

/// The report at `path` (see [`read_document`]).
pub fn read(path: &Path) -> Result<Report, Error> {
    read_document(path).map(|document| document.report)
}

/// `report`'s summary (its first [`SUMMARY_ROWS`] functions; `kept` says
/// where the rest are), then the tables of the `top` functions in its
/// order (highest peak, or most Live where the report has it).
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
    let order = summary.order();
    summary.functions.truncate(SUMMARY_ROWS);
    let summary = summary.to_string();
    let mut out = match summary.split_once('\n') {
        // The header counts the rows it holds: it is told them all.
        Some((_, rest)) if ran > SUMMARY_ROWS => format!(
            "Summary: {ran} functions ran, {} (the first {SUMMARY_ROWS}; {kept})\n{rest}",
            order
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

#[cfg(test)]
mod tests {
    /// A report of three functions (name, peak, Live): `None` Live where
    /// sites were not recorded.
    fn report(functions: &[(&str, u64, Option<u64>)]) -> memprof_runtime::Report {
        let functions: Vec<serde_json::Value> = functions
            .iter()
            .map(|&(name, peak, live)| {
                serde_json::json!({"name": name, "file": "src/svc.rs", "calls": 1, "running": 0, "lines": [
                    {"line": 1, "increment": null, "peak": null, "occurrences": 0,
                     "contents": "#[profile]"},
                    {"line": 2, "increment": 0, "peak": peak, "occurrences": 1,
                     "in_use_bytes": live, "contents": "fn f() {"},
                ]})
            })
            .collect();
        let document = serde_json::json!({"schema": 1, "functions": functions});
        super::parse(&document.to_string()).unwrap().report
    }

    fn order(report: &memprof_runtime::Report) -> (&'static str, Vec<String>) {
        let summary = report.summary();
        let names = summary.functions.iter().map(|f| f.name.clone()).collect();
        (summary.order(), names)
    }

    #[test]
    fn a_summary_with_live_ranks_by_live_and_one_without_by_peak() {
        let with = report(&[
            ("svc::parse", 64 << 10, Some(0)),
            ("svc::handle_order", 1024, Some(3 << 20)),
            ("svc::cache", 4096, Some(3 << 20)),
        ]);
        // Live first (3 MiB, 3 MiB, 0), a tie by peak.
        assert_eq!(
            order(&with),
            (
                "most Live first",
                vec![
                    "svc::cache".into(),
                    "svc::handle_order".into(),
                    "svc::parse".into()
                ]
            )
        );
        let text = super::text(&with, 0, "");
        assert_eq!(
            text.lines().next(),
            Some("Summary: 3 functions ran, most Live first")
        );
        let without = report(&[
            ("svc::parse", 64 << 10, None),
            ("svc::handle_order", 1024, None),
            ("svc::cache", 4096, None),
        ]);
        assert_eq!(
            order(&without),
            (
                "highest peak first",
                vec![
                    "svc::parse".into(),
                    "svc::cache".into(),
                    "svc::handle_order".into()
                ]
            )
        );
    }
}
