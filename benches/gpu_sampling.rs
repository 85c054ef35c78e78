//! The cost of a profiled statement with the GPU watched:
//! `cargo bench --bench gpu_sampling`.
//!
//! Three rows, each from a run of this program in a child process (the GPU
//! mode is chosen once per process): device allocations counted through
//! CUPTI (the default), NVML sampled at each statement
//! (`MEMPROF_GPU_SAMPLE=statement`), and a framework's pool read at each
//! statement (`memprof::watch_pool`) beside CUPTI's counts. Each is set against the same loop with
//! `gpu = false`, the heap-only probe.
//!
//! No GPU is needed: NVML and CUPTI are the fake libraries from
//! tests/fake-nvml and tests/fake-cupti, reached through the calls memprof
//! makes. The NVML figure is therefore memprof's and nvml-wrapper's own
//! share of a sample; on a real GPU each NVML call adds the driver's time
//! (microseconds) on top. A counted statement never calls CUPTI or the
//! driver: its figure holds on hardware.
//!
//! On a machine with an NVIDIA GPU, `MEMPROF_BENCH_HARDWARE=1` runs the
//! same rows on the real driver, NVML and libcupti instead (found as
//! memprof finds them; the process makes a CUDA context first, as a CUDA
//! program does, so that the driver lists it).

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
/// Set by the user: the real GPU's libraries, not the fakes.
const HARDWARE: &str = "MEMPROF_BENCH_HARDWARE";

fn main() {
    let hardware = std::env::var_os(HARDWARE).is_some_and(|v| v == "1");
    let Ok(mode) = std::env::var(MODE) else {
        let exe = std::env::current_exe().unwrap();
        let source = if hardware {
            "the real GPU"
        } else {
            "fake NVML and CUPTI"
        };
        println!(
            "GPU sampling ({source}): {ROUNDS} rounds of {ITERATIONS} iterations; median round"
        );
        for mode in ["alloc", "statement", "pool"] {
            let mut child = std::process::Command::new(&exe);
            child.env(MODE, mode);
            if !hardware {
                child
                    .env("MEMPROF_NVML_LIB", fake_nvml::library())
                    .env("MEMPROF_CUPTI_LIB", fake_cupti::library());
            }
            let status = child.status().unwrap();
            assert!(status.success(), "the {mode} run failed: {status}");
        }
        return;
    };
    // SAFETY: no other thread runs yet.
    unsafe {
        std::env::set_var("MEMPROF_REPORT", "off");
        std::env::set_var("MEMPROF_GPU_MEMORY", "process");
        let sample = if mode == "pool" { "alloc" } else { &mode };
        std::env::set_var("MEMPROF_GPU_SAMPLE", sample);
    }
    // A framework's pool, as cheap as a reader can be: its own cost is
    // the runtime's statement step that such calls take.
    static POOL: [std::sync::atomic::AtomicU64; 2] =
        [const { std::sync::atomic::AtomicU64::new(0) }; 2];
    if mode == "pool" {
        memprof::watch_pool("bench", || {
            use std::sync::atomic::Ordering::Relaxed;
            Some(memprof::PoolUsage {
                allocated: POOL[0].load(Relaxed),
                reserved: POOL[1].load(Relaxed),
            })
        });
    }
    // This process holds device memory, as a CUDA program does, so each
    // sample takes both NVML calls of the process list (count, then list).
    let fake = (!hardware).then(|| {
        let fake = fake_nvml::FakeNvml::new();
        fake.alloc(0, std::process::id(), 1 << 20);
        fake
    });
    let _context = hardware.then(|| cudarc::driver::CudaContext::new(0).unwrap());
    // Device allocation calls as the driver plays them, before memprof
    // subscribes (no profiled call yet) and after.
    let cupti = (mode == "alloc" && !hardware).then(fake_cupti::FakeCupti::new);
    let queries = || fake.as_ref().map_or(0, |fake| fake.query_count());
    let pairs = |cupti: &fake_cupti::FakeCupti| {
        let start = Instant::now();
        for _ in 0..ITERATIONS {
            let block = cupti.alloc(fake_cupti::cbid::MEM_ALLOC_V2, 0, 1 << 20);
            cupti.free(fake_cupti::cbid::MEM_FREE_V2, 0, block);
        }
        start.elapsed().as_secs_f64() * 1e9 / ITERATIONS as f64
    };
    let unsubscribed = cupti.as_ref().map(pairs);

    // A real NVML read takes microseconds: a tenth of the loop.
    let iterations = match (hardware, mode.as_str()) {
        (true, "statement") => ITERATIONS / 10,
        _ => ITERATIONS,
    };
    let mut per_statement = Vec::with_capacity(ROUNDS);
    for _ in 0..ROUNDS {
        let start = Instant::now();
        black_box(unsampled_loop(black_box(iterations)));
        let unsampled = start.elapsed();
        let queries_before = queries();
        let start = Instant::now();
        black_box(sampled_loop(black_box(iterations)));
        let sampled = start.elapsed();
        // Two statements per iteration.
        let statements = (2 * iterations) as f64;
        let queries = (queries() - queries_before) as f64 / statements;
        per_statement.push((
            sampled.as_secs_f64() * 1e9 / statements,
            unsampled.as_secs_f64() * 1e9 / statements,
            queries,
        ));
    }
    per_statement.sort_by(|a, b| a.0.total_cmp(&b.0));
    let (sampled, unsampled, queries) = per_statement[ROUNDS / 2];
    // The real NVML's queries are not counted.
    let queries = match hardware {
        true => String::new(),
        false => format!("; {queries:.2} NVML queries per statement"),
    };
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
            "| `#[profile]` probe with CUPTI counting ({}), ns per statement | \
             {sampled:.1} | {unsampled:.1} heap-only (`gpu = false`): +{:.1} ns\
             {queries} | |",
            if hardware { "real CUPTI" } else { "fake CUPTI" },
            sampled - unsampled
        );
    } else if mode == "pool" {
        println!(
            "| `#[profile]` probe reading a framework's pool (`watch_pool`, a reader of \
             two atomics; CUPTI counting beside), ns per statement | {sampled:.1} | \
             {unsampled:.1} heap-only (`gpu = false`): +{:.1} ns | |",
            sampled - unsampled
        );
    } else {
        println!(
            "| `#[profile]` probe with per-statement NVML sampling ({}), ns per \
             statement | {sampled:.0} | {unsampled:.1} heap-only (`gpu = false`)\
             {queries} | |",
            if hardware { "real NVML" } else { "fake NVML" }
        );
    }
}
