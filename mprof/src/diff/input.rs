//! Reading one run's report: the JSON that `MEMPROF_JSON` and
//! `Report::to_json` write, checked for its schema version before its
//! fields are read, so that a report from another memprof fails with a
//! reason instead of a confusing field error.

use crate::error::{Error, describe};
use memprof_runtime::Report;
use serde::Deserialize;
use std::path::Path;

/// One run's report: what `mprof diff` reads of it. Other fields are ignored.
#[derive(Debug, Deserialize)]
pub struct RunReport {
    pub functions: Vec<FunctionRun>,
}

/// One profiled function of a run. Its texts are read [`printable`]
/// (control characters escaped), as every output shows them.
///
/// [`printable`]: crate::printable
#[derive(Debug, Deserialize)]
pub struct FunctionRun {
    #[serde(deserialize_with = "crate::printable::deserialize")]
    pub name: String,
    #[serde(deserialize_with = "crate::printable::deserialize")]
    pub file: String,
    pub calls: u64,
    pub lines: Vec<LineRun>,
}

/// One row of a function's table; figures are `None` on rows that held no
/// statement that ran.
#[derive(Debug, Deserialize)]
pub struct LineRun {
    pub line: u32,
    pub increment: Option<i64>,
    pub peak: Option<u64>,
    /// Absent before device allocations were counted; `None` without them.
    #[serde(default)]
    pub gpu_peak: Option<u64>,
    /// Absent before allocations were counted.
    #[serde(default)]
    pub allocations: Option<u64>,
    /// How many times the row's statements ran, over the calls.
    #[serde(default)]
    pub occurrences: u64,
    #[serde(deserialize_with = "crate::printable::deserialize")]
    pub contents: String,
}

impl FunctionRun {
    /// The `fn` row: the first with figures, whose figures are the whole
    /// call's (as memprof's tables show them). `None` if no call ran.
    pub fn fn_row(&self) -> Option<&LineRun> {
        self.lines.iter().find(|l| l.increment.is_some())
    }
}

/// Reads and checks the report at `path`.
pub fn read(path: &Path) -> Result<RunReport, Error> {
    let fail = |problem: String| Error::Report {
        path: path.to_path_buf(),
        problem,
    };
    let text = std::fs::read_to_string(path).map_err(|e| fail(describe(&e)))?;
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| fail(format!("not JSON ({e})")))?;
    if !value.get("functions").is_some_and(|f| f.is_array()) {
        return Err(fail(
            "not a memprof report (no `functions` list; write one with MEMPROF_JSON=FILE)"
                .to_owned(),
        ));
    }
    check_schema(value.get("schema")).map_err(fail)?;
    serde_json::from_value(value).map_err(|e| fail(format!("not a memprof report ({e})")))
}

/// Refuses any schema but the one this build's runtime writes.
fn check_schema(schema: Option<&serde_json::Value>) -> Result<(), String> {
    let current = Report::JSON_SCHEMA;
    let again = "record it again with this version of memprof";
    match schema {
        None => Err(format!(
            "no schema version: written by a memprof older than this mprof \
             (schema {current}); {again}"
        )),
        Some(value) => match value.as_u64() {
            Some(v) if v == current => Ok(()),
            Some(v) if v < current => Err(format!(
                "schema {v} is older than this mprof reads ({current}); {again}"
            )),
            Some(v) => Err(format!(
                "schema {v} is newer than this mprof reads ({current}); update mprof"
            )),
            None => Err(format!(
                "not a memprof report (schema is {value}, not a version number)"
            )),
        },
    }
}
