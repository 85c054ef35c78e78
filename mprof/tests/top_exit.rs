//! `mprof top -- PROG` with a program that ends before mprof connects: its
//! figures at exit as one frame, its output, and its exit status; where
//! it exited 0, so does mprof.
//!
//! The program is this test binary, run again with `MPROF_TEST_QUICK` set,
//! through `sh -c 'MEMPROF_LIVE=0 exec ...'`: it never listens, so it ends
//! before mprof connects however fast or busy the machine is.

mod common;

use common::{scratch, stderr, stdout};
use std::process::Command;

#[memprof::profile]
fn quick(n: usize) -> usize {
    let kept = vec![1u8; n];
    kept.len()
}

/// The program; does nothing in an ordinary test run.
#[test]
#[ignore = "a child run: the test below starts it"]
fn child_quick() {
    if std::env::var_os("MPROF_TEST_QUICK").is_some() {
        assert_eq!(quick(4096) + quick(4096), 8192);
        println!("the program's own line");
    }
}

#[test]
fn a_program_that_ends_before_mprof_connects_shows_its_figures_at_exit() {
    let dir = scratch("top-exit");
    let exe = std::env::current_exe().unwrap();
    let top = Command::new(env!("CARGO_BIN_EXE_mprof"))
        .args(["top", "--once", "--", "sh", "-c"])
        .arg(r#"MEMPROF_LIVE=0 exec "$0" child_quick --ignored --exact --nocapture"#)
        .arg(&exe)
        .env("MPROF_TEST_QUICK", "1")
        .env("MEMPROF_REPORT", "off")
        .env_remove("MEMPROF_JSON")
        .current_dir(&dir)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mprof_pid = top.id();
    let out = top.wait_with_output().unwrap();
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}{}", stderr(&out));
    let first = text.lines().next().unwrap_or_default();
    assert!(
        first.starts_with("process ")
            && first
                .ends_with(" ended (exit status 0) before mprof connected: its figures at exit"),
        "{text}"
    );
    let row = text
        .lines()
        .find(|l| l.starts_with("top_exit::quick "))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(row.contains(" 2 "), "two calls: {row}");
    // The frame, then the program's own output.
    let frame_end = text.find("top_exit::quick ").unwrap();
    assert!(
        text[frame_end..].contains("the program's own line"),
        "{text}"
    );
    // mprof's own report file is gone.
    let ours = std::env::temp_dir().join(format!("mprof-top-{mprof_pid}.json"));
    assert!(!ours.exists());
}

/// What `keep` was given, for ever: the leak.
static KEPT: std::sync::Mutex<Vec<Vec<u8>>> = std::sync::Mutex::new(Vec::new());

#[memprof::profile]
fn keep(n: usize) {
    let order = vec![2u8; n];
    KEPT.lock().unwrap().push(order);
}

/// The program for `--lines`; does nothing in an ordinary test run.
#[test]
#[ignore = "a child run: the test below starts it"]
fn child_leak() {
    if std::env::var_os("MPROF_TEST_QUICK").is_some() {
        // The orders' vector, made first: a push allocates nothing.
        KEPT.lock().unwrap().reserve(4);
        keep(500);
        keep(500);
        assert_eq!(quick(4096), 4096);
    }
}

/// `mprof top` with `args`, on this binary's `child` test run with
/// allocation sites, which ends before mprof connects; its status and
/// stdout and stderr.
fn top_of_child(
    dir: &std::path::Path,
    args: &[&str],
    child: &str,
) -> (Option<i32>, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_mprof"))
        .arg("top")
        .args(args)
        .args(["--", "sh", "-c"])
        .arg(r#"MEMPROF_LIVE=0 exec "$0" "$1" --ignored --exact"#)
        .arg(std::env::current_exe().unwrap())
        .arg(child)
        .env("MPROF_TEST_QUICK", "1")
        .env("MEMPROF_REPORT", "off")
        .env("MEMPROF_SITES", "1")
        .env_remove("MEMPROF_JSON")
        .current_dir(dir)
        .output()
        .unwrap();
    (out.status.code(), stdout(&out), stderr(&out))
}

#[test]
fn once_lines_prints_a_functions_lines_with_live() {
    let dir = scratch("top-exit-lines");
    // A part of the name, as `/` filters: `keep`, not `quick`.
    let (code, text, err) = top_of_child(&dir, &["--once", "--lines", "::keep"], "child_leak");
    assert_eq!(code, Some(0), "{text}{err}");
    // After the header's first line (the process), up to the program's own
    // output: the 1000 bytes `keep` kept, still in use on its line.
    let frame: Vec<&str> = text.lines().skip(1).take(8).collect();
    assert_eq!(
        frame,
        [
            "2 functions, sorted by live",
            "top_exit::keep (mprof/tests/top_exit.rs), 2 calls",
            " Line #   Increment        Peak        Live  Occurrences Line Contents",
            "     76                                                  #[memprof::profile]",
            "     77      1000 B       500 B      1000 B            2 fn keep(n: usize) {",
            "     78      1000 B       500 B      1000 B            2     let order = vec![2u8; n];",
            "     79         0 B         0 B         0 B            2     KEPT.lock().unwrap().push(order);",
            "     80         0 B         0 B         0 B            2 }",
        ],
        "{text}"
    );
}

#[test]
fn top_lines_misuse_is_one_line_of_error() {
    let dir = scratch("top-exit-lines-misuse");
    let out = common::mprof(&dir, &["top", "--lines", "keep", "1"]);
    common::assert_one_line_error(
        &out,
        "--lines goes with --once; on the screen, Enter opens a function's lines",
    );
    assert_eq!(out.status.code(), Some(2));
    let out = common::mprof(&dir, &["top", "--once", "--lines", " ", "1"]);
    common::assert_one_line_error(&out, "--lines takes a function's name, or a part of it");
    assert_eq!(out.status.code(), Some(2));
    let (code, text, err) = top_of_child(&dir, &["--once", "--lines", "nosuch"], "child_leak");
    assert_eq!(
        (code, err.as_str()),
        (
            Some(1),
            "mprof: no function in the snapshot has `nosuch` in its name\n"
        ),
        "{text}"
    );
}

#[test]
fn top_interval_and_window_misuse_is_one_line_of_error() {
    let dir = scratch("top-exit-durations-misuse");
    for (args, message) in [
        (
            &["--interval", "0"][..],
            "--interval takes a time from 0.1s to 1h, such as 2, 2s, 5m or 1h, not `0`",
        ),
        (
            &["--window", "2d"],
            "--window takes a time from 1s to 24h, such as 2, 2s, 5m or 1h, not `2d`",
        ),
        (
            &["--interval", "2m"],
            "--window (60s) is shorter than --interval (120s): the rates need two snapshots in it",
        ),
    ] {
        let out = common::mprof(&dir, &[&["top"], args, &["1"]].concat());
        common::assert_one_line_error(&out, message);
        assert_eq!(out.status.code(), Some(2));
    }
}
