//! A closed stdout (`prog | head -1`) does not break a profiled program:
//! memprof stops printing, says so once on stderr, and the program exits as
//! it does unprofiled, with `panic = "abort"` and with unwinding.
//!
//! Builds `tests/crates/closed-pipe`, a crate of its own, once per panic
//! strategy, and runs it with its stdout the write end of a pipe whose read
//! end is already closed.

#[path = "support/fixture.rs"]
mod fixture;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Builds the fixture with `panic` ("abort" or "unwind") and returns its
/// binary.
fn build(panic: &str) -> PathBuf {
    let mut cargo = fixture::cargo("build", "closed-pipe", "closed-pipe");
    cargo.arg("--quiet").env("CARGO_PROFILE_DEV_PANIC", panic);
    fixture::succeed(cargo, "building the fixture");
    let target = fixture::target_dir("closed-pipe");
    // Both builds write the same path: copy each one out before the next.
    let bin = target.join(format!("panic-{panic}"));
    std::fs::copy(target.join("debug/memprof-closed-pipe-check"), &bin).expect("binary was built");
    bin
}

/// Runs `bin` with `env`, its stdout a pipe nobody reads: its exit status
/// and stderr.
fn run_into_closed_pipe(bin: &Path, args: &[&str], env: &[(&str, &str)]) -> (Option<i32>, String) {
    let (reader, writer) = std::io::pipe().expect("a pipe");
    drop(reader);
    let mut cmd = Command::new(bin);
    for var in [
        "MEMPROF",
        "MEMPROF_REPORT",
        "MEMPROF_OUTPUT",
        "MEMPROF_JSON",
    ] {
        cmd.env_remove(var);
    }
    let out = cmd
        .args(args)
        .envs(env.iter().copied())
        .stdout(writer)
        .stderr(Stdio::piped())
        .output()
        .expect("the fixture runs");
    (out.status.code(), String::from_utf8(out.stderr).unwrap())
}

#[test]
fn a_closed_stdout_stops_the_tables_not_the_program() {
    const NOTE: &str = "memprof: cannot write to stdout (Broken pipe (os error 32)); \
                        printing nothing more\n";
    for panic in ["abort", "unwind"] {
        let bin = build(panic);
        // `memit!` is an explicit request, which `MEMPROF=off` still prints.
        let unprofiled = run_into_closed_pipe(&bin, &[], &[("MEMPROF", "off")]);
        assert_eq!(unprofiled, (Some(0), String::new()), "panic = {panic}");
        for report in ["call", "auto", "exit"] {
            let (status, stderr) =
                run_into_closed_pipe(&bin, &["memit"], &[("MEMPROF_REPORT", report)]);
            assert_eq!(status, unprofiled.0, "panic = {panic}, {report}: {stderr}");
            assert_eq!(stderr, NOTE, "panic = {panic}, MEMPROF_REPORT={report}");
        }
    }
}
