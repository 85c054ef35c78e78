//! Memory budgets: `#[profile(limit = .., max_retained = ..)]` and
//! `assert_memory!` fail what uses too much, exactly and per thread.

// The point is to allocate on the heap.
#![allow(clippy::useless_vec)]

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
    let small = vec![0u8; 1000];
    let big = vec![0u8; bytes];
    big.len() + small.len()
}

#[test]
#[should_panic(expected = "memory limit exceeded")]
fn a_test_over_its_limit_fails() {
    scratch(2 << 20);
}

// The same as `scratch`, with a table of its own: the test above calls
// `scratch` at the same time, from another test thread.
#[profile(limit = "1 MiB")]
fn scratch_again(bytes: usize) -> usize {
    let small = vec![0u8; 1000];
    let big = vec![0u8; bytes];
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
        "memory limit exceeded in budgets::scratch_again: peak 2.0 MiB > limit 1.0 MiB"
    );
    let marked: Vec<&str> = message
        .lines()
        .filter(|l| l.ends_with("<-- peak over the limit"))
        .collect();
    assert_eq!(marked.len(), 1, "{message}");
    assert!(marked[0].contains("let big = vec!"), "{message}");
    // The call under the limit did not fail, and both calls are recorded.
    assert_eq!(
        memprof::report().function("scratch_again").unwrap().calls,
        2
    );
}

#[profile(limit = "1.5 MB")]
fn exactly_at(bytes: usize) -> usize {
    let v = vec![0u8; bytes];
    v.len()
}

#[test]
fn a_peak_equal_to_the_limit_passes_and_one_byte_more_fails() {
    // 1.5 MB is 1.5 MiB, as in pytest-memray.
    assert_eq!(exactly_at(3 << 19), 3 << 19);
    let message = panic_message(|| {
        exactly_at((3 << 19) + 1);
    });
    assert!(message.starts_with("memory limit exceeded in budgets::exactly_at: peak 1.5 MiB"));
}

#[profile(max_retained = "1 MiB")]
fn leaks(bytes: usize) -> &'static [u8] {
    let kept = vec![7u8; bytes];
    let transient = vec![0u8; 4 << 20];
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
        "memory limit exceeded in budgets::leaks: retained 2.0 MiB > max_retained 1.0 MiB"
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
        let v = vec![0u8; 1 << 20];
        v.len()
    });
    assert_eq!(n, 1 << 20);
    let kept = assert_memory!(increment >= "4 KiB", deallocations == 0, vec![0u8; 4096]);
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
