//! Many threads calling one profiled function: each thread records into its
//! own aggregate, and `report()` sums them. The figures stay exact row by
//! row while the calls run, and in total once they are done (the threads
//! have ended by then, their figures folded into the function's own rows).
//!
//! A buffer whose contents nothing reads passes through `black_box`: an
//! optimized build (`cargo test --release`) removes such an allocation, and
//! its table then rightly shows nothing.

use memprof::{FunctionReport, profile};
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, Ordering};

const THREADS: usize = 8;
const CALLS: u64 = 5_000;

#[profile]
fn busy(n: usize) -> usize {
    let kept = black_box(vec![1u8; 1000]);
    let scratch = black_box(vec![2u8; 500]);
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

// Four threads each return a 4 MiB buffer, which this call then frees: its
// thread frees 16 MiB it never allocated.
const DROPS_LINE: u32 = line!() + 1;
#[profile]
fn drops_what_threads_return() -> usize {
    let handles: Vec<_> = (0..4)
        .map(|_| std::thread::spawn(|| vec![1u8; 4 << 20]))
        .collect();
    let parts: Vec<Vec<u8>> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let n = parts.iter().map(Vec::len).sum();
    drop(parts);
    n
}

#[test]
#[ignore = "a child run: this file's tests start it"]
fn child_drops_what_threads_return() {
    if std::env::var_os("MEMPROF_CHILD").is_some() {
        assert_eq!(drops_what_threads_return(), 16 << 20);
    }
}

#[test]
fn freeing_other_threads_memory_is_said_under_the_table() {
    // Whole MiB: the few bytes of spawning threads do not show, and the
    // child's heap before the call (some KiB) is below half a MiB.
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "child_drops_what_threads_return",
            "--ignored",
            "--exact",
            "--nocapture",
        ])
        .env("MEMPROF_CHILD", "1")
        .env("MEMPROF_UNIT", "MiB")
        .env("MEMPROF_PRECISION", "0")
        .env_remove("MEMPROF")
        .env_remove("MEMPROF_REPORT")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let out = String::from_utf8(out.stdout).unwrap();
    let table: String = out
        .lines()
        .skip_while(|l| !l.contains("Filename:"))
        .take_while(|l| !l.starts_with("test "))
        .map(|l| format!("{l}\n"))
        .collect();
    let rows: String = [
        "                                                    #[profile]",
        "     -16 MiB     -16 MiB      0 MiB             1   fn drops_what_threads_return() -> usize {",
        "       0 MiB       0 MiB      0 MiB             1       let handles: Vec<_> = (0..4)",
        "                                                            .map(|_| std::thread::spawn(|| vec![1u8; 4 << 20]))",
        "                                                            .collect();",
        // Joining frees a few bytes this thread allocated to spawn.
        "       0 MiB       0 MiB      0 MiB             1       let parts: Vec<Vec<u8>> = handles.into_iter().map(|h| h.join().unwrap()).collect();",
        "       0 MiB       0 MiB      0 MiB             1       let n = parts.iter().map(Vec::len).sum();",
        "     -16 MiB     -16 MiB      0 MiB             1       drop(parts);",
        "     -16 MiB       0 MiB      0 MiB             1       n",
        "     -16 MiB       0 MiB      0 MiB             1   }",
    ]
    .iter()
    .zip(DROPS_LINE..)
    .map(|(row, line)| format!("{line:>7}{row}\n"))
    .collect();
    let expected = format!(
        "\
Filename: tests/threads.rs   Function: threads::drops_what_threads_return

 Line #   Mem usage   Increment       Peak   Occurrences   Line Contents
========================================================================
{rows}\
(memprof: this call freed 16 MiB more than its thread allocated during it: memory allocated \
before, or by other threads or tasks, which thread scope does not count, so Mem usage can read \
low or below zero; #[profile(scope = \"process\")] counts every thread)

"
    );
    assert_eq!(table, expected, "{out}");
}
