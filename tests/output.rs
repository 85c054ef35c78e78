//! When and where memprof prints: report modes, test binaries and programs,
//! passing and failing tests, `memit!` lines, JSON at exit, output
//! destinations, settings and `MEMPROF=off`, each checked in a child run of
//! this test binary (see `support/child.rs`). How a table looks is
//! `output_tables.rs`.
//!
//! A buffer whose contents nothing reads passes through `black_box`: an
//! optimized build (`cargo test --release`) removes such an allocation, and
//! its table then rightly shows nothing.

// The point is to allocate on the heap.
#![allow(clippy::useless_vec)]

#[path = "support/child.rs"]
mod child;

use child::{captured_run, is_child, run_child, run_child_as_program, scratch_dir};
use memprof::{memit, profile};
use std::hint::black_box;

#[profile]
fn called_five_times(n: usize) -> usize {
    let v = vec![0u8; n];
    v.len()
}

#[test]
#[ignore = "a child run: this file's tests start it"]
fn child_five_calls() {
    if is_child() {
        for n in 1..=5 {
            called_five_times(n * 1000);
        }
    }
}

fn tables(stdout: &str) -> usize {
    stdout
        .matches("Function: output::called_five_times")
        .count()
}

#[test]
fn default_mode_prints_three_calls_then_one_aggregate_at_exit() {
    let (out, _) = run_child_as_program("child_five_calls", &[]);
    assert_eq!(tables(&out), 4, "{out}");
    assert_eq!(out.matches("Calls: 5 (aggregated)").count(), 1, "{out}");
    assert_eq!(
        out.lines()
            .filter(|l| l.starts_with("(memprof:"))
            .collect::<Vec<_>>(),
        [
            "(memprof: no more tables of output::called_five_times per call: any further calls \
             are aggregated into one table at exit; MEMPROF_REPORT=call prints every call)"
        ],
    );
    // Σ over the five calls of `let v`: 1000 + ... + 5000 bytes, exactly.
    let row = out
        .lines()
        .rev()
        .find(|l| l.contains("let v = vec!"))
        .unwrap();
    assert!(row.contains("14.6 KiB"), "{row}");
    assert!(row.trim_end().contains(" 5 "), "{row}");
}

#[test]
#[ignore = "a child run: this file's tests start it"]
fn child_three_calls() {
    if is_child() {
        for n in 1..=3 {
            called_five_times(n * 1000);
        }
    }
}

#[test]
fn three_calls_promise_no_exit_table_that_does_not_come() {
    // Regression: the third table said "further calls ... are aggregated
    // into one table at exit", and none came: there were none.
    let (out, _) = run_child_as_program("child_three_calls", &[]);
    assert_eq!(tables(&out), 3, "{out}");
    assert!(!out.contains("Calls:"), "no table at exit: {out}");
    assert_eq!(
        out.lines()
            .filter(|l| l.starts_with("(memprof:"))
            .collect::<Vec<_>>(),
        [
            "(memprof: no more tables of output::called_five_times per call: any further calls \
             are aggregated into one table at exit; MEMPROF_REPORT=call prints every call)"
        ],
    );
}

#[test]
fn a_test_binary_prints_three_calls_and_nothing_at_exit() {
    let (out, _) = run_child("child_five_calls", &[]);
    assert_eq!(tables(&out), 3, "{out}");
    assert!(!out.contains("Calls:"), "no table at exit: {out}");
    assert_eq!(
        out.lines()
            .filter(|l| l.starts_with("(memprof:"))
            .collect::<Vec<_>>(),
        [
            "(memprof: further calls of output::called_five_times on this test's thread are not printed in a test binary; \
             MEMPROF_REPORT=exit prints them aggregated at exit, MEMPROF_REPORT=call each)"
        ],
    );
    // Asked for, the exit table is printed.
    let (out, _) = run_child("child_five_calls", &[("MEMPROF_REPORT", "exit")]);
    assert_eq!(tables(&out), 1, "{out}");
    assert!(out.contains("Calls: 5 (aggregated)"), "{out}");
    // And the summary after it, the one function's row in it.
    let summary = out
        .split_once("Summary: 1 function ran, highest peak first\n")
        .unwrap()
        .1;
    assert!(
        summary
            .lines()
            .any(|l| l.ends_with("5   output::called_five_times   tests/output.rs")),
        "{out}"
    );
}

#[test]
fn a_passing_test_prints_no_table() {
    let (lines, passed) = captured_run("child_five_calls", &[]);
    assert!(passed);
    let filtered = lines.last().unwrap().rsplit_once(" measured; ").unwrap().1;
    assert_eq!(
        lines,
        [
            "running 1 test".to_owned(),
            "test child_five_calls ... ok".to_owned(),
            format!("test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; {filtered}"),
        ]
    );
}

#[test]
#[ignore = "a child run: this file's tests start it"]
fn child_fails_after_a_call() {
    if is_child() {
        called_five_times(1024);
        panic!("the test fails");
    }
}

#[test]
fn a_failing_test_shows_its_tables() {
    let (lines, passed) = captured_run("child_fails_after_a_call", &[]);
    assert!(!passed);
    let captured = lines
        .iter()
        .skip_while(|l| *l != "---- child_fails_after_a_call stdout ----")
        .collect::<Vec<_>>();
    let title = captured
        .iter()
        .position(|l| {
            l.starts_with("Filename: tests/output.rs   Function: output::called_five_times")
        })
        .unwrap_or_else(|| panic!("{lines:#?}"));
    let row = captured[title..]
        .iter()
        .find(|l| l.contains("let v = vec![0u8; n];"))
        .unwrap();
    assert!(
        row.contains(" 1.0 KiB      1.0 KiB             1 "),
        "{row}"
    );
}

#[test]
fn report_modes_call_exit_and_off() {
    let (out, _) = run_child("child_five_calls", &[("MEMPROF_REPORT", "call")]);
    assert_eq!(tables(&out), 5, "{out}");
    assert!(!out.contains("aggregated"));
    let (out, _) = run_child("child_five_calls", &[("MEMPROF_REPORT", "exit")]);
    assert_eq!(tables(&out), 1, "{out}");
    assert!(out.contains("Calls: 5 (aggregated)"));
    let (out, _) = run_child("child_five_calls", &[("MEMPROF_REPORT", "off")]);
    assert_eq!(tables(&out), 0, "{out}");
}

#[test]
fn units_and_precision_can_be_fixed() {
    let (out, _) = run_child(
        "child_five_calls",
        &[("MEMPROF_REPORT", "exit"), ("MEMPROF_UNIT", "B")],
    );
    let row = out.lines().find(|l| l.contains("let v = vec!")).unwrap();
    assert!(row.contains("15000 B"), "{row}");
    let (out, _) = run_child(
        "child_five_calls",
        &[
            ("MEMPROF_REPORT", "exit"),
            ("MEMPROF_UNIT", "KiB"),
            ("MEMPROF_PRECISION", "3"),
        ],
    );
    let row = out.lines().find(|l| l.contains("let v = vec!")).unwrap();
    assert!(row.contains("14.648 KiB"), "{row}");
}

#[test]
fn a_bad_setting_warns_once_and_uses_the_default() {
    let (out, err) = run_child("child_five_calls", &[("MEMPROF_REPORT", "sometimes")]);
    assert_eq!(tables(&out), 3, "{out}");
    assert_eq!(
        err.matches(
            "memprof: ignoring MEMPROF_REPORT=\"sometimes\": expected auto, call, exit or off"
        )
        .count(),
        1,
        "{err}"
    );
}

#[test]
#[ignore = "a child run: this file's tests start it"]
fn child_memit() {
    if is_child() {
        let v = memit!(black_box(vec![0u8; 1 << 20]));
        assert_eq!(v.len(), 1 << 20);
        drop(v);
        let n = memit!(black_box(vec![0u8; 3000]).len());
        assert_eq!(n, 3000);
    }
}

#[test]
#[ignore = "a child run: this file's tests start it"]
fn child_memit_frees() {
    if is_child() {
        let v = black_box(vec![0u8; 1 << 20]);
        memit!(drop(v));
    }
}

/// The `memit!` lines of a child's output, from `peak memory:` on (libtest
/// may start the line with `test child_memit ... `).
fn memit_lines(out: &str) -> Vec<String> {
    out.lines()
        .filter_map(|l| l.find("peak memory:").map(|at| l[at..].to_owned()))
        .collect()
}

#[test]
fn memit_prints_peak_increment_and_the_net_change() {
    let (out, _) = run_child("child_memit", &[("MEMPROF_UNIT", "B")]);
    let lines = memit_lines(&out);
    assert_eq!(lines.len(), 2, "{out}");
    // The peak counts what the process held before, which libtest decides.
    let peak = |line: &str| -> u64 {
        line["peak memory: ".len()..]
            .split(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    let (first, second) = (peak(&lines[0]), peak(&lines[1]));
    assert!(first >= 1 << 20);
    // Increment is the peak minus the heap before, as %memit defines it: for
    // a freed temporary it is still the temporary's size. The net change,
    // which tables and `measure` call increment, follows in parentheses.
    assert_eq!(
        lines[0],
        format!("peak memory: {first} B, increment: 1048576 B (net 1048576 B kept)")
    );
    assert_eq!(
        lines[1],
        format!("peak memory: {second} B, increment: 3000 B (net 0 B kept)")
    );
    // A blank line ends each, so that a table printed next stands apart.
    assert!(out.contains("(net 0 B kept)\n\n"), "{out}");

    let (out, _) = run_child("child_memit_frees", &[("MEMPROF_UNIT", "B")]);
    let lines = memit_lines(&out);
    let heap = peak(&lines[0]);
    assert_eq!(
        lines,
        [format!(
            "peak memory: {heap} B, increment: 0 B (net 1048576 B freed)"
        )]
    );
}

#[test]
fn json_carries_the_same_figures_as_the_report() {
    called_five_times(1);
    let report = memprof::report();
    let json: serde_json::Value = serde_json::from_str(&report.to_json()).unwrap();
    let f = report.function("called_five_times").unwrap();
    let j = json["functions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["name"] == f.name.as_str())
        .unwrap();
    assert_eq!(j["calls"], f.calls);
    assert_eq!(j["file"], "tests/output.rs");
    let rows = j["lines"].as_array().unwrap();
    assert_eq!(rows.len(), f.lines.len());
    for (row, line) in rows.iter().zip(&f.lines) {
        assert_eq!(row["line"], line.line);
        assert_eq!(row["contents"], line.contents.as_str());
        assert_eq!(row["occurrences"], line.occurrences);
        assert_eq!(row["increment"].as_i64(), line.increment);
        assert_eq!(row["peak"].as_u64(), line.peak);
        assert_eq!(row["mem_usage"].as_i64(), line.mem_usage);
    }
    // Rows without statements are null, not zero.
    assert!(rows.iter().any(|r| r["increment"].is_null()));
}

#[test]
#[ignore = "a child run: this file's tests start it"]
fn child_exits_through_process_exit() {
    if is_child() {
        called_five_times(2000);
        called_five_times(3000);
        std::process::exit(0);
    }
}

#[test]
fn exit_mode_prints_also_when_the_program_calls_process_exit() {
    let (out, _) = run_child(
        "child_exits_through_process_exit",
        &[("MEMPROF_REPORT", "exit")],
    );
    assert_eq!(tables(&out), 1, "{out}");
    assert!(out.contains("Calls: 2 (aggregated)"), "{out}");
}

#[profile]
fn called_from_an_exit_handler() -> usize {
    let v = vec![0u8; 64];
    v.len()
}

#[test]
#[ignore = "a child run: this file's tests start it"]
fn child_calls_from_an_earlier_exit_handler() {
    if is_child() {
        extern "C" fn handler() {
            std::hint::black_box(called_from_an_exit_handler());
        }
        // SAFETY: a plain `extern "C" fn` that does not unwind.
        assert_eq!(unsafe { libc::atexit(handler) }, 0);
        // memprof's own exit hook is registered here, after the handler,
        // so it runs before it.
        called_five_times(1000);
    }
}

#[test]
fn json_counts_calls_from_exit_handlers_registered_before_memprofs() {
    let dir = scratch_dir("json-atexit");
    let path = dir.join("report.json");
    run_child(
        "child_calls_from_an_earlier_exit_handler",
        &[("MEMPROF_JSON", path.to_str().unwrap())],
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let calls = |name: &str| {
        json["functions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["name"] == name)
            .map_or(0, |f| f["calls"].as_u64().unwrap())
    };
    assert_eq!(calls("output::called_five_times"), 1, "{json}");
    assert_eq!(calls("output::called_from_an_exit_handler"), 1, "{json}");
}

#[test]
fn json_at_exit_matches_the_printed_table() {
    let dir = scratch_dir("json");
    let path = dir.join("report.json");
    let (out, _) = run_child(
        "child_five_calls",
        &[
            ("MEMPROF_REPORT", "exit"),
            ("MEMPROF_UNIT", "B"),
            ("MEMPROF_JSON", path.to_str().unwrap()),
        ],
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let f = json["functions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == "output::called_five_times")
        .unwrap();
    assert_eq!(f["calls"], 5);
    // Every row with figures in the JSON appears, with the same bytes, in the
    // printed table (fixed to bytes by MEMPROF_UNIT=B).
    for row in f["lines"].as_array().unwrap() {
        let Some(increment) = row["increment"].as_i64() else {
            continue;
        };
        let line = row["line"].as_u64().unwrap();
        let printed = out
            .lines()
            .find(|l| l.split_whitespace().next() == Some(&line.to_string()))
            .unwrap_or_else(|| panic!("line {line} not printed:\n{out}"));
        let cols: Vec<&str> = printed.split_whitespace().collect();
        assert_eq!(cols[1], row["mem_usage"].as_i64().unwrap().to_string());
        assert_eq!(cols[3], increment.to_string(), "{printed}");
        assert_eq!(
            cols[5],
            row["peak"].as_u64().unwrap().to_string(),
            "{printed}"
        );
        assert_eq!(
            cols[7],
            row["occurrences"].as_u64().unwrap().to_string(),
            "{printed}"
        );
    }
}

#[test]
fn output_goes_to_stderr_or_a_file_and_falls_back_to_stderr() {
    let (out, err) = run_child(
        "child_five_calls",
        &[("MEMPROF_REPORT", "exit"), ("MEMPROF_OUTPUT", "stderr")],
    );
    assert_eq!((tables(&out), tables(&err)), (0, 1), "{out}\n{err}");

    let dir = scratch_dir("file");
    let path = dir.join("tables.txt");
    let (out, _) = run_child(
        "child_five_calls",
        &[
            ("MEMPROF_REPORT", "call"),
            ("MEMPROF_OUTPUT", path.to_str().unwrap()),
        ],
    );
    assert_eq!(tables(&out), 0);
    assert_eq!(tables(&std::fs::read_to_string(&path).unwrap()), 5);

    let unwritable = dir.join("no-such-dir").join("tables.txt");
    let (out, err) = run_child(
        "child_five_calls",
        &[
            ("MEMPROF_REPORT", "call"),
            ("MEMPROF_OUTPUT", unwritable.to_str().unwrap()),
        ],
    );
    assert_eq!((tables(&out), tables(&err)), (0, 5), "{err}");
    assert_eq!(
        err.matches("memprof: cannot open MEMPROF_OUTPUT=").count(),
        1,
        "{err}"
    );
    assert!(err.contains("writing to stderr instead"));
}

#[profile]
fn loud_and_quiet() -> usize {
    let loud = black_box(vec![0u8; 2 << 20]);
    let quiet = black_box(vec![0u8; 10]);
    loud.len() + quiet.len()
}

#[test]
#[ignore = "a child run: this file's tests start it"]
fn child_loud_and_quiet() {
    if is_child() {
        loud_and_quiet();
    }
}

#[test]
fn min_increment_hides_quieter_lines() {
    let (out, _) = run_child("child_loud_and_quiet", &[("MEMPROF_MIN_INCREMENT", "1MiB")]);
    assert!(out.contains("let loud = black_box(vec!"), "{out}");
    assert!(out.contains("fn loud_and_quiet"), "{out}");
    assert!(!out.contains("let quiet"), "{out}");
    assert!(!out.contains("#[profile]"), "{out}");
    let (out, err) = run_child("child_loud_and_quiet", &[("MEMPROF_MIN_INCREMENT", "lots")]);
    assert!(out.contains("let quiet"), "{out}");
    assert_eq!(
        err.matches("memprof: ignoring MEMPROF_MIN_INCREMENT=\"lots\"")
            .count(),
        1
    );
}

#[test]
#[ignore = "a child run: this file's tests start it"]
fn child_switch() {
    if is_child() {
        let len = called_five_times(4096);
        let calls = memprof::report()
            .functions
            .iter()
            .find(|f| f.name == "output::called_five_times")
            .map(|f| f.calls);
        println!("returned {len}, recorded calls {calls:?}");
        let (_, m) = memprof::measure(|| vec![0u8; 100]);
        println!("measure still counts: {}", m.peak);
    }
}

#[test]
fn memprof_off_records_and_prints_nothing_but_the_program_runs() {
    let (out, err) = run_child("child_switch", &[("MEMPROF", "off")]);
    assert_eq!(tables(&out), 0, "{out}");
    assert!(out.contains("returned 4096, recorded calls None"), "{out}");
    assert!(out.contains("measure still counts: 100"), "{out}");
    assert!(!err.contains("memprof:"), "{err}");
    let (out, _) = run_child("child_switch", &[("MEMPROF", "on")]);
    assert_eq!(tables(&out), 1, "{out}");
    assert!(
        out.contains("returned 4096, recorded calls Some(1)"),
        "{out}"
    );
    let (out, err) = run_child("child_switch", &[("MEMPROF", "maybe")]);
    assert_eq!(tables(&out), 1, "{out}");
    assert_eq!(
        err.matches("memprof: ignoring MEMPROF=\"maybe\": expected on or off")
            .count(),
        1,
        "{err}"
    );
}
