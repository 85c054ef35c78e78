//! A framework's own memory pool, read at statement boundaries
//! (`memprof::watch_pool`): the `Pool` columns per line, exact, beside heap
//! figures that the reader's own work never touches.
//!
//! The pool here is a small fake with a framework's rules: a tensor takes
//! its bytes from the pool ("allocated"), the pool grows by whole 2 MiB
//! pages when it runs short ("reserved") and keeps them when tensors drop.
//! examples/burn checks the same columns against cubecl's real pool code.
//! One test: the reader is the process's, and libtest runs tests at once.

#[path = "support/tables.rs"]
mod tables;

use memprof::{PoolUsage, profile};
use std::hint::black_box;
use std::sync::Mutex;
use tables::{row, table};

const MIB: u64 = 1 << 20;
const MI: i64 = MIB as i64;
const PAGE: u64 = 2 * MIB;

/// (allocated, reserved).
static POOL: Mutex<(u64, u64)> = Mutex::new((0, 0));

/// A tensor's storage in the fake pool; no heap.
struct Tensor(u64);

fn tensor(bytes: u64) -> Tensor {
    let mut pool = POOL.lock().unwrap();
    pool.0 += bytes;
    while pool.1 < pool.0 {
        pool.1 += PAGE;
    }
    Tensor(bytes)
}

impl Drop for Tensor {
    fn drop(&mut self) {
        POOL.lock().unwrap().0 -= self.0;
    }
}

fn read_pool() -> Option<PoolUsage> {
    // A reader that allocates, as a framework's does: never in a figure.
    let scratch = black_box(vec![0u8; 4096]);
    let (allocated, reserved) = *POOL.lock().unwrap();
    drop(scratch);
    Some(PoolUsage {
        allocated,
        reserved,
    })
}

#[profile]
fn step() -> u64 {
    let x = tensor(3 * MIB);
    let y = tensor(MIB);
    drop(x);
    for _ in 0..3 {
        let t = tensor(5 * MIB);
        black_box(&t);
    }
    let kept = black_box(vec![0u8; 1000]);
    y.0 + kept.len() as u64
}

#[profile(gpu = false)]
fn unwatched() -> u64 {
    tensor(MIB).0
}

/// (Pool allocated, Pool increment, Pool reserved) of the row with `text`.
fn pool(function: &memprof::FunctionReport, text: &str) -> (u64, i64, u64) {
    let row = row(function, text);
    (
        row.pool_allocated.expect("pool figures"),
        row.pool_increment.expect("pool figures"),
        row.pool_reserved.expect("pool figures"),
    )
}

/// Called often before the pool is watched: the kernel enters its calls.
#[profile]
fn warm() -> u64 {
    let t = tensor(MIB);
    t.0
}

#[test]
fn each_line_reads_the_pools_allocated_and_reserved_bytes() {
    // The kernel enters a function's calls once its per-call tables (3)
    // are handed out; once a pool is watched they go through the runtime.
    for _ in 0..5 {
        warm();
    }
    memprof::watch_pool("fake framework", read_pool);
    warm();
    assert_eq!(
        row(&table("warm"), "let t =").pool_allocated,
        Some(MIB),
        "{}",
        table("warm")
    );
    assert_eq!(step(), MIB + 1000);
    let f = table("step");
    // Each line: allocated after it (highest over executions), the change
    // over it, reserved after it. The pool grows by pages and keeps them.
    assert_eq!(pool(&f, "let x ="), (3 * MIB, 3 * MI, 4 * MIB));
    assert_eq!(pool(&f, "let y ="), (4 * MIB, MI, 4 * MIB));
    assert_eq!(pool(&f, "drop(x)"), (MIB, -3 * MI, 4 * MIB));
    // Each pass takes 5 MiB and gives it back at the body's end: the line
    // reads the high after it, no net change, the pages it needed.
    assert_eq!(pool(&f, "let t ="), (6 * MIB, 15 * MI, 6 * MIB));
    assert_eq!(row(&f, "let t =").occurrences, 3);
    assert_eq!(row(&f, "black_box(&t)").occurrences, 3);
    assert_eq!(pool(&f, "let kept ="), (MIB, 0, 6 * MIB));
    // The call: y dropped at its end.
    assert_eq!(pool(&f, "fn step"), (0, 0, 6 * MIB));
    // The heap columns are the program's alone: the reader's 4 KiB never
    // show (1000 B kept, then freed at the end).
    assert_eq!(row(&f, "let x =").increment, Some(0));
    assert_eq!(row(&f, "let x =").peak, Some(0));
    assert_eq!(row(&f, "let kept =").increment, Some(1000));
    assert_eq!(row(&f, "fn step").peak, Some(1000));
    // The table names the columns as PyTorch users know them.
    let text = f.to_string();
    assert!(
        text.contains(
            "Pool: fake framework's own figures: allocated = bytes in live tensors \
             (PyTorch's memory_allocated), reserved = bytes its pools hold (memory_reserved)"
        ),
        "{text}"
    );
    for column in ["Pool allocated", "Pool increment", "Pool reserved"] {
        assert!(text.contains(column), "{text}");
    }
    // `gpu = false` reads no pool.
    unwatched();
    let u = table("unwatched");
    assert_eq!(row(&u, "tensor(MIB)").pool_allocated, None);
    assert_eq!(u.pool, None);
    // Unwatched, later calls read nothing; the figures kept stay.
    memprof::unwatch_pool();
    memprof::reset();
    step();
    let f = table("step");
    assert_eq!(row(&f, "let x =").pool_allocated, None);
    assert_eq!(f.pool, None);
    assert!(!f.to_string().contains("Pool"), "{f}");
}
