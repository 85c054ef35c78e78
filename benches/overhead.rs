//! memprof's cost, as ratios measured in one run: `cargo bench --bench overhead`.
//!
//! Allocators are called through `GlobalAlloc` directly, so System, memprof
//! and stats_alloc are compared side by side in one binary. The variants run
//! in interleaved rounds, and each ratio is the median of the ratios measured
//! within a round, which keeps them steady on a shared, noisy machine.

use memprof::Allocator;
use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::time::{Duration, Instant};

const PAIRS: usize = 10_000_000;
const ROUNDS: usize = 10;

static MEMPROF: Allocator = Allocator::system();
static STATS_ALLOC: stats_alloc::StatsAlloc<System> = stats_alloc::StatsAlloc::system();

/// `PAIRS` allocations and frees of a 16-byte box.
fn small_pairs<A: GlobalAlloc>(alloc: &A) {
    let layout = Layout::new::<[u64; 2]>();
    for _ in 0..PAIRS {
        // SAFETY: a non-zero layout; the block is freed with the same layout.
        unsafe {
            let p = alloc.alloc(layout);
            black_box(p);
            alloc.dealloc(p, layout);
        }
    }
}

/// Vec-like growth: 16 B doubled by realloc up to 1 MiB, many times over.
fn realloc_growth<A: GlobalAlloc>(alloc: &A) {
    for _ in 0..PAIRS / 200 {
        // SAFETY: every realloc passes the block's current layout, and the
        // final block is freed with its final layout.
        unsafe {
            let mut layout = Layout::from_size_align_unchecked(16, 8);
            let mut p = alloc.alloc(layout);
            while layout.size() < 1 << 20 {
                let size = layout.size() * 2;
                p = alloc.realloc(p, layout, size);
                layout = Layout::from_size_align_unchecked(size, 8);
                black_box(p);
            }
            alloc.dealloc(p, layout);
        }
    }
}

fn on_threads(threads: usize, work: fn()) {
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(work);
        }
    });
}

/// Runs each variant `ROUNDS` times, interleaved; returns each round's times.
/// Every other round runs the variants in reverse, so that no variant always
/// goes first (after a thread start, or on a cold cache).
fn rounds(variants: &[(&str, &dyn Fn())]) -> Vec<Vec<Duration>> {
    let mut times = vec![vec![Duration::ZERO; variants.len()]; ROUNDS];
    for (round, row) in times.iter_mut().enumerate() {
        let mut order: Vec<usize> = (0..variants.len()).collect();
        if round % 2 == 1 {
            order.reverse();
        }
        for i in order {
            let start = Instant::now();
            (variants[i].1)();
            row[i] = start.elapsed();
        }
    }
    times
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    if values.len().is_multiple_of(2) {
        (values[mid - 1] + values[mid]) / 2.0
    } else {
        values[mid]
    }
}

/// Prints each variant's best time and its ratio to the first variant: the
/// median over rounds of the ratio *within* a round, so that the machine's
/// drifting load, shared by neighbours in time, cancels out.
fn allocator_row(title: &str, variants: &[(&str, &dyn Fn())]) -> Vec<f64> {
    let times = rounds(variants);
    print!("{title:<44}");
    let mut ratios = Vec::new();
    for (i, (name, _)) in variants.iter().enumerate() {
        let best = times.iter().map(|row| row[i]).min().unwrap_or_default();
        let ratio = median(
            times
                .iter()
                .map(|row| row[i].as_secs_f64() / row[0].as_secs_f64())
                .collect(),
        );
        ratios.push(ratio);
        print!(
            " | {name} {:>7.1} ms {:>5.2}x",
            best.as_secs_f64() * 1e3,
            ratio
        );
    }
    println!();
    ratios
}

/// The same loop twice: with `#[profile]` and without.
macro_rules! summing_loop {
    ($name:ident $(#[$attr:meta])*) => {
        $(#[$attr])*
        fn $name(n: u64) -> u64 {
            let mut acc = 0u64;
            for i in 0..n {
                acc = acc.wrapping_add(black_box(i));
                black_box(&mut acc);
            }
            acc
        }
    };
}
summing_loop!(probed_loop #[memprof::profile]);
summing_loop!(plain_loop);

fn main() {
    // NOTE: the tables of `probed_loop` would only clutter the output.
    // SAFETY: no other thread runs yet.
    unsafe { std::env::set_var("MEMPROF_REPORT", "off") };
    println!(
        "memprof overhead: {ROUNDS} interleaved rounds; ratio = median of per-round ratios to System"
    );

    let one = allocator_row(
        "10M alloc+free of 16 B, 1 thread",
        &[
            ("System", &|| small_pairs(&System)),
            ("memprof", &|| small_pairs(&MEMPROF)),
            ("stats_alloc", &|| small_pairs(&STATS_ALLOC)),
        ],
    );
    let two = allocator_row(
        "10M alloc+free of 16 B on each of 2 threads",
        &[
            ("System", &|| on_threads(2, || small_pairs(&System))),
            ("memprof", &|| on_threads(2, || small_pairs(&MEMPROF))),
            ("stats_alloc", &|| {
                on_threads(2, || small_pairs(&STATS_ALLOC))
            }),
        ],
    );
    allocator_row(
        "realloc growth 16 B -> 1 MiB, 50k times",
        &[
            ("System", &|| realloc_growth(&System)),
            ("memprof", &|| realloc_growth(&MEMPROF)),
            ("stats_alloc", &|| realloc_growth(&STATS_ALLOC)),
        ],
    );

    // Two statements per iteration; the body binds no locals, so it has no
    // scope end (which, where present, costs one more probe per iteration).
    const ITERATIONS: u64 = 20_000_000;
    let times = rounds(&[
        ("plain", &|| {
            black_box(plain_loop(black_box(ITERATIONS)));
        }),
        ("profiled", &|| {
            black_box(probed_loop(black_box(ITERATIONS)));
        }),
    ]);
    let probe_ns = median(
        times
            .iter()
            .map(|row| {
                (row[1].as_secs_f64() - row[0].as_secs_f64()) * 1e9 / (2 * ITERATIONS) as f64
            })
            .collect(),
    );

    println!();
    println!("summary                                  measured   target");
    println!(
        "allocator, 1 thread (x System)           {:>8.2}   <= 1.10",
        one[1]
    );
    println!(
        "allocator, 2 threads (x System)          {:>8.2}   <= 1.25",
        two[1]
    );
    println!(
        "stats_alloc, 1 thread (x System)         {:>8.2}   (reference)",
        one[2]
    );
    println!(
        "stats_alloc, 2 threads (x System)        {:>8.2}   (reference)",
        two[2]
    );
    println!(
        "probe, ns per executed statement         {:>8.2}   <= 10",
        probe_ns
    );
}
