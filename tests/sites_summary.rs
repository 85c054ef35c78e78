//! The summary's `↳` line under a top line with allocation sites: the
//! function that allocated the most of the line's bytes, over every call
//! stack through which it did, and its share.

#[path = "support/child.rs"]
mod child;

use child::{is_child, run_child};
use serde_json::Value;
use std::hint::black_box;

/// The function that makes the allocations, reached by two paths.
#[inline(never)]
fn make(n: usize) -> Vec<u8> {
    black_box(vec![1u8; n])
}

#[inline(never)]
fn by_one_path(n: usize) -> Vec<u8> {
    black_box(make(n))
}

#[inline(never)]
fn by_another(n: usize) -> Vec<u8> {
    black_box(make(n))
}

/// One allocation, larger than each of `make`'s, smaller than both.
#[inline(never)]
fn larger_alone(n: usize) -> Vec<u8> {
    black_box(vec![2u8; n])
}

#[memprof::profile]
fn build() -> usize {
    let parts = (by_one_path(3000), by_another(3000), larger_alone(4000));
    parts.0.len() + parts.1.len() + parts.2.len()
}

#[test]
#[ignore = "a child run: this file's tests start it"]
fn child_build() {
    if is_child() {
        assert_eq!(build(), 10_000);
    }
}

#[test]
fn a_function_reached_by_two_stacks_is_named_with_all_its_bytes() {
    let dir = child::scratch_dir("sites-summary");
    let json = dir.join("report.json");
    let (out, _) = run_child(
        "child_build",
        &[
            ("MEMPROF_SITES", "1"),
            ("MEMPROF_REPORT", "exit"),
            ("MEMPROF_JSON", json.to_str().unwrap()),
        ],
    );
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let top = report["summary"]["top_increment"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["contents"].as_str().unwrap().starts_with("let parts ="))
        .unwrap_or_else(|| panic!("{report}"));
    assert_eq!(top["allocated_bytes"], 10_000);
    // `make`'s two stacks, 3,000 B each, were each smaller than
    // `larger_alone`'s 4,000 B, whose 40 % the line was said to owe it.
    let site = &top["site"];
    assert_eq!(
        (&site["allocated_bytes"], &site["percent"]),
        (&Value::from(6_000), &Value::from(60)),
        "{top}"
    );
    assert_eq!(site["frame"]["function"], "sites_summary::make", "{top}");
    // With the frame's file and line where the build has debug information.
    assert!(
        out.contains("↳ 60 % allocated in sites_summary::make"),
        "{out}"
    );
}
