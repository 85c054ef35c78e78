//! The cost of a profiled statement with GPU sampling on:
//! `cargo bench --bench gpu_sampling`.
//!
//! No GPU is needed: NVML is the fake library from tests/fake-nvml, reached
//! through the real nvml-wrapper calls memprof makes. The figure is
//! therefore memprof's and nvml-wrapper's own share of a sample; on a real
//! GPU each NVML call adds the driver's time (microseconds) on top.

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

fn main() {
    let library = fake_nvml::library();
    // SAFETY: no other thread runs yet.
    unsafe {
        std::env::set_var("MEMPROF_REPORT", "off");
        std::env::set_var("MEMPROF_NVML_LIB", &library);
        std::env::set_var("MEMPROF_GPU_MEMORY", "process");
    }
    let fake = fake_nvml::FakeNvml::new();
    // This process holds device memory, as a CUDA program does, so each
    // sample takes both NVML calls of the process list (count, then list).
    fake.alloc(0, std::process::id(), 1 << 20);

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
    println!("GPU sampling: {ROUNDS} rounds of {ITERATIONS} iterations; median round");
    // A row of the summary table that `benches/overhead.rs` starts.
    println!(
        "| `#[profile]` probe with GPU sampling (fake NVML), ns per statement | {sampled:.0} | \
         {unsampled:.1} without; {queries:.2} NVML queries per statement | |"
    );
}
