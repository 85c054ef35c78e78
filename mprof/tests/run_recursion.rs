//! `mprof run` on a recursive function: the timeline holds its outermost
//! calls only, as its table's `Calls` does, so its covered time is their
//! wall time (not the sum over depths, which can exceed the run) and its
//! brackets are one per call, not one per level.
//!
//! The program is this test binary, run again with `MPROF_TEST_RECURSION`
//! set.

mod common;

use common::dat::parse_all;
use common::{scratch, stderr};
use std::process::Command;
use std::time::Duration;

const CALLS: u64 = 3;
const DEPTH: u32 = 40;

#[memprof::profile]
fn descend(depth: u32) -> usize {
    let v = vec![0u8; 4096];
    if depth == 0 {
        // Long enough for a `FUNC` line of its own.
        std::thread::sleep(Duration::from_millis(30));
        return v.len();
    }
    descend(depth - 1) + v.len()
}

/// The program that the test below records.
#[test]
#[ignore = "a child run: this file's test starts it"]
fn recursion_child() {
    if std::env::var_os("MPROF_TEST_RECURSION").is_some() {
        for _ in 0..CALLS {
            assert_eq!(descend(DEPTH), 4096 * (DEPTH as usize + 1));
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

#[test]
fn a_recursion_is_its_outermost_calls_on_the_timeline() {
    let dir = scratch("recursion");
    let output = Command::new(env!("CARGO_BIN_EXE_mprof"))
        .args(["run", "--interval", "0.05", "-o", "run.dat"])
        .arg(std::env::current_exe().unwrap())
        .args([
            "recursion_child",
            "--ignored",
            "--exact",
            "--test-threads=1",
        ])
        .env("MPROF_TEST_RECURSION", "1")
        .env("MEMPROF_REPORT", "off")
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let recorded = parse_all(&std::fs::read_to_string(dir.join("run.dat")).unwrap());
    let funcs: Vec<_> = recorded
        .funcs
        .iter()
        .filter(|f| f.name == "run_recursion::descend")
        .collect();
    // One bracket per outermost call, at the top depth; none for the 40
    // levels inside each.
    assert_eq!(funcs.len() as u64, CALLS, "{funcs:#?}");
    assert!(funcs.iter().all(|f| f.depth == 0), "{funcs:#?}");
    // The exact totals: the outermost calls, and their wall time, which is
    // what the brackets span (to the FUNC lines' 0.1 ms).
    let totals: Vec<_> = recorded
        .totals
        .iter()
        .filter(|t| t.name == "run_recursion::descend")
        .collect();
    assert_eq!(totals.len(), 1, "{totals:#?}");
    assert_eq!(totals[0].calls, CALLS);
    let spans: f64 = funcs.iter().map(|f| f.end - f.start).sum();
    assert!(
        (totals[0].covered - spans).abs() < 1e-3,
        "covered {} against the brackets' {spans}",
        totals[0].covered
    );
}
