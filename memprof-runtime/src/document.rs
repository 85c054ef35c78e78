//! The report as JSON: [`Report::to_json`]'s document, and the one that
//! `MEMPROF_JSON`'s file holds (see `json_file`), each with its summary;
//! a snapshot's, with its facts (`facts`); and the one reader of them all
//! (`read`). Above both `report` and `summary`, which it puts together.

mod facts;
mod read;

pub use facts::SnapshotFacts;
pub use read::{ReadError, ReportDocument};

use crate::report::{FunctionReport, Report};

/// `MEMPROF_JSON`'s document: `to_json`'s, and the run that wrote it.
#[derive(miniserde::Serialize)]
struct RunDocument<'a> {
    schema: u64,
    functions: &'a Vec<FunctionReport>,
    summary: crate::summary::Summary,
    run: &'a str,
}

/// What a run's earlier processes wrote to `MEMPROF_JSON`'s file; the
/// summary is made anew from the sum.
#[derive(miniserde::Deserialize)]
struct EarlierRun {
    schema: u64,
    functions: Vec<FunctionReport>,
    run: String,
}

/// What `to_json` writes: the report's fields after a schema version, so that
/// readers such as `mprof diff` can tell a document they do not understand.
#[derive(miniserde::Serialize)]
struct JsonDocument<'a> {
    schema: u64,
    functions: &'a Vec<FunctionReport>,
    summary: crate::summary::Summary,
}

/// A snapshot's document: `to_json`'s, then [`SnapshotFacts`]'s fields.
#[cfg(unix)]
#[derive(miniserde::Serialize)]
struct SnapshotDocument<'a> {
    schema: u64,
    functions: &'a Vec<FunctionReport>,
    summary: crate::summary::Summary,
    time: f64,
    uptime: f64,
    pid: u32,
    heap: u64,
    heap_high: u64,
    sample_mean: Option<u64>,
}

impl Report {
    /// The report as a snapshot of a running process (see `live`).
    #[cfg(unix)]
    pub(crate) fn to_json_snapshot(&self, facts: &SnapshotFacts) -> String {
        crate::text::json_escaped(miniserde::json::to_string(&SnapshotDocument {
            schema: Self::JSON_SCHEMA,
            functions: &self.functions,
            summary: self.summary(),
            time: facts.time,
            uptime: facts.uptime,
            pid: facts.pid,
            heap: facts.heap,
            heap_high: facts.heap_high,
            sample_mean: facts.sample_mean,
        }))
    }

    /// The version of the JSON that `to_json` writes, its `schema` field.
    /// It grows when a field changes meaning or goes away; added fields do
    /// not change it.
    pub const JSON_SCHEMA: u64 = 1;

    /// The report as a JSON document: `schema` ([`Report::JSON_SCHEMA`]),
    /// then the same fields as these structs; figures that are `None` are
    /// `null`.
    ///
    /// This is what `MEMPROF_JSON=path` writes at exit, and what
    /// `mprof diff` compares.
    ///
    /// ```
    /// #[memprof::profile]
    /// fn build() -> Vec<u8> {
    ///     vec![0u8; 100]
    /// }
    ///
    /// let v = build();
    /// let json = memprof::report().to_json();
    /// assert!(json.starts_with(r#"{"schema":1,"functions":[{"name":""#));
    /// assert!(json.contains(r#""calls":1"#));
    /// # drop(v);
    /// ```
    pub fn to_json(&self) -> String {
        crate::text::json_escaped(miniserde::json::to_string(&JsonDocument {
            schema: Self::JSON_SCHEMA,
            functions: &self.functions,
            summary: self.summary(),
        }))
    }

    /// The report in the JSON that `MEMPROF_JSON`'s file holds: `to_json`'s
    /// document with the run that wrote it (see `json_file`).
    pub(crate) fn to_json_of_run(&self, run: &str) -> String {
        crate::text::json_escaped(miniserde::json::to_string(&RunDocument {
            schema: Self::JSON_SCHEMA,
            functions: &self.functions,
            summary: self.summary(),
            run,
        }))
    }

    /// The report that `text` holds, if `to_json_of_run` wrote it for `run`.
    pub(crate) fn from_json_of_run(text: &str, run: &str) -> Option<Report> {
        let document: EarlierRun = miniserde::json::from_str(text).ok()?;
        (document.schema == Self::JSON_SCHEMA && document.run == run).then_some(Report {
            functions: document.functions,
        })
    }
}
