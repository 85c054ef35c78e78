//! mprof on large inputs: `cargo bench -p mprof --bench scale`.
//!
//! Writes a pair of reports of 40,000 functions and a `.dat` file of 2
//! million noisy samples (each one far from the last, the worst case for
//! a line), then times the release `mprof` on them, each once: `diff
//! --format markdown` (target ≤ 2 s and ≤ 200 MB), `plot` to PNG (target
//! ≤ 5 s) and to SVG. Prints seconds and peak memory of each run, as
//! figures, not pass or fail: these machines are shared and noisy.

use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

const FUNCTIONS: usize = 40_000;
const SAMPLES: usize = 2_000_000;

fn report(dir: &Path, name: &str, scale: i64) {
    let mut text = String::from(r#"{"schema":1,"functions":["#);
    for i in 0..FUNCTIONS {
        if i > 0 {
            text.push(',');
        }
        let (kept, peak) = (100 * scale + i as i64, 200 * scale + i as i64);
        write!(
            text,
            r##"{{"name":"app::m{m}::f{i}","file":"src/m{m}.rs","calls":1,"gpu":null,"lines":[
{{"line":10,"mem_usage":null,"increment":null,"peak":null,"occurrences":0,"contents":"#[profile]"}},
{{"line":11,"mem_usage":100,"increment":{kept},"peak":{peak},"occurrences":1,"allocations":2,"contents":"fn f{i}(n: usize) -> Vec<u8> {{"}},
{{"line":12,"mem_usage":100,"increment":{kept},"peak":{peak},"occurrences":1,"allocations":2,"contents":"    let v = helper{i}(n);"}},
{{"line":13,"mem_usage":null,"increment":null,"peak":null,"occurrences":0,"contents":"}}"}}]}}"##,
            m = i % 100
        )
        .unwrap();
    }
    text.push_str("]}");
    std::fs::write(dir.join(name), text).unwrap();
}

fn samples(dir: &Path) {
    let mut text = String::from("CMDLINE app\n");
    // A fixed pseudo-random walk between 10 and 1000 MiB.
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    for i in 0..SAMPLES {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let mib = 10.0 + (state % 990_000) as f64 / 1000.0;
        writeln!(
            text,
            "MEM {mib:.6} {:.4}",
            1_700_000_000.0 + i as f64 * 0.01
        )
        .unwrap();
    }
    std::fs::write(dir.join("samples.dat"), text).unwrap();
}

/// Seconds and peak resident MiB of `mprof args` in `dir`.
fn time(dir: &Path, args: &[&str]) -> (f64, f64) {
    let start = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_mprof"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("mprof runs");
    let seconds = start.elapsed().as_secs_f64();
    assert!(
        out.status.code().is_some_and(|c| c <= 1),
        "mprof {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    // SAFETY: a plain out-parameter.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage);
        usage
    };
    // The largest child so far: each run is larger than the ones before.
    (seconds, usage.ru_maxrss as f64 / 1024.0)
}

fn main() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("mprof-scale");
    std::fs::create_dir_all(&dir).unwrap();
    report(&dir, "base.json", 1);
    report(&dir, "head.json", 2);
    samples(&dir);
    let runs: [(&str, &[&str], &str); 3] = [
        (
            "diff --format markdown, 40,000 functions",
            &["diff", "base.json", "head.json", "--format", "markdown"],
            "≤ 2 s, ≤ 200 MB",
        ),
        (
            "plot to PNG, 2,000,000 samples",
            &["plot", "samples.dat", "-o", "samples.png"],
            "≤ 5 s",
        ),
        (
            "plot to SVG, 2,000,000 samples",
            &["plot", "samples.dat", "-o", "samples.svg"],
            "",
        ),
    ];
    println!("| run | seconds | peak MiB (largest run so far) | target |");
    println!("|---|---|---|---|");
    for (what, args, target) in runs {
        let (seconds, mib) = time(&dir, args);
        println!("| {what} | {seconds:.2} | {mib:.0} | {target} |");
    }
}
