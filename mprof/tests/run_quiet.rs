//! `mprof run` of a program whose functions go quiet (docs/reference.md,
//! "Calls that move nothing go quiet"): the runtime times each call with
//! rows for the timeline, a quiet call runs without its clock, and the
//! function's `CALLS` line still counts every call.
//!
//! The program is this test binary, run again with `MPROF_TEST_WORKLOAD`
//! set. The interval is long (a call must last 100 s to be drawn), so that
//! no call is stretched past it on a busy machine: which calls go quiet
//! does not depend on how fast the machine is.

mod common;

use common::dat::parse_all;
use common::{scratch, stderr};
use std::process::Command;

const CALLS: u64 = 10_000;

/// The calls with rows before a function's calls go quiet
/// (`QUIET_AFTER`).
const ROWED: u64 = 64;

#[memprof::profile]
fn tiny(i: u64) -> u64 {
    let odd = i & 1;
    std::hint::black_box(odd)
}

#[memprof::profile]
fn outer() -> u64 {
    let odd: u64 = (0..CALLS).map(tiny).sum();
    odd
}

/// The program the test records; does nothing in an ordinary test run.
#[test]
#[ignore = "a child run: the test below starts it"]
fn workload_child() {
    if std::env::var_os("MPROF_TEST_WORKLOAD").is_some() {
        assert_eq!(outer(), CALLS / 2);
    }
}

#[test]
fn quiet_calls_are_counted_not_timed() {
    if std::env::var_os("MPROF_TEST_WORKLOAD").is_some() {
        return;
    }
    let dir = scratch("run-quiet");
    let output = Command::new(env!("CARGO_BIN_EXE_mprof"))
        .args(["run", "--interval", "1000", "-o", "run.dat"])
        .arg(std::env::current_exe().unwrap())
        .args(["workload_child", "--ignored", "--exact", "--test-threads=1"])
        .env("MPROF_TEST_WORKLOAD", "1")
        .env("MEMPROF_REPORT", "off")
        .env("MEMPROF_JSON", "report.json")
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));

    // Every call in the totals, at its depth; none long enough to draw.
    let recorded = parse_all(&std::fs::read_to_string(dir.join("run.dat")).unwrap());
    assert!(recorded.funcs.is_empty(), "{:#?}", recorded.funcs);
    let mut totals: Vec<_> = recorded
        .totals
        .iter()
        .map(|t| (t.name.as_str(), t.depth, t.calls))
        .collect();
    totals.sort();
    assert_eq!(
        totals,
        [("run_quiet::outer", 0, 1), ("run_quiet::tiny", 1, CALLS)]
    );

    // The report: every call in `Calls` and the `fn` row, and only the
    // first 64, which the runtime entered and timed, in the statements'.
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("report.json")).unwrap()).unwrap();
    let tiny = report["functions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == "run_quiet::tiny")
        .unwrap_or_else(|| panic!("{report}"));
    let occurrences = |text: &str| {
        let rows = tiny["lines"].as_array().unwrap();
        let row = rows
            .iter()
            .find(|r| r["contents"].as_str().unwrap().contains(text));
        row.unwrap_or_else(|| panic!("no row {text:?}: {tiny}"))["occurrences"].as_u64()
    };
    assert_eq!(tiny["calls"], CALLS);
    assert_eq!(occurrences("fn tiny"), Some(CALLS));
    assert_eq!(occurrences("let odd"), Some(ROWED));
}
