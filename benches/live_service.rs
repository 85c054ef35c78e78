//! What live tracking costs a running service: `cargo bench --bench
//! live_service`.
//!
//! Builds `benches/crates/order-service` (an order service on tokio with a
//! planted leak, and in the same binary its load: client threads sending
//! orders over keep-alive connections on 127.0.0.1) three ways, all in
//! release: as written, with dhat's heap profiler (its `dhat` feature,
//! `main` edited as dhat asks), and through `cargo memprof run --release`,
//! every function profiled. Then runs them in interleaved rounds, each run
//! printing the requests per second its clients achieved, and prints each
//! one's median throughput and the median of its ratios to the plain
//! service's throughput in the same round (the load of a shared machine
//! drifts between rounds, and a service's throughput with it), and the same
//! for the CPU time the process spent per order (steadier where other work
//! shares the cores; a wrapper's own processes are not in it): the profiled
//! binary as `cargo memprof` runs it (`MEMPROF_REPORT=off`, its report
//! written to `MEMPROF_JSON`) with `MEMPROF_LIVE=1` and sampled allocation
//! sites (`MEMPROF_SITES=sample`, bytes in use estimated), with every
//! allocation's site (`MEMPROF_SITES=1`, exact), and with no sites; under
//! `MEMPROF=off`; dhat; and heaptrack on the plain binary where it is
//! installed (`scripts/install-peers`). The clients run in the profiled
//! process too, and pay what its other threads pay. A second table runs
//! the plain and the exact service on 2,500 orders, so that a cost that
//! grows with the orders served shows against the first: exact sites'
//! did, when each `async fn` call charged its sites under keys of its own
//! (docs/cost.md, "A running service").
//!
//! Last, one more exact run is held open after its load, and
//! `mprof snapshot` of it shows the lines holding the most bytes in use:
//! the cache's insert first.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The fixture and its builds: see support/fixture.rs.
#[path = "support/fixture.rs"]
mod fixture;

use fixture::{Fixture, installed, median};

const FIXTURE: Fixture = Fixture {
    name: "order-service",
};
/// Orders each run sends, and the client threads that send them.
const REQUESTS: &str = "20000";
const CLIENTS: &str = "4";
/// Orders of the short runs, which see what a longer run's first orders
/// cost.
const FEW: &str = "2500";
const ROUNDS: usize = 7;

/// A way to run the service: the program, the arguments before the
/// fixture's own (a wrapper's), and the environment.
struct Run<'a> {
    name: &'a str,
    program: PathBuf,
    args: Vec<std::ffi::OsString>,
    env: Vec<(&'a str, &'a str)>,
    requests: &'static str,
}

impl<'a> Run<'a> {
    fn new(name: &'a str, program: &Path, env: Vec<(&'a str, &'a str)>) -> Self {
        Run {
            name,
            program: program.to_owned(),
            args: Vec::new(),
            env,
            requests: REQUESTS,
        }
    }

    fn few(mut self) -> Self {
        self.requests = FEW;
        self
    }

    /// A fresh command for one run, in the target directory (where dhat
    /// and heaptrack write their profiles).
    fn command(&self) -> Command {
        let mut c = Command::new(&self.program);
        c.args(&self.args)
            .args([self.requests, CLIENTS])
            .envs(self.env.iter().copied())
            .current_dir(FIXTURE.target());
        c
    }

    /// Requests per second in one run, and the CPU time (µs) the service's
    /// process spent per order; its checksum must be `expected`. A wrapper
    /// (heaptrack) prints lines of its own among the service's, and its
    /// own processes' time is not counted.
    fn measure(&self, expected: &str) -> Measured {
        let out = self
            .command()
            .stderr(Stdio::null())
            .output()
            .expect("the service runs");
        assert!(out.status.success(), "{}: {out:?}", self.name);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            stdout.lines().any(|l| l == expected),
            "{}: {stdout}",
            self.name
        );
        let figure = |unit: &str| -> f64 {
            stdout
                .lines()
                .find_map(|l| l.strip_suffix(unit)?.parse().ok())
                .unwrap_or_else(|| panic!("{}: no{unit} in {stdout}", self.name))
        };
        Measured {
            rate: figure(" requests/s"),
            cpu: figure(" us of CPU per order"),
        }
    }
}

#[derive(Clone, Copy)]
struct Measured {
    rate: f64,
    cpu: f64,
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let plain = FIXTURE.build("plain", &[]);
    let dhat = FIXTURE.build("dhat", &["dhat"]);
    let profiled = FIXTURE.build_profiled(&["200", "2"]);
    // The answers' checksum line of a load, from the plain service.
    let expected = |requests: &str| {
        let out = Command::new(&plain)
            .args([requests, CLIENTS])
            .output()
            .expect("runs");
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        stdout.lines().next().unwrap_or_default().to_owned()
    };
    let (expected, expected_few) = (expected(REQUESTS), expected(FEW));
    let json = FIXTURE.target().join("report.json");
    let json = json.display().to_string();
    let live = [
        ("MEMPROF_REPORT", "off"),
        ("MEMPROF_JSON", json.as_str()),
        ("MEMPROF_LIVE", "1"),
    ];
    let with = |extra: &[(&'static str, &'static str)]| {
        let mut env = live.to_vec();
        env.extend_from_slice(extra);
        env
    };
    let mut runs = vec![
        Run::new("plain", &plain, vec![]),
        Run::new(
            "cargo memprof run --release, MEMPROF_LIVE=1 MEMPROF_SITES=sample",
            &profiled,
            with(&[("MEMPROF_SITES", "sample")]),
        ),
        Run::new(
            "the same with MEMPROF_SITES=1 (every allocation)",
            &profiled,
            with(&[("MEMPROF_SITES", "1")]),
        ),
        Run::new("the same with no sites", &profiled, with(&[])),
        Run::new(
            "the profiled binary under MEMPROF=off",
            &profiled,
            vec![("MEMPROF", "off"), ("MEMPROF_REPORT", "off")],
        ),
        Run::new("dhat (main edited)", &dhat, vec![]),
    ];
    let heaptrack = installed("heaptrack");
    if heaptrack {
        let mut run = Run::new("heaptrack (no edits)", Path::new("heaptrack"), vec![]);
        run.args = vec![
            "-o".into(),
            FIXTURE.target().join("heaptrack.%p.zst").into(),
            plain.clone().into(),
        ];
        runs.push(run);
    }
    let long_runs = runs.len();
    runs.push(Run::new("plain", &plain, vec![]).few());
    runs.push(
        Run::new(
            "MEMPROF_LIVE=1 MEMPROF_SITES=1",
            &profiled,
            with(&[("MEMPROF_SITES", "1")]),
        )
        .few(),
    );
    let mut rates = vec![Vec::new(); runs.len()];
    for _ in 0..ROUNDS {
        for (i, run) in runs.iter().enumerate() {
            let expected = if run.requests == FEW {
                &expected_few
            } else {
                &expected
            };
            rates[i].push(run.measure(expected));
        }
    }
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    for (runs, rates) in [
        (&runs[..long_runs], &rates[..long_runs]),
        (&runs[long_runs..], &rates[long_runs..]),
    ] {
        println!(
            "order-service, {} orders from {CLIENTS} keep-alive clients, {cores} cores, \
             {ROUNDS} interleaved rounds. Throughput: the median, and the median (lowest–highest) \
             of its ratios to the plain service's in the same round; CPU per order: the median, \
             and the median of its ratios to the plain service's:",
            runs[0].requests
        );
        for (run, r) in runs.iter().zip(rates) {
            let ratios = |figure: fn(&Measured) -> f64| -> Vec<f64> {
                r.iter()
                    .zip(&rates[0])
                    .map(|(r, p)| figure(r) / figure(p))
                    .collect()
            };
            let rate = ratios(|m| m.rate);
            let (low, high) = rate
                .iter()
                .fold((f64::MAX, 0f64), |(l, h), &x| (l.min(x), h.max(x)));
            println!(
                "| {} | {:.0} requests/s | {:.2}× ({low:.2}–{high:.2}) | {:.1} µs | {:.2}× |",
                run.name,
                median(r.iter().map(|m| m.rate).collect()),
                median(rate),
                median(r.iter().map(|m| m.cpu).collect()),
                median(ratios(|m| m.cpu)),
            );
        }
    }
    if !heaptrack {
        println!("(heaptrack is not installed: scripts/install-peers installs it)");
    }
    leaking_lines(&profiled, &with(&[("MEMPROF_SITES", "1")]));
}

/// Runs the exact service held open after its load, takes its snapshot
/// and prints the three lines holding the most bytes in use.
fn leaking_lines(profiled: &Path, env: &[(&str, &str)]) {
    let mut service = Command::new(profiled)
        .args([REQUESTS, CLIENTS, "hold"])
        .envs(env.iter().copied())
        .current_dir(FIXTURE.target())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("the service runs");
    let stdout = service.stdout.take().expect("piped");
    let pid = BufReader::new(stdout)
        .lines()
        .map_while(Result::ok)
        .find_map(|l| l.strip_prefix("pid ").map(str::to_owned))
        .expect("the service's pid");
    let file = FIXTURE.target().join("snapshot.json");
    let status = Command::new(FIXTURE.mprof())
        .args(["snapshot", &pid, "-o"])
        .arg(&file)
        .stderr(Stdio::null())
        .status()
        .expect("mprof runs");
    drop(service.stdin.take());
    assert!(service.wait().expect("the service ends").success());
    assert!(status.success(), "mprof snapshot {pid}");
    let snapshot: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&file).expect("the snapshot")).expect("JSON");
    let mut lines: Vec<(i64, String, String)> = Vec::new();
    for function in snapshot["functions"].as_array().into_iter().flatten() {
        let name = function["name"].as_str().unwrap_or_default();
        for line in function["lines"].as_array().into_iter().flatten() {
            let contents = line["contents"].as_str().unwrap_or_default().trim();
            // A function's own row adds up its lines.
            if contents.contains("fn ") {
                continue;
            }
            let bytes = line["in_use_bytes"].as_i64().unwrap_or(0);
            lines.push((bytes, name.to_owned(), contents.to_owned()));
        }
    }
    lines.sort_by_key(|line| std::cmp::Reverse(line.0));
    println!("Bytes in use after the load (mprof snapshot, MEMPROF_SITES=1), top lines:");
    for (bytes, function, contents) in lines.iter().take(3) {
        println!("| {bytes} B | {function} | {contents} |");
    }
}
