//! Code that passes ownership: what a by-value argument or `self` frees when
//! the function returns is counted in that function's call, so its `fn` row
//! is always what `measure` reports for the call, and budgets judge what the
//! call really keeps.
//!
//! Each test profiles functions of its own, so tests running in parallel
//! never share a table.
//!
//! A buffer whose contents nothing reads passes through `black_box`: an
//! optimized build (`cargo test --release`) removes such an allocation, and
//! its table then rightly shows nothing.

// The point is to allocate on the heap.
#![allow(clippy::useless_vec)]

#[path = "support/tables.rs"]
mod tables;

use memprof::{FunctionReport, measure, profile};
use std::hint::black_box;
use tables::{figures, table};

const MIB: usize = 1 << 20;

/// The closing brace's row: the last row with figures.
fn close_row(table: &FunctionReport) -> (i64, u64, u64) {
    let row = table
        .lines
        .iter()
        .rev()
        .find(|r| r.increment.is_some())
        .unwrap();
    assert_eq!(row.contents.trim(), "}", "last row of\n{table}");
    (row.increment.unwrap(), row.peak.unwrap(), row.occurrences)
}

/// The `measure` of one call, and the call's own `fn` row after it. The
/// call's value leaves the measurement, as it leaves the call.
fn call_and_row<T>(name: &str, signature: &str, call: impl FnOnce() -> T) -> (i64, i64) {
    let (value, m) = measure(call);
    drop(value);
    let t = table(name);
    (m.increment, figures(&t, signature).0)
}

#[profile]
fn consume(v: Vec<u8>) {
    let n = v.len();
    black_box(n);
}

#[test]
fn a_consumed_argument_is_freed_in_the_call() {
    let v = vec![1u8; MIB];
    let (measured, fn_row) = call_and_row("consume", "fn consume", || consume(v));
    assert_eq!((measured, fn_row), (-(MIB as i64), -(MIB as i64)));
    // Freed as the body's locals go: at its closing brace.
    assert_eq!(close_row(&table("consume")), (-(MIB as i64), 0, 1));
}

#[profile]
fn consume_pair(s: String, v: Vec<u8>) -> usize {
    s.len() + v.len()
}

#[test]
fn several_consumed_arguments_are_freed_in_the_call() {
    let s = "x".repeat(1000);
    let v = vec![0u8; 3000];
    let (measured, fn_row) = call_and_row("consume_pair", "fn consume_pair", || consume_pair(s, v));
    assert_eq!((measured, fn_row), (-4000, -4000));
    assert_eq!(close_row(&table("consume_pair")), (-4000, 0, 1));
}

#[profile]
fn percentile(mut v: Vec<u64>) -> u64 {
    v.sort_unstable();
    v[v.len() / 2]
}

#[test]
fn a_mut_argument_is_freed_in_the_call() {
    let v: Vec<u64> = (0..1024).rev().collect();
    let (measured, fn_row) = call_and_row("percentile", "fn percentile", || {
        assert_eq!(percentile(v), 512);
    });
    assert_eq!((measured, fn_row), (-8192, -8192));
}

#[allow(clippy::type_complexity)]
#[profile]
fn patterns((a, mut b): (Vec<u8>, Vec<u8>), Wrapper { inner }: Wrapper, n: &usize) -> usize {
    b.push(1);
    a.len() + b.len() + inner.len() + n
}

struct Wrapper {
    inner: Vec<u8>,
}

#[test]
fn arguments_bound_by_patterns_are_freed_in_the_call() {
    let (a, b) = (vec![0u8; 100], Vec::with_capacity(200));
    let w = Wrapper {
        inner: vec![0u8; 300],
    };
    let (measured, fn_row) = call_and_row("patterns", "fn patterns", || {
        assert_eq!(patterns((a, b), w, &4), 405);
    });
    assert_eq!((measured, fn_row), (-600, -600));
}

/// Fields with a `Drop` of their own, profiled too: their tables nest in
/// the consuming call's.
struct Parts {
    name: String,
    blocks: Vec<Block>,
}

struct Block(Vec<u8>);

impl Drop for Block {
    #[profile]
    fn drop(&mut self) {
        self.0 = Vec::new();
    }
}

impl Parts {
    #[allow(clippy::let_and_return)]
    #[profile]
    fn into_name(self) -> String {
        let name = self.name.clone();
        name
    }

    #[profile]
    fn total(mut self) -> usize {
        self.blocks.pop();
        self.blocks.iter().map(|b| b.0.len()).sum()
    }
}

fn parts() -> Parts {
    Parts {
        name: "n".repeat(64),
        blocks: (0..4).map(|_| Block(vec![0u8; 1000])).collect(),
    }
}

#[test]
fn self_with_fields_that_have_drop_is_freed_in_the_call() {
    let p = parts();
    let (measured, fn_row) = call_and_row("into_name", "fn into_name", || p.into_name());
    // The clone (64 B) is returned; the original name, four blocks and the
    // vec of blocks (4 × 24 B) are freed, the blocks by their own `drop`.
    let freed = 64 + 4 * 1000 + 4 * 24;
    assert_eq!((measured, fn_row), (64 - freed, 64 - freed));
    // Each block's drop ran inside the call: four calls of `drop`.
    assert_eq!(figures(&table("drop"), "fn drop").2, 4);

    let p = parts();
    let (measured, fn_row) = call_and_row("total", "fn total", || {
        assert_eq!(p.total(), 3000);
    });
    assert_eq!((measured, fn_row), (-freed, -freed));
}

#[profile]
fn merge_sort(v: Vec<u32>) -> Vec<u32> {
    if v.len() <= 1 {
        return v;
    }
    let right = v[v.len() / 2..].to_vec();
    let left = v[..v.len() / 2].to_vec();
    let (left, right) = (merge_sort(left), merge_sort(right));
    let mut out = Vec::with_capacity(v.len());
    let (mut i, mut j) = (0, 0);
    while i < left.len() || j < right.len() {
        if j == right.len() || (i < left.len() && left[i] <= right[j]) {
            out.push(left[i]);
            i += 1;
        } else {
            out.push(right[j]);
            j += 1;
        }
    }
    out
}

#[test]
fn a_recursive_consuming_function_keeps_what_it_returns_only() {
    let v: Vec<u32> = (0..64).rev().collect();
    let mut sorted = Vec::new();
    let (measured, fn_row) = call_and_row("merge_sort", "fn merge_sort", || {
        sorted = merge_sort(v);
    });
    // The input (256 B) in, a sorted copy of the same size out.
    assert_eq!((measured, fn_row), (0, 0));
    assert_eq!(sorted, (0..64).collect::<Vec<u32>>());
}

#[profile(max_retained = "64 KiB")]
fn transform(v: Vec<u8>) -> Vec<u8> {
    v.iter().map(|b| b.wrapping_add(1)).collect()
}

#[profile(limit = "1 MiB")]
fn shrink(v: Vec<u8>) -> Vec<u8> {
    v[..16].to_vec()
}

#[test]
fn budgets_judge_what_a_consuming_call_keeps() {
    // 1 MiB in, 1 MiB out: the call keeps nothing, within any `max_retained`.
    let out = transform(black_box(vec![0u8; MIB]));
    assert_eq!(out.len(), MIB);
    assert_eq!(figures(&table("transform"), "fn transform").0, 0);
    // The input is freed in the call, which peaks at the input's size
    // plus the output's only if it grows past its start: here 16 B.
    assert_eq!(shrink(black_box(vec![0u8; MIB])).len(), 16);
    assert_eq!(
        figures(&table("shrink"), "fn shrink"),
        (16 - MIB as i64, 16, 1)
    );
}

#[profile]
async fn consume_async(v: Vec<u8>) -> usize {
    let n = v.len();
    std::future::ready(()).await;
    n
}

#[test]
fn an_async_fn_frees_its_arguments_in_the_call() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let v = vec![0u8; MIB];
    let (measured, fn_row) = call_and_row("consume_async", "async fn consume_async", || {
        assert_eq!(rt.block_on(consume_async(v)), MIB);
    });
    assert_eq!((measured, fn_row), (-(MIB as i64), -(MIB as i64)));
}

/// `{self}` in a format string cannot be renamed: `self` stays an argument,
/// and the function compiles and runs as written.
#[derive(Debug)]
struct Named(#[allow(dead_code)] String);

impl Named {
    #[profile]
    fn describe(self) -> String {
        format!("{self:?}")
    }
}

#[test]
fn self_named_in_a_format_string_still_compiles() {
    assert_eq!(Named("a".into()).describe(), "Named(\"a\")");
}

#[profile]
fn early_return(stop: usize) -> usize {
    let big = black_box(vec![0u8; 4096]);
    for i in 0..10 {
        let scratch = black_box(vec![0u8; 100]);
        if i == stop {
            return scratch.len() + big.len();
        }
    }
    0
}

/// A block left early charges what its locals free to its statement that
/// was running, or to its closing brace when that was its tail: the
/// function's `big` goes to the `for` row, which holds the `return`; the
/// loop body's `scratch` to the loop body's `}`, as its `if` is its tail.
#[test]
fn a_return_inside_a_loop_charges_each_block_its_own_locals() {
    assert_eq!(early_return(2), 4196);
    let t = table("early_return");
    assert_eq!(figures(&t, "fn early_return"), (0, 4196, 1));
    assert_eq!(figures(&t, "let big"), (4096, 4096, 1));
    assert_eq!(figures(&t, "for i in 0..10"), (-4096, 100, 1));
    assert_eq!(figures(&t, "let scratch"), (300, 100, 3));
    assert_eq!(figures(&t, "if i == stop"), (0, 0, 3));
    assert_eq!(figures(&t, "return scratch"), (0, 0, 1));
    let fn_line = t.line_containing("fn early_return").unwrap().line;
    let body_close = t.lines.iter().find(|r| r.line == fn_line + 7).unwrap();
    assert_eq!(body_close.contents.trim(), "}");
    assert_eq!(
        (
            body_close.increment,
            body_close.peak,
            body_close.occurrences
        ),
        (Some(-300), Some(0), 3)
    );
}
