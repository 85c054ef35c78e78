//! Recursion, counted as profilers count cumulative time (cProfile's rule):
//! a row's Increment and Peak take only executions not nested in another
//! execution of the same row on the same thread; Occurrences counts every
//! execution; Calls counts outermost calls. The `fn` row of a recursive
//! function is then what `measure` says of the outermost call.
//!
//! The modes that print (`MEMPROF_REPORT=call`/`exit`, `MEMPROF_JSON`) are
//! checked in a child process that re-runs this binary on one `child_*` test.
//!
//! A buffer whose contents nothing reads passes through `black_box`: an
//! optimized build (`cargo test --release`) removes such an allocation, and
//! its table then rightly shows nothing.

// The point is to allocate on the heap.
#![allow(clippy::useless_vec)]

#[path = "support/child.rs"]
mod child;

use memprof::{FunctionReport, measure, profile};
use std::hint::black_box;

/// Keeps one 1000-byte buffer per level and returns them all.
#[profile]
fn build(n: usize) -> Vec<Vec<u8>> {
    if n == 0 {
        return Vec::new();
    }
    let mut v = build(n - 1);
    v.push(vec![0u8; 1000]);
    v
}

/// Mutual recursion: each level keeps 100 bytes until it returns.
#[profile]
fn even(n: u32) -> usize {
    let here = black_box(vec![0u8; 100]);
    if n == 0 {
        here.len()
    } else {
        odd(n - 1) + here.len()
    }
}

#[profile]
fn odd(n: u32) -> usize {
    let here = black_box(vec![0u8; 100]);
    if n == 0 {
        here.len()
    } else {
        even(n - 1) + here.len()
    }
}

fn table(name: &str) -> FunctionReport {
    let report = memprof::report();
    report
        .function(name)
        .unwrap_or_else(|| panic!("no table for {name}:\n{report}"))
        .clone()
}

/// (increment, peak, occurrences) of the row containing `text`.
fn figures(t: &FunctionReport, text: &str) -> (i64, u64, u64) {
    let row = t
        .line_containing(text)
        .unwrap_or_else(|| panic!("no row {text:?} in\n{t}"));
    (row.increment.unwrap(), row.peak.unwrap(), row.occurrences)
}

/// Bytes a `Vec<Vec<u8>>` holds after `n` pushes onto an empty one: the
/// buffers and the outer vector's capacity (4, then doubling) of 24-byte
/// elements.
fn kept(n: usize) -> i64 {
    let capacity = if n == 0 {
        0
    } else {
        n.next_power_of_two().max(4)
    };
    (n * 1000 + capacity * 24) as i64
}

#[test]
fn direct_recursion_counts_the_outermost_call_once() {
    let (v, m) = measure(|| build(3));
    assert_eq!(v.len(), 3);
    assert_eq!(m.increment, kept(3));
    let t = table("build");
    assert_eq!(t.calls, 1);
    // The `fn` row is the outermost call, as `measure` saw it; four levels ran.
    assert_eq!(figures(&t, "fn build"), (m.increment, m.peak, 4));
    // Three levels recursed; only the outermost (which returns two buffers
    // and a vector of capacity 4) counts.
    assert_eq!(
        figures(&t, "let mut v = build"),
        (kept(2), kept(2) as u64, 3)
    );
    // No push runs inside another push: each level's counts.
    let (inc, _, n) = figures(&t, "v.push");
    assert_eq!((inc, n), (3000 + 4 * 24, 3));
}

/// Keeps 100 bytes per level until it returns.
#[profile]
fn deep(n: usize) -> usize {
    let here = black_box(vec![0u8; 100]);
    if n == 0 {
        here.len()
    } else {
        deep(n - 1) + here.len()
    }
}

#[test]
fn recursion_past_the_side_stack_stays_exact() {
    // The side stack holds 2,048 nested calls (`calls/stack.rs`);
    // deeper levels keep their records on the heap, outside every figure.
    const LEVELS: usize = 20_000;
    let (len, m) = std::thread::Builder::new()
        .stack_size(1 << 30)
        .spawn(|| measure(|| deep(LEVELS)))
        .unwrap()
        .join()
        .unwrap();
    assert_eq!(len, 100 * (LEVELS + 1));
    assert_eq!((m.increment, m.peak), (0, 100 * (LEVELS as u64 + 1)));
    let t = table("deep");
    assert_eq!(t.calls, 1);
    assert_eq!(figures(&t, "fn deep"), (0, m.peak, LEVELS as u64 + 1));
    assert_eq!(
        figures(&t, "let here"),
        (100 * (LEVELS as i64 + 1), 100, LEVELS as u64 + 1)
    );
}

#[test]
fn mutual_recursion_counts_each_function_once() {
    let (len, m) = measure(|| even(5));
    assert_eq!(len, 600);
    let (e, o) = (table("even"), table("odd"));
    assert_eq!((e.calls, o.calls), (1, 1));
    // even(5) → odd(4) → even(3) → odd(2) → even(1) → odd(0).
    assert_eq!(figures(&e, "fn even"), (0, m.peak, 3));
    assert_eq!(m.peak, 600);
    // odd's outermost call, odd(4), holds five of the six buffers at its peak.
    assert_eq!(figures(&o, "fn odd"), (0, 500, 3));
    // Every level's own buffer counts: no `let here` runs inside another.
    assert_eq!(figures(&e, "let here"), (300, 100, 3));
    assert_eq!(figures(&o, "let here"), (300, 100, 3));
}

// ---- the printing modes, in a child process ----------------------------------

fn run_child(name: &str, env: &[(&str, &str)]) -> String {
    let env: Vec<(&str, &str)> = [("MEMPROF_UNIT", "B")]
        .into_iter()
        .chain(env.iter().copied())
        .collect();
    child::run_child(name, &env).0
}

#[test]
#[ignore = "a child run: this file's tests start it"]
fn child_build_twice() {
    if std::env::var_os("MEMPROF_CHILD").is_some() {
        drop(build(3));
        drop(build(2));
    }
}

/// The figures of the `fn build` row of each table in `out`:
/// (Increment, Peak, Occurrences), read from the printed text.
fn fn_rows(out: &str) -> Vec<(String, String, String)> {
    out.lines()
        .filter(|l| l.contains("fn build("))
        .map(|l| {
            let cols: Vec<&str> = l.split_whitespace().collect();
            // Line #, Mem usage (2 words), Increment (2), Peak (2), Occurrences.
            (cols[3].to_owned(), cols[5].to_owned(), cols[7].to_owned())
        })
        .collect()
}

#[test]
fn call_mode_prints_one_table_per_outermost_call() {
    let out = run_child("child_build_twice", &[("MEMPROF_REPORT", "call")]);
    assert_eq!(
        out.matches("Function: recursion::build").count(),
        2,
        "{out}"
    );
    let peak3 = kept(3).to_string();
    let peak2 = kept(2).to_string();
    assert_eq!(
        fn_rows(&out),
        [
            (kept(3).to_string(), peak3, "4".to_owned()),
            (kept(2).to_string(), peak2, "3".to_owned()),
        ],
        "{out}"
    );
}

#[test]
fn exit_mode_and_json_count_outermost_calls() {
    let json = std::env::temp_dir().join(format!("memprof-recursion-{}.json", std::process::id()));
    let out = run_child(
        "child_build_twice",
        &[
            ("MEMPROF_REPORT", "exit"),
            ("MEMPROF_JSON", json.to_str().unwrap()),
        ],
    );
    assert_eq!(
        out.matches("Function: recursion::build").count(),
        1,
        "{out}"
    );
    assert!(out.contains("Calls: 2 (aggregated)"), "{out}");
    // Both calls' increments, each counted once; the higher peak; 4 + 3 levels.
    assert_eq!(
        fn_rows(&out),
        [(
            (kept(3) + kept(2)).to_string(),
            kept(3).to_string(),
            "7".to_owned()
        )],
        "{out}"
    );
    let text = std::fs::read_to_string(&json).unwrap();
    std::fs::remove_file(&json).unwrap();
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    let build = value["functions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == "recursion::build")
        .unwrap();
    assert_eq!(build["calls"], 2);
    let fn_row = build["lines"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["contents"].as_str().unwrap().contains("fn build("))
        .unwrap();
    assert_eq!(fn_row["increment"], kept(3) + kept(2));
    assert_eq!(fn_row["peak"], kept(3));
    assert_eq!(fn_row["occurrences"], 7);
}
