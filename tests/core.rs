//! Exact figures of `#[profile]` tables, `measure` and `memit!`.
//!
//! Each test profiles functions of its own, so tests running in parallel (as
//! cargo test runs them) never share a table.
//!
//! A buffer whose contents nothing reads passes through `black_box`: an
//! optimized build (`cargo test --release`) removes such an allocation, and
//! its table then rightly shows nothing.

// The point is to allocate on the heap.
#![allow(clippy::useless_vec)]

#[path = "support/child.rs"]
mod child;
#[path = "support/tables.rs"]
mod tables;

use memprof::{measure, memit, profile};
use std::hint::black_box;
use tables::{figures, row, table};

const MIB: u64 = 1 << 20;

#[profile]
fn one_mebibyte() -> usize {
    let v = black_box(vec![0u8; 1 << 20]);
    v.len()
}

#[test]
fn a_vec_of_one_mebibyte_increments_by_exactly_that() {
    assert_eq!(one_mebibyte(), 1 << 20);
    let t = table("one_mebibyte");
    assert_eq!(figures(&t, "let v = black_box(vec!"), (1 << 20, 1 << 20, 1));
    // The vec is freed when the call ends: the call as a whole nets zero.
    assert_eq!(figures(&t, "fn one_mebibyte"), (0, 1 << 20, 1));
}

// The statement frees its temporary itself: its own row is the point.
#[allow(clippy::let_and_return)]
#[profile]
fn temporary_buffer() -> usize {
    let n = vec![7u8; 8 << 20].iter().filter(|b| **b == 7).count();
    n
}

#[test]
fn a_buffer_freed_within_its_statement_shows_as_peak_only() {
    assert_eq!(temporary_buffer(), 8 << 20);
    let t = table("temporary_buffer");
    assert_eq!(figures(&t, "let n = vec!"), (0, 8 * MIB, 1));
}

#[profile]
fn loop_three_times() -> Vec<Vec<u8>> {
    let mut kept = Vec::with_capacity(3);
    for i in 0..3 {
        kept.push(vec![i as u8; 1000]);
    }
    kept
}

#[test]
fn a_loop_body_run_three_times_has_three_occurrences() {
    assert_eq!(loop_three_times().len(), 3);
    let t = table("loop_three_times");
    assert_eq!(figures(&t, "kept.push"), (3000, 1000, 3));
    // The outer statement includes its body; it runs once.
    assert_eq!(figures(&t, "for i in 0..3"), (3000, 3000, 1));
    // The body's `}` is where each iteration's item (`i`) is dropped: a row
    // of its own, which frees nothing here.
    let closing = t.lines.iter().find(|l| l.contents.trim() == "}").unwrap();
    assert_eq!(
        (closing.increment, closing.peak, closing.occurrences),
        (Some(0), Some(0), 3)
    );
}

#[profile]
fn no_allocation(x: u64) -> u64 {
    let a = x + 1;
    let b = a * 2;
    black_box(b)
}

#[profile]
fn calls_a_quiet_function() -> u64 {
    let mut sum = 0;
    for i in 0..10 {
        sum += no_allocation(i);
    }
    sum
}

#[test]
fn the_profilers_own_bookkeeping_never_shows() {
    // Ten nested calls: tables printed, aggregates merged, configuration
    // read, the exit hook registered. None of it may show.
    assert_eq!(calls_a_quiet_function(), 110);
    let outer = table("calls_a_quiet_function");
    assert_eq!(figures(&outer, "sum += no_allocation"), (0, 0, 10));
    assert_eq!(figures(&outer, "fn calls_a_quiet_function"), (0, 0, 1));
    let inner = table("no_allocation");
    assert_eq!(inner.calls, 10);
    for row in inner.lines.iter().filter(|l| l.increment.is_some()) {
        assert_eq!((row.increment, row.peak), (Some(0), Some(0)), "{row:?}");
    }
}

#[profile]
fn mem_usage_moves_by_exact_bytes() -> (Vec<u8>, Vec<u8>) {
    let first = vec![1u8; 4096];
    let second = vec![2u8; 10_000];
    (first, second)
}

#[test]
fn mem_usage_is_the_heap_after_the_line() {
    let _keep = mem_usage_moves_by_exact_bytes();
    let t = table("mem_usage_moves_by_exact_bytes");
    let first = row(&t, "let first").mem_usage.unwrap();
    let second = row(&t, "let second").mem_usage.unwrap();
    assert!(first >= 4096, "{first}");
    assert_eq!(second - first, 10_000);
}

#[profile]
#[rustfmt::skip]
fn two_statements_on_one_line() -> usize {
    let a = black_box(vec![0u8; 100]); let b = black_box(vec![0u8; 200]);
    a.len() + b.len()
}

#[test]
fn statements_on_one_line_share_one_row() {
    assert_eq!(two_statements_on_one_line(), 300);
    let t = table("two_statements_on_one_line");
    assert_eq!(figures(&t, "let a = black_box(vec!"), (300, 300, 1));
}

#[profile]
fn early_exit(fail: bool) -> Result<usize, String> {
    let v = vec![0u8; 512];
    let checked: Result<usize, String> = if fail {
        Err("no".repeat(2))
    } else {
        Ok(v.len())
    };
    let n = checked?;
    Ok(n)
}

#[test]
fn statements_left_by_question_mark_are_still_recorded() {
    assert_eq!(early_exit(false), Ok(512));
    assert_eq!(early_exit(true), Err("nono".to_owned()));
    let t = table("early_exit");
    assert_eq!(t.calls, 2);
    assert_eq!(figures(&t, "let n = checked?").2, 2);
    // Only the successful call reaches the last line.
    assert_eq!(figures(&t, "Ok(n)").2, 1);
    // The error string (4 bytes) leaves through `?` and is the caller's.
    assert_eq!(figures(&t, "fn early_exit").0, 4);
}

#[profile]
fn countdown(n: u32) -> usize {
    let here = black_box(vec![0u8; 16]);
    if n == 0 {
        return here.len();
    }
    here.len() + countdown(n - 1)
}

#[test]
fn recursion_is_one_table_with_every_level_counted() {
    assert_eq!(countdown(4), 80);
    let t = table("countdown");
    // One outermost call; the four nested ones fold into its table.
    assert_eq!(t.calls, 1);
    // No `let here` runs inside another `let here`: every level counts.
    assert_eq!(figures(&t, "let here"), (5 * 16, 16, 5));
    assert_eq!(figures(&t, "return here.len()").2, 1);
    // The recursive line runs four times, each nested in the one above:
    // only the outermost execution's figures count (it holds the others').
    assert_eq!(figures(&t, "here.len() + countdown"), (0, 64, 4));
    // The `fn` row is the outermost call's: what `measure` says of it.
    assert_eq!(figures(&t, "fn countdown"), (0, 80, 5));
}

#[test]
fn measure_counts_exact_bytes_and_calls() {
    let (v, m) = measure(|| vec![0u8; 10]);
    assert_eq!(
        (m.increment, m.peak, m.allocations, m.deallocations),
        (10, 10, 1, 0)
    );
    drop(v);
    let ((), m) = measure(|| drop(black_box(vec![0u8; 10])));
    assert_eq!(
        (m.increment, m.peak, m.allocations, m.deallocations),
        (0, 10, 1, 1)
    );
    // A realloc counts once each way and moves the count by the difference.
    let (v, m) = measure(|| {
        let mut v: Vec<u8> = Vec::with_capacity(8);
        v.extend_from_slice(&[1; 8]);
        v.reserve_exact(24);
        v
    });
    assert_eq!(v.capacity(), 32);
    assert_eq!(
        (m.increment, m.peak, m.allocations, m.deallocations),
        (32, 32, 2, 1)
    );
}

#[test]
fn memit_returns_the_value_of_its_expression() {
    let v = memit!(vec![5u8; 3]);
    assert_eq!(v, [5, 5, 5]);
    let ((), m) = measure(|| {
        black_box(memit!(1 + 1));
    });
    // Its own printing is bookkeeping.
    assert_eq!((m.increment, m.peak), (0, 0));
}

#[test]
fn concurrent_calls_each_count_only_their_own_thread() {
    use std::sync::{Arc, Barrier};

    #[profile]
    fn hold(bytes: usize, barrier: &Barrier) -> usize {
        let v = vec![1u8; bytes];
        barrier.wait();
        let w = vec![2u8; bytes];
        barrier.wait();
        v.len() + w.len()
    }

    // Both threads hold their buffers at the same moment, between the
    // barriers; each must still see only its own.
    let barrier = Arc::new(Barrier::new(2));
    let handles: Vec<_> = [MIB as usize, 3 * MIB as usize]
        .into_iter()
        .map(|bytes| {
            let barrier = Arc::clone(&barrier);
            std::thread::spawn(move || measure(|| hold(bytes, &barrier)).1)
        })
        .collect();
    let results: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    assert_eq!((results[0].increment, results[0].peak), (0, 2 * MIB));
    assert_eq!((results[1].increment, results[1].peak), (0, 6 * MIB));

    let t = table("hold");
    assert_eq!(t.calls, 2);
    // Σ over both calls: 1 MiB + 3 MiB; the peak is the larger call's.
    assert_eq!(figures(&t, "let v = vec!"), (4 * MIB as i64, 3 * MIB, 2));
    assert_eq!(figures(&t, "fn hold"), (0, 6 * MIB, 2));
}

#[profile]
fn scratch_per_iteration() -> usize {
    let mut total = 0;
    for i in 0..4 {
        let scratch = vec![i as u8; 2048];
        total += scratch.len();
    }
    total
}

#[test]
fn locals_freed_at_the_end_of_a_block_show_on_its_closing_brace() {
    assert_eq!(scratch_per_iteration(), 4 * 2048);
    let t = table("scratch_per_iteration");
    assert_eq!(figures(&t, "let scratch"), (4 * 2048, 2048, 4));
    // The loop body's `}`: four scope ends, each freeing its scratch buffer.
    let body_end = t
        .lines
        .iter()
        .find(|l| l.contents.trim() == "}" && l.occurrences == 4)
        .unwrap_or_else(|| panic!("no closing brace with 4 occurrences in\n{t}"));
    assert_eq!(
        (body_end.increment, body_end.peak),
        (Some(-4 * 2048), Some(0))
    );
    // So the loop as a whole nets zero, as it should.
    assert_eq!(figures(&t, "for i in 0..4"), (0, 2048, 1));
}

#[profile]
fn leaves_early(stop: bool) -> usize {
    let kept = black_box(vec![0u8; 300]);
    if stop {
        return kept.len();
    }
    let more = black_box(vec![0u8; 700]);
    kept.len() + more.len()
}

#[test]
fn a_block_left_early_charges_its_frees_to_the_statement_running() {
    assert_eq!(leaves_early(false), 1000);
    assert_eq!(leaves_early(true), 300);
    let t = table("leaves_early");
    // Only the call that reaches the end frees at the closing brace.
    let end = t.lines.last().unwrap();
    assert_eq!(end.contents.trim(), "}");
    assert_eq!((end.increment, end.occurrences), (Some(-1000), 1));
    // Returning early frees `kept`: the statement that was running as the
    // function was left, `if stop { return .. }`, shows it.
    assert_eq!(figures(&t, "return kept.len()"), (0, 0, 1));
    assert_eq!(figures(&t, "if stop"), (-300, 0, 2));
    assert_eq!(figures(&t, "fn leaves_early"), (0, 1000, 2));
}

/// A rustdoc block above a profiled function
/// stays out of its table,
/// however long it is.
#[inline(never)]
#[profile]
fn documented() -> usize {
    black_box(1)
}

#[test]
fn a_table_starts_at_the_attributes_not_at_the_doc_comment() {
    assert_eq!(documented(), 1);
    let t = table("documented");
    let first: Vec<&str> = t.lines.iter().take(3).map(|l| l.contents.trim()).collect();
    assert_eq!(
        first,
        [
            "#[inline(never)]",
            "#[profile]",
            "fn documented() -> usize {"
        ]
    );
}

// The attribute as tools insert it (`cargo memprof`, scripts/corpus), in
// front of the function on its own first line so that every line keeps its
// number: that row is the user's line, without it, in the function's table
// and in the table of the function around it. Written any other way, the
// attribute is the user's text and stays.
#[rustfmt::skip]
#[inline(never)] #[::memprof::profile] fn inserted() -> usize {
    #[::memprof::profile] fn nested() -> usize { black_box(2) }
    let text = "#[::memprof::profile] fn";
    nested() + text.len() - 24
}

#[rustfmt::skip]
#[inline(never)] #[profile] fn written_on_one_line() -> usize {
    black_box(3)
}

// With the crate's item-free macros named, as `cargo memprof` inserts it.
macro_rules! four {
    () => {
        4
    };
}

#[rustfmt::skip]
#[::memprof::profile(expr_macros(four, other))] fn inserted_with_macros() -> usize {
    black_box(four!())
}

#[test]
fn a_row_leaves_out_the_attribute_as_tools_insert_it() {
    assert_eq!(inserted(), 2);
    assert_eq!(written_on_one_line(), 3);
    let first_rows = |name| -> Vec<String> {
        let t = table(name);
        t.lines
            .iter()
            .take(2)
            .map(|l| l.contents.trim().to_owned())
            .collect()
    };
    assert_eq!(
        first_rows("inserted"),
        [
            "#[rustfmt::skip]",
            "#[inline(never)] fn inserted() -> usize {"
        ]
    );
    let inserted = table("inserted");
    let rows: Vec<&str> = inserted.lines[2..4]
        .iter()
        .map(|l| l.contents.trim())
        .collect();
    assert_eq!(
        rows,
        [
            "fn nested() -> usize { black_box(2) }",
            "let text = \"#[::memprof::profile] fn\";"
        ]
    );
    assert_eq!(
        table("inserted::nested").lines[0].contents.trim(),
        "fn nested() -> usize { black_box(2) }"
    );
    assert_eq!(inserted_with_macros(), 4);
    assert_eq!(
        first_rows("inserted_with_macros"),
        ["#[rustfmt::skip]", "fn inserted_with_macros() -> usize {"]
    );
    assert_eq!(
        first_rows("written_on_one_line"),
        [
            "#[rustfmt::skip]",
            "#[inline(never)] #[profile] fn written_on_one_line() -> usize {"
        ]
    );
}

// A spike, then statements that allocate nothing, at the body's level and
// in a nested block: after a thread's first calls, which the runtime enters
// to print their tables, the kernel enters the call and closes such
// statements by its quiet path, which leaves the thread's counters as they
// are. Each row must still read as the runtime's path records it, and the
// spike must stay in the call's peak. The spike comes only in the later
// calls: a peak is the highest over calls, so the runtime's calls would
// hide a kernel call's missing one.
//
// NOTE: in a child run of its own. Mem usage starts from the process's heap
// at each call's entry, which the other tests of this binary move, and the
// highest over calls then need not come from one call for each row: `let
// spike` and `let kept` (which keeps 100 bytes every other call) once read
// their highest in different calls, 100 bytes apart, in release.
#[profile]
fn spike_then_quiet(spike: usize, keep: usize) -> Vec<u8> {
    let spike = black_box(vec![0u8; spike]).len();
    let kept = vec![0u8; keep];
    for i in 0..4 {
        let quiet = black_box(i) + 1;
        black_box(quiet);
    }
    // The condition's temporary is freed before the block runs: the `if`
    // row's peak lives on while its block's statements run and close.
    if black_box(vec![0u8; spike]).len() == spike {
        let inner = black_box(spike);
        black_box(inner);
    }
    let empty: u64 = black_box(spike as u64);
    black_box(empty);
    kept
}

#[test]
fn statements_that_allocate_nothing_keep_every_figure_exact() {
    child::run_child("child_statements_that_allocate_nothing", &[]);
}

#[test]
#[ignore = "a child run: this file's tests start it"]
fn child_statements_that_allocate_nothing() {
    if !child::is_child() {
        return;
    }
    std::thread::spawn(|| {
        for call in 0..20 {
            let spike = if call < 10 { 0 } else { 3000 };
            black_box(spike_then_quiet(spike, call % 2 * 100));
        }
    })
    .join()
    .unwrap();
    let t = table("spike_then_quiet");
    assert_eq!(figures(&t, "fn spike_then_quiet"), (1000, 3100, 20));
    assert_eq!(figures(&t, "let spike"), (0, 3000, 20));
    assert_eq!(figures(&t, "let kept"), (1000, 100, 20));
    assert_eq!(figures(&t, "for i in"), (0, 0, 20));
    assert_eq!(figures(&t, "let quiet"), (0, 0, 80));
    assert_eq!(figures(&t, "black_box(quiet)"), (0, 0, 80));
    assert_eq!(figures(&t, "if black_box"), (0, 3000, 20));
    assert_eq!(figures(&t, "let inner"), (0, 0, 20));
    assert_eq!(figures(&t, "let empty"), (0, 0, 20));
    // Mem usage after the quiet rows is the heap they ran at: the kept
    // bytes above what the call started with.
    let usage = |text| row(&t, text).mem_usage.unwrap();
    assert_eq!(usage("let quiet"), usage("let kept"));
    assert_eq!(usage("let empty"), usage("let kept"));
    assert_eq!(usage("let spike") + 100, usage("let kept"));
}
