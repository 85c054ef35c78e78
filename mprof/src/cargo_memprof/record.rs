//! The record of earlier runs (`<target-dir>/memprof/record-run.json`, and
//! `record-test.json` for `cargo memprof test`, whose calls differ): for
//! each function `cargo memprof` annotated, the hash of its tokens as
//! written and whether the heap moved in its calls (it allocated, freed,
//! or called code that did) in any run since it last changed. The next run
//! leaves the functions that moved nothing as written, so that they
//! compile and inline as in the plain build; a function new or changed
//! since (another hash) is profiled again, as is one the record never saw
//! called, and so are the callers of a new or changed one (see
//! [`callers`](super::callers)).
//!
//! Functions are known by path and hash together: the methods of several
//! impls of one generic trait for one type share a path
//! (`Allocations::index` of `impl Index<A>` and of `impl Index<B>`), and
//! each keeps its own entry, so that a later run annotates the same
//! functions as the one before it, and rebuilds nothing.
//!
//! A function called often whose calls moved the heap rarely (at least
//! [`HOT_CALLS`] calls, at most one allocation in [`RARE_IN`] of them: a
//! serializer whose output buffer grows now and then) is left as written
//! too: the entry and exit of millions of calls cost more than its table
//! is worth, and its bytes count, exactly, in its callers' rows. The line
//! before the build names each one. One that ever moved the heap more
//! often stays profiled.
//!
//! `--fn` (such as `--fn .`) selects by path alone and ignores the record;
//! removing the file forgets it.

use super::annotate::Annotated;
use super::callers::Left;
use super::error::CargoError;
use memprof_runtime::{FunctionReport, Report};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The record's file name under `<target-dir>/memprof`, for `subcommand`.
pub fn file_name(subcommand: &str) -> String {
    format!("record-{subcommand}.json")
}

/// What the record knows of one function that ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Seen {
    /// The hash of its tokens when it was last profiled.
    pub hash: u64,
    /// Whether its calls moved the heap in that run.
    pub moved: bool,
    /// Whether they moved it, but in few of many calls (see [`rare`]), in
    /// every run that profiled it since it last changed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub rare: bool,
}

/// Calls in a run (its `fn` row's Occurrences, a recursion's nested calls
/// included) from which a function whose calls rarely move the heap is
/// left as written.
pub const HOT_CALLS: u64 = 100_000;

/// At most one allocation in this many calls: rarely.
pub const RARE_IN: u64 = 1_000;

/// Functions by path.
#[derive(Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    pub schema: u32,
    /// Those that ran, each path's by hash (one per function of the path).
    pub functions: BTreeMap<String, Vec<Seen>>,
    /// The hashes of those profiled and never seen to run since: known,
    /// not new (one not called; a variant that a `#[cfg]` leaves out,
    /// whose path its compiled twin shares).
    #[serde(default)]
    pub never_ran: BTreeMap<String, BTreeSet<u64>>,
}

/// 3: several functions of one path (was one, the last written: the
/// record then changed at every run).
const SCHEMA: u32 = 3;

impl Record {
    /// The record at `path`; empty if there is none, or it cannot be read
    /// (then every function is profiled, as in a first run).
    pub fn read(path: &Path) -> Record {
        std::fs::read_to_string(path)
            .ok()
            .and_then(|text| serde_json::from_str::<Record>(&text).ok())
            .filter(|r| r.schema == SCHEMA)
            .unwrap_or_default()
    }

    /// The functions to leave as written because they moved no heap when
    /// last profiled: by path and hash.
    pub fn unmoved(&self) -> BTreeSet<(String, u64)> {
        self.matching(|seen| !seen.moved)
    }

    /// The functions to leave as written because they were called often
    /// and moved the heap rarely: by path and hash.
    pub fn rare(&self) -> BTreeSet<(String, u64)> {
        self.matching(|seen| seen.rare)
    }

    fn matching(&self, keep: impl Fn(&Seen) -> bool) -> BTreeSet<(String, u64)> {
        self.functions
            .iter()
            .flat_map(|(path, seen)| seen.iter().map(move |s| (path, s)))
            .filter(|(_, seen)| keep(seen))
            .map(|(path, seen)| (path.clone(), seen.hash))
            .collect()
    }

    /// What the record knows of the function of `path` whose tokens hash
    /// to `hash`, if it ran.
    fn seen(&self, path: &str, hash: u64) -> Option<Seen> {
        self.functions
            .get(path)?
            .iter()
            .find(|s| s.hash == hash)
            .copied()
    }

    /// Takes in a run: each annotated function that ran, with whether its
    /// calls moved the heap, in this run or an earlier one since it last
    /// changed (a function that moved once stays profiled: another input
    /// may move it again), and whether rarely (in every such run: one that
    /// once moved it often stays profiled); each that did not run, as
    /// known, unless it ran as it is. Functions the run did not annotate
    /// keep what the record had. A path the run annotated or `left` as
    /// written keeps only the hashes its functions have now: an edited
    /// function's old hash goes.
    pub fn update(&mut self, annotated: &[Annotated], left: &[Left], report: &Report, tree: &Path) {
        self.schema = SCHEMA;
        for function in annotated {
            let before = self.seen(&function.path, function.hash);
            match find(report, function, tree) {
                Some(ran) => {
                    let often_before = before.is_some_and(|s| s.moved && !s.rare);
                    let moved_now = moved(ran);
                    let seen = Seen {
                        hash: function.hash,
                        moved: before.is_some_and(|s| s.moved) || moved_now,
                        rare: !often_before
                            && match moved_now {
                                true => rare(ran),
                                false => before.is_some_and(|s| s.rare),
                            },
                    };
                    let all = self.functions.entry(function.path.clone()).or_default();
                    all.retain(|s| s.hash != function.hash);
                    all.push(seen);
                    all.sort_by_key(|s| s.hash);
                    if let Some(hashes) = self.never_ran.get_mut(&function.path) {
                        hashes.remove(&function.hash);
                    }
                }
                None if before.is_some() => {}
                None => {
                    self.never_ran
                        .entry(function.path.clone())
                        .or_default()
                        .insert(function.hash);
                }
            }
        }
        let mut now: BTreeMap<&str, BTreeSet<u64>> = BTreeMap::new();
        let paths = annotated.iter().map(|f| (f.path.as_str(), f.hash));
        for (path, hash) in paths.chain(left.iter().map(|f| (f.path.as_str(), f.hash))) {
            now.entry(path).or_default().insert(hash);
        }
        for (path, all) in self.functions.iter_mut() {
            if let Some(hashes) = now.get(path.as_str()) {
                all.retain(|s| hashes.contains(&s.hash));
            }
        }
        for (path, never) in self.never_ran.iter_mut() {
            if let Some(hashes) = now.get(path.as_str()) {
                never.retain(|h| hashes.contains(h));
            }
        }
        self.functions.retain(|_, all| !all.is_empty());
        self.never_ran.retain(|_, hashes| !hashes.is_empty());
    }

    /// Whether the function at `path`, as its tokens hash now, is new or
    /// changed since the record's runs.
    pub fn is_new_or_changed(&self, path: &str, hash: u64) -> bool {
        self.seen(path, hash).is_none()
            && !self
                .never_ran
                .get(path)
                .is_some_and(|hashes| hashes.contains(&hash))
    }

    /// Writes it to `path`, replacing it whole (through a new file renamed
    /// over it: never through a link planted there).
    pub fn write(&self, path: &Path) -> Result<(), CargoError> {
        let text = serde_json::to_string_pretty(self).unwrap_or_default();
        memprof_runtime::safe_file::write(path, text.as_bytes())
            .map_err(|e| CargoError::io("write", path, e))
    }
}

/// The report's table of `function`: the one of its file whose first row
/// is one of its lines up to its first token after its attributes (the
/// macro's `fn` row starts at the outer attributes it was given, doc
/// comments included).
fn find<'r>(report: &'r Report, function: &Annotated, tree: &Path) -> Option<&'r FunctionReport> {
    let lines = function.first_line..=function.line;
    report.functions.iter().find(|f| {
        f.lines
            .first()
            .is_some_and(|l| lines.contains(&(l.line as usize)))
            && same_file(&f.file, &function.file, tree)
    })
}

/// Whether the report's `file` (as `file!()` names it in the copy: from
/// the workspace's root, or whole) is `original`, a file of the user's
/// tree.
fn same_file(file: &str, original: &Path, tree: &Path) -> bool {
    let file = Path::new(file);
    let file = file.strip_prefix(tree).unwrap_or(file);
    // NOTE: `file!()` of a `#[path = "../x.rs"]` module keeps its `..`.
    original.ends_with(super::annotate::lexically_normal(file))
}

/// Whether the heap moved in the function's calls: it (or what it called)
/// allocated, or freed more than it allocated.
fn moved(function: &FunctionReport) -> bool {
    function
        .fn_row()
        .is_some_and(|row| row.allocations.unwrap_or(0) > 0 || row.increment != Some(0))
}

/// Whether the function was called at least [`HOT_CALLS`] times, with at
/// most one allocation in [`RARE_IN`] calls and no more freed than
/// allocated (the rows count no frees: a function that frees often nets
/// less than zero, and stays profiled).
fn rare(function: &FunctionReport) -> bool {
    function.fn_row().is_some_and(|row| {
        let allocations = row.allocations.unwrap_or(0);
        row.occurrences >= HOT_CALLS
            && allocations.saturating_mul(RARE_IN) <= row.occurrences
            && row.increment.is_some_and(|net| net >= 0)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    /// A report whose one table, of `file`, starts at `line`, and moved
    /// nothing.
    fn report(file: &str, line: u32) -> Report {
        let row = |line: u32, increment: &str| {
            format!(
                r#"{{"line": {line}, "mem_usage": 0, "increment": {increment}, "peak": 0,
                "occurrences": 1, "allocations": 0, "allocated_bytes": 0, "gpu_usage": null,
                "gpu_increment": null, "gpu_peak": null, "gpu_driver_usage": null,
                "gpu_driver_increment": null, "pool_allocated": null, "pool_increment": null,
                "pool_reserved": null, "in_use_allocations": null, "in_use_bytes": null,
                "contents": "x", "sites": null, "calls": [], "within": null}}"#
            )
        };
        let text = format!(
            r#"{{"schema": 1, "functions": [{{"name": "a::f", "file": "{file}", "calls": 1,
            "running": 0, "gpu": null, "gpu_driver": null, "pool": null,
            "lines": [{}, {}], "sites_left_out": null}}]}}"#,
            row(line, "null"),
            row(line + 1, "0")
        );
        crate::report::parse(&text).unwrap().report
    }

    fn annotated(hash: u64, first_line: usize) -> Annotated {
        Annotated {
            path: "a::f".to_owned(),
            file: PathBuf::from("/w/src/lib.rs"),
            first_line,
            line: first_line + 1,
            hash,
        }
    }

    /// Two functions with one path (one of them left out by a `#[cfg]`):
    /// the one that ran is recorded, the other known, in either order.
    #[test]
    fn a_twin_left_out_by_cfg_is_known_and_does_not_hide_the_one_that_ran() {
        for order in [[1, 2], [2, 1]] {
            let mut record = Record::default();
            let functions: Vec<Annotated> = order
                .iter()
                .map(|&h| annotated(h, if h == 1 { 10 } else { 20 }))
                .collect();
            record.update(&functions, &[], &report("src/lib.rs", 10), Path::new("/t"));
            assert_eq!(
                record.unmoved(),
                BTreeSet::from([("a::f".to_owned(), 1)]),
                "{order:?}"
            );
            assert!(!record.is_new_or_changed("a::f", 1));
            assert!(!record.is_new_or_changed("a::f", 2));
            assert!(record.is_new_or_changed("a::f", 3));
        }
    }

    /// Two functions that ran with one path (the `index` methods of two
    /// `impl Index<_>` for one type), the first moving nothing, the second
    /// the heap: each keeps its entry, so that the run after leaves the
    /// same one as written, and the one after that again (it annotated the
    /// other alone); an edit of the first drops its old hash.
    #[test]
    fn functions_of_one_path_keep_an_entry_each_from_run_to_run() {
        let moving = |mut report: Report| {
            // The `fn` row: the first with figures (see `report`).
            let row = &mut report.functions[0].lines[1];
            row.allocations = Some(1);
            row.increment = Some(16);
            report
        };
        let mut both = report("src/lib.rs", 10);
        both.functions
            .push(moving(report("src/lib.rs", 20)).functions.remove(0));
        let mut record = Record::default();
        record.update(
            &[annotated(1, 10), annotated(2, 20)],
            &[],
            &both,
            Path::new("/t"),
        );
        let unmoved = BTreeSet::from([("a::f".to_owned(), 1)]);
        assert_eq!(record.unmoved(), unmoved);
        let left = |hash| Left {
            path: "a::f".to_owned(),
            hash,
            calls: BTreeSet::new(),
        };
        // Later runs annotate the second alone and leave the first.
        for _ in 0..2 {
            let second = moving(report("src/lib.rs", 20));
            let before = serde_json::to_string(&record).unwrap();
            record.update(&[annotated(2, 20)], &[left(1)], &second, Path::new("/t"));
            assert_eq!(record.unmoved(), unmoved);
            assert_eq!(serde_json::to_string(&record).unwrap(), before);
            assert!(!record.is_new_or_changed("a::f", 1));
            assert!(!record.is_new_or_changed("a::f", 2));
        }
        // The first edited (hash 3): profiled, and hash 1 forgotten.
        assert!(record.is_new_or_changed("a::f", 3));
        record.update(
            &[annotated(3, 10), annotated(2, 20)],
            &[],
            &both,
            Path::new("/t"),
        );
        assert_eq!(record.unmoved(), BTreeSet::from([("a::f".to_owned(), 3)]));
        assert_eq!(record.functions["a::f"].len(), 2);
    }

    /// A function called 100,000 times that allocated 100 times (one in
    /// 1,000) is left as written for its rarity; one more allocation, one
    /// call fewer or a net free, and it stays profiled. Once it moved the
    /// heap often (a run under `--fn .`), it stays profiled.
    #[test]
    fn a_hot_function_that_rarely_moves_the_heap_is_left_as_written() {
        let run = |occurrences: u64, allocations: u64, increment: i64| {
            let mut report = report("src/lib.rs", 10);
            let row = &mut report.functions[0].lines[1];
            (row.occurrences, row.allocations) = (occurrences, Some(allocations));
            row.increment = Some(increment);
            report
        };
        let rare_after = |report: &Report| {
            let mut record = Record::default();
            record.update(&[annotated(1, 10)], &[], report, Path::new("/t"));
            assert!(record.unmoved().is_empty());
            !record.rare().is_empty()
        };
        assert!(rare_after(&run(100_000, 100, 4096)));
        assert!(rare_after(&run(100_000, 100, 0)));
        assert!(!rare_after(&run(100_000, 101, 4096)));
        assert!(!rare_after(&run(99_999, 99, 4096)));
        assert!(!rare_after(&run(100_000, 0, -64)));

        let mut record = Record::default();
        let mut take = |report: Report| {
            record.update(&[annotated(1, 10)], &[], &report, Path::new("/t"));
            (record.rare(), record.unmoved())
        };
        let rare = BTreeSet::from([("a::f".to_owned(), 1)]);
        assert_eq!(take(run(200_000, 20, 64)).0, rare);
        // Profiled again (`--fn .`) on an input where it moves nothing: it
        // stays rare; on one where it allocates at every call, it is
        // profiled from then on, however rarely it moves the heap after.
        assert_eq!(take(run(200_000, 0, 0)).0, rare);
        for report in [run(1_000, 1_000, 64), run(200_000, 20, 64)] {
            let (rare, unmoved) = take(report);
            assert!(rare.is_empty());
            assert!(unmoved.is_empty());
        }
    }
}
