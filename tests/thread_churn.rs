//! Many threads: the process-wide heap sum that every profiled call's entry
//! reads (for Mem usage) follows the threads alive, never more than a few
//! slots, after 10,000 threads came and went and with 2,000 alive at once,
//! and stays exact. Runs without libtest's harness, whose threads would hold
//! slots of their own. Costs, in the same situations: `cargo bench --bench
//! call_cost` (its rows "after 10,000 threads came and went" and "with
//! 2,000 threads alive").
//!
//! A buffer whose contents nothing reads passes through `black_box`: an
//! optimized build (`cargo test --release`) removes such an allocation, and
//! its table then rightly shows nothing.

use memprof::__private::slots_in_use;
use memprof::{process_heap, profile};
use std::hint::black_box;
use std::sync::{Arc, Barrier};

#[profile]
fn profiled(n: usize) -> usize {
    let v = black_box(vec![0u8; n]);
    v.len()
}

fn main() {
    // SAFETY: no other thread runs yet.
    unsafe { std::env::set_var("MEMPROF_REPORT", "off") };
    // Claims the main thread's slot, as the first profiled call does.
    assert_eq!(profiled(10), 10);
    let alone = slots_in_use();
    assert_eq!(alone, 1);

    threads_that_never_make_a_profiled_call_give_their_slot_back(alone);
    threads_that_make_profiled_calls_give_their_slot_back(alone);
    two_thousand_live_threads_read_a_few_slots_and_count_exactly(alone);
    println!("thread_churn: 3 checks passed");
}

fn threads_that_never_make_a_profiled_call_give_their_slot_back(alone: usize) {
    for n in 0..10_000 {
        let len = std::thread::spawn(move || black_box(vec![1u8; n % 100 + 1]).len())
            .join()
            .unwrap();
        assert_eq!(len, n % 100 + 1);
    }
    assert_eq!(slots_in_use(), alone, "after 10,000 threads, one at a time");
}

fn threads_that_make_profiled_calls_give_their_slot_back(alone: usize) {
    for n in 0..1_000 {
        let len = std::thread::spawn(move || profiled(n)).join().unwrap();
        assert_eq!(len, n);
    }
    assert_eq!(slots_in_use(), alone, "after 1,000 profiled threads");
}

fn two_thousand_live_threads_read_a_few_slots_and_count_exactly(alone: usize) {
    const THREADS: usize = 2_000;
    const HELD: usize = 4096;
    let all = Arc::new(Barrier::new(THREADS + 1));
    let handles: Vec<_> = (0..THREADS)
        .map(|_| {
            let all = Arc::clone(&all);
            std::thread::Builder::new()
                .stack_size(64 << 10)
                .spawn(move || {
                    let held = black_box(vec![1u8; HELD]);
                    all.wait(); // 1: every thread holds its buffer
                    all.wait(); // 2: the main thread has read the heap
                    drop(held);
                    all.wait(); // 3: every buffer is freed
                    all.wait(); // 4: the main thread has read the heap again
                })
                .unwrap()
        })
        .collect();
    all.wait();
    let holding = process_heap();
    let slots = slots_in_use();
    all.wait();
    all.wait();
    let freed = process_heap();
    all.wait();
    for handle in handles {
        handle.join().unwrap();
    }
    // The sum reads the slots of a few threads and one overflow for the
    // rest, whatever their number.
    assert!(
        slots <= memprof::__private::SLOT_COUNT,
        "{slots} slots read with {THREADS} live threads"
    );
    assert_eq!(
        holding - freed,
        (THREADS * HELD) as u64,
        "exact across slots and overflow"
    );
    assert_eq!(slots_in_use(), alone, "after the 2,000 threads ended");
}
