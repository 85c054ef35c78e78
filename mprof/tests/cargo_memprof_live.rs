//! The README's recipe for a running service, under `cargo memprof run`:
//! the program's pid printed, `mprof snapshot`, `mprof diff --lines` and
//! `mprof top --once --lines` given cargo-memprof's pid (`$!`), then `kill
//! $!`: cargo-memprof passes the
//! SIGTERM on, the program writes its report and ends, and cargo-memprof
//! prints it and exits with the program's status.
//!
//! NOTE: no duration is asserted. The service runs until the signal; a
//! hang is caught by a bound far past what the run needs.

#[path = "common/cargo_memprof.rs"]
mod support;

use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use support::*;

/// The README's recipe, one command a line (`$!`: the backgrounded
/// cargo-memprof's pid).
fn readme_recipe() -> Vec<String> {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md")).unwrap();
    let section = readme.split("## A running service").nth(1).unwrap();
    let block = section.split("```sh\n").nth(1).unwrap();
    let block = block.split("```").next().unwrap();
    block
        .lines()
        .map(|l| l.split('#').next().unwrap().trim().to_owned())
        .filter(|l| !l.is_empty())
        .collect()
}

fn mprof(
    dir: &std::path::Path,
    runtime: &std::path::Path,
    args: &[String],
) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_mprof"))
        .args(args)
        .current_dir(dir)
        .env("XDG_RUNTIME_DIR", runtime)
        .output()
        .unwrap()
}

#[test]
fn the_readme_recipe_works_under_cargo_memprof_run() {
    let recipe = readme_recipe();
    assert_eq!(
        recipe,
        [
            "MEMPROF_LIVE=1 cargo memprof run --release --sites=sample &",
            "mprof snapshot $! -o before.json",
            "mprof snapshot $! -o after.json",
            "mprof diff before.json after.json --lines",
            "mprof top --once --lines handle $!",
            "mprof top $!",
            "kill $!",
        ],
        "the README's recipe changed: this test runs it"
    );
    let dir = fixture("live", 27);
    let runtime = TempDir::new("live-runtime");
    let _turn = turn();
    // `MEMPROF_LIVE=1 cargo memprof run --release --sites=sample &` (the fixture's
    // service mode on), its output read here.
    let mut service = command(&dir, &["run", "--release", "--sites=sample", "--offline"])
        .env("MEMPROF_LIVE", "1")
        .env("FIXTURE_SERVE", "1")
        .env("XDG_RUNTIME_DIR", &*runtime)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = service.id();
    let mut err = service.stderr.take().unwrap();
    let err_reader = std::thread::spawn(move || {
        let mut text = String::new();
        err.read_to_string(&mut text).unwrap();
        text
    });
    let mut out = BufReader::new(service.stdout.take().unwrap());
    let mut printed = String::new();
    while !printed.ends_with("serving\n") {
        assert!(out.read_line(&mut printed).unwrap() > 0, "{printed}");
    }
    // The snapshots and the diff, given cargo-memprof's pid.
    let dollar_bang = |line: &str| -> Vec<String> {
        line.replace("$!", &pid.to_string())
            .split_whitespace()
            .skip(1)
            .map(str::to_owned)
            .collect()
    };
    for line in &recipe[1..4] {
        let run = mprof(&dir, &runtime, &dollar_bang(line));
        assert!(run.status.success(), "{line}: {run:?}");
    }
    let before: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("before.json")).unwrap()).unwrap();
    let calls = |doc: &serde_json::Value| {
        doc["functions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["name"] == "helper::squares")
            .map(|f| f["calls"].as_u64().unwrap())
    };
    assert!(calls(&before).is_some_and(|c| c >= 1), "{before}");
    // One function's lines, the fixture's `squares` for the README's
    // `handle`: Live on each.
    let lines = dollar_bang(&recipe[4].replace(" handle ", " squares "));
    let top = mprof(&dir, &runtime, &lines);
    assert!(top.status.success(), "{top:?}");
    let frame = String::from_utf8_lossy(&top.stdout);
    assert!(
        frame
            .lines()
            .nth(2)
            .is_some_and(|l| l.starts_with("helper::squares (")),
        "{frame}"
    );
    assert!(frame.contains(" Live "), "{frame}");
    // `mprof top $!` wants a terminal: its one frame as text, the same way.
    let mut once = dollar_bang(&recipe[5]);
    once.insert(1, "--once".to_owned());
    let top = mprof(&dir, &runtime, &once);
    assert!(top.status.success(), "{top:?}");
    let frame = String::from_utf8_lossy(&top.stdout);
    assert!(frame.contains("helper::squares"), "{top:?}");
    // Sites sampled: the frame shows bytes in use, not kept bytes.
    assert!(frame.contains("Live/min"), "{frame}");

    // `kill $!`: passed on to the program, which writes its report; then
    // cargo-memprof prints it and exits as the program did.
    // SAFETY: a signal to the child this test started.
    assert_eq!(unsafe { libc::kill(pid as i32, libc::SIGTERM) }, 0);
    let deadline = Instant::now() + Duration::from_secs(120);
    let status = loop {
        if let Some(status) = service.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = service.kill();
            panic!("cargo-memprof did not end after SIGTERM");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let stderr = err_reader.join().unwrap();
    assert_eq!(
        status.code(),
        Some(128 + libc::SIGTERM),
        "{status:?} {stderr}"
    );
    assert!(status.signal().is_none());
    // The program's pid, cargo-memprof's child's (cargo execs it).
    let program: u32 = stderr
        .lines()
        .find_map(|l| l.strip_prefix("cargo-memprof: the program runs as process "))
        .and_then(|rest| rest.split(' ').next()?.parse().ok())
        .unwrap_or_else(|| panic!("{stderr}"));
    assert!(
        stderr.contains(&format!(
            "cargo-memprof: the program runs as process {program} (mprof snapshot {program}, mprof top {program})"
        )),
        "{stderr}"
    );
    assert_ne!(program, pid);
    assert!(stderr.contains("Summary: "), "{stderr}");
    assert!(stderr.contains("Function: helper::squares"), "{stderr}");
    // The program is gone with it, not left running.
    assert!(!std::path::Path::new(&format!("/proc/{program}")).exists());
}
