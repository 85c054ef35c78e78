//! memprof's cost, as ratios measured in one run: `cargo bench --bench overhead`.
//!
//! Allocators are reached as a program reaches its global allocator: through
//! a call that is not inlined. The memprof allocator that the
//! `global-allocator` feature installs is reached through `std::alloc` itself,
//! which is how every program using the feature meets it; the others (System,
//! memprof as a binary's own `#[global_allocator]`, stats_alloc, mimalloc and
//! memprof wrapping mimalloc) through a non-inlined call of their
//! `GlobalAlloc` methods, side by side in one binary. The variants run in
//! interleaved rounds, and each ratio is the median of the ratios measured
//! within a round, which keeps them steady on a shared, noisy machine.
//!
//! The run ends with a Markdown summary table (`scripts/bench-summary`
//! collects it with the other benches' rows).

use memprof::Allocator;
use mimalloc::MiMalloc;
use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::hint::black_box;
use std::time::{Duration, Instant, SystemTime};

const PAIRS: usize = 10_000_000;
const ROUNDS: usize = 10;

static MEMPROF: Allocator = Allocator::system();
static STATS_ALLOC: stats_alloc::StatsAlloc<System> = stats_alloc::StatsAlloc::system();
static MEMPROF_MIMALLOC: Allocator<MiMalloc> = Allocator::new(MiMalloc);

/// Reaches `A` through calls that are not inlined, as a program reaches the
/// `#[global_allocator]` declared in its own crate through `__rust_alloc`.
///
/// PERF: the baseline, System, is reached one jump more directly than through
/// std's default `__rust_alloc` → `__rdl_alloc` → `malloc`: if anything, this
/// flatters System. Like `std::alloc::alloc`, an allocation first calls an
/// empty function (std's `__rust_no_alloc_shim_is_unstable_v2`), which
/// every program pays whatever its allocator.
struct Called<A: 'static>(&'static A);

#[inline(never)]
fn shim_check() {
    black_box(());
}

// SAFETY: forwards every call with its arguments unchanged.
unsafe impl<A: GlobalAlloc> GlobalAlloc for Called<A> {
    #[inline(never)]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        shim_check();
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { self.0.alloc(layout) }
    }
    #[inline(never)]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { self.0.dealloc(ptr, layout) }
    }
    #[inline(never)]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { self.0.realloc(ptr, layout, new_size) }
    }
}

#[cfg(not(feature = "global-allocator"))]
compile_error!("the overhead bench measures the allocator the `global-allocator` feature installs");

/// The global allocator, which in this binary is the memprof allocator that
/// the `global-allocator` feature installs, compiled as part of the `memprof`
/// library crate.
struct Installed;

// SAFETY: forwards every call to the global allocator unchanged.
unsafe impl GlobalAlloc for Installed {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { std::alloc::alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { std::alloc::dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { std::alloc::realloc(ptr, layout, new_size) }
    }
}

static SYSTEM: System = System;
static MIMALLOC: MiMalloc = MiMalloc;

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

/// Vec-like growth: 16 B doubled by realloc up to 1 MiB, `times` times.
fn realloc_growth<A: GlobalAlloc>(alloc: &A, times: usize) {
    for _ in 0..times {
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

/// Runs each variant `rounds` times, interleaved; returns each round's times.
/// Every other round runs the variants in reverse, so that no variant always
/// goes first (after a thread start, or on a cold cache).
fn rounds(rounds: usize, variants: &[(&str, &dyn Fn())]) -> Vec<Vec<Duration>> {
    let mut times = vec![vec![Duration::ZERO; variants.len()]; rounds];
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

/// Variant `i`'s time over variant `base`'s: the median over rounds of the
/// ratio *within* a round, so that the machine's drifting load, shared by
/// neighbours in time, cancels out.
fn ratio(times: &[Vec<Duration>], i: usize, base: usize) -> f64 {
    median(
        times
            .iter()
            .map(|row| row[i].as_secs_f64() / row[base].as_secs_f64())
            .collect(),
    )
}

/// Prints each variant's best time and its ratio to the first variant, and
/// returns the rounds' times.
fn allocator_row(title: &str, variants: &[(&str, &dyn Fn())]) -> Vec<Vec<Duration>> {
    let times = rounds(ROUNDS, variants);
    println!("{title}");
    for (i, (name, _)) in variants.iter().enumerate() {
        let best = times.iter().map(|row| row[i]).min().unwrap_or_default();
        println!(
            "    {name:<18} {:>8.1} ms {:>6.2}x",
            best.as_secs_f64() * 1e3,
            ratio(&times, i, 0)
        );
    }
    times
}

/// A realistic workload, twice: sorting and hashing strings, with
/// `#[profile]` and without. The statements in its loops run once per
/// string.
macro_rules! sort_and_hash {
    ($name:ident $(#[$attr:meta])*) => {
        $(#[$attr])*
        fn $name(words: &[String]) -> u64 {
            let mut sorted = words.to_vec();
            sorted.sort_unstable();
            let mut counts: HashMap<&str, u32> = HashMap::with_capacity(sorted.len());
            for word in &sorted {
                *counts.entry(word.as_str()).or_insert(0) += 1;
            }
            let mut digest = 0u64;
            for (word, n) in &counts {
                let mut hasher = DefaultHasher::new();
                word.hash(&mut hasher);
                digest = digest.wrapping_add(hasher.finish().wrapping_mul(u64::from(*n)));
            }
            digest
        }
    };
}
sort_and_hash!(profiled_sort_and_hash #[memprof::profile]);
sort_and_hash!(plain_sort_and_hash);

/// `n` pseudo-random words of 12 to 22 bytes, about half of them distinct.
fn words(n: usize) -> Vec<String> {
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let r = x % (n as u64 / 2);
            format!("w{:x}-{}", r.wrapping_mul(0x2545_F491_4F6C_DD1D), r % 1000)
        })
        .collect()
}

/// Today as `YYYY-MM-DD` (UTC), from the civil-from-days algorithm.
fn today() -> String {
    let secs = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let z = (secs / 86_400) as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}

/// CPU model, cores and memory, as the summary names the machine.
fn machine() -> String {
    let read = |path| std::fs::read_to_string(path).unwrap_or_default();
    let field = |text: &str, key: &str| {
        text.lines()
            .find(|line| line.starts_with(key))
            .and_then(|line| line.split_once(':'))
            .map(|(_, value)| value.trim().to_owned())
    };
    let cpu = field(&read("/proc/cpuinfo"), "model name").unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let memory = field(&read("/proc/meminfo"), "MemTotal")
        .and_then(|kib| kib.trim_end_matches(" kB").parse::<f64>().ok())
        .map(|kib| format!(", {:.0} GiB", kib / (1u64 << 20) as f64))
        .unwrap_or_default();
    format!(
        "{cpu}, {cores} cores{memory}, {}-{}",
        std::env::consts::ARCH,
        std::env::consts::OS
    )
}

fn main() {
    // NOTE: the tables of the profiled functions would only clutter the output.
    // SAFETY: no other thread runs yet.
    unsafe { std::env::set_var("MEMPROF_REPORT", "off") };
    println!(
        "memprof overhead: {ROUNDS} interleaved rounds; ratio = median of per-round ratios to the first variant"
    );

    let system = &Called(&SYSTEM);
    let installed = &Installed;
    let own = &Called(&MEMPROF);
    let stats = &Called(&STATS_ALLOC);
    let mimalloc = &Called(&MIMALLOC);
    let memprof_mimalloc = &Called(&MEMPROF_MIMALLOC);
    let one = allocator_row(
        "10M alloc+free of 16 B, 1 thread",
        &[
            ("System", &|| small_pairs(system)),
            ("memprof (feature)", &|| small_pairs(installed)),
            ("stats_alloc", &|| small_pairs(stats)),
            ("mimalloc", &|| small_pairs(mimalloc)),
            ("memprof<mimalloc>", &|| small_pairs(memprof_mimalloc)),
            ("memprof (own)", &|| small_pairs(own)),
        ],
    );
    let two = allocator_row(
        "10M alloc+free of 16 B on each of 2 threads",
        &[
            ("System", &|| {
                on_threads(2, || small_pairs(&Called(&SYSTEM)))
            }),
            ("memprof (feature)", &|| {
                on_threads(2, || small_pairs(&Installed))
            }),
            ("stats_alloc", &|| {
                on_threads(2, || small_pairs(&Called(&STATS_ALLOC)))
            }),
            ("mimalloc", &|| {
                on_threads(2, || small_pairs(&Called(&MIMALLOC)))
            }),
            ("memprof<mimalloc>", &|| {
                on_threads(2, || small_pairs(&Called(&MEMPROF_MIMALLOC)))
            }),
            ("memprof (own)", &|| {
                on_threads(2, || small_pairs(&Called(&MEMPROF)))
            }),
        ],
    );
    let growth = allocator_row(
        "realloc growth 16 B -> 1 MiB, 50k times",
        &[
            ("System", &|| realloc_growth(system, 50_000)),
            ("memprof (feature)", &|| realloc_growth(installed, 50_000)),
            ("stats_alloc", &|| realloc_growth(stats, 50_000)),
        ],
    );
    // PERF: mimalloc moves a block to a new size class at each doubling,
    // copying it, where glibc grows the top chunk in place: about 100 times
    // System's time here, hence fewer repetitions.
    let mimalloc_growth = allocator_row(
        "realloc growth 16 B -> 1 MiB, 5k times",
        &[
            ("mimalloc", &|| realloc_growth(mimalloc, 5_000)),
            ("memprof<mimalloc>", &|| {
                realloc_growth(memprof_mimalloc, 5_000)
            }),
        ],
    );

    // Built outside the timed part; each run clones them.
    const STRINGS: usize = 1_000_000;
    let words = words(STRINGS);
    assert_eq!(plain_sort_and_hash(&words), profiled_sort_and_hash(&words));
    let times = rounds(
        5,
        &[
            ("plain", &|| {
                black_box(plain_sort_and_hash(black_box(&words)));
            }),
            ("profiled", &|| {
                black_box(profiled_sort_and_hash(black_box(&words)));
            }),
        ],
    );
    let best = |i: usize| times.iter().map(|row| row[i]).min().unwrap_or_default();
    println!(
        "sort and hash 1M strings: plain {:.0} ms, #[profile] {:.0} ms",
        best(0).as_secs_f64() * 1e3,
        best(1).as_secs_f64() * 1e3
    );
    let strings = ratio(&times, 1, 0);

    println!();
    println!("Measured {} on {}:", today(), machine());
    println!();
    println!("| | memprof | reference | target |");
    println!("|---|---|---|---|");
    let row = |what: &str, measured: String, reference: String, target: &str| {
        println!("| {what} | {measured} | {reference} | {target} |");
    };
    let x = |r: f64| format!("{r:.2}");
    row(
        "10M alloc+free of 16 B, 1 thread, memprof installed by its `global-allocator` feature (× System)",
        x(ratio(&one, 1, 0)),
        format!("stats_alloc {:.2}", ratio(&one, 2, 0)),
        "≤ 1.15 (stretch 1.10)",
    );
    row(
        "the same on each of 2 threads (× System)",
        x(ratio(&two, 1, 0)),
        format!("stats_alloc {:.2}", ratio(&two, 2, 0)),
        "≤ 1.15",
    );
    row(
        "the same two, memprof as the binary's own `#[global_allocator]`",
        format!("{} / {}", x(ratio(&one, 5, 0)), x(ratio(&two, 5, 0))),
        String::new(),
        "",
    );
    row(
        "realloc growth 16 B → 1 MiB, 50k times (× System)",
        x(ratio(&growth, 1, 0)),
        format!("stats_alloc {:.2}", ratio(&growth, 2, 0)),
        "",
    );
    for (what, times) in [
        ("`Allocator<MiMalloc>`, 10M alloc+free, 1 thread", &one),
        ("`Allocator<MiMalloc>`, the same on 2 threads", &two),
    ] {
        row(
            &format!("{what} (× mimalloc)"),
            x(ratio(times, 4, 3)),
            format!("mimalloc {:.2} × System", ratio(times, 3, 0)),
            "≤ 1.25",
        );
    }
    row(
        "`Allocator<MiMalloc>`, realloc growth, 5k times (× mimalloc)",
        x(ratio(&mimalloc_growth, 1, 0)),
        String::new(),
        "",
    );
    row(
        "sort and hash 1M strings, `#[profile]` (× plain)",
        x(strings),
        String::new(),
        "≤ 1.5",
    );
}
