//! memprof's output files are safe in shared directories: a symbolic link
//! at `MEMPROF_JSON` or `MEMPROF_OUTPUT` is refused with a warning, never
//! written through (its target, or a dangling link's, stays as it was), and
//! `MEMPROF_JSON` is written to a new file and renamed over the old one, so
//! that a process killed while writing it leaves the old report whole. A
//! path that is not a regular file (a FIFO, a device) is refused too.

#[path = "support/child.rs"]
mod child;

use child::{child_command, is_child, scratch_dir};
use memprof::profile;
use std::hint::black_box;
use std::os::unix::fs::symlink;
use std::os::unix::process::CommandExt;
use std::path::Path;

#[profile]
fn keeps(bytes: usize) -> usize {
    let kept = black_box(vec![1u8; bytes]);
    kept.len()
}

#[test]
#[ignore = "a child run: this file's tests start it"]
fn child_profiled() {
    if is_child() {
        assert_eq!(keeps(4096), 4096);
    }
}

/// Runs the child with `env`, `limit` bytes of file size at most if set;
/// returns whether it succeeded and its stderr.
fn run(env: &[(&str, &Path)], limit: Option<u64>) -> (bool, String) {
    let exe = std::env::current_exe().unwrap();
    let mut cmd = child_command(&exe, "child_profiled", &[("MEMPROF_REPORT", "exit")]);
    for (k, v) in env {
        cmd.env(k, v);
    }
    if let Some(limit) = limit {
        // SAFETY: only async-signal-safe calls between fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                let rlimit = libc::rlimit {
                    rlim_cur: limit,
                    rlim_max: limit,
                };
                libc::setrlimit(libc::RLIMIT_FSIZE, &rlimit);
                Ok(())
            });
        }
    }
    let out = cmd.output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_link_at_memprof_json_is_not_written_through() {
    let dir = scratch_dir("json-link");
    let victim = dir.join("victim.txt");
    std::fs::write(&victim, "the user's file\n").unwrap();
    let link = dir.join("report.json");
    let _ = std::fs::remove_file(&link);
    symlink(&victim, &link).unwrap();
    let (passed, err) = run(&[("MEMPROF_JSON", &link)], None);
    assert!(passed, "{err}");
    assert_eq!(
        std::fs::read_to_string(&victim).unwrap(),
        "the user's file\n"
    );
    assert!(link.symlink_metadata().unwrap().is_symlink());
    assert!(
        err.contains(&format!(
            "memprof: cannot write MEMPROF_JSON={}: it is a symbolic link, which memprof does not write through",
            link.display()
        )),
        "{err}"
    );
}

#[test]
fn a_dangling_link_at_memprof_json_does_not_create_its_target() {
    let dir = scratch_dir("json-dangling");
    let target = dir.join("created.txt");
    let _ = std::fs::remove_file(&target);
    let link = dir.join("report.json");
    let _ = std::fs::remove_file(&link);
    symlink(&target, &link).unwrap();
    let (passed, err) = run(&[("MEMPROF_JSON", &link)], None);
    assert!(passed, "{err}");
    assert!(!target.exists(), "{err}");
}

#[test]
fn a_link_at_memprof_output_is_not_written_through() {
    let dir = scratch_dir("output-link");
    let victim = dir.join("victim.txt");
    std::fs::write(&victim, "the user's file\n").unwrap();
    let link = dir.join("tables.txt");
    let _ = std::fs::remove_file(&link);
    symlink(&victim, &link).unwrap();
    let (passed, err) = run(&[("MEMPROF_OUTPUT", &link)], None);
    assert!(passed, "{err}");
    assert_eq!(
        std::fs::read_to_string(&victim).unwrap(),
        "the user's file\n"
    );
    // The tables went to stderr instead, after one warning.
    assert!(
        err.contains(&format!(
            "memprof: cannot open MEMPROF_OUTPUT={}: it is a symbolic link, which memprof does not write through; writing to stderr instead",
            link.display()
        )),
        "{err}"
    );
    assert!(err.contains("Function: output_files::keeps"), "{err}");
}

#[test]
fn a_process_killed_while_writing_memprof_json_leaves_the_old_report() {
    let dir = scratch_dir("json-killed");
    let report = dir.join("report.json");
    // A report of an earlier run, which this one replaces when it is done.
    let earlier = r#"{"schema":1,"functions":[],"run":"process:1:1"}"#;
    std::fs::write(&report, earlier).unwrap();
    // The new report is larger than 100 bytes: writing it past the limit
    // kills the child (SIGXFSZ) half-way.
    let (passed, err) = run(&[("MEMPROF_JSON", &report)], Some(100));
    assert!(!passed, "the child was to be killed while writing: {err}");
    assert_eq!(std::fs::read_to_string(&report).unwrap(), earlier);
    // Written whole when it is not killed.
    let (passed, err) = run(&[("MEMPROF_JSON", &report)], None);
    assert!(passed, "{err}");
    let text = std::fs::read_to_string(&report).unwrap();
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    let names: Vec<&str> = value["functions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["output_files::keeps"]);
}

/// Runs the profiled child with `env` and its tables at exit; its stderr,
/// once it exited, or a panic if it did not within a deadline far past any
/// loaded machine's exit (`what` hangs it).
fn exits_despite(env: &[(&str, &Path)], what: &str) -> String {
    let exe = std::env::current_exe().unwrap();
    let mut cmd = child_command(&exe, "child_profiled", &[("MEMPROF_REPORT", "exit")]);
    cmd.envs(env.iter().copied())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            child.kill().unwrap();
            panic!("the program did not exit with {what}");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{err}");
    err
}

fn mkfifo(path: &Path) {
    let _ = std::fs::remove_file(path);
    let name = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
}

#[test]
fn a_fifo_at_memprof_json_is_refused_and_the_program_exits() {
    let dir = scratch_dir("json-fifo");
    let fifo = dir.join("report.json");
    mkfifo(&fifo);
    // The open of a FIFO for reading waited for a writer forever.
    let err = exits_despite(&[("MEMPROF_JSON", &fifo)], "a FIFO at MEMPROF_JSON");
    assert!(
        err.contains(&format!(
            "memprof: cannot write MEMPROF_JSON={}: it is not a regular file, which memprof does not replace",
            fifo.display()
        )),
        "{err}"
    );
    let meta = fifo.symlink_metadata().unwrap();
    assert!(!meta.file_type().is_file(), "the FIFO is still there");
}

#[test]
fn a_fifo_that_no_process_reads_at_memprof_output_sends_the_tables_to_stderr() {
    let dir = scratch_dir("output-fifo");
    let fifo = dir.join("tables.txt");
    mkfifo(&fifo);
    // The open of a FIFO for writing waited for a reader forever, at the
    // first table.
    let err = exits_despite(&[("MEMPROF_OUTPUT", &fifo)], "a FIFO at MEMPROF_OUTPUT");
    assert!(
        err.contains(&format!(
            "memprof: cannot open MEMPROF_OUTPUT={}: it is a FIFO that no process reads; writing to stderr instead",
            fifo.display()
        )),
        "{err}"
    );
    assert!(err.contains("Function: output_files::keeps"), "{err}");
}

#[test]
fn a_directory_locked_by_another_process_costs_the_report_not_the_exit() {
    use std::os::fd::AsRawFd;
    let dir = scratch_dir("json-locked");
    let report = dir.join("report.json");
    let _ = std::fs::remove_file(&report);
    // Another process's lock, as the processes of a run take to add their
    // reports one at a time, held for longer than the child lives: it
    // waited for it for as long as it was held.
    let directory = std::fs::File::open(dir.join(".")).unwrap();
    // SAFETY: an open descriptor, which outlives the lock.
    assert_eq!(
        unsafe { libc::flock(directory.as_raw_fd(), libc::LOCK_EX) },
        0
    );
    let err = exits_despite(&[("MEMPROF_JSON", &report)], "its directory locked");
    assert!(
        err.contains(&format!(
            "memprof: cannot write MEMPROF_JSON={}: its directory stayed locked by another process for 10 s",
            report.display()
        )),
        "{err}"
    );
    assert!(!report.exists());
    drop(directory);
}

#[test]
#[ignore = "a child run: this file's tests start it"]
fn child_moves_elsewhere() {
    if is_child() {
        std::env::set_current_dir(std::env::var_os("MEMPROF_TEST_ELSEWHERE").unwrap()).unwrap();
        assert_eq!(keeps(4096), 4096);
    }
}

#[test]
fn relative_output_paths_name_files_where_the_program_started() {
    let dir = scratch_dir("relative-paths");
    let elsewhere = dir.join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    for place in [dir.join("."), elsewhere.clone()] {
        let _ = std::fs::remove_file(place.join("report.json"));
        let _ = std::fs::remove_file(place.join("tables.txt"));
    }
    let exe = std::env::current_exe().unwrap();
    let env = [
        ("MEMPROF_REPORT", "exit"),
        ("MEMPROF_JSON", "report.json"),
        ("MEMPROF_OUTPUT", "tables.txt"),
        ("MEMPROF_TEST_ELSEWHERE", elsewhere.to_str().unwrap()),
    ];
    let out = child_command(&exe, "child_moves_elsewhere", &env)
        .current_dir(elsewhere.join(".."))
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    // The program changed directory before its first profiled call; its
    // report and tables are where it started, as the paths said then.
    let report = std::fs::read_to_string(dir.join("report.json")).unwrap();
    assert!(report.contains("\"output_files::keeps\""), "{report}");
    let tables = std::fs::read_to_string(dir.join("tables.txt")).unwrap();
    assert!(tables.contains("Function: output_files::keeps"), "{tables}");
    assert!(!elsewhere.join("report.json").exists());
    assert!(!elsewhere.join("tables.txt").exists());
}
