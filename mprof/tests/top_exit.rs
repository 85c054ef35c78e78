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
