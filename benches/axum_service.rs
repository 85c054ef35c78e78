//! What live tracking costs a service built on a real HTTP framework:
//! `cargo bench --bench axum_service`.
//!
//! Builds `benches/crates/axum-service` (an order service on axum and
//! tokio, JSON in and out, with a planted leak: a receipt store that never
//! evicts; and in the same binary its load: client threads on HTTP/1.1
//! keep-alive connections to 127.0.0.1, each sending its next request once
//! it has read the last answer; timed after a warm-up of a tenth as many
//! requests, so that the figures are the service's steady state) three
//! ways, all in release: as written, with dhat's heap profiler (its `dhat`
//! feature, `main` edited as dhat asks), and through `cargo memprof run
//! --release` twice: the first run's binary profiles every function of the
//! crate, the second's (a later run, built from the first one's record)
//! only those whose calls moved the heap. Then runs them in rounds, each
//! way between two runs of the plain service: each profiled binary as
//! `cargo memprof` runs it (`MEMPROF_REPORT=off`, its report written to
//! `MEMPROF_JSON`) with `MEMPROF_LIVE=1` and sampled allocation sites
//! (`MEMPROF_SITES=sample`) and with every allocation's site
//! (`MEMPROF_SITES=1`); dhat; heaptrack on the plain binary where it is
//! installed (`scripts/install-peers`); and the plain binary again, whose
//! ratios to its neighbours show the noise. Each way serves (`serve`) in a
//! process of its own, and the plain binary sends the load from another
//! (`load`), as a service's clients would: what the clients allocate is
//! not the service's, and their functions are left as written in the
//! profiled builds (`--skip-fn`) for the record's run, which serves its
//! own load. The load prints the requests per second its clients achieved,
//! the 99th percentile of a request's latency and the CPU time the
//! service's process spent per request; the bench prints, per way, the
//! medians, and the medians of the ratios to the mean of the plain runs
//! beside it (the load of a shared machine drifts from one second to the
//! next, and a service's throughput with it). Until 2026-12-06 the clients
//! ran in the service's process and their allocations paid what the
//! service's did (docs/cost.md has both).
//!
//! Last, a later-run binary serves an exact run's load, and `mprof
//! snapshot` of it shows the lines holding the most bytes in use:
//! the receipt store's insert first.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The fixture and its builds: see support/fixture.rs.
#[path = "support/fixture.rs"]
mod fixture;

use fixture::{Fixture, installed, median};

/// cargo-memprof's flags for both profiled builds: the service's functions
/// only.
const LOAD_AS_WRITTEN: &[&str] = &["--skip-fn", "::load::"];

const FIXTURE: Fixture = Fixture {
    name: "axum-service",
};
/// Requests each run sends, and the client threads that send them.
const REQUESTS: &str = "30000";
const CLIENTS: &str = "4";
const ROUNDS: usize = 9;

/// A way to run the service: the program, the arguments before the
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

    /// Starts the service this way (`serve`), in the target directory,
    /// where dhat and heaptrack write their profiles, and reads its port
    /// and pid as it prints them (a wrapper, heaptrack, prints lines of
    /// its own among the service's).
    fn serve(&self) -> Serving {
        let mut child = Command::new(&self.program)
            .args(&self.args)
            .arg("serve")
            .envs(self.env.iter().copied())
            .current_dir(FIXTURE.target())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("the service runs");
        let stdout = BufReader::new(child.stdout.take().expect("piped"));
        let mut lines = stdout.lines();
        let mut after = |prefix: &str| {
            lines
                .by_ref()
                .map_while(Result::ok)
                .find_map(|l| l.strip_prefix(prefix).map(str::to_owned))
                .unwrap_or_else(|| panic!("{}: no {prefix}", self.name))
        };
        let (port, pid) = (after("port "), after("pid "));
        Serving {
            child,
            lines,
            port,
            pid,
        }
    }

    /// The service's figures in one run of the load, which the plain
    /// binary `load` sends from a process of its own, as clients would
    /// (what the clients allocate is not the service's); the answers'
    /// checksum must be `expected`.
    fn measure(&self, load: &Path, expected: &str) -> Measured {
        let service = self.serve();
        let out = service.load(load).output().expect("the load runs");
        service.stop(self.name);
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
            p99: figure(" us p99"),
            cpu: figure(" us of CPU per order"),
        }
    }
}

/// A service started with `serve`.
struct Serving {
    child: std::process::Child,
    /// The rest of its standard output, read to its end as it stops.
    lines: std::io::Lines<BufReader<std::process::ChildStdout>>,
    port: String,
    pid: String,
}

impl Serving {
    /// The plain binary `load` sending the bench's load to it.
    fn load(&self, load: &Path) -> Command {
        let mut command = Command::new(load);
        command
            .args(["load", &self.port, &self.pid, REQUESTS, CLIENTS])
            .stderr(Stdio::null());
        command
    }

    /// Closes its standard input, which ends it, and checks that it ended
    /// well, having printed the receipts it kept.
    fn stop(mut self, name: &str) {
        drop(self.child.stdin.take());
        // Read to the end: a wrapper (heaptrack) prints more after it.
        let rest: Vec<String> = self.lines.map_while(Result::ok).collect();
        let kept = rest.iter().any(|l| l.ends_with(" receipts kept"));
        let status = self.child.wait().expect("the service ends");
        assert!(status.success() && kept, "{name}: {status}");
    }
}

#[derive(Clone, Copy)]
struct Measured {
    rate: f64,
    /// µs
    p99: f64,
    /// µs per request
    cpu: f64,
}

impl Measured {
    /// Figure by figure, the mean of two runs.
    fn mean(&self, other: &Measured) -> Measured {
        Measured {
            rate: (self.rate + other.rate) / 2.0,
            p99: (self.p99 + other.p99) / 2.0,
            cpu: (self.cpu + other.cpu) / 2.0,
        }
    }
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let plain = FIXTURE.build("plain", &[]);
    let dhat = FIXTURE.build("dhat", &["dhat"]);
    // The first run's binary, kept aside: the second run rebuilds in place.
    // NOTE: the first run must start from no record.
    let _ = std::fs::remove_dir_all(FIXTURE.target().join("profiled"));
    let first = FIXTURE.build_profiled_with(LOAD_AS_WRITTEN, &["2000", "2"]);
    let first_copy = FIXTURE.target().join("first-run");
    std::fs::copy(&first, &first_copy).expect("copies the first run's binary");
    let later = FIXTURE.build_profiled_with(LOAD_AS_WRITTEN, &["2000", "2"]);
    let baseline = Run::new("plain", &plain, vec![]);
    let expected = {
        let service = baseline.serve();
        let out = service.load(&plain).output().expect("runs");
        service.stop(baseline.name);
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        stdout.lines().next().unwrap_or_default().to_owned()
    };
    let json = FIXTURE.target().join("report.json");
    let json = json.display().to_string();
    let live = |sites: &'static str| {
        vec![
            ("MEMPROF_REPORT", "off"),
            ("MEMPROF_JSON", json.as_str()),
            ("MEMPROF_LIVE", "1"),
            ("MEMPROF_SITES", sites),
        ]
    };
    let mut runs = vec![
        Run::new("plain again (the noise)", &plain, vec![]),
        Run::new(
            "later run, MEMPROF_LIVE=1 MEMPROF_SITES=sample",
            &later,
            live("sample"),
        ),
        Run::new(
            "later run, MEMPROF_LIVE=1 MEMPROF_SITES=1",
            &later,
            live("1"),
        ),
        Run::new(
            "first run (every function), MEMPROF_LIVE=1 MEMPROF_SITES=sample",
            &first_copy,
            live("sample"),
        ),
        Run::new(
            "first run (every function), MEMPROF_LIVE=1 MEMPROF_SITES=1",
            &first_copy,
            live("1"),
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
    // Per way, per round: its figures and the mean of the plain runs just
    // before and after it. Each round starts the ways one further along.
    let mut figures: Vec<Vec<(Measured, Measured)>> = vec![Vec::new(); runs.len()];
    let mut plains = Vec::new();
    for round in 0..ROUNDS {
        let mut before = baseline.measure(&plain, &expected);
        plains.push(before);
        for k in 0..runs.len() {
            let i = (round + k) % runs.len();
            let measured = runs[i].measure(&plain, &expected);
            let after = baseline.measure(&plain, &expected);
            plains.push(after);
            figures[i].push((measured, before.mean(&after)));
            before = after;
        }
    }
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    println!(
        "axum-service, {REQUESTS} requests from {CLIENTS} keep-alive clients, {cores} cores, \
         {ROUNDS} rounds, each way run between two plain runs. Throughput and p99 latency: the \
         median, and the median (lowest–highest) of its ratios to the mean of the plain runs \
         beside it; CPU per request: the median, and the median of its ratios:"
    );
    println!("| run | requests/s | × plain | p99 | × plain | CPU per request | × plain |");
    println!("|---|---|---|---|---|---|---|");
    let of =
        |all: &[Measured], figure: fn(&Measured) -> f64| median(all.iter().map(figure).collect());
    println!(
        "| plain ({} runs) | {:.0} | 1.00× | {:.0} µs | 1.00× | {:.1} µs | 1.00× |",
        plains.len(),
        of(&plains, |m| m.rate),
        of(&plains, |m| m.p99),
        of(&plains, |m| m.cpu),
    );
    for (run, f) in runs.iter().zip(&figures) {
        let column = |figure: fn(&Measured) -> f64| -> (f64, f64, f64, f64) {
            let ratios: Vec<f64> = f.iter().map(|(r, p)| figure(r) / figure(p)).collect();
            let (low, high) = ratios
                .iter()
                .fold((f64::MAX, 0f64), |(l, h), &x| (l.min(x), h.max(x)));
            let all = f.iter().map(|(r, _)| figure(r)).collect();
            (median(all), median(ratios), low, high)
        };
        let (rate, rate_ratio, rate_low, rate_high) = column(|m| m.rate);
        let (p99, p99_ratio, p99_low, p99_high) = column(|m| m.p99);
        let (cpu, cpu_ratio, _, _) = column(|m| m.cpu);
        println!(
            "| {} | {rate:.0} | {rate_ratio:.2}× ({rate_low:.2}–{rate_high:.2}) \
             | {p99:.0} µs | {p99_ratio:.2}× ({p99_low:.2}–{p99_high:.2}) \
             | {cpu:.1} µs | {cpu_ratio:.2}× |",
            run.name
        );
    }
    if !heaptrack {
        println!("(heaptrack is not installed: scripts/install-peers installs it)");
    }
    leaking_lines(&Run::new("later, exact", &later, live("1")), &plain);
}

/// Runs the exact service under the load, takes its snapshot and prints
/// the three lines holding the most bytes in use.
fn leaking_lines(profiled: &Run, load: &Path) {
    let service = profiled.serve();
    let status = service
        .load(load)
        .stdout(Stdio::null())
        .status()
        .expect("the load runs");
    assert!(status.success(), "the load");
    let file = FIXTURE.target().join("snapshot.json");
    let status = Command::new(FIXTURE.mprof())
        .args(["snapshot", &service.pid, "-o"])
        .arg(&file)
        .stderr(Stdio::null())
        .status()
        .expect("mprof runs");
    assert!(status.success(), "mprof snapshot {}", service.pid);
    service.stop(profiled.name);
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
    println!(
        "Bytes in use after the load (later run, mprof snapshot, MEMPROF_SITES=1), top lines:"
    );
    for (bytes, function, contents) in lines.iter().take(3) {
        println!("| {bytes} B | {function} | {contents} |");
    }
}
