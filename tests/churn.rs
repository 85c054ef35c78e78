//! Bytes allocated (the churn, dhat's `total_bytes`): every allocation's
//! size and a `realloc`'s new size, freed or not, per line and per call,
//! under the same rules as the allocation counts (recursion counted once,
//! the calling thread's); in `measure`, `assert_memory!`, reports, JSON, the
//! summary and, with `MEMPROF_COLUMNS=allocated`, tables.

// The point is to allocate on the heap; a statement's own row is the point.
#![allow(clippy::useless_vec)]

#[path = "support/child.rs"]
mod child;

#[path = "support/tables.rs"]
mod tables;

use child::{is_child, run_child};
use memprof::{FunctionReport, profile};
use std::hint::black_box;
use tables::{row, table};

/// (bytes allocated, allocations) of the row containing `text`.
fn allocated(table: &FunctionReport, text: &str) -> (u64, u64) {
    let row = row(table, text);
    (
        row.allocated_bytes.expect("figures"),
        row.allocations.expect("figures"),
    )
}

/// 1,000 pushes grow a `Vec<u64>` from 4 to 1,024 elements: one
/// allocation of 32 B, then 8 reallocations to 64, 128, ..., 8,192 B.
const GROWTH: u64 = 32 + 64 + 128 + 256 + 512 + 1024 + 2048 + 4096 + 8192;

#[profile]
fn pushes() -> usize {
    let mut v: Vec<u64> = Vec::new();
    for i in 0..1000 {
        v.push(i);
    }
    let doubled: Vec<u64> = v.iter().map(|x| x * 2).collect();
    drop(black_box(doubled));
    v.shrink_to_fit();
    black_box(v).len()
}

#[test]
fn a_line_counts_every_allocation_and_reallocation_freed_or_not() {
    assert_eq!(GROWTH, 16_352);
    assert_eq!(pushes(), 1000);
    let t = table("pushes");
    assert_eq!(allocated(&t, "v.push(i)"), (GROWTH, 9));
    assert_eq!(allocated(&t, "for i in 0..1000"), (GROWTH, 9));
    // Freed on the next line: the churn stays, the Increment does not.
    assert_eq!(allocated(&t, "let doubled"), (8_000, 1));
    assert_eq!(row(&t, "drop(black_box(doubled))").increment, Some(-8_000));
    assert_eq!(allocated(&t, "drop(black_box(doubled))"), (0, 0));
    // A realloc to a smaller block allocates its new size.
    assert_eq!(allocated(&t, "v.shrink_to_fit()"), (8_000, 1));
    assert_eq!(allocated(&t, "fn pushes"), (GROWTH + 16_000, 11));
    // `measure` of the same work agrees with the `fn` row.
    let (_, m) = memprof::measure(pushes);
    assert_eq!((m.allocated_bytes, m.allocations), (GROWTH + 16_000, 11));
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
fn recursion_counts_once_as_for_allocations() {
    assert_eq!(depth(3), 64);
    let t = table("depth");
    assert_eq!(allocated(&t, "fn depth"), (64, 4));
    assert_eq!(allocated(&t, "if n == 0"), (48, 3));
    assert_eq!(allocated(&t, "let v = black_box(vec!"), (64, 4));
}

#[test]
fn another_threads_allocations_are_not_the_lines() {
    let (_, m) = memprof::measure(|| {
        let mine = black_box(vec![0u8; 100]);
        std::thread::spawn(|| black_box(vec![0u8; 5000]).len())
            .join()
            .unwrap();
        mine.len()
    });
    // The spawn allocates bookkeeping of its own on this thread; the other
    // thread's 5,000 bytes are not there.
    assert!(
        m.allocated_bytes >= 100 && m.allocated_bytes < 5000,
        "{m:?}"
    );
    let (_, m) = memprof::measure_in(memprof::Scope::Process, || {
        std::thread::spawn(|| black_box(vec![0u8; 5000]).len())
            .join()
            .unwrap()
    });
    assert!(m.allocated_bytes >= 5000, "{m:?}");
}

#[test]
fn assert_memory_bounds_the_churn() {
    memprof::assert_memory!(allocated_bytes == 4096 B, increment == 0 B, {
        drop(black_box(vec![0u8; 4096]));
    });
    let failed = std::panic::catch_unwind(|| {
        memprof::assert_memory!(allocated_bytes < 1 KiB, {
            drop(black_box(vec![0u8; 4096]));
        });
    })
    .unwrap_err();
    let message = failed.downcast_ref::<String>().unwrap();
    assert!(
        message.contains("`allocated_bytes < 1 KiB`, but allocated_bytes was 4.0 KiB (4096 B)"),
        "{message}"
    );
}

#[test]
#[ignore = "a child run: this file's tests start it"]
fn child_calls_pushes() {
    if is_child() {
        pushes();
    }
}

#[test]
fn tables_json_and_summary_show_it() {
    let env = [
        ("MEMPROF_REPORT", "call"),
        ("MEMPROF_UNIT", "B"),
        ("MEMPROF_COLUMNS", "allocs,allocated"),
    ];
    let (out, _) = run_child("child_calls_pushes", &env);
    assert!(
        out.contains("Occurrences   Allocs   Allocated   Line Contents"),
        "{out}"
    );
    let figures = |text: &str| -> Vec<String> {
        let line = out.lines().find(|l| l.ends_with(text)).unwrap();
        line.split_whitespace()
            .skip(3)
            .take(8)
            .map(str::to_owned)
            .collect()
    };
    assert_eq!(
        figures("v.push(i);"),
        ["8192", "B", "4096", "B", "1000", "9", "16352", "B"]
    );
    let (plain, _) = run_child("child_calls_pushes", &env[..2]);
    assert!(!plain.contains("Allocated"), "{plain}");
    // The JSON's line and the summary's function row, of a function that
    // only this test calls.
    assert_eq!(churns(), 3000);
    let json: serde_json::Value = serde_json::from_str(&memprof::report().to_json()).unwrap();
    let function = json["functions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == "churn::churns")
        .unwrap();
    let line = |text: &str| {
        function["lines"]
            .as_array()
            .unwrap()
            .iter()
            .find(|l| l["contents"].as_str().unwrap().contains(text))
            .unwrap()
            .clone()
    };
    assert_eq!(line("vec![1u8; 3000]")["allocated_bytes"], 3000);
    assert_eq!(line("with_capacity(77)")["allocated_bytes"], 77);
    assert_eq!(line("fn churns")["allocated_bytes"], 3077);
    assert_eq!(line("fn churns")["increment"], 0);
    let summary = memprof::report().summary();
    let row = summary
        .functions
        .iter()
        .find(|f| f.name == "churn::churns")
        .unwrap();
    assert_eq!((row.allocated_bytes, row.kept), (3077, 0));
}

#[profile]
fn churns() -> usize {
    let n = black_box(vec![1u8; 3000]).len();
    drop(black_box(String::with_capacity(77)));
    n
}
