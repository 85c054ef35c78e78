//! A source line holding raw control characters (ESC, an OSC sequence
//! that retitles a terminal, `ESC ] 0 ; title BEL`, a screen clear and
//! DEL) inside a string literal of a profiled function: no output shows
//! them raw. The program's own tables, `cargo memprof run`'s report,
//! `mprof report` on the JSON it wrote, `mprof top --once` and `mprof
//! diff` show them escaped, in the one form (`\u{1b}`); `mprof snapshot`
//! writes JSON, which escapes them itself and holds the text as it is.
//!
//! One run of the fixture's service (`FIXTURE_SERVE`), its source written
//! here with the characters, so that no committed file holds them.

#[path = "common/cargo_memprof.rs"]
mod support;

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};
use support::*;

/// The characters, as the source holds them.
const RAW: &str = "\u{1b}]0;title\u{7}\u{1b}[2J\u{7f}";
/// As every output shows them.
const SHOWN: &str = r"\u{1b}]0;title\u{7}\u{1b}[2J\u{7f}";

/// Asserts that `text` holds no byte below 0x20 but `\n` and `\t`, and no
/// DEL; the failure shows it escaped, not raw.
fn assert_inert(what: &str, text: &[u8]) {
    let acting = text
        .iter()
        .position(|&b| (b < 0x20 && b != b'\n' && b != b'\t') || b == 0x7f);
    if let Some(at) = acting {
        panic!(
            "{what}: byte {:#04x} at {at} of:\n{}",
            text[at],
            String::from_utf8_lossy(text).escape_debug()
        );
    }
}

fn mprof(dir: &Path, runtime: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mprof"))
        .args(args)
        .current_dir(dir)
        .env("XDG_RUNTIME_DIR", runtime)
        .output()
        .unwrap()
}

/// Both of a command's streams, each inert, and its stdout as text.
fn inert_stdout(what: &str, out: &Output) -> String {
    assert!(out.status.success(), "{what}: {out:?}");
    assert_inert(&format!("{what}'s stderr"), &out.stderr);
    assert_inert(&format!("{what}'s stdout"), &out.stdout);
    String::from_utf8(out.stdout.clone()).unwrap()
}

#[test]
fn control_characters_in_a_source_line_reach_no_output_raw() {
    let dir = fixture("escapes", 30);
    let runtime = TempDir::new("escapes-runtime");
    let helper = dir.join("helper/src/lib.rs");
    let source = std::fs::read_to_string(&helper).unwrap();
    let body = "    let v: Vec<u64> = (0..n as u64).map(|i| i * i).collect();\n";
    assert!(source.contains(body), "{source}");
    let hostile = format!("    let title = String::from(\"{RAW}\");\n{body}    drop(title);\n");
    std::fs::write(&helper, source.replace(body, &hostile)).unwrap();
    let json = dir.join("report.json");
    let _turn = turn();
    // The program prints its first calls' tables itself (MEMPROF_REPORT),
    // before it says `serving`.
    let mut service = command(&dir, &["run", "--offline", "--json", "report.json"])
        .env("MEMPROF_LIVE", "1")
        .env("MEMPROF_REPORT", "auto")
        .env("FIXTURE_SERVE", "1")
        .env("XDG_RUNTIME_DIR", &*runtime)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = service.id().to_string();
    let mut err = service.stderr.take().unwrap();
    let err_reader = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        err.read_to_end(&mut bytes).unwrap();
        bytes
    });
    let mut out = BufReader::new(service.stdout.take().unwrap());
    let mut printed = Vec::new();
    while !printed.ends_with(b"serving\n") {
        let n = out.read_until(b'\n', &mut printed).unwrap();
        assert!(
            n > 0,
            "{}",
            String::from_utf8_lossy(&printed).escape_debug()
        );
    }

    // `mprof snapshot`: JSON, which escapes the characters as JSON does
    // and holds the text as the source has it.
    let snapshot = mprof(&dir, &runtime, &["snapshot", &pid]);
    let snapshot = inert_stdout("mprof snapshot", &snapshot);
    assert!(snapshot.contains(r"\u001b]0;title\u0007"), "{snapshot}");
    let document: serde_json::Value = serde_json::from_str(&snapshot).unwrap();
    let squares = document["functions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == "helper::squares")
        .unwrap_or_else(|| panic!("{snapshot}"));
    let line = format!("    let title = String::from(\"{RAW}\");");
    assert!(
        squares["lines"]
            .as_array()
            .unwrap()
            .iter()
            .any(|l| l["contents"] == line.as_str()),
        "{snapshot}"
    );
    std::fs::write(dir.join("before.json"), &snapshot).unwrap();

    // `mprof top --once`: its frame names the functions.
    let top = mprof(
        &dir,
        &runtime,
        &["top", "--once", "--interval", "0.1", &pid],
    );
    let top = inert_stdout("mprof top --once", &top);
    assert!(top.contains("\nhelper::squares "), "{top}");

    // SIGTERM: the program writes its report and ends; cargo-memprof
    // prints the report.
    // SAFETY: a signal to the child this test started.
    assert_eq!(unsafe { libc::kill(service.id() as i32, libc::SIGTERM) }, 0);
    let deadline = Instant::now() + Duration::from_secs(120);
    while service.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = service.kill();
            panic!("cargo-memprof did not end after SIGTERM");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    out.read_to_end(&mut printed).unwrap();
    let stderr = err_reader.join().unwrap();
    let shown = format!(r#"let title = String::from("{SHOWN}");"#);

    // The program's own tables, on its stdout.
    assert_inert("the program's stdout", &printed);
    let printed = String::from_utf8(printed).unwrap();
    assert!(printed.contains("Function: helper::squares"), "{printed}");
    assert!(printed.contains(&shown), "{printed}");

    // cargo-memprof's report, on stderr after `run`.
    assert_inert("cargo memprof run's stderr", &stderr);
    let stderr = String::from_utf8(stderr).unwrap();
    assert!(stderr.contains("Summary: "), "{stderr}");
    let table = &stderr[stderr.find("Function: helper::squares").unwrap()..];
    assert!(table.contains(&shown), "{stderr}");

    // `mprof report` on the JSON the run wrote, which holds the raw text.
    assert!(
        std::fs::read_to_string(&json)
            .unwrap()
            .contains(r"\u001b]0;title\u0007")
    );
    let report = mprof(&dir, &runtime, &["report", "report.json"]);
    let report = inert_stdout("mprof report", &report);
    assert!(report.contains("Function: helper::squares"), "{report}");
    assert!(report.contains(&shown), "{report}");

    // `mprof diff` shows the line as the tables do.
    let diff = mprof(
        &dir,
        &runtime,
        &["diff", "before.json", "report.json", "--lines"],
    );
    let diff = inert_stdout("mprof diff", &diff);
    assert!(diff.contains(&shown), "{diff}");
}
