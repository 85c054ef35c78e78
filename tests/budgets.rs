//! Memory budgets: `#[profile(limit = .., max_retained = ..)]` and
//! `assert_memory!` fail what uses too much, exactly and per thread.
//!
//! A buffer whose contents nothing reads passes through `black_box`: an
//! optimized build (`cargo test --release`) removes such an allocation, and
//! its table then rightly shows nothing.

// The point is to allocate on the heap.
#![allow(clippy::useless_vec)]

#[path = "support/child.rs"]
mod child;

use memprof::{assert_memory, profile};
use std::hint::black_box;

fn panic_message(f: impl FnOnce() + std::panic::UnwindSafe) -> String {
    let err = std::panic::catch_unwind(f).expect_err("should have panicked");
    match err.downcast::<String>() {
        Ok(s) => *s,
        Err(err) => err.downcast_ref::<&str>().unwrap().to_string(),
    }
}

#[profile(limit = "1 MiB")]
fn scratch(bytes: usize) -> usize {
    let small = black_box(vec![0u8; 1000]);
    let big = black_box(vec![0u8; bytes]);
    big.len() + small.len()
}

#[test]
#[should_panic(expected = "memory limit exceeded")]
fn a_test_over_its_limit_fails() {
    scratch(2 << 20);
}

// The same as `scratch`, with a table of its own: the test above calls
// `scratch` at the same time, from another test thread.
const SCRATCH_AGAIN_LINE: u32 = line!() + 2;
#[profile(limit = "1 MiB")]
fn scratch_again(bytes: usize) -> usize {
    let small = black_box(vec![0u8; 1000]);
    let big = black_box(vec![0u8; bytes]);
    big.len() + small.len()
}

#[test]
fn the_limit_message_names_the_figures_and_marks_the_line() {
    assert_eq!(scratch_again(1000), 2000);
    let message = panic_message(|| {
        scratch_again(2 << 20);
    });
    let first = message.lines().next().unwrap();
    assert_eq!(
        first,
        format!(
            "memory limit exceeded in budgets::scratch_again (tests/budgets.rs:{SCRATCH_AGAIN_LINE}): \
             peak 2.0 MiB > limit 1.0 MiB"
        )
    );
    let marked: Vec<&str> = message
        .lines()
        .filter(|l| l.ends_with("<-- peak over the limit"))
        .collect();
    assert_eq!(marked.len(), 1, "{message}");
    assert!(marked[0].contains("let big = black_box(vec!"), "{message}");
    // The call under the limit did not fail, and both calls are recorded.
    assert_eq!(
        memprof::report().function("scratch_again").unwrap().calls,
        2
    );
}

const EXACTLY_AT_LINE: u32 = line!() + 2;
#[profile(limit = "1.5 MB")]
fn exactly_at(bytes: usize) -> usize {
    let v = black_box(vec![0u8; bytes]);
    v.len()
}

#[test]
fn a_peak_equal_to_the_limit_passes_and_one_byte_more_fails() {
    // 1.5 MB is 1.5 MiB, as in pytest-memray.
    assert_eq!(exactly_at(3 << 19), 3 << 19);
    let message = panic_message(|| {
        exactly_at((3 << 19) + 1);
    });
    assert!(message.starts_with(&format!(
        "memory limit exceeded in budgets::exactly_at (tests/budgets.rs:{EXACTLY_AT_LINE}): \
         peak 1.5 MiB > limit 1.5 MiB"
    )));
}

const LEAKS_LINE: u32 = line!() + 2;
#[profile(max_retained = "1 MiB")]
fn leaks(bytes: usize) -> &'static [u8] {
    let kept = black_box(vec![7u8; bytes]);
    let transient = black_box(vec![0u8; 4 << 20]);
    drop(transient);
    kept.leak()
}

#[test]
fn max_retained_fails_a_call_that_keeps_too_much() {
    // A 4 MiB peak is fine: only what the call keeps counts.
    assert_eq!(leaks(1 << 20).len(), 1 << 20);
    let message = panic_message(|| {
        leaks(2 << 20);
    });
    assert_eq!(
        message.lines().next().unwrap(),
        format!(
            "memory limit exceeded in budgets::leaks (tests/budgets.rs:{LEAKS_LINE}): \
             retained 2.0 MiB > max_retained 1.0 MiB"
        )
    );
    // Rows whose increment alone is over the budget: the kept buffer, and
    // the transient one (freed again two lines down; the table shows it).
    let marked: Vec<&str> = message
        .lines()
        .filter(|l| l.ends_with("<-- increment over the limit"))
        .collect();
    assert_eq!(marked.len(), 2, "{message}");
    assert!(marked[0].contains("let kept") && marked[1].contains("let transient"));
}

/// The line of `twice_over`'s `fn`, which its failure message names.
const TWICE_OVER_LINE: u32 = line!() + 2;
#[profile(limit = "4 KiB", max_retained = "1 KiB")]
fn twice_over() -> Vec<u8> {
    let scratch = vec![0u8; 8192];
    drop(black_box(scratch));
    vec![1u8; 2048]
}

/// `text` with the Mem usage column blanked, and without the note that
/// other threads allocated during the call: both depend on what the test
/// harness's other threads do meanwhile (the note showed, once in 20 runs
/// on a loaded machine).
fn without_mem_usage(text: &str) -> String {
    let header = text
        .lines()
        .find(|l| l.contains("Mem usage"))
        .expect("a table");
    let (from, to) = (
        header.find("Line #").unwrap() + "Line #".len(),
        header.find("Mem usage").unwrap() + "Mem usage".len(),
    );
    text.lines()
        .filter(|l| !l.starts_with("(memprof: other threads or tasks allocated"))
        .map(|l| match l.get(..to) {
            Some(_) if l.starts_with("    ") || l.starts_with(" Line") => {
                format!("{}{}{}", &l[..from], " ".repeat(to - from), &l[to..])
            }
            _ => l.to_owned(),
        })
        .map(|l| l + "\n")
        .collect()
}

#[test]
fn a_failed_call_names_its_own_file_and_line_and_shows_its_table_once() {
    let message = panic_message(|| {
        twice_over();
    });
    let n = TWICE_OVER_LINE;
    let expected = format!(
        "memory limit exceeded in budgets::twice_over (tests/budgets.rs:{n}): \
         peak 8.0 KiB > limit 4.0 KiB, retained 2.0 KiB > max_retained 1.0 KiB

Filename: tests/budgets.rs   Function: budgets::twice_over

 Line #                  Increment         Peak   Occurrences   Line Contents
=============================================================================
    {l0}                                                         #[profile(limit = \"4 KiB\", max_retained = \"1 KiB\")]
    {n}                    2.0 KiB      8.0 KiB             1   fn twice_over() -> Vec<u8> {{
    {l2}                    8.0 KiB      8.0 KiB             1       let scratch = vec![0u8; 8192];   <-- peak over the limit   <-- increment over the limit
    {l3}                   -8.0 KiB          0 B             1       drop(black_box(scratch));
    {l4}                    2.0 KiB      2.0 KiB             1       vec![1u8; 2048]   <-- increment over the limit
    {l5}                        0 B          0 B             1   }}
",
        l0 = n - 1,
        l2 = n + 1,
        l3 = n + 2,
        l4 = n + 3,
        l5 = n + 4,
    );
    assert_eq!(without_mem_usage(&message), expected, "{message}");
}

/// Runs the child test `name` of this binary with `--nocapture`; returns its
/// stdout and stderr, and whether it passed.
fn run_child(name: &str) -> (String, String, bool) {
    let out = child::child_command(&std::env::current_exe().unwrap(), name, &[])
        .arg("--nocapture")
        .output()
        .unwrap();
    (
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
        out.status.success(),
    )
}

#[test]
#[ignore = "a child run: this file's tests start it"]
fn child_over_budget() {
    if std::env::var_os("MEMPROF_CHILD").is_some() {
        twice_over();
    }
}

#[test]
fn an_over_budget_test_prints_its_table_once_in_the_failure() {
    let (out, err, passed) = run_child("child_over_budget");
    assert!(!passed);
    let title = "Filename: tests/budgets.rs   Function: budgets::twice_over";
    assert_eq!((out + &err).matches(title).count(), 1);
    let failure = format!(
        "memory limit exceeded in budgets::twice_over (tests/budgets.rs:{TWICE_OVER_LINE}): "
    );
    assert!(err.contains(&format!("\n{failure}")), "{err}");
    assert!(err.find(&failure) < err.find(title), "{err}");
}

#[test]
fn budgets_stay_exact_when_threads_run_at_once() {
    use std::sync::Barrier;

    #[profile(limit = "3 MiB")]
    fn hold(bytes: usize, barrier: &Barrier) -> usize {
        let v = vec![1u8; bytes];
        barrier.wait();
        barrier.wait();
        v.len()
    }

    // Four threads hold 3 MiB each at the same moment: 12 MiB in the process,
    // yet each call is within its own 3 MiB.
    let barrier = Barrier::new(4);
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..4)
            .map(|_| s.spawn(|| hold(3 << 20, &barrier)))
            .collect();
        for h in handles {
            assert_eq!(h.join().unwrap(), 3 << 20);
        }
    });
}

#[test]
fn assert_memory_passes_within_bounds_and_returns_the_value() {
    let n = assert_memory!(peak <= 1 MiB, increment == 0, allocations == 1, {
        let v = black_box(vec![0u8; 1 << 20]);
        v.len()
    });
    assert_eq!(n, 1 << 20);
    let kept = assert_memory!(
        increment >= "4 KiB",
        deallocations == 0,
        black_box(vec![0u8; 4096])
    );
    assert_eq!(kept.len(), 4096);
    let freed = vec![0u8; 100];
    assert_memory!(increment == -100 B, { drop(black_box(freed)) });
}

#[test]
fn assert_memory_fails_with_the_measured_figures() {
    let message = panic_message(|| {
        assert_memory!(peak < 10 KiB, increment <= 0, allocations < 5, {
            vec![0u8; 12288]
        });
    });
    assert_eq!(
        message,
        "memory assertion failed: `peak < 10 KiB`, but peak was 12.0 KiB (12288 B); \
         `increment <= 0`, but increment was 12.0 KiB (12288 B)\n\
         measured: increment 12288 B, peak 12288 B, 1 allocations, 0 deallocations"
    );
}

const FAILED_ASSERT_LINE: u32 = line!() + 6;
#[test]
#[ignore = "a child run: this file's tests start it"]
fn child_assert_memory_fails() {
    if std::env::var_os("MEMPROF_CHILD").is_some() {
        let kept = 4096;
        assert_memory!(peak < 1 KiB, {
            black_box(vec![0u8; kept])
        });
    }
}

/// Regression: the panic was located in the runtime's `budget.rs`.
#[test]
fn a_failed_assert_memory_panics_at_the_user_s_line() {
    let (_, err, passed) = run_child("child_assert_memory_fails");
    assert!(!passed);
    let expected = format!(
        " panicked at tests/budgets.rs:{FAILED_ASSERT_LINE}:9:\n\
         memory assertion failed: `peak < 1 KiB`, but peak was 4.0 KiB (4096 B)\n"
    );
    assert!(err.contains(&expected), "{err}");
}

/// A budget fails as its call's guard is dropped, and `#[track_caller]` does
/// not reach through `Drop`: the panic's location is memprof's, so the
/// message's first line names the function's own file and line.
#[test]
fn a_failed_budget_names_the_user_s_function_first() {
    let (_, err, passed) = run_child("child_over_budget");
    assert!(!passed);
    let message = err
        .lines()
        .skip_while(|l| !l.contains(" panicked at "))
        .nth(1)
        .unwrap_or_default();
    assert!(
        message.starts_with(&format!(
            "memory limit exceeded in budgets::twice_over (tests/budgets.rs:{TWICE_OVER_LINE}): "
        )),
        "{err}"
    );
}

// The call's peak is its rise above its start: 2 MiB less the 512 KiB
// freed first.
#[profile(limit = "1 MiB")]
fn frees_then_overshoots(cache: &mut Vec<Vec<u8>>) -> usize {
    drop(cache.remove(0));
    let big = black_box(vec![1u8; 2 << 20]);
    big.len()
}

/// The same, while a thread it starts loads 1 MiB that the call keeps.
#[profile(limit = "1 MiB")]
fn frees_then_overshoots_while_a_thread_loads(cache: &mut Vec<Vec<u8>>) -> Vec<u8> {
    let loaded = std::thread::spawn(|| vec![3u8; 1 << 20]).join().unwrap();
    drop(cache.remove(0));
    let big = black_box(vec![1u8; 2 << 20]);
    drop(big);
    loaded
}

#[test]
#[ignore = "a child run: this file's tests start it"]
fn child_frees_then_overshoots() {
    if std::env::var_os("MEMPROF_CHILD").is_some() {
        frees_then_overshoots(&mut black_box(vec![vec![7u8; 512 << 10]]));
    }
}

#[test]
#[ignore = "a child run: this file's tests start it"]
fn child_frees_then_overshoots_while_a_thread_loads() {
    if std::env::var_os("MEMPROF_CHILD").is_some() {
        frees_then_overshoots_while_a_thread_loads(&mut black_box(vec![vec![7u8; 512 << 10]]));
    }
}

/// The lines of the panic message in a failed child's stderr.
fn failure_message(err: &str) -> Vec<&str> {
    let mut lines: Vec<&str> = err
        .lines()
        .skip_while(|l| !l.contains(" panicked at "))
        .skip(1)
        .take_while(|l| {
            !l.starts_with("note: run with `RUST_BACKTRACE") && *l != "stack backtrace:"
        })
        .collect();
    while lines.last() == Some(&"") {
        lines.pop();
    }
    lines
}

#[test]
fn a_failed_budget_that_freed_older_memory_on_one_thread_has_no_note() {
    // Regression: freeing memory allocated before the call, with no other
    // thread about, got the note that process scope would count otherwise.
    let (_, err, passed) = run_child("child_frees_then_overshoots");
    assert!(!passed);
    let message = failure_message(&err);
    assert!(
        message[0].ends_with("peak 1.5 MiB > limit 1.0 MiB"),
        "{err}"
    );
    assert!(
        message.last().unwrap().ends_with("             1   }"),
        "{err}"
    );
    assert!(!err.contains("(memprof:"), "{err}");
}

#[test]
fn a_failed_budget_says_what_the_call_freed_while_a_thread_allocated() {
    let (_, err, passed) = run_child("child_frees_then_overshoots_while_a_thread_loads");
    assert!(!passed);
    let message = failure_message(&err);
    assert!(
        message[0].ends_with("peak 1.5 MiB > limit 1.0 MiB"),
        "{err}"
    );
    assert_eq!(
        *message.last().unwrap(),
        "(memprof: this call freed 511.9 KiB more than its thread allocated during it: memory \
         allocated before, or by other threads or tasks, which thread scope does not count, so \
         Mem usage can read low or below zero; #[profile(scope = \"process\")] counts every thread)",
        "{err}"
    );
}
