//! Reading a report back: the one reader of the documents that `document`
//! writes (`to_json`'s, `MEMPROF_JSON`'s file, a snapshot), into the one
//! model, [`Report`]. It checks the document as it reads it (a `functions`
//! list, the schema version, sizes a heap can hold), so that a document
//! from another memprof fails with a reason instead of a field error.
//!
//! It reads through serde, from whichever JSON parser the reader brings
//! (mprof's is serde_json, whose errors say where the text went wrong):
//! the runtime itself links no JSON parser that would reach its users'
//! crates (see the note on [`Report`]).

use super::facts::SnapshotFacts;
use crate::report::{FunctionReport, Report};
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use std::fmt;

/// The oldest schema this reader reads. Schema versions from here to
/// [`Report::JSON_SCHEMA`] read into the same model: fields added over a
/// schema's life are `Option`s (or `#[serde(default)]`), absent in its
/// older documents, and a newer schema says here how an older one's fields
/// map onto it. Schema 1 is the only one so far.
const OLDEST_JSON_SCHEMA: u64 = 1;

/// The most bytes a figure can hold: no heap, and no allocation, is larger
/// than `isize::MAX` bytes.
const MOST_BYTES: u64 = isize::MAX as u64;

/// A report document as read and checked by [`ReportDocument::read`].
#[derive(Debug, Clone, PartialEq)]
pub struct ReportDocument {
    /// The document's schema version, from the oldest this reader reads to
    /// [`Report::JSON_SCHEMA`].
    pub schema: u64,
    /// Its functions, as the process that wrote it reported them. Texts
    /// (names, files, line contents, frames) are as written: escape them
    /// with [`printable`](crate::text::printable) where they are shown.
    pub report: Report,
    /// What a snapshot of a running process adds (when, of which process);
    /// `None` for a report written at exit or by `to_json`.
    pub snapshot: Option<SnapshotFacts>,
}

/// Why a document is not a report this reader reads; its `Display` is the
/// reason as mprof prints it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadError {
    /// The document has no `functions` list: not memprof's at all.
    NoFunctions,
    /// No `schema` field: written before memprof wrote one.
    NoSchema,
    /// A `schema` that is no version number, as the document holds it.
    SchemaNotANumber(String),
    /// A schema older than any this reader reads.
    OlderSchema(u64),
    /// A schema newer than [`Report::JSON_SCHEMA`]: written by a newer
    /// memprof.
    NewerSchema(u64),
    /// A figure no heap can hold: the file was edited or damaged.
    TooLarge {
        /// The function whose row holds it, as written.
        function: String,
        /// The row's line.
        line: u32,
        /// Which figure (`peak`, `GPU peak`, `increment`).
        what: &'static str,
        /// Its bytes.
        bytes: u64,
    },
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let current = Report::JSON_SCHEMA;
        let again = "record it again with this version of memprof";
        match self {
            ReadError::NoFunctions => f.write_str(
                "not a memprof report (no `functions` list; write one with MEMPROF_JSON=FILE)",
            ),
            ReadError::NoSchema => write!(
                f,
                "no schema version: written by a memprof older than this mprof \
                 (schema {current}); {again}"
            ),
            ReadError::SchemaNotANumber(value) => write!(
                f,
                "not a memprof report (schema is {value}, not a version number)"
            ),
            ReadError::OlderSchema(v) => write!(
                f,
                "schema {v} is older than this mprof reads ({current}); {again}"
            ),
            ReadError::NewerSchema(v) => write!(
                f,
                "schema {v} is newer than this mprof reads ({current}); update mprof"
            ),
            ReadError::TooLarge {
                function,
                line,
                what,
                bytes,
            } => write!(
                f,
                "not a memprof report ({} line {line}: {what} of {bytes} B, more than any \
                 heap can hold)",
                crate::text::printable(function)
            ),
        }
    }
}

impl std::error::Error for ReadError {}

impl ReportDocument {
    /// Reads a report document from `deserializer` (a JSON parser's):
    /// the outer error is the parser's (not JSON, or a field of the wrong
    /// type), the inner one a document this reader refuses. Fields it does
    /// not know, as a newer memprof adds them, are ignored.
    ///
    /// The checks come in this order: a `functions` list, then the schema
    /// (checked before the functions are read where it comes first, as
    /// memprof writes it; see [`refusal`](ReportDocument::refusal) for a
    /// document whose fields come in another order), then sizes.
    pub fn read<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Result<ReportDocument, ReadError>, D::Error> {
        let raw = deserializer.deserialize_any(DocumentVisitor { outline: false })?;
        if !raw.functions_listed {
            return Ok(Err(ReadError::NoFunctions));
        }
        let schema = match raw
            .schema
            .map(check_schema)
            .unwrap_or(Err(ReadError::NoSchema))
        {
            Ok(schema) => schema,
            Err(refused) => return Ok(Err(refused)),
        };
        let report = Report {
            functions: raw.functions,
        };
        if let Err(refused) = check_sizes(&report) {
            return Ok(Err(refused));
        }
        let snapshot = raw.facts.snapshot();
        Ok(Ok(ReportDocument {
            schema,
            report,
            snapshot,
        }))
    }
}

impl ReportDocument {
    /// Why [`read`](ReportDocument::read) would refuse the document, from
    /// its outline alone (its functions walked over unread): for a reader
    /// whose `read` failed on a field, to say that the document is of a
    /// schema it does not read where it is, whatever its fields' order.
    /// `None` where the outline is one it reads.
    pub fn refusal<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<ReadError>, D::Error> {
        let raw = deserializer.deserialize_any(DocumentVisitor { outline: true })?;
        if !raw.functions_listed {
            return Ok(Some(ReadError::NoFunctions));
        }
        Ok(raw
            .schema
            .map(check_schema)
            .unwrap_or(Err(ReadError::NoSchema))
            .err())
    }
}

/// Refuses schemas outside the ones this reader reads.
fn check_schema(schema: Schema) -> Result<u64, ReadError> {
    match schema {
        Schema::Version(v) if v > Report::JSON_SCHEMA => Err(ReadError::NewerSchema(v)),
        Schema::Version(v) if v < OLDEST_JSON_SCHEMA => Err(ReadError::OlderSchema(v)),
        Schema::Version(v) => Ok(v),
        Schema::Other(value) => Err(ReadError::SchemaNotANumber(value)),
    }
}

/// Refuses figures that no heap can hold (a peak of 2^63 bytes printed as
/// `8589934592.0 GiB`).
fn check_sizes(report: &Report) -> Result<(), ReadError> {
    for function in &report.functions {
        for line in &function.lines {
            let figures = [
                ("peak", line.peak),
                ("GPU peak", line.gpu_peak),
                ("increment", line.increment.map(i64::unsigned_abs)),
            ];
            for (what, value) in figures {
                if let Some(bytes) = value.filter(|v| *v > MOST_BYTES) {
                    return Err(ReadError::TooLarge {
                        function: function.name.clone(),
                        line: line.line,
                        what,
                        bytes,
                    });
                }
            }
        }
    }
    Ok(())
}

/// A document's fields as read, before they are checked.
#[derive(Default)]
struct RawDocument {
    /// `None` where the document has none (or `null`).
    schema: Option<Schema>,
    functions_listed: bool,
    functions: Vec<FunctionReport>,
    facts: RawFacts,
}

/// A snapshot's fields, each where present.
#[derive(Default)]
struct RawFacts {
    time: Option<f64>,
    uptime: Option<f64>,
    pid: Option<u32>,
    heap: Option<u64>,
    heap_high: Option<u64>,
    sample_mean: Option<u64>,
}

impl RawFacts {
    /// The facts, where the document is a snapshot (it has them all but
    /// `sample_mean`, which may be `null`).
    fn snapshot(&self) -> Option<SnapshotFacts> {
        Some(SnapshotFacts {
            time: self.time?,
            uptime: self.uptime?,
            pid: self.pid?,
            heap: self.heap?,
            heap_high: self.heap_high?,
            sample_mean: self.sample_mean,
        })
    }
}

/// A document's `schema` value: a version, or what it holds instead.
enum Schema {
    Version(u64),
    Other(String),
}

/// Reads a document's fields; only its outline (schema, whether it has a
/// `functions` list) where `outline`.
struct DocumentVisitor {
    outline: bool,
}

impl<'de> Visitor<'de> for DocumentVisitor {
    type Value = RawDocument;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a memprof report")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawDocument, A::Error> {
        let mut raw = RawDocument::default();
        // Set once the schema is one this reader refuses: the rest of the
        // document, another memprof's, is then only walked over.
        let mut refused = self.outline;
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "schema" => {
                    let schema = map.next_value::<Option<SchemaValue>>()?.map(|s| s.0);
                    refused |= !matches!(schema, Some(Schema::Version(v)) if (OLDEST_JSON_SCHEMA..=Report::JSON_SCHEMA).contains(&v));
                    raw.schema = schema;
                }
                "functions" => {
                    let list = map.next_value_seed(FunctionList { skip: refused })?;
                    raw.functions_listed = list.is_some();
                    raw.functions = list.unwrap_or_default();
                }
                _ if refused => {
                    map.next_value::<IgnoredAny>()?;
                }
                "time" => raw.facts.time = map.next_value()?,
                "uptime" => raw.facts.uptime = map.next_value()?,
                "pid" => raw.facts.pid = map.next_value()?,
                "heap" => raw.facts.heap = map.next_value()?,
                "heap_high" => raw.facts.heap_high = map.next_value()?,
                "sample_mean" => raw.facts.sample_mean = map.next_value()?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(raw)
    }

    // Any other value is a document without a `functions` list.
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<RawDocument, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(RawDocument::default())
    }

    fn visit_bool<E>(self, _: bool) -> Result<RawDocument, E> {
        Ok(RawDocument::default())
    }

    fn visit_i64<E>(self, _: i64) -> Result<RawDocument, E> {
        Ok(RawDocument::default())
    }

    fn visit_u64<E>(self, _: u64) -> Result<RawDocument, E> {
        Ok(RawDocument::default())
    }

    fn visit_f64<E>(self, _: f64) -> Result<RawDocument, E> {
        Ok(RawDocument::default())
    }

    fn visit_str<E>(self, _: &str) -> Result<RawDocument, E> {
        Ok(RawDocument::default())
    }

    fn visit_unit<E>(self) -> Result<RawDocument, E> {
        Ok(RawDocument::default())
    }
}

/// The `functions` value: `Some` list (empty where `skip`, walked over
/// unread), or `None` where it is no list.
struct FunctionList {
    skip: bool,
}

impl<'de> de::DeserializeSeed<'de> for FunctionList {
    type Value = Option<Vec<FunctionReport>>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for FunctionList {
    type Value = Option<Vec<FunctionReport>>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of functions")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut functions = Vec::new();
        if self.skip {
            while seq.next_element::<IgnoredAny>()?.is_some() {}
        } else {
            while let Some(function) = seq.next_element::<FunctionReport>()? {
                functions.push(function);
            }
        }
        Ok(Some(functions))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(None)
    }

    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
}

/// A `schema` value, any JSON value read as [`Schema`]; `null` is none
/// (read through `Option`).
struct SchemaValue(Schema);

impl<'de> de::Deserialize<'de> for SchemaValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(SchemaVisitor)
    }
}

struct SchemaVisitor;

impl<'de> Visitor<'de> for SchemaVisitor {
    type Value = SchemaValue;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a schema version")
    }

    fn visit_u64<E>(self, v: u64) -> Result<SchemaValue, E> {
        Ok(SchemaValue(Schema::Version(v)))
    }

    fn visit_i64<E>(self, v: i64) -> Result<SchemaValue, E> {
        Ok(SchemaValue(match u64::try_from(v) {
            Ok(v) => Schema::Version(v),
            Err(_) => Schema::Other(v.to_string()),
        }))
    }

    fn visit_f64<E>(self, v: f64) -> Result<SchemaValue, E> {
        Ok(SchemaValue(Schema::Other(format!("{v:?}"))))
    }

    fn visit_bool<E>(self, v: bool) -> Result<SchemaValue, E> {
        Ok(SchemaValue(Schema::Other(v.to_string())))
    }

    fn visit_str<E>(self, v: &str) -> Result<SchemaValue, E> {
        Ok(SchemaValue(Schema::Other(format!(
            "\"{}\"",
            crate::text::printable(v)
        ))))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<SchemaValue, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(SchemaValue(Schema::Other("a list".to_owned())))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<SchemaValue, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(SchemaValue(Schema::Other("an object".to_owned())))
    }
}
