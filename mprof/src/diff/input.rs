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
    /// What its sites and Live leave out (the runtime's `SitesLeftOut`);
    /// absent where they leave out nothing, or before memprof said so.
    #[serde(default)]
    pub sites_left_out: Option<LeftOutRun>,
}

/// Of the runtime's `SitesLeftOut`: the allocations Live does not follow.
#[derive(Debug, Default, Deserialize)]
pub struct LeftOutRun {
    #[serde(default)]
    pub unfollowed_allocations: u64,
    #[serde(default)]
    pub unfollowed_bytes: u64,
}

/// One row of a function's table; figures are `None` on rows that held no
/// statement that ran.
#[derive(Debug, Deserialize)]
pub struct LineRun {
    pub line: u32,
    /// The heap after the line, highest over its executions (`mprof html`'s
    /// Mem usage).
    #[serde(default)]
    pub mem_usage: Option<i64>,
    pub increment: Option<i64>,
    pub peak: Option<u64>,
    /// Absent before device allocations were counted; `None` without them.
    #[serde(default)]
    pub gpu_peak: Option<u64>,
    /// Absent before allocations were counted.
    #[serde(default)]
    pub allocations: Option<u64>,
    /// Bytes allocated, freed or not; absent before they were counted.
    #[serde(default)]
    pub allocated_bytes: Option<u64>,
    /// How many times the row's statements ran, over the calls.
    #[serde(default)]
    pub occurrences: u64,
    /// Bytes the line allocated that were still in use when the report was
    /// taken (`Live`), and their allocations; `None` without sites, or
    /// before memprof kept them.
    #[serde(default)]
    pub in_use_bytes: Option<u64>,
    #[serde(default)]
    pub in_use_allocations: Option<u64>,
    /// A framework's pool (`memprof::watch_pool`): bytes in its live tensors
    /// after the line (highest), their change over it (summed), and bytes
    /// its pools held from the driver (highest); `None` where none was read.
    #[serde(default)]
    pub pool_allocated: Option<u64>,
    #[serde(default)]
    pub pool_increment: Option<i64>,
    #[serde(default)]
    pub pool_reserved: Option<u64>,
    #[serde(deserialize_with = "crate::printable::deserialize")]
    pub contents: String,
    /// Where the line's allocations came from, most bytes allocated first
    /// (`MEMPROF_SITES`); `None` when sites were not recorded, or the line
    /// never ran.
    #[serde(default)]
    pub sites: Option<Vec<SiteRun>>,
    /// The profiled functions called while the line ran, from the call
    /// edges memprof records; absent before it recorded them.
    #[serde(default)]
    pub calls: Option<Vec<CallRun>>,
}

/// A profiled function that a line called, as memprof's `LineCall` writes
/// it; its name read [`printable`].
///
/// [`printable`]: crate::printable
#[derive(Debug, Deserialize)]
pub struct CallRun {
    #[serde(deserialize_with = "crate::printable::deserialize")]
    pub function: String,
    pub calls: u64,
    pub allocated_bytes: u64,
}

/// One allocation site of a line: a call stack below it and what was
/// allocated through it, as memprof's `Site` writes it.
#[derive(Debug, Deserialize)]
pub struct SiteRun {
    pub allocations: u64,
    /// Bytes allocated through the stack, freed or not.
    pub allocated_bytes: u64,
    /// Of those, bytes not freed when the line ended.
    pub live_bytes: i64,
    /// Of those, allocations and bytes still in use when the report was
    /// taken (`Live`); absent before memprof kept them.
    #[serde(default)]
    pub in_use_allocations: Option<u64>,
    #[serde(default)]
    pub in_use_bytes: Option<u64>,
    /// The figures are scaled from a sample (`MEMPROF_SITES=sample`).
    pub estimated: bool,
    /// Innermost first; empty where the line allocated itself.
    pub frames: Vec<SiteFrameRun>,
}

/// One frame of a [`SiteRun`]'s stack, its texts read [`printable`].
///
/// [`printable`]: crate::printable
#[derive(Debug, Deserialize)]
pub struct SiteFrameRun {
    #[serde(deserialize_with = "crate::printable::deserialize")]
    pub function: String,
    #[serde(default, deserialize_with = "crate::printable::deserialize_option")]
    pub file: Option<String>,
    #[serde(default)]
    pub line: Option<u32>,
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
    // PERF: the outline first, then the report straight from the text: no
    // tree of the whole file (a report of 40,000 functions is 23 MB).
    let outline = match serde_json::from_str::<Outline>(&text) {
        Ok(outline) => outline,
        Err(e) if e.is_data() => Outline::default(),
        Err(e) => return Err(fail(format!("not JSON ({e})"))),
    };
    if !outline.functions.is_some_and(|f| f.0) {
        return Err(fail(
            "not a memprof report (no `functions` list; write one with MEMPROF_JSON=FILE)"
                .to_owned(),
        ));
    }
    check_schema(outline.schema.as_ref()).map_err(fail)?;
    let report: RunReport =
        serde_json::from_str(&text).map_err(|e| fail(format!("not a memprof report ({e})")))?;
    report.check_sizes().map_err(fail)?;
    Ok(report)
}

/// The most bytes a figure can hold: no heap, and no allocation, is larger
/// than `isize::MAX` bytes.
const MOST_BYTES: u64 = isize::MAX as u64;

impl RunReport {
    /// Refuses figures that no heap can hold (a peak of 2^63 bytes printed
    /// as `8589934592.0 GiB`): the file was edited or damaged.
    fn check_sizes(&self) -> Result<(), String> {
        for function in &self.functions {
            for line in &function.lines {
                let figures = [
                    ("peak", line.peak),
                    ("GPU peak", line.gpu_peak),
                    ("increment", line.increment.map(i64::unsigned_abs)),
                ];
                for (what, value) in figures {
                    if let Some(value) = value.filter(|v| *v > MOST_BYTES) {
                        return Err(format!(
                            "not a memprof report ({} line {}: {what} of {value} B, more than \
                             any heap can hold)",
                            function.name, line.line
                        ));
                    }
                }
            }
        }
        Ok(())
    }
}

/// What is checked of a report before its fields are read.
#[derive(Debug, Default, Deserialize)]
struct Outline {
    schema: Option<serde_json::Value>,
    functions: Option<IsList>,
}

/// Whether a value is a list, read without keeping it.
#[derive(Debug)]
struct IsList(bool);

impl<'de> Deserialize<'de> for IsList {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = IsList;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("any value")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<IsList, A::Error> {
                while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
                Ok(IsList(true))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<IsList, A::Error> {
                while map
                    .next_entry::<serde::de::IgnoredAny, serde::de::IgnoredAny>()?
                    .is_some()
                {}
                Ok(IsList(false))
            }
            fn visit_bool<E>(self, _: bool) -> Result<IsList, E> {
                Ok(IsList(false))
            }
            fn visit_i64<E>(self, _: i64) -> Result<IsList, E> {
                Ok(IsList(false))
            }
            fn visit_u64<E>(self, _: u64) -> Result<IsList, E> {
                Ok(IsList(false))
            }
            fn visit_f64<E>(self, _: f64) -> Result<IsList, E> {
                Ok(IsList(false))
            }
            fn visit_str<E>(self, _: &str) -> Result<IsList, E> {
                Ok(IsList(false))
            }
            fn visit_unit<E>(self) -> Result<IsList, E> {
                Ok(IsList(false))
            }
        }
        deserializer.deserialize_any(Visitor)
    }
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
