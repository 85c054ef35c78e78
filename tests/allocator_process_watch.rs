//! While a process-scope region is open, every thread's allocator leaves
//! its fast path (the thread-pointer shortcut is withdrawn) so that the
//! region's watermark sees small allocations of other threads too, and takes
//! the shortcut again once the region closes. Its own test binary: in
//! process scope, tests running beside it would count.

// The point is one small allocation per box.
#![allow(clippy::vec_box)]

use memprof::profile;
use std::hint::black_box;
use std::sync::{Barrier, Mutex};

static HANDOFF: Mutex<Vec<Box<[u8; 100]>>> = Mutex::new(Vec::new());
static READY: Barrier = Barrier::new(2);
static START: Barrier = Barrier::new(2);
static DONE: Barrier = Barrier::new(2);
static LEAVE: Barrier = Barrier::new(2);

fn worker() {
    // Thread start-up allocates and frees on its own; let it finish first,
    // and size the hand-off vector outside the region.
    HANDOFF.lock().unwrap().reserve(1000);
    READY.wait();
    START.wait();
    // 1000 blocks of 100 B kept, with 64 scratch blocks of 1 KiB on top at
    // the peak: all counted before the inner allocator runs.
    let kept: Vec<Box<[u8; 100]>> = (0..1000).map(|_| Box::new([7u8; 100])).collect();
    let scratch: Vec<Box<[u8; 1024]>> = (0..64).map(|_| Box::new([0u8; 1024])).collect();
    drop(black_box(scratch));
    HANDOFF.lock().unwrap().extend(kept);
    DONE.wait();
    LEAVE.wait();
}

#[profile(scope = "process")]
#[rustfmt::skip]
fn fan_out() {
    START.wait(); DONE.wait();
}

fn a_process_region_sees_small_allocations_of_other_threads() {
    let w = std::thread::spawn(worker);
    READY.wait();
    fan_out();
    LEAVE.wait();
    w.join().unwrap();
    #[cfg(all(
        target_os = "linux",
        any(target_arch = "x86_64", target_arch = "aarch64")
    ))]
    assert!(memprof::__private::tls_shortcut_in_use());

    let report = memprof::report();
    let row = report
        .function("fan_out")
        .unwrap()
        .line_containing("START.wait(); DONE.wait();")
        .unwrap();
    // The boxes stay (their vector is freed when they move to the
    // hand-off); at the peak both vectors and all the boxes are live.
    let boxes = 1000 * 100;
    let vectors = 1000 * 8 + 64 * 8;
    assert_eq!(row.increment.unwrap(), boxes as i64);
    assert_eq!(row.peak.unwrap(), (boxes + 64 * 1024 + vectors) as u64);
    HANDOFF.lock().unwrap().clear();
}

// NOTE: no libtest harness (`harness = false`): its main thread records each
// test it starts (a name, a table entry) while the test runs, and process
// scope would count those bytes.
fn main() {
    a_process_region_sees_small_allocations_of_other_threads();
    println!("allocator_process_watch: ok");
}
