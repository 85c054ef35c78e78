//! Many threads calling one profiled function: each thread records into its
//! own aggregate, and `report()` sums them. The figures stay exact row by
//! row while the calls run, and in total once they are done (the threads
//! have ended by then, their figures folded into the function's own rows).

use memprof::{FunctionReport, profile};
use std::sync::atomic::{AtomicBool, Ordering};

const THREADS: usize = 8;
const CALLS: u64 = 5_000;

#[profile]
fn busy(n: usize) -> usize {
    let kept = vec![1u8; 1000];
    let scratch = vec![2u8; 500];
    drop(scratch);
    kept.len() + n
}

/// (increment, peak, occurrences) of the row containing `text`.
fn figures(t: &FunctionReport, text: &str) -> (i64, u64, u64) {
    let row = t
        .line_containing(text)
        .unwrap_or_else(|| panic!("no row {text:?} in\n{t}"));
    (
        row.increment.unwrap_or(0),
        row.peak.unwrap_or(0),
        row.occurrences,
    )
}

/// Checks that every row holds whole executions, as many as it says.
fn check_consistent(t: &FunctionReport) {
    let (inc, peak, n) = figures(t, "let kept");
    assert_eq!((inc, peak), (1000 * n as i64, if n > 0 { 1000 } else { 0 }));
    let (inc, peak, n) = figures(t, "let scratch");
    assert_eq!((inc, peak), (500 * n as i64, if n > 0 { 500 } else { 0 }));
    let (inc, _, n) = figures(t, "drop(scratch)");
    assert_eq!(inc, -500 * n as i64);
    let (inc, peak, n) = figures(t, "fn busy");
    assert_eq!((inc, peak), (0, if n > 0 { 1500 } else { 0 }));
    assert!(t.calls <= THREADS as u64 * CALLS);
}

#[test]
fn eight_threads_and_concurrent_reports_stay_exact() {
    let done = AtomicBool::new(false);
    let mut reports = 0;
    std::thread::scope(|s| {
        let workers: Vec<_> = (0..THREADS)
            .map(|i| {
                s.spawn(move || {
                    let mut sum = 0;
                    for n in 0..CALLS as usize {
                        sum += busy(n + i);
                    }
                    sum
                })
            })
            .collect();
        let done = &done;
        s.spawn(move || {
            for w in workers {
                w.join().unwrap();
            }
            done.store(true, Ordering::Release);
        });
        while !done.load(Ordering::Acquire) {
            if let Some(t) = memprof::report().function("busy") {
                check_consistent(t);
            }
            reports += 1;
        }
    });
    assert!(reports > 0);
    let report = memprof::report();
    let t = report.function("busy").unwrap();
    check_consistent(t);
    let total = THREADS as u64 * CALLS;
    assert_eq!(t.calls, total);
    assert_eq!(figures(t, "let kept"), (1000 * total as i64, 1000, total));
    assert_eq!(figures(t, "let scratch"), (500 * total as i64, 500, total));
    assert_eq!(figures(t, "drop(scratch)"), (-500 * total as i64, 0, total));
    assert_eq!(figures(t, "fn busy"), (0, 1500, total));
}

#[profile]
fn short_lived(n: usize) -> usize {
    let v = vec![0u8; n];
    v.len()
}

#[test]
fn ended_threads_give_their_allocator_slot_back() {
    // Each profiled call sums the slots in use; without giving them back,
    // a test suite (a thread per test) would make every call read hundreds.
    for n in 0..300 {
        let len = std::thread::spawn(move || short_lived(n)).join().unwrap();
        assert_eq!(len, n);
    }
    let used = memprof::__private::slots_in_use();
    assert!(
        used < 100,
        "{used} slots in use after 300 threads ran one at a time"
    );
    let report = memprof::report();
    let t = report.function("short_lived").unwrap();
    assert_eq!(t.calls, 300);
    assert_eq!(figures(t, "let v").0, (0..300).sum::<i64>());
}
