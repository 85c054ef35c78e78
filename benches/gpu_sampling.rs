//! The cost of a profiled statement with the GPU watched:
//! `cargo bench --bench gpu_sampling`.
//!
//! Two rows, each from a run of this program in a child process (the GPU
//! mode is chosen once per process): device allocations counted through
//! CUPTI (the default), and NVML sampled at each statement
//! (`MEMPROF_GPU_SAMPLE=statement`). Each is set against the same loop with
//! `gpu = false`, the heap-only probe.
//!
//! No GPU is needed: NVML and CUPTI are the fake libraries from
//! tests/fake-nvml and tests/fake-cupti, reached through the calls memprof
//! makes. The NVML figure is therefore memprof's and nvml-wrapper's own
//! share of a sample; on a real GPU each NVML call adds the driver's time
//! (microseconds) on top. A counted statement never calls CUPTI or the
//! driver: its figure holds on hardware.

#[path = "../tests/support/fake_cupti.rs"]
mod fake_cupti;
#[path = "../tests/support/fake_library.rs"]
mod fake_library;
#[path = "../tests/support/fake_nvml.rs"]
mod fake_nvml;

use std::hint::black_box;
use std::time::Instant;

const ROUNDS: usize = 10;
const ITERATIONS: u64 = 100_000;

/// The same loop twice: see support/summing_loop.rs.
#[path = "support/summing_loop.rs"]
mod loops;
use loops::summing_loop;

summing_loop!(sampled_loop #[memprof::profile]);
summing_loop!(unsampled_loop #[memprof::profile(gpu = false)]);

/// Set in the child runs: `alloc` or `statement`.
const MODE: &str = "GPU_SAMPLING_BENCH_MODE";

fn main() {
    let Ok(mode) = std::env::var(MODE) else {
        let exe = std::env::current_exe().unwrap();
        let nvml = fake_nvml::library();
        let cupti = fake_cupti::library();
        println!("GPU sampling: {ROUNDS} rounds of {ITERATIONS} iterations; median round");
        for mode in ["alloc", "statement"] {
            let status = std::process::Command::new(&exe)
                .env(MODE, mode)
                .env("MEMPROF_NVML_LIB", &nvml)
                .env("MEMPROF_CUPTI_LIB", &cupti)
                .status()
                .unwrap();
            assert!(status.success(), "the {mode} run failed: {status}");
        }
        return;
    };
    // SAFETY: no other thread runs yet.
    unsafe {
        std::env::set_var("MEMPROF_REPORT", "off");
        std::env::set_var("MEMPROF_GPU_MEMORY", "process");
        std::env::set_var("MEMPROF_GPU_SAMPLE", &mode);
    }
    let fake = fake_nvml::FakeNvml::new();
    // This process holds device memory, as a CUDA program does, so each
    // sample takes both NVML calls of the process list (count, then list).
    fake.alloc(0, std::process::id(), 1 << 20);
    // Device allocation calls as the driver plays them, before memprof
    // subscribes (no profiled call yet) and after.
    let cupti = (mode == "alloc").then(fake_cupti::FakeCupti::new);
    let pairs = |cupti: &fake_cupti::FakeCupti| {
        let start = Instant::now();
        for _ in 0..ITERATIONS {
            let block = cupti.alloc(fake_cupti::cbid::MEM_ALLOC_V2, 0, 1 << 20);
            cupti.free(fake_cupti::cbid::MEM_FREE_V2, 0, block);
        }
        start.elapsed().as_secs_f64() * 1e9 / ITERATIONS as f64
    };
    let unsubscribed = cupti.as_ref().map(pairs);

    let mut per_statement = Vec::with_capacity(ROUNDS);
    for _ in 0..ROUNDS {
        let start = Instant::now();
        black_box(unsampled_loop(black_box(ITERATIONS)));
        let unsampled = start.elapsed();
        let queries = fake.query_count();
        let start = Instant::now();
        black_box(sampled_loop(black_box(ITERATIONS)));
        let sampled = start.elapsed();
        // Two statements per iteration.
        let statements = (2 * ITERATIONS) as f64;
        let queries = (fake.query_count() - queries) as f64 / statements;
        per_statement.push((
            sampled.as_secs_f64() * 1e9 / statements,
            unsampled.as_secs_f64() * 1e9 / statements,
            queries,
        ));
    }
    per_statement.sort_by(|a, b| a.0.total_cmp(&b.0));
    let (sampled, unsampled, queries) = per_statement[ROUNDS / 2];
    // A row of the summary table that `benches/overhead.rs` starts.
    if let (Some(cupti), Some(unsubscribed)) = (&cupti, unsubscribed) {
        let subscribed = pairs(cupti);
        println!(
            "| fake `cuMemAlloc_v2`/`cuMemFree_v2` pair with memprof's CUPTI callback, ns | \
             {subscribed:.0} | {unsubscribed:.0} before subscribing: +{:.0} ns per pair \
             ({ITERATIONS} pairs) | |",
            subscribed - unsubscribed
        );
    }
    if mode == "alloc" {
        println!(
            "| `#[profile]` probe with CUPTI counting (fake CUPTI), ns per statement | \
             {sampled:.1} | {unsampled:.1} heap-only (`gpu = false`): +{:.1} ns; \
             {queries:.2} NVML queries per statement | |",
            sampled - unsampled
        );
    } else {
        println!(
            "| `#[profile]` probe with per-statement NVML sampling (fake NVML), ns per \
             statement | {sampled:.0} | {unsampled:.1} heap-only (`gpu = false`); \
             {queries:.2} NVML queries per statement | |"
        );
    }
}
