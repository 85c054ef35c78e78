//! `memprof-many-blocks PATTERN N`: makes N boxed words, each a block of
//! its own, held at once, then frees them by PATTERN:
//! - `kept`: never (until the process exits);
//! - `in-order`: in the order they were made;
//! - `reverse`: last made first;
//! - `other-thread`: on another thread, in order;
//! - `many-sites`: never, as `kept`, but made at 16,384 sites: block `i`
//!   at the end of a chain of 14 calls, `left` or `right` by the bits of
//!   `i`, so that each has one of 16,384 stacks.
//!
//! It prints the nanoseconds per allocation and per free, and the process's
//! peak resident memory (VmHWM) in bytes. With `--features dhat` it runs
//! under dhat's heap profiler.

// Each `Box<u64>` is a heap block of its own: what the fixture measures.
#![allow(clippy::vec_box)]

#[cfg(feature = "dhat")]
#[global_allocator]
static ALLOC: dhat::Alloc = dhat::Alloc;

use std::time::Instant;

/// `n` blocks, made in one line.
#[inline(never)]
fn make(n: u64) -> Vec<Box<u64>> {
    let blocks: Vec<Box<u64>> = (0..n).map(Box::new).collect();
    blocks
}

/// Levels of the chains `many-sites` makes its blocks at the end of.
const LEVELS: u32 = 14;

/// `n` blocks, block `i` made at the end of a chain of calls chosen by the
/// bits of `i`: `1 << LEVELS` sites.
#[inline(never)]
fn make_at_sites(n: u64) -> Vec<Box<u64>> {
    let blocks: Vec<Box<u64>> = (0..n).map(|i| left(i, LEVELS, i)).collect();
    blocks
}

#[inline(never)]
fn left(path: u64, levels: u32, value: u64) -> Box<u64> {
    if levels == 0 {
        Box::new(value)
    } else if path & 1 == 0 {
        left(path >> 1, levels - 1, value)
    } else {
        right(path >> 1, levels - 1, value)
    }
}

#[inline(never)]
fn right(path: u64, levels: u32, value: u64) -> Box<u64> {
    if levels == 0 {
        Box::new(value)
    } else if path & 1 == 0 {
        left(path >> 1, levels - 1, value)
    } else {
        right(path >> 1, levels - 1, value)
    }
}

/// Frees `blocks` by `pattern`.
#[inline(never)]
fn free(pattern: &str, mut blocks: Vec<Box<u64>>) {
    match pattern {
        "kept" | "many-sites" => std::mem::forget(blocks),
        "in-order" => drop(blocks),
        "reverse" => {
            while let Some(block) = blocks.pop() {
                drop(block);
            }
        }
        "other-thread" => std::thread::spawn(move || drop(blocks))
            .join()
            .expect("the freeing thread ends"),
        other => panic!("unknown pattern {other}"),
    }
}

fn peak_resident() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().strip_suffix("kB"))
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

fn main() {
    #[cfg(feature = "dhat")]
    let _profiler = dhat::Profiler::new_heap();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let pattern = args.first().map_or("kept", String::as_str).to_owned();
    let n: u64 = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(1_000_000);
    let start = Instant::now();
    let blocks = if pattern == "many-sites" {
        std::hint::black_box(make_at_sites(n))
    } else {
        std::hint::black_box(make(n))
    };
    let made = start.elapsed();
    let sum: u64 = blocks.iter().map(|b| **b).sum();
    assert_eq!(sum, n * n.saturating_sub(1) / 2);
    let start = Instant::now();
    free(&pattern, blocks);
    let freed = start.elapsed();
    println!("{:.1} ns per allocation", made.as_nanos() as f64 / n as f64);
    println!("{:.1} ns per free", freed.as_nanos() as f64 / n as f64);
    println!("{} bytes peak resident", peak_resident());
}
