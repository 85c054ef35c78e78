//! Child runs: a test re-runs its own test binary on one `child_*` test
//! with `MEMPROF_CHILD` set, then reads what that child printed (tables
//! printed at exit included; the output tests, `tests/output*.rs`), or only
//! that it passed, alone in its process. Include it with
//! `#[path = "support/child.rs"] mod child;`.

// Each test crate that includes this file uses a different part of it.
#![allow(dead_code)]

use std::process::Command;

/// Runs the child test `name` with extra environment variables; returns its
/// stdout and stderr.
pub fn run_child(name: &str, env: &[(&str, &str)]) -> (String, String) {
    run_child_of(&std::env::current_exe().unwrap(), name, env)
}

/// As [`run_child`], from a copy of this test binary that does not look like
/// one (see "When tables are printed" in the README): as a program.
pub fn run_child_as_program(name: &str, env: &[(&str, &str)]) -> (String, String) {
    static COPY: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    let copy = COPY.get_or_init(|| {
        // NOTE: a hard link, not a copy. A copy is written through a file
        // descriptor that a child forked by another test thread meanwhile
        // holds until it execs, and running the copy then fails with
        // ETXTBSY ("Text file busy"): it did, once in 20 loaded runs. A link
        // has no writer. CARGO_TARGET_TMPDIR is on the test binary's file
        // system.
        let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("output-as-program-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let link = dir.join("output-as-program");
        let _ = std::fs::remove_file(&link);
        std::fs::hard_link(std::env::current_exe().unwrap(), &link).unwrap();
        link
    });
    run_child_of(copy, name, env)
}

pub fn run_child_of(exe: &std::path::Path, name: &str, env: &[(&str, &str)]) -> (String, String) {
    let out = child_command(exe, name, env)
        .arg("--nocapture")
        .output()
        .unwrap();
    assert!(out.status.success(), "child {name} failed: {out:?}");
    (
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

/// The command that runs the child test `name` of `exe` alone, output
/// captured by libtest.
pub fn child_command(exe: &std::path::Path, name: &str, env: &[(&str, &str)]) -> Command {
    let mut cmd = Command::new(exe);
    cmd.args([name, "--ignored", "--exact", "--test-threads=1"])
        .env("MEMPROF_CHILD", "1")
        .env_remove("MEMPROF")
        .env_remove("MEMPROF_REPORT")
        .env_remove("MEMPROF_UNIT")
        .env_remove("MEMPROF_PRECISION");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd
}

pub fn is_child() -> bool {
    std::env::var_os("MEMPROF_CHILD").is_some()
}

/// A directory of this test process's own under the temporary directory,
/// removed with what it holds when the value is dropped: bind it for as long
/// as a child writes there.
pub fn scratch_dir(name: &str) -> Scratch {
    let dir = std::env::temp_dir().join(format!("memprof-output-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    Scratch(dir)
}

/// See [`scratch_dir`].
#[derive(Debug)]
pub struct Scratch(std::path::PathBuf);

impl std::ops::Deref for Scratch {
    type Target = std::path::Path;
    fn deref(&self) -> &std::path::Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// What libtest printed of a child run with its output captured: the lines
/// that are not timings.
pub fn captured_run(name: &str, env: &[(&str, &str)]) -> (Vec<String>, bool) {
    let out = child_command(&std::env::current_exe().unwrap(), name, env)
        .output()
        .unwrap();
    assert_eq!(String::from_utf8(out.stderr).unwrap(), "");
    let lines = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| match l.split_once("; finished in") {
            Some((summary, _)) => summary.to_owned(),
            None => l.to_owned(),
        })
        .filter(|l| !l.is_empty())
        .collect();
    (lines, out.status.success())
}
