//! Allocation sites at any depth of nested profiled calls: a recursion
//! that allocates at every level has each allocation in its line's sites,
//! and where the calls go deeper than memprof's side stack holds (about
//! 2,048 calls the kernel enters), the table says how many are in no site.

#[path = "support/child.rs"]
mod child;

use child::{is_child, run_child};
use serde_json::Value;

/// A block of 24 bytes at each level, all kept until the recursion ends.
#[memprof::profile]
#[inline(never)]
fn nest(depth: usize, kept: &mut Vec<Vec<u8>>) {
    let block = vec![1u8; 24];
    kept.push(block);
    if depth > 1 {
        nest(depth - 1, kept);
    }
}

fn recurse(depth: usize) {
    let run = move || {
        let mut kept = Vec::with_capacity(depth);
        nest(depth, &mut kept);
        assert_eq!(kept.len(), depth);
    };
    // Room for the recursion on the thread's own stack.
    let thread = std::thread::Builder::new().stack_size(256 << 20);
    thread.spawn(run).unwrap().join().unwrap();
}

#[test]
#[ignore = "a child run: this file's tests start it"]
fn child_nest_1000() {
    if is_child() {
        recurse(1_000);
    }
}

#[test]
#[ignore = "a child run: this file's tests start it"]
fn child_nest_10000() {
    if is_child() {
        recurse(10_000);
    }
}

/// The child's report, sites of every allocation, tables at exit.
fn report(child: &str) -> (Value, String) {
    let dir = child::scratch_dir(child);
    let json = dir.join("report.json");
    let (out, _) = run_child(
        child,
        &[
            ("MEMPROF_SITES", "1"),
            ("MEMPROF_REPORT", "exit"),
            ("MEMPROF_UNIT", "B"),
            ("MEMPROF_JSON", json.to_str().unwrap()),
        ],
    );
    let report = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    (report, out)
}

/// The `let block` line's (allocations, bytes), and its sites' sums.
fn block_line(report: &Value) -> ((u64, u64), (u64, u64)) {
    let function = report["functions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == "sites_depth::nest")
        .unwrap_or_else(|| panic!("{report}"));
    let line = function["lines"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["contents"].as_str().unwrap().contains("let block"))
        .unwrap();
    let sites = line["sites"].as_array().unwrap();
    let sum = |key: &str| sites.iter().map(|s| s[key].as_u64().unwrap()).sum::<u64>();
    (
        (
            line["allocations"].as_u64().unwrap(),
            line["allocated_bytes"].as_u64().unwrap(),
        ),
        (sum("allocations"), sum("allocated_bytes")),
    )
}

#[test]
fn a_recursion_a_thousand_deep_has_every_allocation_in_its_sites() {
    let (report, out) = report("child_nest_1000");
    // Only 128 levels' were, of 256 open rows at most.
    assert_eq!(block_line(&report), ((1_000, 24_000), (1_000, 24_000)));
    assert!(!out.contains("in no site"), "{out}");
}

#[test]
fn past_the_side_stack_the_table_says_what_no_site_holds() {
    let (report, out) = report("child_nest_10000");
    let ((allocations, bytes), (in_sites, in_sites_bytes)) = block_line(&report);
    assert_eq!((allocations, bytes), (10_000, 240_000));
    assert!(in_sites >= 1_000 && in_sites < allocations, "{in_sites}");
    let missing = allocations - in_sites;
    let note = format!(
        "{missing} allocations, {} B, in no site",
        bytes - in_sites_bytes
    );
    assert!(out.contains(&note), "no {note:?} in {out}");
}
