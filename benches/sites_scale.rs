//! Exact sites and Live at a large live heap: `cargo bench --bench sites_scale`.
//!
//! benches/crates/many-blocks makes N boxed words in one line, each a block
//! of its own, all held at once, then frees them by a pattern: kept (never
//! freed), in order, in reverse, or on another thread. It is built as
//! written, with dhat's heap profiler (its `dhat` feature, `main` edited as
//! dhat asks), and through `cargo memprof run --release` (every function
//! profiled), and run with `MEMPROF_SITES=1` (every allocation's stack and
//! every block in use followed), for N = 1 M and 10 M, in one sitting.
//!
//! `many-sites` keeps its blocks too, but makes them at the end of chains of
//! 14 calls, at 16,384 sites (a stack each), for N = 100,000 and 1 M: what
//! the tables of sites cost once a program has met more sites than they
//! hold. `cargo bench --bench sites_scale -- PATTERN` runs one pattern.
//!
//! It prints, per pattern and N: the time per allocation and per free of
//! each, memprof's at 10 M over its at 1 M (the target: within 1.5×, a cost
//! that does not grow with the live heap), memprof's over dhat's (the
//! target: at most 1×), and the bytes of resident memory per live block
//! that memprof's tables add over the plain program's (its peak resident
//! memory less the plain program's, over N), and dhat's.

use std::path::Path;
use std::process::Command;

/// The fixture and its builds: see support/fixture.rs.
#[path = "support/fixture.rs"]
mod fixture;

use fixture::{Fixture, median};

const FIXTURE: Fixture = Fixture {
    name: "many-blocks",
};
const PATTERNS: [&str; 5] = ["kept", "in-order", "reverse", "other-thread", "many-sites"];
const SIZES: [u64; 2] = [1_000_000, 10_000_000];
/// `many-sites`'s: each block takes 14 profiled calls.
const FEW_SIZES: [u64; 2] = [100_000, 1_000_000];

/// The sizes `pattern` runs at.
fn sizes(pattern: &str) -> [u64; 2] {
    if pattern == "many-sites" {
        FEW_SIZES
    } else {
        SIZES
    }
}
/// Runs of each, interleaved; the median is shown.
const ROUNDS: usize = 3;

/// A build to run: its name, its binary and its environment.
type Tool<'a> = (&'a str, &'a Path, &'a [(&'a str, &'a str)]);

#[derive(Clone, Copy, Default)]
struct Measured {
    /// Nanoseconds per allocation and per free.
    alloc: f64,
    free: f64,
    /// Peak resident memory, bytes.
    peak: f64,
}

fn measure(program: &Path, env: &[(&str, &str)], pattern: &str, n: u64) -> Measured {
    let out = Command::new(program)
        .args([pattern, &n.to_string()])
        .envs(env.iter().copied())
        .current_dir(FIXTURE.target())
        .output()
        .expect("the program runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{program:?} {pattern} {n}: {out:?}");
    let figure = |unit: &str| -> f64 {
        stdout
            .lines()
            .find_map(|l| l.strip_suffix(unit)?.parse().ok())
            .unwrap_or_else(|| panic!("no{unit} in {stdout}"))
    };
    Measured {
        alloc: figure(" ns per allocation"),
        free: figure(" ns per free"),
        peak: figure(" bytes peak resident"),
    }
}

/// Whether the bench's arguments (after `--bench`'s own) ask for
/// `pattern`: all patterns when they name none.
fn wanted(pattern: &str) -> bool {
    let named: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    named.is_empty() || named.iter().any(|n| n == pattern)
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let plain = FIXTURE.build("plain", &[]);
    let dhat = FIXTURE.build("dhat", &["dhat"]);
    let profiled = FIXTURE.build_profiled(&["kept", "1000"]);
    let exact: &[(&str, &str)] = &[("MEMPROF_SITES", "1"), ("MEMPROF_REPORT", "off")];
    let tools: [Tool<'_>; 3] = [
        ("plain", &plain, &[]),
        ("memprof, MEMPROF_SITES=1", &profiled, exact),
        ("dhat", &dhat, &[]),
    ];
    // [pattern][size][tool] -> runs
    let mut runs = vec![vec![vec![Vec::new(); tools.len()]; SIZES.len()]; PATTERNS.len()];
    for _ in 0..ROUNDS {
        for (p, pattern) in PATTERNS.iter().enumerate().filter(|(_, p)| wanted(p)) {
            for (s, &n) in sizes(pattern).iter().enumerate() {
                for (t, (_, program, env)) in tools.iter().enumerate() {
                    runs[p][s][t].push(measure(program, env, pattern, n));
                }
            }
        }
    }
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let shown: Vec<bool> = PATTERNS.iter().map(|p| wanted(p)).collect();
    println!(
        "many-blocks: N boxed words made in one line, then freed by a pattern; release, \
         {cores} cores, medians of {ROUNDS} interleaved rounds. ns per allocation / per free:"
    );
    println!(
        "| pattern | N | plain | memprof exact sites | dhat | memprof ÷ dhat (alloc, free) | resident per live block: memprof, dhat |"
    );
    let med = |v: &[Measured], f: fn(&Measured) -> f64| median(v.iter().map(f).collect());
    let mut per_size = vec![vec![(0.0, 0.0); SIZES.len()]; PATTERNS.len()];
    for (p, pattern) in PATTERNS.iter().enumerate().filter(|&(p, _)| shown[p]) {
        for (s, &n) in sizes(pattern).iter().enumerate() {
            let r = &runs[p][s];
            let (alloc, free) = (|m: &Measured| m.alloc, |m: &Measured| m.free);
            let peak = |m: &Measured| m.peak;
            let cell = |t: usize| format!("{:.0} / {:.0}", med(&r[t], alloc), med(&r[t], free));
            let tables = (med(&r[1], peak) - med(&r[0], peak)) / n as f64;
            let dhat_tables = (med(&r[2], peak) - med(&r[0], peak)) / n as f64;
            per_size[p][s] = (med(&r[1], alloc), med(&r[1], free));
            println!(
                "| {pattern} | {n} | {} | {} | {} | {}, {} | {tables:.0} B, {dhat_tables:.0} B |",
                cell(0),
                cell(1),
                cell(2),
                ratio(med(&r[1], alloc), med(&r[2], alloc)),
                ratio(med(&r[1], free), med(&r[2], free)),
            );
        }
    }
    println!(
        "memprof's time per allocation and per free at the larger N over its time at the \
         smaller (10 M and 1 M; many-sites 1 M and 100,000):"
    );
    for (p, pattern) in PATTERNS.iter().enumerate().filter(|&(p, _)| shown[p]) {
        let (small, large) = (per_size[p][0], per_size[p][1]);
        println!(
            "| {pattern} | {} | {} |",
            ratio(large.0, small.0),
            ratio(large.1, small.1)
        );
    }
}

/// `a` over `b`, or a dash where `b` is 0 (a pattern that frees nothing
/// while timed: `kept`, `many-sites`).
fn ratio(a: f64, b: f64) -> String {
    if b > 0.0 {
        format!("{:.2}×", a / b)
    } else {
        "—".to_owned()
    }
}
