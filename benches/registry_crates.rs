//! What `cargo memprof run --release` costs on real registry crates:
//! `cargo bench --bench registry_crates`.
//!
//! Three fixtures of `benches/crates`, each a small `main` driving one
//! registry crate's own code, which `--dep` profiles: serde_json (parse a
//! generated document into a `Value`, print it back), toml (the same with
//! a `Table`) and lz4_flex (compress and decompress generated text in LZ4
//! frames; not miniz_oxide, which memprof itself depends on through
//! `backtrace`, so `--dep` refuses it). Each
//! is built as written, with dhat (its `dhat` feature), and through `cargo
//! memprof run --release --dep CRATE` twice: the first run profiles every
//! function; the later one, from the record the first left, leaves the
//! functions whose calls moved no heap as written. Then the builds run in
//! interleaved rounds, and each one's median wall time is printed as a
//! ratio to the plain binary's, with heaptrack's where it is installed
//! (`scripts/install-peers`). Arguments pick cases by name
//! (`cargo bench --bench registry_crates -- toml`).
//!
//! The later run also runs with every allocation's site recorded
//! (`MEMPROF_SITES=1`, as `--sites` sets it) and with sampled sites
//! (`sample`), each also as a ratio to the later run without sites.
//!
//! The targets: a later run ≤ 1.2× plain, a first run ≤ 4×; exact
//! sites no dearer than dhat, sampled ones ≤ 1.1× the later run.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

#[path = "support/fixture.rs"]
mod fixture;

use fixture::{Fixture, installed, median};

const ROUNDS: usize = 3;

/// A fixture, the crates `--dep` profiles, and its argument.
struct Case {
    fixture: Fixture,
    deps: &'static [&'static str],
    arg: &'static str,
}

const CASES: [Case; 3] = [
    Case {
        fixture: Fixture {
            name: "registry-json",
        },
        deps: &["serde_json"],
        arg: "100",
    },
    Case {
        fixture: Fixture {
            name: "registry-toml",
        },
        deps: &["toml", "toml_parser"],
        arg: "20",
    },
    Case {
        fixture: Fixture {
            name: "registry-lz4",
        },
        deps: &["lz4_flex"],
        arg: "64",
    },
];

/// Seconds one run takes; its first line of output must be `expected`
/// where one is given (a wrapper's own lines come first otherwise).
fn time(
    program: &Path,
    args: &[&std::ffi::OsStr],
    env: &[(&str, &str)],
    expected: Option<&str>,
    dir: &Path,
) -> f64 {
    let start = Instant::now();
    let out = Command::new(program)
        .args(args)
        .envs(env.iter().copied())
        .current_dir(dir)
        .stderr(Stdio::null())
        .output()
        .expect("the fixture runs");
    let seconds = start.elapsed().as_secs_f64();
    assert!(out.status.success(), "{program:?} failed");
    if let Some(expected) = expected {
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(stdout.lines().next(), Some(expected), "{program:?}");
    }
    seconds
}

/// A way to run a fixture: its name, the program, its arguments and
/// environment.
type Run<'a> = (
    &'a str,
    PathBuf,
    Vec<&'a std::ffi::OsStr>,
    Vec<(&'a str, &'a str)>,
);

fn measure(case: &Case, heaptrack: bool) {
    let fixture = &case.fixture;
    let target = fixture.target();
    let plain = fixture.build("plain", &[]);
    let dhat = fixture.build("dhat", &["dhat"]);
    let flags: Vec<&str> = case.deps.iter().flat_map(|d| ["--dep", d]).collect();
    // NOTE: the first run must start from no record.
    let _ = std::fs::remove_dir_all(target.join("profiled"));
    let first = fixture.build_profiled_with(&flags, &[case.arg]);
    let first_copy = target.join("first-run");
    std::fs::copy(&first, &first_copy).expect("copies the first build");
    let later = fixture.build_profiled_with(&flags, &[case.arg]);
    let expected = {
        let out = Command::new(&plain).arg(case.arg).output().expect("runs");
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .next()
            .unwrap_or_default()
            .to_owned()
    };
    let json = target.join("report.json").display().to_string();
    let as_cargo_memprof = [("MEMPROF_REPORT", "off"), ("MEMPROF_JSON", json.as_str())];
    let arg = std::ffi::OsStr::new(case.arg);
    let heaptrack_out = target.join("heaptrack.%p.zst");
    let mut runs: Vec<Run> = vec![
        ("plain", plain.clone(), vec![arg], vec![]),
        (
            "cargo memprof run --release, first run (every function)",
            first_copy.clone(),
            vec![arg],
            as_cargo_memprof.to_vec(),
        ),
        (
            "cargo memprof run --release, later run (from the record)",
            later.clone(),
            vec![arg],
            as_cargo_memprof.to_vec(),
        ),
        (
            "later run, every allocation's site (--sites)",
            later.clone(),
            vec![arg],
            [as_cargo_memprof.as_slice(), &[("MEMPROF_SITES", "1")]].concat(),
        ),
        (
            "later run, sampled sites (--sites=sample)",
            later.clone(),
            vec![arg],
            [as_cargo_memprof.as_slice(), &[("MEMPROF_SITES", "sample")]].concat(),
        ),
        (
            "the later run's binary under MEMPROF=off",
            later.clone(),
            vec![arg],
            vec![("MEMPROF", "off"), ("MEMPROF_REPORT", "off")],
        ),
        ("dhat (main edited)", dhat, vec![arg], vec![]),
    ];
    if heaptrack {
        runs.push((
            "heaptrack (no edits)",
            PathBuf::from("heaptrack"),
            vec![
                std::ffi::OsStr::new("-o"),
                heaptrack_out.as_os_str(),
                plain.as_os_str(),
                arg,
            ],
            vec![],
        ));
    }
    let mut times = vec![Vec::new(); runs.len()];
    for _ in 0..ROUNDS {
        for (i, (name, program, args, env)) in runs.iter().enumerate() {
            let check = (!name.starts_with("heaptrack")).then_some(expected.as_str());
            times[i].push(time(program, args, env, check, &target));
        }
    }
    let plain_time = median(times[0].clone());
    println!(
        "{} (--dep {}), argument {}, median of {ROUNDS} interleaved rounds:",
        fixture.name,
        case.deps.join(" --dep "),
        case.arg
    );
    // The targets for sites: exact ones no dearer than dhat,
    // sampled ones ≤ 1.1× the later run without them.
    let later_time = median(times[2].clone());
    for ((name, ..), t) in runs.iter().zip(times) {
        let t = median(t);
        let beside = match name.contains("sites") {
            true => format!(" {:.2}× the later run without sites |", t / later_time),
            false => String::new(),
        };
        println!("| {name} | {t:.3} s | {:.2}× |{beside}", t / plain_time);
    }
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let heaptrack = installed("heaptrack");
    let wanted: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    for case in &CASES {
        if wanted.is_empty()
            || wanted
                .iter()
                .any(|w| case.fixture.name.contains(w.as_str()))
        {
            measure(case, heaptrack);
        }
    }
    if !heaptrack {
        println!("(heaptrack is not installed: scripts/install-peers installs it)");
    }
}
