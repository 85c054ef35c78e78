//! What `cargo memprof test` costs on a real suite of fast tests with
//! doctests (issue 62, item 3): `cargo bench --bench test_suite`.
//!
//! The suite is pulldown-cmark 0.13.6's own, from its registry package as
//! published: its package ships `tests/` with the CommonMark and GFM spec
//! suites (`tests/suite/*.rs`, generated, one test per example of the
//! spec), so `cargo test` runs 1,262 tests, each a Markdown snippet parsed
//! and rendered in microseconds, in six test binaries, then the library's
//! 5 doctests, each one compiled by rustdoc. That is the shape the
//! issue's user measured (1,154 fast tests, doctests taking most of the
//! time), and the package carries its Cargo.lock, so `--locked` repeats it.
//! Its dev-dependencies (bincode, lazy_static, regex, serde_json) come from
//! the package registry like any other.
//!
//! The source is fetched as `scripts/corpus/run` fetches its crates: `cargo
//! fetch` of a throwaway manifest depending on the exact version, then
//! `cargo metadata` says where the package is; it is copied under this
//! bench's `CARGO_TARGET_TMPDIR` (nothing fetched lands in the repository)
//! with `[workspace]` added, so that no workspace above claims it.
//!
//! Three whole commands, each with a target directory of its own, run in
//! the copy: `cargo test -q --locked` (unit, integration and doc tests),
//! `cargo memprof test -q --locked` with no record (the first run: every
//! function profiled) and the same from the record that round's first run
//! left (the later run: functions whose calls moved no heap left as
//! written). The build is excluded by building untimed first with the same
//! command and `--no-run`, which cargo-memprof passes to cargo (it then
//! finds no report and writes no record): before every timed memprof run,
//! after removing the record (first) or putting that round's first run's
//! in place (later: every round's later run from the same record), so
//! the timed command compiles nothing. What rustdoc compiles
//! for the doctests is part of every run, as it is of the user's. Nothing
//! else is set: the test binaries run with cargo-memprof's default
//! (`MEMPROF_REPORT=off`), and its report (the summary and 10 tables)
//! prints at the end, as a user gets it.
//!
//! Rounds interleave the three; medians are printed as ratios to plain,
//! with the largest resident set of any single process of each command
//! (`ru_maxrss` from `wait4` on the command: the maximum over it and every
//! descendant it waited for, not a sum), the doctests' seconds (the last
//! `test result` line's, as cargo runs doc tests after every test binary),
//! and the targets: a later run ≤ 1.5× plain, a first ≤ 3×,
//! resident ≤ 1.5×. Nothing is asserted on the figures.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

#[path = "support/fixture.rs"]
mod fixture;

use fixture::{build_tools, cargo, median};

const ROUNDS: usize = 3;
const CRATE: &str = "pulldown-cmark";
const VERSION: &str = "0.13.6";
const RECORD: &str = "record-test.json";

/// Where the source, the builds and the logs go.
fn work() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("test-suite")
}

/// The package's source at `VERSION`, copied into `work`.
fn fetch(work: &Path) -> PathBuf {
    let fetch = work.join("fetch");
    std::fs::create_dir_all(fetch.join("src")).expect("work is writable");
    std::fs::write(
        fetch.join("Cargo.toml"),
        format!(
            "[package]\nname = \"test-suite-fetch\"\nversion = \"0.0.0\"\nedition = \"2021\"\n\
             publish = false\n\n[workspace]\n\n[dependencies]\n{CRATE} = \"={VERSION}\"\n"
        ),
    )
    .expect("work is writable");
    std::fs::write(fetch.join("src/lib.rs"), "").expect("work is writable");
    let manifest = fetch.join("Cargo.toml");
    let status = cargo()
        .args(["fetch", "-q", "--manifest-path"])
        .arg(&manifest)
        .status()
        .expect("cargo runs");
    assert!(status.success(), "cargo fetch of {CRATE} {VERSION} failed");
    let out = cargo()
        .args(["metadata", "-q", "--format-version", "1", "--manifest-path"])
        .arg(&manifest)
        .output()
        .expect("cargo runs");
    assert!(out.status.success(), "cargo metadata failed");
    let metadata: serde_json::Value = serde_json::from_slice(&out.stdout).expect("metadata");
    let source = metadata["packages"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|p| p["name"] == CRATE && p["version"] == VERSION)
        .and_then(|p| p["manifest_path"].as_str())
        .map(|m| Path::new(m).parent().expect("a directory").to_path_buf())
        .expect("cargo metadata names the package");
    let dest = work.join(format!("{CRATE}-{VERSION}"));
    let _ = std::fs::remove_dir_all(&dest);
    copy_dir(&source, &dest);
    let manifest = dest.join("Cargo.toml");
    let mut text = std::fs::read_to_string(&manifest).expect("the package's manifest");
    text.push_str("\n[workspace]\n");
    std::fs::write(&manifest, text).expect("the copy is writable");
    dest
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("work is writable");
    for entry in std::fs::read_dir(from).expect("the package").flatten() {
        let path = entry.path();
        let dest = to.join(entry.file_name());
        if path.is_dir() {
            copy_dir(&path, &dest);
        } else {
            std::fs::copy(&path, &dest).expect("copies the package");
        }
    }
}

/// One whole command: its wall time, the largest resident set of any of
/// its processes, and its stdout.
struct Outcome {
    seconds: f64,
    resident_kib: i64,
    stdout: String,
}

/// Runs `command` to its end, its output into `log` (`.out`, `.err`);
/// fails with its stderr unless it succeeds.
fn run(mut command: Command, log: &Path) -> Outcome {
    let out = log.with_extension("out");
    let err = log.with_extension("err");
    command
        .stdin(Stdio::null())
        .stdout(File::create(&out).expect("work is writable"))
        .stderr(File::create(&err).expect("work is writable"));
    let start = Instant::now();
    let child = command.spawn().expect("the command runs");
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: `rusage` is plain integers, for which zero is a value.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `pid` is this process's child, not yet reaped (`child` is
    // dropped below without waiting), and both pointers are to live locals.
    let reaped = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    let seconds = start.elapsed().as_secs_f64();
    drop(child);
    assert_eq!(reaped, pid, "wait4 failed");
    let ok = libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0;
    assert!(
        ok,
        "{command:?} failed: {}",
        std::fs::read_to_string(&err).unwrap_or_default()
    );
    Outcome {
        seconds,
        // NOTE: Linux counts ru_maxrss in KiB.
        resident_kib: usage.ru_maxrss,
        stdout: std::fs::read_to_string(&out).unwrap_or_default(),
    }
}

/// The `test result` lines of a `cargo test` output: passed, and the
/// seconds libtest or rustdoc reports.
fn results(stdout: &str) -> Vec<(usize, f64)> {
    stdout
        .lines()
        .filter_map(|line| {
            let rest = line.strip_prefix("test result: ok. ")?;
            let passed = rest.split(' ').next()?.parse().ok()?;
            let seconds = rest
                .rsplit_once("finished in ")?
                .1
                .trim_end_matches('s')
                .parse()
                .ok()?;
            Some((passed, seconds))
        })
        .collect()
}

/// The doctests' seconds: the last result's, as cargo runs the doc tests
/// after every test binary.
fn doctest_seconds(outcome: &Outcome) -> f64 {
    results(&outcome.stdout).last().map_or(f64::NAN, |r| r.1)
}

/// The record cargo-memprof keeps under the target directory `target`
/// (`memprof/<name>-<hash>/`, for a target directory outside the
/// workspace), relative to `target`, if there is one.
fn record(target: &Path) -> Option<PathBuf> {
    let memprof = target.join("memprof");
    std::fs::read_dir(&memprof)
        .ok()?
        .flatten()
        .map(|e| e.path().join(RECORD))
        .find(|p| p.is_file())
        .map(|p| p.strip_prefix(target).expect("under target").to_path_buf())
}

/// A way to run the suite: its name, the program and arguments, and its
/// target directory.
struct Variant {
    name: &'static str,
    program: PathBuf,
    args: Vec<&'static str>,
    target: PathBuf,
}

impl Variant {
    fn command(&self, suite: &Path, extra: &[&str]) -> Command {
        let mut command = Command::new(&self.program);
        command
            .args(&self.args)
            .args(extra)
            .current_dir(suite)
            .env("CARGO_TARGET_DIR", &self.target);
        command
    }

    /// Builds what the timed command will run, untimed; returns
    /// cargo-memprof's line on what it annotated, if any.
    fn build(&self, suite: &Path, log: &Path) -> Option<String> {
        run(self.command(suite, &["--no-run"]), log);
        let err = std::fs::read_to_string(log.with_extension("err")).unwrap_or_default();
        err.lines()
            .find(|l| l.starts_with("annotated "))
            .map(str::to_owned)
    }
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let work = work();
    let suite = fetch(&work);
    let logs = work.join("logs");
    std::fs::create_dir_all(&logs).expect("work is writable");
    let cargo_memprof = build_tools(&work.join("tools"));
    let cargo_program = PathBuf::from(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    let variants = [
        Variant {
            name: "`cargo test -q`",
            program: cargo_program,
            args: vec!["test", "-q", "--locked"],
            target: work.join("plain"),
        },
        Variant {
            name: "`cargo memprof test -q`, first run (no record: every function)",
            program: cargo_memprof.clone(),
            args: vec!["memprof", "test", "-q", "--locked"],
            target: work.join("first"),
        },
        Variant {
            name: "`cargo memprof test -q`, later run (from the first run's record)",
            program: cargo_memprof,
            args: vec!["memprof", "test", "-q", "--locked"],
            target: work.join("later"),
        },
    ];
    let [plain, first, later] = &variants;
    plain.build(&suite, &logs.join("plain-build"));
    // An untimed run of the plain suite: it passes, and its counts.
    let warm = run(plain.command(&suite, &[]), &logs.join("plain-warm"));
    let counts = results(&warm.stdout);
    let binaries = &counts[..counts.len().saturating_sub(1)];
    let tests: usize = binaries.iter().map(|r| r.0).sum();
    let doctests = counts.last().map_or(0, |r| r.0);
    println!(
        "{CRATE} {VERSION}: {tests} tests in {} test binaries ({} of them with tests), \
         then {doctests} doctests",
        binaries.len(),
        binaries.iter().filter(|r| r.0 > 0).count(),
    );

    let mut outcomes: [Vec<Outcome>; 3] = Default::default();
    let mut annotated = [None, None];
    for round in 0..ROUNDS {
        let log = |name: &str| logs.join(format!("{name}-{round}"));
        outcomes[0].push(run(plain.command(&suite, &[]), &log("plain")));

        if let Some(relative) = record(&first.target) {
            std::fs::remove_file(first.target.join(relative)).expect("removes the record");
        }
        annotated[0] = first.build(&suite, &log("first-build"));
        outcomes[1].push(run(first.command(&suite, &[]), &log("first")));
        let relative = record(&first.target).expect("the first run leaves a record");

        let dest = later.target.join(&relative);
        std::fs::create_dir_all(dest.parent().expect("a directory")).expect("writable");
        std::fs::copy(first.target.join(&relative), &dest).expect("copies the record");
        annotated[1] = later.build(&suite, &log("later-build"));
        outcomes[2].push(run(later.command(&suite, &[]), &log("later")));
    }

    for (name, line) in [("first", &annotated[0]), ("later", &annotated[1])] {
        if let Some(line) = line {
            println!("{name} run: {line}");
        }
    }
    println!("build excluded, median of {ROUNDS} interleaved rounds:");
    println!(
        "| run | wall time | × plain | doctests | largest process resident | × plain | issue 62's target |"
    );
    println!("|---|---|---|---|---|---|---|");
    let seconds = |v: &Vec<Outcome>| median(v.iter().map(|o| o.seconds).collect());
    let resident = |v: &Vec<Outcome>| median(v.iter().map(|o| o.resident_kib as f64).collect());
    let doc = |v: &Vec<Outcome>| median(v.iter().map(doctest_seconds).collect());
    let (plain_time, plain_resident) = (seconds(&outcomes[0]), resident(&outcomes[0]));
    let targets = [None, Some(3.0), Some(1.5)];
    for ((variant, runs), target) in variants.iter().zip(&outcomes).zip(targets) {
        let (t, r) = (seconds(runs), resident(runs));
        let (time_ratio, resident_ratio) = (t / plain_time, r / plain_resident);
        let verdict = match target {
            None => String::new(),
            Some(target) => {
                let met = |ok: bool| if ok { "met" } else { "missed" };
                format!(
                    "time ≤ {target}×: {}; resident ≤ 1.5×: {}",
                    met(time_ratio <= target),
                    met(resident_ratio <= 1.5)
                )
            }
        };
        println!(
            "| {} | {t:.2} s | {time_ratio:.2}× | {:.2} s | {:.0} MB | {resident_ratio:.2}× | {verdict} |",
            variant.name,
            doc(runs),
            r * 1024.0 / 1e6,
        );
    }
    println!("(logs of every run: {})", logs.display());
}
