//! `scope = "process"` counts every thread, as memory_profiler's RSS does.
//! Its own test binary: in process scope, tests running beside it would count.
//!
//! A buffer whose contents nothing reads passes through `black_box`: an
//! optimized build (`cargo test --release`) removes such an allocation, and
//! its table then rightly shows nothing.

use memprof::profile;
use std::hint::black_box;
use std::sync::{Barrier, Mutex};

static HANDOFF: Mutex<Option<Vec<u8>>> = Mutex::new(None);
static READY: Barrier = Barrier::new(2);
static START: Barrier = Barrier::new(2);
static DONE: Barrier = Barrier::new(2);
static LEAVE: Barrier = Barrier::new(2);

fn worker() {
    // Thread start-up allocates and frees on its own; let it finish first.
    READY.wait();
    START.wait();
    *HANDOFF.lock().unwrap() = Some(vec![9u8; 2 << 20]);
    let scratch = black_box(vec![0u8; 5 << 20]);
    drop(scratch);
    DONE.wait();
    // Thread exit frees too; stay until the profiled statement has closed.
    LEAVE.wait();
}

#[profile(scope = "process")]
#[rustfmt::skip]
fn fan_out_process() {
    START.wait(); DONE.wait();
}

#[profile]
#[rustfmt::skip]
fn fan_out_thread() {
    START.wait(); DONE.wait();
}

fn process_scope_counts_other_threads_and_thread_scope_does_not() {
    let w = std::thread::spawn(worker);
    READY.wait();
    fan_out_process();
    LEAVE.wait();
    w.join().unwrap();
    let kept = HANDOFF.lock().unwrap().take().unwrap();

    let w = std::thread::spawn(worker);
    READY.wait();
    fan_out_thread();
    LEAVE.wait();
    w.join().unwrap();
    let kept_too = HANDOFF.lock().unwrap().take().unwrap();

    let report = memprof::report();
    let fig = |name: &str| {
        let t = report.function(name).unwrap();
        let r = t.line_containing("START.wait(); DONE.wait();").unwrap();
        (r.increment.unwrap(), r.peak.unwrap())
    };
    // 2 MiB kept by the worker, plus its 5 MiB scratch at the peak.
    assert_eq!(fig("fan_out_process"), (2 << 20, 7 << 20));
    assert_eq!(fig("fan_out_thread"), (0, 0));
    drop((kept, kept_too));
}

#[profile(scope = "process")]
fn consume_process(v: Vec<u8>) -> usize {
    v.len()
}

/// What a by-value argument frees is the call's, in process scope too: its
/// `fn` row is what `measure_in(Scope::Process, ..)` gives for the call.
fn a_consumed_argument_is_freed_in_a_process_scope_call() {
    let v = black_box(vec![1u8; 1 << 20]);
    let (n, measured) = memprof::measure_in(memprof::Scope::Process, || consume_process(v));
    assert_eq!(n, 1 << 20);
    let report = memprof::report();
    let table = report.function("consume_process").unwrap();
    let fn_row = table.line_containing("fn consume_process").unwrap();
    assert_eq!(measured.increment, -(1 << 20));
    assert_eq!(fn_row.increment, Some(-(1 << 20)));
}

// NOTE: no libtest harness (`harness = false`): its main thread records each
// test it starts (a name, a table entry) while the test runs, and process
// scope would count those bytes.
fn main() {
    process_scope_counts_other_threads_and_thread_scope_does_not();
    a_consumed_argument_is_freed_in_a_process_scope_call();
    println!("process_scope: ok");
}
