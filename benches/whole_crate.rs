//! What profiling a whole crate costs: `cargo bench --bench whole_crate`.
//!
//! Builds `benches/crates/parser-shape` (a crate shaped like a Markdown
//! parser: tens of millions of calls to tiny functions that never allocate,
//! a few that build large buffers) three ways, all in release: as written,
//! with dhat's heap profiler (its `dhat` feature, `main` edited as dhat
//! asks), and through `cargo memprof run --release`, every function
//! profiled. Then runs them in interleaved rounds and prints each one's
//! median wall time as a ratio to the plain binary's: the profiled binary
//! as `cargo memprof` runs it (`MEMPROF_REPORT=off`, its report written to
//! `MEMPROF_JSON`), with `MEMPROF_SITES=sample` and `MEMPROF_SITES=1`, under
//! `MEMPROF=off`, under `mprof run`, and dhat. heaptrack's ratio comes from `heaptrack` on the
//! plain binary where it is installed (`scripts/install-peers`).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// Megabytes of generated document each run parses and renders.
const MEGABYTES: &str = "8";
const ROUNDS: usize = 5;

/// The fixture and its builds: see support/fixture.rs.
#[path = "support/fixture.rs"]
mod fixture;

use fixture::{Fixture, installed, median};

const FIXTURE: Fixture = Fixture {
    name: "parser-shape",
};

fn target() -> PathBuf {
    FIXTURE.target()
}

/// A way to run the fixture: the program, the arguments before the
/// fixture's own (a wrapper's), and the environment.
struct Run<'a> {
    name: &'a str,
    program: PathBuf,
    args: Vec<std::ffi::OsString>,
    env: Vec<(&'a str, &'a str)>,
}

impl<'a> Run<'a> {
    fn new(name: &'a str, program: &Path, env: Vec<(&'a str, &'a str)>) -> Self {
        Run {
            name,
            program: program.to_owned(),
            args: Vec::new(),
            env,
        }
    }

    /// A fresh command for one run, in the target directory (where dhat
    /// writes its profile).
    fn command(&self) -> Command {
        let mut c = Command::new(&self.program);
        c.args(&self.args)
            .arg(MEGABYTES)
            .envs(self.env.iter().copied())
            .current_dir(target());
        c
    }
}

/// Seconds one run of `command` takes; its output must be `expected`.
fn time(mut command: Command, expected: &str) -> f64 {
    let start = Instant::now();
    let out = command.output().expect("the fixture runs");
    let seconds = start.elapsed().as_secs_f64();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).lines().next(),
        Some(expected)
    );
    seconds
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let plain = FIXTURE.build("plain", &[]);
    let dhat = FIXTURE.build("dhat", &["dhat"]);
    let profiled = FIXTURE.build_profiled(&["1"]);
    let json = target().join("report.json");
    let expected = {
        let out = Command::new(&plain).arg(MEGABYTES).output().expect("runs");
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .next()
            .unwrap_or_default()
            .to_owned()
    };
    let heaptrack = installed("heaptrack");
    let json = json.display().to_string();
    let as_cargo_memprof = [("MEMPROF_REPORT", "off"), ("MEMPROF_JSON", json.as_str())];
    let with = |extra: (&'static str, &'static str)| {
        let mut env = as_cargo_memprof.to_vec();
        env.push(extra);
        env
    };
    let mut runs = vec![
        Run::new("plain", &plain, vec![]),
        Run::new(
            "cargo memprof run --release (the profiled binary, as it runs it)",
            &profiled,
            as_cargo_memprof.to_vec(),
        ),
        Run::new(
            "the same with --sites=sample",
            &profiled,
            with(("MEMPROF_SITES", "sample")),
        ),
        Run::new(
            "the same with --sites (every allocation)",
            &profiled,
            with(("MEMPROF_SITES", "1")),
        ),
        Run::new(
            "the profiled binary under MEMPROF=off",
            &profiled,
            vec![("MEMPROF", "off"), ("MEMPROF_REPORT", "off")],
        ),
        Run::new("dhat (main edited)", &dhat, vec![]),
    ];
    let mut recorded = Run::new(
        "mprof run of the profiled binary (compare with its direct run above)",
        &FIXTURE.mprof(),
        as_cargo_memprof.to_vec(),
    );
    recorded.args = vec![
        "run".into(),
        "-o".into(),
        target().join("run.dat").into(),
        profiled.clone().into(),
    ];
    runs.push(recorded);
    if heaptrack {
        let mut run = Run::new("heaptrack (no edits)", Path::new("heaptrack"), vec![]);
        run.args = vec![
            "-o".into(),
            target().join("heaptrack.%p.zst").into(),
            plain.clone().into(),
        ];
        runs.push(run);
    }
    let mut times = vec![Vec::new(); runs.len()];
    for _ in 0..ROUNDS {
        for (i, run) in runs.iter().enumerate() {
            // A wrapper (heaptrack) prints lines of its own: the program's
            // output is checked on direct runs only.
            let seconds = if run.args.is_empty() {
                time(run.command(), &expected)
            } else {
                let start = Instant::now();
                let status = run
                    .command()
                    .stdout(std::process::Stdio::null())
                    .stderr(std::process::Stdio::null())
                    .status()
                    .expect("runs");
                assert!(status.success());
                start.elapsed().as_secs_f64()
            };
            times[i].push(seconds);
        }
    }
    let plain_time = median(times[0].clone());
    println!("parser-shape, {MEGABYTES} MB, median of {ROUNDS} interleaved rounds:");
    for (run, t) in runs.iter().zip(times) {
        let t = median(t);
        println!("| {} | {t:.3} s | {:.2}× |", run.name, t / plain_time);
    }
    if !heaptrack {
        println!("(heaptrack is not installed: scripts/install-peers installs it)");
    }
}
