//! Live and exact sites at a large live heap: every block followed, to the
//! byte, with millions in use; and where memprof's tables run out of room
//! (a small address-space budget), the shortfall said, in the table's note
//! and the JSON, never an undercount left silent.

// Each word in a block of its own: the live blocks are the point.
#![allow(clippy::vec_box)]

#[path = "support/child.rs"]
mod child;

use child::{is_child, run_child};
use serde_json::Value;

/// Keeps `n` boxed words, each a block of its own, in one line.
#[memprof::profile]
#[inline(never)]
fn keep(n: usize) -> Vec<Box<u64>> {
    let v: Vec<Box<u64>> = (0..n as u64).map(Box::new).collect();
    v
}

fn blocks() -> usize {
    std::env::var("IN_USE_SCALE_BLOCKS")
        .unwrap()
        .parse()
        .unwrap()
}

#[test]
#[ignore = "a child run: this file's tests start it"]
fn child_keep() {
    if !is_child() {
        return;
    }
    let kept = keep(blocks());
    assert_eq!(kept.len(), blocks());
    std::mem::forget(kept);
}

/// The same, under an address-space limit whose budget (a sixteenth of it,
/// docs/reliability.md) cannot hold a map of every block.
#[test]
#[ignore = "a child run: this file's tests start it"]
fn child_keep_limited() {
    if !is_child() {
        return;
    }
    let limit = libc::rlimit {
        rlim_cur: 768 << 20,
        rlim_max: 768 << 20,
    };
    // SAFETY: a valid `rlimit`; lowering our own limit.
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_AS, &limit) }, 0);
    let kept = keep(blocks());
    std::mem::forget(kept);
}

/// Runs `child` keeping `n` blocks with exact sites; its JSON and the text
/// it printed at exit.
fn run(child: &str, n: usize) -> (Value, String) {
    let dir = child::scratch_dir(child);
    let json = dir.join("report.json");
    let (text, _) = run_child(
        child,
        &[
            ("MEMPROF_SITES", "1"),
            ("MEMPROF_REPORT", "exit"),
            ("MEMPROF_JSON", json.to_str().unwrap()),
            ("IN_USE_SCALE_BLOCKS", &n.to_string()),
            ("MEMPROF_UNIT", "B"),
        ],
    );
    let report = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    (report, text)
}

fn function(report: &Value) -> &Value {
    report["functions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == "in_use_scale::keep")
        .unwrap()
}

fn line<'a>(report: &'a Value, text: &str) -> &'a Value {
    function(report)["lines"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["contents"].as_str().unwrap().contains(text))
        .unwrap()
}

#[test]
fn four_million_live_blocks_are_each_followed_to_the_byte() {
    let n = 4_000_000;
    let (report, _) = run("child_keep", n);
    let row = line(&report, "let v: Vec<Box<u64>>");
    // Each word's 8 bytes, and the vector's one block of n pointers.
    assert_eq!(row["in_use_allocations"], n as u64 + 1, "{row}");
    assert_eq!(row["in_use_bytes"], 16 * n as u64, "{row}");
    assert_eq!(row["allocations"], n as u64 + 1);
    let sites: u64 = row["sites"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["in_use_bytes"].as_u64().unwrap())
        .sum();
    assert_eq!(sites, 16 * n as u64);
    assert_eq!(function(&report)["sites_left_out"], Value::Null);
}

#[test]
fn a_map_out_of_room_says_what_live_leaves_out() {
    let n = 1_000_000;
    let (report, text) = run("child_keep_limited", n);
    let row = line(&report, "let v: Vec<Box<u64>>");
    let left_out = &function(&report)["sites_left_out"];
    let unfollowed = left_out["unfollowed_allocations"].as_u64().unwrap();
    let unfollowed_bytes = left_out["unfollowed_bytes"].as_u64().unwrap();
    assert!(unfollowed > 0, "{left_out}");
    // What Live shows and what it says it left out add up to the truth:
    // every block is still allocated.
    assert_eq!(
        row["in_use_allocations"].as_u64().unwrap() + unfollowed,
        n as u64 + 1,
        "{row} {left_out}"
    );
    assert_eq!(
        row["in_use_bytes"].as_u64().unwrap() + unfollowed_bytes,
        16 * n as u64,
        "{row} {left_out}"
    );
    // The line's own figures stay whole: they come from the counting
    // allocator, not from sites' tables.
    assert_eq!(row["allocations"], n as u64 + 1);
    // The table says so, in its note.
    let note = format!(
        "(memprof: Live leaves out what is still allocated of {unfollowed} allocations, {unfollowed_bytes} B, \
         that its in-use map had no room to follow"
    );
    assert!(text.contains(&note), "{note}\n{text}");
}
