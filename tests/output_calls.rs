//! What the end of a call prints beyond its table's rows: `async fn` calls
//! under the rules of synchronous ones, a panicking call's table, the notes
//! on what other threads or tasks did, and `memit!`'s scope. Each checked in
//! a child run of this test binary (see `support/child.rs`).
//!
//! A buffer whose contents nothing reads passes through `black_box`: an
//! optimized build (`cargo test --release`) removes such an allocation, and
//! its table then rightly shows nothing.

// The point is to allocate on the heap.
#![allow(clippy::useless_vec)]

#[path = "support/child.rs"]
mod child;

#[path = "support/fan_out.rs"]
mod fan_out;

use child::{captured_run, is_child, run_child, run_child_as_program};
use memprof::{memit, profile};
use std::hint::black_box;

/// Polls `fut` to completion on this thread.
fn block_on<F: std::future::Future>(fut: F) -> F::Output {
    struct Noop;
    impl std::task::Wake for Noop {
        fn wake(self: std::sync::Arc<Self>) {}
    }
    let waker = std::task::Waker::from(std::sync::Arc::new(Noop));
    let mut cx = std::task::Context::from_waker(&waker);
    let mut fut = std::pin::pin!(fut);
    loop {
        if let std::task::Poll::Ready(out) = fut.as_mut().poll(&mut cx) {
            return out;
        }
    }
}

#[profile]
async fn async_called_five_times(n: usize) -> usize {
    let v = vec![0u8; n];
    v.len()
}

#[test]
#[ignore = "a child run: this file's tests start it"]
fn child_five_async_calls() {
    if is_child() {
        for n in 1..=5 {
            block_on(async_called_five_times(n * 1000));
        }
    }
}

fn async_tables(stdout: &str) -> usize {
    stdout
        .matches("Function: output_calls::async_called_five_times")
        .count()
}

#[test]
fn an_async_fn_prints_under_the_rules_of_a_sync_fn() {
    // Regression: every call of an `async fn` printed a table of its own.
    let (out, _) = run_child_as_program("child_five_async_calls", &[]);
    assert_eq!(async_tables(&out), 4, "{out}");
    assert_eq!(out.matches("Calls: 5 (aggregated)").count(), 1, "{out}");
    assert_eq!(
        out.matches(
            "(memprof: no more tables of output_calls::async_called_five_times per call: any \
             further calls are aggregated into one table at exit; MEMPROF_REPORT=call prints every \
             call)"
        )
        .count(),
        1,
        "{out}"
    );
    let row = out
        .lines()
        .rev()
        .find(|l| l.contains("let v = vec!"))
        .unwrap();
    assert!(row.contains("14.6 KiB"), "{row}");
    let (out, _) = run_child("child_five_async_calls", &[]);
    assert_eq!(async_tables(&out), 3, "{out}");
    let (lines, passed) = captured_run("child_five_async_calls", &[]);
    assert!(passed);
    assert_eq!(lines.len(), 3, "a passing test prints no table: {lines:#?}");
    for (mode, expected) in [("call", 5), ("exit", 1), ("off", 0)] {
        let (out, _) = run_child("child_five_async_calls", &[("MEMPROF_REPORT", mode)]);
        assert_eq!(async_tables(&out), expected, "{mode}: {out}");
    }
}

const PANICS_LINE: u32 = line!() + 1;
#[profile]
fn panics_midway(n: usize) -> usize {
    let v = black_box(vec![0u8; n]);
    assert!(n < 10, "too big: {n}");
    v.len()
}

#[test]
#[ignore = "a child run: this file's tests start it"]
fn child_panics_in_a_profiled_call() {
    if is_child() {
        panics_midway(1024);
    }
}

#[test]
fn a_panicking_call_prints_its_table_up_to_the_panic() {
    // Regression: a call that panicked printed nothing.
    let (lines, passed) = captured_run("child_panics_in_a_profiled_call", &[]);
    assert!(!passed);
    let captured: Vec<&str> = lines
        .iter()
        .map(String::as_str)
        .skip_while(|l| *l != "---- child_panics_in_a_profiled_call stdout ----")
        .collect();
    let title = captured
        .iter()
        .position(|l| l.starts_with("Filename: tests/output_calls.rs"))
        .unwrap_or_else(|| panic!("{lines:#?}"));
    assert_eq!(
        captured[title],
        "Filename: tests/output_calls.rs   Function: output_calls::panics_midway   (panicked)"
    );
    let row = |text: &str| {
        *captured[title..]
            .iter()
            .find(|l| l.contains(text))
            .unwrap_or_else(|| panic!("{lines:#?}"))
    };
    let at = |offset: u32| format!("{:>7}", PANICS_LINE + offset);
    // Mem usage counts the heap before the call, which libtest decides.
    let allocated = row("let v = black_box(vec!");
    assert!(allocated.starts_with(&at(2)), "{allocated}");
    assert!(
        allocated.ends_with(
            "    1.0 KiB      1.0 KiB             1       let v = black_box(vec![0u8; n]);"
        ),
        "{allocated}"
    );
    // The panicking line ran once; the line after it never did.
    assert!(
        row("assert!(n < 10").ends_with("             1       assert!(n < 10, \"too big: {n}\");")
    );
    assert_eq!(
        row("v.len()").split_whitespace().collect::<Vec<_>>(),
        [(PANICS_LINE + 4).to_string().as_str(), "v.len()"]
    );
    // The panic itself is the user's, unchanged: its message and location.
    assert!(
        captured.iter().any(|l| *l
            == format!(
                "thread 'child_panics_in_a_profiled_call' panicked at tests/output_calls.rs:{}:5:",
                PANICS_LINE + 3
            )
            || l.starts_with("thread 'child_panics_in_a_profiled_call' (")
                && l.ends_with(&format!(
                    ") panicked at tests/output_calls.rs:{}:5:",
                    PANICS_LINE + 3
                ))),
        "{lines:#?}"
    );
    assert!(captured.contains(&"too big: 1024"), "{lines:#?}");
}

#[test]
fn a_panicking_call_keeps_its_payload() {
    let err = std::panic::catch_unwind(|| panics_midway(4096)).unwrap_err();
    assert_eq!(err.downcast_ref::<String>().unwrap(), "too big: 4096");
}

#[profile]
async fn keeps_what_a_task_returns() -> Vec<u8> {
    let part = tokio::spawn(async { vec![1u8; 4 << 20] }).await.unwrap();
    part
}

#[profile]
async fn drops_what_a_task_returns() -> usize {
    let part = tokio::spawn(async { vec![1u8; 4 << 20] }).await.unwrap();
    part.len()
}

#[test]
#[ignore = "a child run: this file's tests start it"]
fn child_awaits_spawned_tasks() {
    if is_child() {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .build()
            .unwrap();
        let kept = rt.block_on(keeps_what_a_task_returns());
        assert_eq!(rt.block_on(drops_what_a_task_returns()), kept.len());
        assert_eq!(hands_a_buffer_to_a_thread(), 4 << 20);
    }
}

#[profile]
fn hands_a_buffer_to_a_thread() -> usize {
    let buffer = vec![2u8; 4 << 20];
    std::thread::spawn(move || buffer.len()).join().unwrap()
}

/// The `(memprof: ...)` line under the table of `function` in `out`.
fn note_under(out: &str, function: &str) -> String {
    let title = format!("Function: output_calls::{function}");
    out.lines()
        .skip_while(|l| !l.contains(&title))
        .skip(1)
        .take_while(|l| !l.starts_with("Filename:"))
        .find(|l| l.starts_with("(memprof:"))
        .unwrap_or_else(|| panic!("no note under {function}:\n{out}"))
        .to_owned()
}

#[test]
fn what_other_tasks_allocated_or_freed_is_said_under_the_table() {
    let (out, _) = run_child("child_awaits_spawned_tasks", &[]);
    // Regression: the spawned task's 4 MiB showed nowhere.
    assert_eq!(
        note_under(&out, "keeps_what_a_task_returns"),
        "(memprof: other threads or tasks allocated 4.0 MiB more than they freed during this \
         call, which thread scope does not count; #[profile(scope = \"process\")] counts them)"
    );
    assert_eq!(
        note_under(&out, "drops_what_a_task_returns"),
        "(memprof: this call freed 4.0 MiB more than its thread allocated during it: memory \
         allocated before, or by other threads or tasks, which thread scope does not count, so \
         Mem usage can read low or below zero; #[profile(scope = \"process\")] counts every thread)"
    );
    // Regression: a test whose queue's blocks a receiving thread freed
    // showed them kept, with no word of why.
    assert_eq!(
        note_under(&out, "hands_a_buffer_to_a_thread"),
        "(memprof: other threads or tasks freed 4.0 MiB more than they allocated during this \
         call, perhaps blocks it kept: thread scope leaves a block kept where it was \
         allocated; #[profile(scope = \"process\")] counts every thread)"
    );
}

/// The workers of every test here.
fn fan_out() -> Vec<Vec<u8>> {
    fan_out::fan_out(4, 2 << 20)
}

#[test]
#[ignore = "a child run: this file's tests start it"]
fn child_memit_fans_out() {
    if is_child() {
        let parts = memit!(fan_out());
        drop(parts);
        let parts = memit!(fan_out(), scope = "thread");
        drop(parts);
        let parts = memit!(fan_out(), scope = "process",);
        drop(parts);
    }
}

#[test]
fn memit_counts_a_fan_out_and_says_what_thread_scope_missed() {
    // Regression: memit! counted the calling thread only, silently.
    let (out, _) = run_child("child_memit_fans_out", &[]);
    let lines: Vec<&str> = out
        .lines()
        .filter_map(|l| {
            ["peak memory:", "note:"]
                .iter()
                .find_map(|p| l.find(p).map(|at| &l[at..]))
        })
        .collect();
    let figures = |line: &str| line.split_once(", ").unwrap().1.to_owned();
    assert_eq!(lines.len(), 4, "{out}");
    // The workers' 4 MiB kept, and at the peak the last one's scratch too.
    assert_eq!(figures(lines[0]), "increment: 5.0 MiB (net 4.0 MiB kept)");
    // In thread scope, what spawning took on the calling thread: bytes.
    let thread = figures(lines[1]);
    assert!(
        thread.ends_with(" B kept)") && !thread.contains("KiB"),
        "{thread}"
    );
    assert_eq!(
        lines[2],
        "note: other threads allocated meanwhile, which thread scope does not count: \
         process-wide, increment: 5.0 MiB (net 4.0 MiB kept); \
         memit!(.., scope = \"process\") counts them"
    );
    assert_eq!(figures(lines[3]), "increment: 5.0 MiB (net 4.0 MiB kept)");
}

// ---- freeing older memory: a note only where other threads moved -------------

/// A cache's eviction: frees what the same thread allocated before the call.
const EVICTS_LINE: u32 = line!() + 1;
#[profile]
fn evicts(cache: &mut Vec<Vec<u8>>) -> usize {
    let old = cache.remove(0);
    drop(old);
    cache.len()
}

/// The same, while a thread it starts loads 1 MiB that the call keeps.
const EVICTS_WHILE_LINE: u32 = line!() + 1;
#[profile]
fn evicts_while_a_thread_loads(cache: &mut Vec<Vec<u8>>) -> Vec<u8> {
    let loaded = std::thread::spawn(|| vec![3u8; 1 << 20]).join().unwrap();
    drop(cache.remove(0));
    loaded
}

#[test]
#[ignore = "a child run: this file's tests start it"]
fn child_evicts() {
    if is_child() {
        let mut cache = vec![vec![1u8; 4 << 20], vec![2u8; 16]];
        evicts(&mut cache);
        let mut cache = vec![vec![1u8; 4 << 20], vec![2u8; 16]];
        let loaded = evicts_while_a_thread_loads(&mut cache);
        drop(loaded);
    }
}

/// The table of `function` in `out`, with what follows it up to the next
/// blank line.
fn table_of(out: &str, function: &str) -> String {
    let title = format!("Function: output_calls::{function}");
    let mut lines = out.lines().skip_while(|l| !l.contains(&title));
    let mut text = String::new();
    // The title follows libtest's `test child_... ... ` on its line.
    if let Some(line) = lines.next() {
        text.push_str(&line[line.find("Filename:").unwrap()..]);
        text.push('\n');
    }
    for line in lines.by_ref().take(3) {
        text.push_str(line);
        text.push('\n');
    }
    for line in lines.take_while(|l| !l.is_empty()) {
        text.push_str(line);
        text.push('\n');
    }
    text
}

#[test]
fn freeing_older_memory_on_one_thread_has_no_note() {
    // Regression: a `Drop` or an eviction on a single thread printed "this
    // call freed 4.0 MiB more than its thread allocated ...; scope =
    // "process" counts every thread", where process scope counts the same.
    let (out, _) = run_child(
        "child_evicts",
        &[("MEMPROF_UNIT", "MiB"), ("MEMPROF_PRECISION", "1")],
    );
    let l = EVICTS_LINE;
    let expected = format!(
        "\
Filename: tests/output_calls.rs   Function: output_calls::evicts

 Line #    Mem usage     Increment         Peak   Occurrences   Line Contents
=============================================================================
{:>7}                                                         #[profile]
{:>7}      0.0 MiB      -4.0 MiB      0.0 MiB             1   fn evicts(cache: &mut Vec<Vec<u8>>) -> usize {{
{:>7}      4.0 MiB       0.0 MiB      0.0 MiB             1       let old = cache.remove(0);
{:>7}      0.0 MiB      -4.0 MiB      0.0 MiB             1       drop(old);
{:>7}      0.0 MiB       0.0 MiB      0.0 MiB             1       cache.len()
{:>7}      0.0 MiB       0.0 MiB      0.0 MiB             1   }}
",
        l,
        l + 1,
        l + 2,
        l + 3,
        l + 4,
        l + 5
    );
    assert_eq!(table_of(&out, "evicts"), expected, "{out}");
}

#[test]
fn freeing_older_memory_while_another_thread_allocates_has_the_note() {
    let (out, _) = run_child(
        "child_evicts",
        &[("MEMPROF_UNIT", "MiB"), ("MEMPROF_PRECISION", "1")],
    );
    let table = table_of(&out, "evicts_while_a_thread_loads");
    assert_eq!(
        table.lines().nth(5).unwrap(),
        format!(
            "{:>7}      0.0 MiB      -4.0 MiB      0.0 MiB             1   \
             fn evicts_while_a_thread_loads(cache: &mut Vec<Vec<u8>>) -> Vec<u8> {{",
            EVICTS_WHILE_LINE + 1
        ),
        "{out}"
    );
    assert_eq!(
        table.lines().last().unwrap(),
        "(memprof: this call freed 4.0 MiB more than its thread allocated during it: memory \
         allocated before, or by other threads or tasks, which thread scope does not count, so \
         Mem usage can read low or below zero; #[profile(scope = \"process\")] counts every thread)",
        "{out}"
    );
}
