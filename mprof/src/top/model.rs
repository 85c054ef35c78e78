//! What `mprof top` shows, as data: a snapshot read from the program
//! (`Snapshot`), and each function's row (`FunctionRow`), whose rates come
//! from an earlier snapshot (the oldest of `window`'s) and, where Live is
//! sampled, with their standard error. Sorting and filtering are here too;
//! drawing is `view`'s.

use crate::error::Error;
use crate::printable::printable;
use memprof_runtime::{FunctionReport, LineReport, SnapshotFacts};
use std::collections::HashMap;

/// One snapshot of the program, as `mprof snapshot` writes it; or its
/// report at exit (`MEMPROF_JSON`), which has only the functions (and
/// zeros for the facts).
#[derive(Debug)]
pub struct Snapshot {
    pub functions: Vec<FunctionReport>,
    /// When it was taken and of which process, as the runtime writes them
    /// (all zero for a report at exit, which has none).
    pub facts: SnapshotFacts,
    /// For a report at exit: how the program ended, instead of the facts
    /// above.
    pub at_exit: Option<String>,
}

impl Snapshot {
    /// Reads a snapshot document through the one reader
    /// ([`crate::report::parse`]).
    pub fn parse(text: &str) -> Result<Snapshot, Error> {
        let mut document = crate::report::parse(text).map_err(|problem| {
            Error::Live(format!("cannot read the program's snapshot: {problem}"))
        })?;
        Ok(Snapshot {
            functions: std::mem::take(&mut document.report.functions),
            facts: document.snapshot.unwrap_or_default(),
            at_exit: None,
        })
    }
}

/// One function's row.
#[derive(Debug, Clone, PartialEq)]
pub struct FunctionRow {
    pub name: String,
    pub file: String,
    pub calls: u64,
    /// The highest peak of one call.
    pub peak: u64,
    /// Bytes its calls kept, over all of them: the `fn` row's increment;
    /// or, where the snapshot has them (`live`), the bytes its calls
    /// allocated that are still in use, whoever frees the rest.
    pub kept: i64,
    /// Growth of `kept` per minute since the earlier snapshot.
    pub kept_per_minute: Option<f64>,
    /// Where `kept` is a sampled Live estimate: the relative standard
    /// error of `kept_per_minute`, from the samples its growth holds
    /// ([`growth_error`]); `None` for exact figures or no growth.
    pub kept_per_minute_error: Option<f64>,
    /// `kept` is the Live figure: bytes in use (`MEMPROF_SITES`).
    pub live: bool,
    /// Allocations and bytes Live does not follow (memprof's tables had no
    /// room): `kept` may read low by what is still allocated of them.
    pub live_left_out: Option<(u64, u64)>,
    /// Allocations per second since the earlier snapshot.
    pub allocs_per_second: Option<f64>,
    /// The function's rows, for its line table.
    pub lines: Vec<LineFigures>,
}

/// One line of a function's table.
#[derive(Debug, Clone, PartialEq)]
pub struct LineFigures {
    pub line: u32,
    pub increment: Option<i64>,
    pub peak: Option<u64>,
    pub occurrences: u64,
    /// Bytes in use that the line allocated (`Live`), with sites.
    pub live: Option<u64>,
    pub contents: String,
}

impl From<&LineReport> for LineFigures {
    fn from(line: &LineReport) -> Self {
        LineFigures {
            line: line.line,
            increment: line.increment,
            peak: line.peak,
            occurrences: line.occurrences,
            live: line.in_use_bytes,
            contents: printable(&line.contents).into_owned(),
        }
    }
}

/// One snapshot's figures, as the window keeps them.
#[derive(Debug, Clone, Default)]
pub struct Mark {
    /// Seconds since the Unix epoch.
    pub time: f64,
    /// Per function (name, file): its kept or Live bytes, and allocations.
    pub figures: HashMap<(String, String), (i64, u64)>,
}

impl Mark {
    pub fn of(snapshot: &Snapshot) -> Mark {
        Mark {
            time: snapshot.facts.time,
            figures: snapshot
                .functions
                .iter()
                .map(|f| {
                    let (kept, _, allocs, _) = fn_figures(f);
                    ((f.name.clone(), f.file.clone()), (kept, allocs))
                })
                .collect(),
        }
    }
}

/// The rows of `now`, with rates against `before` (the previous snapshot,
/// if any).
pub fn rows(now: &Snapshot, before: Option<&Snapshot>) -> Vec<FunctionRow> {
    rows_since(now, before.map(Mark::of).as_ref())
}

/// The rows of `now`, with rates against `before`'s figures (the oldest
/// of the window's, if any).
pub fn rows_since(now: &Snapshot, before: Option<&Mark>) -> Vec<FunctionRow> {
    let seconds = before
        .map(|b| now.facts.time - b.time)
        .filter(|s| *s > 0.0 && s.is_finite());
    now.functions
        .iter()
        .map(|function| {
            let (kept, peak, allocs, live) = fn_figures(function);
            let key = (function.name.clone(), function.file.clone());
            let (kept_before, allocs_before) = before
                .and_then(|b| b.figures.get(&key).copied())
                .unwrap_or_default();
            let growth = kept - kept_before;
            let sampled = now.facts.sample_mean.filter(|_| live);
            // NOTE: the rows are what the terminal draws, and what
            // `--lines NAME` and the filter match: their texts printable.
            FunctionRow {
                name: printable(&function.name).into_owned(),
                file: printable(&function.file).into_owned(),
                calls: function.calls,
                peak,
                kept,
                kept_per_minute: seconds.map(|s| growth as f64 / s * 60.0),
                kept_per_minute_error: seconds
                    .and(sampled)
                    .and_then(|mean| growth_error(growth, block_size(function), mean)),
                live,
                live_left_out: function
                    .sites_left_out
                    .as_ref()
                    .filter(|l| l.unfollowed_allocations > 0 || l.unfollowed_bytes > 0)
                    .map(|l| (l.unfollowed_allocations, l.unfollowed_bytes)),
                allocs_per_second: seconds.map(|s| allocs.saturating_sub(allocs_before) as f64 / s),
                lines: function.lines.iter().map(LineFigures::from).collect(),
            }
        })
        .collect()
}

/// The average size of a function's blocks in use (its `fn` row's Live
/// over its allocations in use), if it has any.
fn block_size(function: &FunctionReport) -> Option<f64> {
    let row = function.fn_row()?;
    let (bytes, blocks) = (row.in_use_bytes?, row.in_use_allocations?);
    (blocks > 0).then(|| bytes as f64 / blocks as f64)
}

/// The relative standard error of a sampled Live's `growth` in bytes, for
/// blocks of `block` bytes sampled one per `mean` bytes on average.
///
/// Sampling is Poisson by bytes (the runtime's `sites::recorder`): a block
/// of `s` bytes is taken with probability `p = 1 - exp(-s / mean)` and
/// stands for `s / p` bytes (about `mean` for small blocks). A growth of
/// `g` bytes then holds about `n = g / (s / p)` samples, a Poisson count,
/// so its estimate's relative standard error is `1 / sqrt(n)`. `None`
/// where nothing grew (no sample says how far off a zero is).
pub fn growth_error(growth: i64, block: Option<f64>, mean: u64) -> Option<f64> {
    let mean = mean.max(1) as f64;
    let block = block.filter(|b| *b > 0.0 && b.is_finite()).unwrap_or(1.0);
    let weight = block / (1.0 - (-block / mean).exp());
    let samples = growth.unsigned_abs() as f64 / weight;
    (samples > 0.0).then(|| 1.0 / samples.sqrt())
}

/// A function's kept bytes (its bytes in use, where the snapshot has
/// them), highest call peak and allocations: its `fn` row's; and whether
/// the first is bytes in use.
fn fn_figures(function: &FunctionReport) -> (i64, u64, u64, bool) {
    match function.fn_row() {
        Some(row) => (
            row.in_use_bytes
                .map_or(row.increment.unwrap_or(0), |b| b as i64),
            row.peak.unwrap_or(0),
            row.allocations.unwrap_or(0),
            row.in_use_bytes.is_some(),
        ),
        None => (0, 0, 0, false),
    }
}

/// What the rows are sorted by, largest first (names in order).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortKey {
    Kept,
    Growth,
    Peak,
    Calls,
    Allocs,
    Name,
}

impl SortKey {
    pub const ALL: [SortKey; 6] = [
        SortKey::Kept,
        SortKey::Growth,
        SortKey::Peak,
        SortKey::Calls,
        SortKey::Allocs,
        SortKey::Name,
    ];

    pub fn name(self) -> &'static str {
        match self {
            SortKey::Kept => "kept",
            SortKey::Growth => "kept/min",
            SortKey::Peak => "peak",
            SortKey::Calls => "calls",
            SortKey::Allocs => "allocs/s",
            SortKey::Name => "name",
        }
    }

    /// The key after this one, for the sort key.
    pub fn next(self) -> SortKey {
        let at = Self::ALL.iter().position(|k| *k == self).unwrap_or(0);
        Self::ALL[(at + 1) % Self::ALL.len()]
    }
}

/// `rows` whose name contains `filter`, sorted by `key`.
pub fn arrange(mut rows: Vec<FunctionRow>, key: SortKey, filter: &str) -> Vec<FunctionRow> {
    rows.retain(|r| r.name.contains(filter));
    let rate = |r: Option<f64>| r.unwrap_or(f64::NEG_INFINITY);
    rows.sort_by(|a, b| {
        let order = match key {
            SortKey::Kept => b.kept.cmp(&a.kept),
            SortKey::Growth => rate(b.kept_per_minute).total_cmp(&rate(a.kept_per_minute)),
            SortKey::Peak => b.peak.cmp(&a.peak),
            SortKey::Calls => b.calls.cmp(&a.calls),
            SortKey::Allocs => rate(b.allocs_per_second).total_cmp(&rate(a.allocs_per_second)),
            SortKey::Name => std::cmp::Ordering::Equal,
        };
        order.then_with(|| a.name.cmp(&b.name))
    });
    rows
}

#[cfg(test)]
pub mod tests {
    use super::*;

    /// A snapshot at `time` of functions (name, calls, kept, peak, allocs).
    pub fn snapshot(time: f64, functions: &[(&str, u64, i64, u64, u64)]) -> Snapshot {
        let functions: Vec<serde_json::Value> = functions
            .iter()
            .map(|&(name, calls, kept, peak, allocs)| {
                serde_json::json!({"name": name, "file": "src/app.rs", "calls": calls,
                "lines": [
                    {"line": 1, "increment": null, "peak": null, "contents": "#[profile]"},
                    {"line": 2, "increment": kept, "peak": peak, "allocations": allocs,
                     "occurrences": calls, "contents": "fn f() {"},
                    {"line": 3, "increment": kept, "peak": peak, "allocations": allocs,
                     "occurrences": calls, "contents": "    cache.push(entry);"},
                ]})
            })
            .collect();
        let document = serde_json::json!({"schema": 1, "functions": functions, "time": time,
            "uptime": time - 1000.0, "pid": 42, "heap": 3 << 20, "heap_high": 5 << 20});
        Snapshot::parse(&document.to_string()).unwrap()
    }

    #[test]
    fn rates_come_from_the_previous_snapshot() {
        let before = snapshot(1000.0, &[("app::grow", 10, 1000, 100, 10)]);
        let now = snapshot(
            1002.0,
            &[("app::grow", 20, 5000, 400, 30), ("app::new", 1, 8, 8, 1)],
        );
        let rows = rows(&now, Some(&before));
        assert_eq!(rows[0].kept_per_minute, Some(4000.0 / 2.0 * 60.0));
        assert_eq!(rows[0].allocs_per_second, Some(10.0));
        // New since: everything it has is growth.
        assert_eq!(rows[1].kept_per_minute, Some(8.0 / 2.0 * 60.0));
        assert_eq!(super::rows(&now, None)[0].kept_per_minute, None);
    }

    #[test]
    fn rows_are_filtered_and_sorted_largest_first() {
        let now = snapshot(
            1.0,
            &[
                ("app::a", 5, 10, 900, 1),
                ("app::b", 50, 300, 20, 2),
                ("lib::c", 1, 200, 1, 3),
            ],
        );
        let names = |key, filter| -> Vec<String> {
            arrange(rows(&now, None), key, filter)
                .into_iter()
                .map(|r| r.name)
                .collect()
        };
        assert_eq!(names(SortKey::Kept, ""), ["app::b", "lib::c", "app::a"]);
        assert_eq!(names(SortKey::Peak, "app"), ["app::a", "app::b"]);
        assert_eq!(names(SortKey::Calls, ""), ["app::b", "app::a", "lib::c"]);
        assert_eq!(names(SortKey::Name, ""), ["app::a", "app::b", "lib::c"]);
        assert_eq!(SortKey::Name.next(), SortKey::Kept);
    }
}
