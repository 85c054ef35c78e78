//! Allocation counts per line: summed over a line's executions, a `realloc`
//! counting as one, recursion counted once as for Increment; in reports,
//! JSON and, with `MEMPROF_COLUMNS=allocs`, tables.
//!
//! A buffer whose contents nothing reads passes through `black_box`: an
//! optimized build (`cargo test --release`) removes such an allocation, and
//! its table then rightly shows nothing.

// The point is to allocate on the heap; a statement's own row is the point.
#![allow(clippy::useless_vec, clippy::let_and_return)]

#[path = "support/child.rs"]
mod child;

#[path = "support/tables.rs"]
mod tables;

use child::{is_child, run_child};
use memprof::{FunctionReport, profile};
use std::hint::black_box;
use tables::{row, table};

/// (allocations, occurrences) of the row containing `text`.
fn allocations(table: &FunctionReport, text: &str) -> (u64, u64) {
    let row = row(table, text);
    (row.allocations.expect("figures"), row.occurrences)
}

#[profile]
fn pushes() -> usize {
    let mut v: Vec<u64> = Vec::new();
    for i in 0..1000 {
        v.push(i);
    }
    let doubled: Vec<u64> = v.iter().map(|x| x * 2).collect();
    let n = black_box(doubled.len() + v.len());
    n
}

#[test]
fn pushes_collect_and_a_line_that_allocates_nothing() {
    assert_eq!(pushes(), 2000);
    let t = table("pushes");
    // An empty Vec allocates nothing; 1,000 pushes allocate once and grow
    // it 8 times (4, 8, ..., 1024 elements): 9, over 1,000 executions.
    assert_eq!(allocations(&t, "let mut v"), (0, 1));
    assert_eq!(allocations(&t, "v.push(i)"), (9, 1000));
    assert_eq!(allocations(&t, "for i in 0..1000"), (9, 1));
    // A collect of a known length allocates once.
    assert_eq!(allocations(&t, "let doubled"), (1, 1));
    assert_eq!(allocations(&t, "let n = black_box"), (0, 1));
    // The call: all of them.
    assert_eq!(allocations(&t, "fn pushes"), (10, 1));
}

#[profile]
fn depth(n: u32) -> usize {
    let v = black_box(vec![0u8; 16]);
    if n == 0 {
        v.len()
    } else {
        depth(n - 1) + v.len()
    }
}

#[test]
fn recursion_counts_once() {
    assert_eq!(depth(3), 64);
    let t = table("depth");
    // The outermost execution of a line holds the nested ones, which are
    // not counted again: the call's 4 vecs once, the outermost `if`'s 3
    // (the deeper levels'). `let v` never nests: each level's counts.
    assert_eq!(allocations(&t, "fn depth"), (4, 4));
    assert_eq!(allocations(&t, "if n == 0"), (3, 4));
    assert_eq!(allocations(&t, "let v = black_box(vec!"), (4, 4));
    let json: serde_json::Value = serde_json::from_str(&memprof::report().to_json()).unwrap();
    let function = json["functions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == "allocations::depth")
        .unwrap();
    let fn_row = function["lines"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["contents"].as_str().unwrap().contains("fn depth"))
        .unwrap();
    assert_eq!(fn_row["allocations"], 4);
}

#[test]
#[ignore = "a child run: this file's tests start it"]
fn child_calls_pushes() {
    if is_child() {
        pushes();
    }
}

#[test]
fn tables_show_the_allocs_column_on_request() {
    let env = [("MEMPROF_REPORT", "call"), ("MEMPROF_UNIT", "B")];
    let (plain, _) = run_child("child_calls_pushes", &env);
    assert!(!plain.contains("Allocs"), "{plain}");
    let (out, _) = run_child(
        "child_calls_pushes",
        &[env[0], env[1], ("MEMPROF_COLUMNS", "allocs")],
    );
    assert!(
        out.contains("Occurrences   Allocs   Line Contents"),
        "{out}"
    );
    // Line #, Mem usage and its unit, then the figures.
    let figures = |text: &str| -> Vec<String> {
        let line = out.lines().find(|l| l.ends_with(text)).unwrap();
        line.split_whitespace()
            .skip(3)
            .take(6)
            .map(str::to_owned)
            .collect()
    };
    assert_eq!(
        figures("v.push(i);"),
        ["8192", "B", "4096", "B", "1000", "9"]
    );
    assert_eq!(
        figures("let n = black_box(doubled.len() + v.len());"),
        ["0", "B", "0", "B", "1", "0"]
    );
}
