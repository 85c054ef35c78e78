//! Helpers shared by mprof's integration tests.

#![allow(dead_code)]

pub mod dat;
pub mod live;
pub mod report;
pub mod signals;

pub use signals::default_signals;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A fresh, empty directory for one test.
pub fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("mprof-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `mprof` with `args`, run in `dir`.
pub fn mprof(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mprof"))
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap()
}

pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

pub fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Asserts a failure with exactly one line on stderr, starting `mprof: `
/// and containing `needle`, and no sign of a panic.
pub fn assert_one_line_error(output: &Output, needle: &str) {
    let err = stderr(output);
    assert!(!output.status.success(), "succeeded; stderr: {err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(!err.contains("RUST_BACKTRACE"), "{err}");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "expected one line, got: {err}");
    assert!(lines[0].starts_with("mprof: "), "{err}");
    assert!(lines[0].contains(needle), "expected {needle:?} in: {err}");
    let message = &lines[0]["mprof: ".len()..];
    assert!(
        message.starts_with(|c: char| !c.is_uppercase()),
        "not lowercase: {err}"
    );
}

/// Whether this process still runs under `mprof run`: some process above
/// it is `mprof`. A program that waits for mprof to sample it stops waiting
/// (and fails) once mprof is gone, rather than after some time, which on a
/// loaded machine means nothing.
pub fn under_mprof() -> bool {
    let mut pid = std::process::id();
    while pid > 1 {
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            return false;
        };
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
            return false;
        };
        if &stat[open + 1..close] == "mprof" {
            return true;
        }
        // After the command: state, then the parent's pid.
        let parent = stat[close + 1..].split_whitespace().nth(1);
        match parent.and_then(|p| p.parse().ok()) {
            Some(parent) => pid = parent,
            None => return false,
        }
    }
    false
}

/// Width and height of a PNG, from its header.
pub fn png_size(bytes: &[u8]) -> (u32, u32) {
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "not a PNG");
    assert_eq!(&bytes[12..16], b"IHDR");
    let be = |b: &[u8]| u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
    (be(&bytes[16..20]), be(&bytes[20..24]))
}
