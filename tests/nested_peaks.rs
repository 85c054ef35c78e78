//! Every Peak is the highest rise above its own start: a call's `fn` row is
//! what `measure` gives for the same call, also when the call frees older
//! memory before it allocates, in every `MEMPROF_REPORT` mode and in both
//! scopes, and a budget passes or fails alike in each. A row that starts
//! below the call's start may peak higher than the call.
//!
//! Its own test binary, no harness: process scope counts every thread, and
//! each mode runs in a child process of its own (the mode is read once).
//!
//! A buffer whose contents nothing reads passes through `black_box`: an
//! optimized build (`cargo test --release`) removes such an allocation, and
//! its table then rightly shows nothing.

use memprof::{Scope, profile};
use std::hint::black_box;

const TEMP: usize = 8 << 20;
const SMALL: usize = 1 << 20;
const CHUNKS: usize = 8;
const OUT: usize = 8 << 10;

fn panic_message(f: impl FnOnce() + std::panic::UnwindSafe) -> String {
    let err = std::panic::catch_unwind(f).expect_err("should have panicked");
    *err.downcast::<String>().unwrap()
}

#[profile]
fn temporary() -> usize {
    let big = black_box(vec![1u8; TEMP]);
    big.len()
}

#[profile]
fn frees_then_calls(message: Vec<u8>) -> usize {
    drop(message);
    temporary()
}

#[profile]
fn frees_then_allocates(message: Vec<u8>) -> usize {
    drop(message);
    let big = black_box(vec![1u8; TEMP]);
    big.len()
}

/// Consumes its input chunk by chunk while it grows its output.
#[profile]
fn drains(input: Vec<Vec<u8>>) -> Vec<u8> {
    let mut out = Vec::with_capacity(OUT);
    for chunk in input {
        out.push(chunk[0]);
    }
    black_box(out)
}

#[profile(limit = "64 KiB")]
fn within_limit(message: Vec<u8>) -> usize {
    drop(message);
    temporary()
}

const OVER_LINE: u32 = line!() + 2;
#[profile(limit = "64 KiB")]
fn over_limit(message: Vec<u8>) -> usize {
    drop(message);
    temporary()
}

#[profile(scope = "process")]
fn frees_then_allocates_p(message: Vec<u8>) -> usize {
    drop(message);
    let big = black_box(vec![1u8; TEMP]);
    big.len()
}

/// (increment, peak) of the row containing `text` in `function`'s table.
fn fig(function: &str, text: &str) -> (i64, u64) {
    let report = memprof::report();
    let f = report.function(function).unwrap();
    let r = f
        .line_containing(text)
        .unwrap_or_else(|| panic!("no {text:?} in\n{f}"));
    (r.increment.unwrap(), r.peak.unwrap())
}

/// Calls `f` on `input` inside `measure_in(scope, ..)` and returns what it
/// measured, (increment, peak).
fn measured<T, R>(scope: Scope, input: T, f: impl FnOnce(T) -> R) -> (i64, u64) {
    let (_, m) = memprof::measure_in(scope, move || black_box(f(input)));
    (m.increment, m.peak)
}

fn message(size: usize) -> Vec<u8> {
    black_box(vec![7u8; size])
}

fn chunks() -> Vec<Vec<u8>> {
    (0..CHUNKS).map(|_| message(SMALL)).collect()
}

/// The checks of one mode, each function called once in it (so its `fn`
/// row is that call's).
fn child() {
    let freed = -(TEMP as i64);
    // Freed 8 MiB, then an 8 MiB temporary: the call never rose above its
    // start; the temporary's row did, by 8 MiB.
    let m = measured(Scope::Thread, message(TEMP), frees_then_calls);
    assert_eq!(m, (freed, 0));
    assert_eq!(fig("frees_then_calls", "fn frees_then_calls"), m);
    assert_eq!(fig("frees_then_calls", "temporary()"), (0, TEMP as u64));

    let m = measured(Scope::Thread, message(TEMP), frees_then_allocates);
    assert_eq!(m, (freed, 0));
    assert_eq!(fig("frees_then_allocates", "fn frees_then_allocates"), m);
    assert_eq!(
        fig("frees_then_allocates", "let big"),
        (TEMP as i64, TEMP as u64)
    );

    // A loop that drains 8 MiB of input while it grows 8 KiB of output:
    // the call's peak is the output.
    let input_bytes = (CHUNKS * SMALL + CHUNKS * size_of::<Vec<u8>>()) as i64;
    let m = measured(Scope::Thread, chunks(), drains);
    assert_eq!(m, (OUT as i64 - input_bytes, OUT as u64));
    assert_eq!(fig("drains", "fn drains"), m);

    // Process scope: the same.
    let m = measured(Scope::Process, message(TEMP), frees_then_allocates_p);
    assert_eq!(m, (freed, 0));
    assert_eq!(
        fig("frees_then_allocates_p", "fn frees_then_allocates_p"),
        m
    );

    // Budgets judge the call's own peak: 8 MiB freed, then 8 MiB, passes
    // (0 B); 1 MiB freed, then 8 MiB, fails at 7 MiB, marked on the row
    // where the heap rose past the limit.
    assert_eq!(within_limit(message(TEMP)), TEMP);
    let failed = panic_message(|| {
        over_limit(message(SMALL));
    });
    let mut lines = failed.lines();
    assert_eq!(
        lines.next().unwrap(),
        format!(
            "memory limit exceeded in nested_peaks::over_limit (tests/nested_peaks.rs:{OVER_LINE}): \
             peak 7.0 MiB > limit 64.0 KiB"
        )
    );
    let marked: Vec<&str> = lines.filter(|l| l.contains("<--")).collect();
    assert_eq!(marked.len(), 1, "{failed}");
    assert!(
        marked[0].ends_with("temporary()   <-- peak over the limit"),
        "{failed}"
    );
}

// NOTE: no libtest harness (`harness = false`): its main thread records each
// test it starts (a name, a table entry) while the test runs, and process
// scope would count those bytes.
fn main() {
    if std::env::var_os("NESTED_PEAKS_CHILD").is_some() {
        child();
        println!("nested_peaks child: ok");
        return;
    }
    for mode in ["auto", "call", "exit", "off"] {
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .env("NESTED_PEAKS_CHILD", "1")
            .env("MEMPROF_REPORT", mode)
            .env_remove("MEMPROF_OUTPUT")
            .env_remove("MEMPROF_JSON")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.contains("nested_peaks child: ok"),
            "MEMPROF_REPORT={mode}:\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    println!("nested_peaks: ok");
}
