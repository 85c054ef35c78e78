//! Calls the process exits from, and calls made after `main` returns, are
//! reported like any other. A child process exits with
//! `std::process::exit` from inside a profiled call: the exit table and
//! `MEMPROF_JSON` list that call as running, with its rows so far. Another
//! calls profiled code from an `atexit` handler, a thread-local's
//! destructor and a `.fini_array` finalizer: their figures are exact (no
//! heap below zero, no note about frees), and `MEMPROF_JSON` counts every
//! one of them.
//!
//! No harness: each check is a child process of this binary.

use memprof::profile;
use std::hint::black_box;
use std::process::Command;

#[profile]
fn exits_inside(code: i32) -> usize {
    let kept = black_box(vec![1u8; 4096]);
    if code >= 0 {
        std::process::exit(code);
    }
    kept.len()
}

#[profile]
fn after_main(tag: &str) -> usize {
    let buffer = black_box(vec![1u8; 1000]);
    buffer.len() + tag.len()
}

extern "C" fn at_exit() {
    after_main("atexit");
}

struct AtThreadEnd;

impl Drop for AtThreadEnd {
    fn drop(&mut self) {
        after_main("thread-local");
    }
}

thread_local! {
    static AT_THREAD_END: AtThreadEnd = const { AtThreadEnd };
}

#[cfg(target_os = "linux")]
#[used]
#[unsafe(link_section = ".fini_array")]
static AT_FINI: extern "C" fn() = at_fini;

#[cfg(target_os = "linux")]
extern "C" fn at_fini() {
    if std::env::var_os("EXITS_CHILD").is_some_and(|c| c == "after") {
        after_main("fini");
    }
}

/// Runs this binary as child `which` with `env`; returns its stdout and the
/// `MEMPROF_JSON` it wrote.
fn child(which: &str, env: &[(&str, &str)]) -> (String, serde_json::Value) {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("exits-{which}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let json = dir.join("report.json");
    let _ = std::fs::remove_file(&json);
    let out = Command::new(std::env::current_exe().unwrap())
        .env("EXITS_CHILD", which)
        .env("MEMPROF_JSON", &json)
        .env_remove("MEMPROF_OUTPUT")
        .env_remove("MEMPROF")
        .envs(env.iter().copied())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{which}:\n{stdout}\n{stderr}");
    let text = std::fs::read_to_string(&json).unwrap();
    (stdout, serde_json::from_str(&text).unwrap())
}

/// `(calls, running, [(line, increment, occurrences)])` of `name` in a
/// report, its rows with figures only.
fn function(report: &serde_json::Value, name: &str) -> (u64, u64, Vec<(u64, i64, u64)>) {
    let f = report["functions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"].as_str().unwrap().ends_with(name))
        .unwrap_or_else(|| panic!("no {name} in {report}"));
    let rows = f["lines"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|l| l["occurrences"].as_u64().unwrap() > 0 && !l["increment"].is_null())
        .map(|l| {
            (
                l["line"].as_u64().unwrap(),
                l["increment"].as_i64().unwrap(),
                l["occurrences"].as_u64().unwrap(),
            )
        })
        .collect();
    (
        f["calls"].as_u64().unwrap(),
        f["running"].as_u64().unwrap(),
        rows,
    )
}

fn line_of(text: &str) -> u64 {
    let source = include_str!("exits.rs");
    source[..source.find(text).unwrap()].matches('\n').count() as u64 + 1
}

fn a_call_the_process_exits_from_is_reported_running() {
    let (stdout, report) = child("exit", &[("MEMPROF_REPORT", "exit")]);
    let kept = line_of("let kept = black_box");
    assert_eq!(
        function(&report, "exits_inside"),
        (0, 1, vec![(kept, 4096, 1)]),
        "{report}"
    );
    assert!(
        stdout.contains("Function: exits::exits_inside   Calls: 1 running"),
        "{stdout}"
    );
    let row = stdout
        .lines()
        .find(|l| l.contains("let kept = black_box"))
        .unwrap();
    // Increment and Peak.
    assert_eq!(row.matches("4.0 KiB").count(), 2, "{stdout}");
}

fn calls_after_main_are_exact_and_all_in_the_report() {
    let (stdout, report) = child("after", &[("MEMPROF_REPORT", "call")]);
    // main's own call, the thread-local's destructor, the `atexit` handler
    // and the finalizer.
    let calls = if cfg!(target_os = "linux") { 4 } else { 3 };
    let buffer = line_of("let buffer = black_box");
    assert_eq!(
        function(&report, "after_main").0,
        calls,
        "{report}\n{stdout}"
    );
    assert_eq!(
        function(&report, "after_main").2[1],
        (buffer, 1000 * calls as i64, calls),
        "{report}"
    );
    // Every call's table: no heap below zero, no note about frees.
    let tables = stdout.matches("Function: exits::after_main").count();
    assert_eq!(tables as u64, calls, "{stdout}");
    let below_zero = stdout
        .lines()
        .filter(|l| l.trim_start().starts_with(char::is_numeric))
        .any(|l| {
            l.split_whitespace()
                .nth(1)
                .is_some_and(|m| m.starts_with('-'))
        });
    assert!(!below_zero, "{stdout}");
    assert!(!stdout.contains("(memprof:"), "{stdout}");
}

/// Registered before memprof's exit hook, so run after it: how many whole
/// reports the process built by then.
extern "C" fn count_reports() {
    println!("reports built: {}", memprof::__private::reports_built());
}

fn the_exit_hook_builds_one_report_for_tables_summary_and_json() {
    let (stdout, report) = child("count", &[("MEMPROF_REPORT", "exit")]);
    // Tables, the summary and the report that MEMPROF_JSON is written from
    // (after every exit handler, from the same report: no call ended since).
    assert!(stdout.contains("reports built: 1\n"), "{stdout}");
    assert!(stdout.contains("Function: exits::after_main"), "{stdout}");
    assert!(stdout.contains("Summary: 1 function ran"), "{stdout}");
    assert_eq!(function(&report, "after_main").0, 2, "{report}");
}

fn main() {
    match std::env::var("EXITS_CHILD").as_deref() {
        Ok("count") => {
            // SAFETY: a plain `extern "C" fn` that does not unwind.
            assert_eq!(unsafe { libc::atexit(count_reports) }, 0);
            after_main("one");
            after_main("two");
        }
        Ok("exit") => {
            exits_inside(0);
            unreachable!("exits_inside exits");
        }
        Ok("after") => {
            // SAFETY: a plain `extern "C" fn` that does not unwind.
            assert_eq!(unsafe { libc::atexit(at_exit) }, 0);
            AT_THREAD_END.with(|_| ());
            after_main("main");
        }
        _ => {
            a_call_the_process_exits_from_is_reported_running();
            calls_after_main_are_exact_and_all_in_the_report();
            the_exit_hook_builds_one_report_for_tables_summary_and_json();
            println!("exits: ok");
        }
    }
}
