//! What `#[profile]` costs at compile time: `cargo bench --bench compile_cost`.
//!
//! Generates a crate with one 2,000-statement function and times `cargo build`
//! of that crate alone (its dependencies are built once beforehand), with and
//! without the attribute, in interleaved rounds, without incremental reuse.
//! The ratio is the median of the per-round ratios. Target: at most 3x.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

const STATEMENTS: usize = 2_000;
const ROUNDS: usize = 3;

fn source(profiled: bool) -> String {
    let mut s = String::from("#![allow(unused)]\n\n");
    if profiled {
        s.push_str("#[memprof::profile]\n");
    }
    s.push_str("pub fn big(x: u64) -> u64 {\n    let mut a = x;\n");
    for i in 0..STATEMENTS - 1 {
        if i % 2 == 0 {
            s.push_str(&format!(
                "    let v{i} = a.wrapping_mul({}) ^ {i};\n",
                2 * i + 3
            ));
        } else {
            s.push_str(&format!("    a = a.wrapping_add(v{});\n", i - 1));
        }
    }
    s.push_str("    a\n}\n");
    s
}

fn cargo() -> Command {
    Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
}

fn build(dir: &Path) -> Duration {
    let start = Instant::now();
    let status = cargo()
        .args(["build", "-q", "--manifest-path"])
        .arg(dir.join("Cargo.toml"))
        .env("CARGO_TARGET_DIR", dir.join("target"))
        // Whole-crate compiles: incremental reuse would favour either variant.
        .env("CARGO_INCREMENTAL", "0")
        .status()
        .expect("cargo runs");
    assert!(status.success(), "cargo build failed in {}", dir.display());
    start.elapsed()
}

fn main() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let dir = root.join("target").join("compile-cost");
    std::fs::create_dir_all(dir.join("src")).expect("target is writable");
    std::fs::write(
        dir.join("Cargo.toml"),
        format!(
            "[package]\nname = \"compile-cost\"\nversion = \"0.0.0\"\nedition = \"2024\"\n\n\
             [workspace]\n\n[dependencies]\nmemprof = {{ path = {:?} }}\n",
            root.display().to_string()
        ),
    )
    .expect("target is writable");
    let lib = dir.join("src").join("lib.rs");

    // Warm-up: dependencies, and both variants once.
    for profiled in [false, true] {
        std::fs::write(&lib, source(profiled)).expect("target is writable");
        build(&dir);
    }

    let mut ratios = Vec::new();
    let mut times = [Vec::new(), Vec::new()];
    for round in 0..ROUNDS {
        let order = if round % 2 == 0 {
            [false, true]
        } else {
            [true, false]
        };
        let mut pair = [Duration::ZERO; 2];
        for profiled in order {
            std::fs::write(&lib, source(profiled)).expect("target is writable");
            pair[profiled as usize] = build(&dir);
        }
        ratios.push(pair[1].as_secs_f64() / pair[0].as_secs_f64());
        times[0].push(pair[0]);
        times[1].push(pair[1]);
    }
    ratios.sort_by(f64::total_cmp);
    let best = |v: &[Duration]| v.iter().min().copied().unwrap_or_default().as_secs_f64();
    println!(
        "compile time of a {STATEMENTS}-statement function (dev profile): plain {:.2} s, \
         #[profile] {:.2} s",
        best(&times[0]),
        best(&times[1])
    );
    // A row of the summary table that `benches/overhead.rs` starts.
    println!(
        "| compile time of a {STATEMENTS}-statement function (× plain, dev profile) | {:.2} | \
         plain {:.1} s | ≤ 3 |",
        ratios[ratios.len() / 2],
        best(&times[0])
    );
}
