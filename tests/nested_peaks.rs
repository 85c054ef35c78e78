//! A call's peak is the highest its counted heap rose above its start during
//! the call, and at least the peak of each row nested in it: freeing older
//! memory first (a message another task allocated, or, in process scope,
//! another thread's) does not hide a temporary that follows. Budgets fire
//! on that peak.
//! Its own test binary, one test: process scope counts every thread.
//!
//! A buffer whose contents nothing reads passes through `black_box`: an
//! optimized build (`cargo test --release`) removes such an allocation, and
//! its table then rightly shows nothing.

use memprof::profile;
use std::hint::black_box;

const TEMP: usize = 8 << 20;

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

#[profile]
fn calls_one_that_frees(message: Vec<u8>) -> usize {
    frees_then_allocates(message)
}

const LIMITED_LINE: u32 = line!() + 2;
#[profile(limit = "64 KiB")]
fn limited(message: Vec<u8>) -> usize {
    drop(message);
    temporary()
}

#[profile(scope = "process")]
fn temporary_p() -> usize {
    let big = black_box(vec![1u8; TEMP]);
    big.len()
}

#[profile(scope = "process")]
fn frees_then_calls_p(message: Vec<u8>) -> usize {
    drop(message);
    temporary_p()
}

#[profile(scope = "process")]
fn frees_then_allocates_p(message: Vec<u8>) -> usize {
    drop(message);
    let big = black_box(vec![1u8; TEMP]);
    big.len()
}

// The `let` gives the nested call a statement row of its own.
#[allow(clippy::let_and_return)]
#[profile(scope = "process")]
fn calls_one_that_frees_p(message: Vec<u8>) -> usize {
    let n = frees_then_allocates_p(message);
    n
}

const LIMITED_P_LINE: u32 = line!() + 2;
#[profile(scope = "process", limit = "64 KiB")]
fn limited_p(message: Vec<u8>) -> usize {
    drop(message);
    temporary_p()
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

fn a_call_peaks_at_least_as_high_as_the_rows_inside_it() {
    let message = || black_box(vec![7u8; TEMP]);
    let freed = -(TEMP as i64);

    // Thread scope. Regression: the `fn` rows read peak 0.
    assert_eq!(frees_then_calls(message()), TEMP);
    assert_eq!(fig("frees_then_calls", "temporary()"), (0, TEMP as u64));
    assert_eq!(
        fig("frees_then_calls", "fn frees_then_calls"),
        (freed, TEMP as u64)
    );
    assert_eq!(calls_one_that_frees(message()), TEMP);
    assert_eq!(
        fig("frees_then_allocates", "let big"),
        (TEMP as i64, TEMP as u64)
    );
    assert_eq!(
        fig("frees_then_allocates", "fn frees_then_allocates"),
        (freed, TEMP as u64)
    );
    assert_eq!(
        fig("calls_one_that_frees", "fn calls_one_that_frees"),
        (freed, TEMP as u64)
    );
    let failed = panic_message(|| {
        limited(message());
    });
    assert_eq!(
        failed.lines().next().unwrap(),
        format!(
            "memory limit exceeded in nested_peaks::limited (tests/nested_peaks.rs:{LIMITED_LINE}): \
             peak 8.0 MiB > limit 64.0 KiB"
        )
    );

    // Process scope: the same, and the statement that holds the nested call
    // too.
    assert_eq!(frees_then_calls_p(message()), TEMP);
    assert_eq!(fig("frees_then_calls_p", "temporary_p()"), (0, TEMP as u64));
    assert_eq!(
        fig("frees_then_calls_p", "fn frees_then_calls_p"),
        (freed, TEMP as u64)
    );
    assert_eq!(calls_one_that_frees_p(message()), TEMP);
    assert_eq!(
        fig("frees_then_allocates_p", "fn frees_then_allocates_p"),
        (freed, TEMP as u64)
    );
    assert_eq!(
        fig("calls_one_that_frees_p", "let n ="),
        (freed, TEMP as u64)
    );
    assert_eq!(
        fig("calls_one_that_frees_p", "fn calls_one_that_frees_p"),
        (freed, TEMP as u64)
    );
    let failed = panic_message(|| {
        limited_p(message());
    });
    assert_eq!(
        failed.lines().next().unwrap(),
        format!(
            "memory limit exceeded in nested_peaks::limited_p (tests/nested_peaks.rs:{LIMITED_P_LINE}): \
             peak 8.0 MiB > limit 64.0 KiB"
        )
    );
}

// NOTE: no libtest harness (`harness = false`): its main thread records each
// test it starts (a name, a table entry) while the test runs, and process
// scope would count those bytes.
fn main() {
    a_call_peaks_at_least_as_high_as_the_rows_inside_it();
    println!("nested_peaks: ok");
}
