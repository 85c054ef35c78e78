//! One report model with one reader (issue 59): the same figures written by
//! this memprof, by the oldest schema's (schema 1 with only the fields it
//! had then), and by a "newer" memprof that adds fields at every level,
//! read by every command that reads a report file (`mprof report`, `diff`,
//! `html`, `pprof`, `flamegraph`), give the same output; a newer schema is
//! refused, in one line.
//!
//! The oldest report is `tests/fixtures/diff/head.json`, recorded when
//! schema 1 was new (no `running`, allocations, sites or call edges). This
//! version's is that report with every field added since, as today's
//! writer writes them (`null` where the run had none); a second pair adds
//! sites, call edges, Live and what sites leave out, which only later
//! reports can hold, with and without a newer memprof's fields.
//!
//! `mprof top` reads snapshots from a running program, not files: its
//! reader is the same function (`report::parse`), and its unit tests
//! read documents without the later fields.

mod common;

use common::{assert_one_line_error, mprof, scratch, stderr, stdout};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> PathBuf {
    [
        env!("CARGO_MANIFEST_DIR"),
        "..",
        "tests",
        "fixtures",
        "diff",
        name,
    ]
    .iter()
    .collect()
}

fn read_fixture(name: &str) -> Value {
    serde_json::from_str(&std::fs::read_to_string(fixture(name)).unwrap()).unwrap()
}

/// The fields this version writes that schema 1 did not have at first,
/// per level, with what a run without them writes.
fn later_function_fields() -> Value {
    json!({"running": 0, "pool": null, "sites_left_out": null})
}

fn later_line_fields() -> Value {
    json!({"allocations": null, "allocated_bytes": null, "pool_allocated": null,
           "pool_increment": null, "pool_reserved": null, "in_use_allocations": null,
           "in_use_bytes": null, "sites": null, "calls": null, "within": null})
}

fn extend(object: &mut Value, fields: &Value) {
    let object = object.as_object_mut().unwrap();
    for (key, value) in fields.as_object().unwrap() {
        object.entry(key.clone()).or_insert_with(|| value.clone());
    }
}

/// `oldest` as this version writes it: every later field present.
fn as_this_version(oldest: &Value) -> Value {
    let mut report = oldest.clone();
    for function in report["functions"].as_array_mut().unwrap() {
        extend(function, &later_function_fields());
        for line in function["lines"].as_array_mut().unwrap() {
            extend(line, &later_line_fields());
        }
    }
    report
}

/// `report` as a newer memprof might write it: a field of its own at every
/// level (document, function, line, site, frame, call, sites left out),
/// each holding what this reader would choke on if it read it.
fn as_newer_version(report: &Value) -> Value {
    let mut report = report.clone();
    let unknown = json!({"added_in_a_newer_memprof": {"nested": [1, "two", null, {"x": -3.5}]}});
    extend(&mut report, &unknown);
    extend(&mut report, &json!({"host": "build-7"}));
    for function in report["functions"].as_array_mut().unwrap() {
        extend(function, &unknown);
        if let Some(left_out) = function.get_mut("sites_left_out").filter(|v| v.is_object()) {
            extend(left_out, &unknown);
        }
        for line in function["lines"].as_array_mut().unwrap() {
            extend(line, &unknown);
            extend(line, &json!({"gpu_kernel": "gemm"}));
            for site in line["sites"].as_array_mut().into_iter().flatten() {
                extend(site, &unknown);
                for frame in site["frames"].as_array_mut().unwrap() {
                    extend(frame, &unknown);
                }
            }
            for call in line["calls"].as_array_mut().into_iter().flatten() {
                extend(call, &unknown);
            }
        }
    }
    report
}

/// `report` with sites, call edges, Live and what sites leave out on its
/// functions' rows that ran: what only later reports hold.
fn with_sites(report: &Value) -> Value {
    let mut report = as_this_version(report);
    for function in report["functions"].as_array_mut().unwrap() {
        function["sites_left_out"] = json!({
            "unsited_allocations": 0, "unsited_bytes": 0,
            "unfollowed_allocations": 2, "unfollowed_bytes": 96,
            "unpaired_allocations": 0, "unpaired_bytes": 0});
        for line in function["lines"].as_array_mut().unwrap() {
            let Some(increment) = line["increment"].as_i64() else {
                continue;
            };
            let bytes = increment.unsigned_abs() + 64;
            line["allocations"] = json!(3);
            line["allocated_bytes"] = json!(bytes);
            line["in_use_allocations"] = json!(1);
            line["in_use_bytes"] = json!(increment.max(0));
            line["sites"] = json!([
                {"allocations": 2, "allocated_bytes": bytes - 16, "live_bytes": increment,
                 "in_use_allocations": 1, "in_use_bytes": increment.max(0), "estimated": false,
                 "frames": [
                    {"function": "alloc::vec::Vec<T>::with_capacity", "file": "/rustc/src/vec.rs", "line": 480},
                    {"function": "diff_demo::helper", "file": "examples/diff_demo.rs", "line": 40}
                 ]},
                {"allocations": 1, "allocated_bytes": 16, "live_bytes": 0,
                 "estimated": false, "frames": []}
            ]);
            line["calls"] = json!([
                {"function": "diff_demo::helper", "calls": 1, "allocated_bytes": bytes - 16}
            ]);
        }
    }
    report
}

/// Each report written to `report.json` in a directory of its own (the
/// same name, so that outputs that name their input read the same).
fn write_each(test: &str, reports: &[(&str, &Value)]) -> Vec<PathBuf> {
    reports
        .iter()
        .map(|(kind, report)| {
            let dir = scratch(&format!("{test}-{kind}"));
            std::fs::write(dir.join("report.json"), report.to_string()).unwrap();
            std::fs::copy(fixture("base.json"), dir.join("base.json")).unwrap();
            dir
        })
        .collect()
}

/// What each command makes of `dir/report.json`: its output, or the file
/// it wrote, as text (the pprof profile as its bytes, lossily).
fn outputs(dir: &Path, flame: bool) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut run = |what: &str, args: &[&str]| {
        let result = mprof(dir, args);
        assert!(
            result.status.success(),
            "{what} in {}: {}",
            dir.display(),
            stderr(&result)
        );
        out.push((what.to_owned(), stdout(&result)));
    };
    run("report", &["report", "report.json", "--top", "3"]);
    run(
        "diff",
        &["diff", "base.json", "report.json", "--lines", "--all"],
    );
    run("diff reversed", &["diff", "report.json", "base.json"]);
    run(
        "diff markdown",
        &[
            "diff",
            "base.json",
            "report.json",
            "--lines",
            "--format",
            "markdown",
        ],
    );
    run(
        "html",
        &[
            "html",
            "report.json",
            "--base",
            "base.json",
            "-o",
            "page.html",
        ],
    );
    run("pprof", &["pprof", "report.json", "-o", "report.pb.gz"]);
    let mut files = vec!["page.html", "report.pb.gz"];
    // A flame graph needs sites (the oldest schema has none).
    if flame {
        run(
            "flamegraph",
            &[
                "flamegraph",
                "report.json",
                "--allocated",
                "-o",
                "flame.svg",
            ],
        );
        files.push("flame.svg");
    }
    for file in files {
        let bytes = std::fs::read(dir.join(file)).unwrap();
        assert!(!bytes.is_empty(), "{file} is empty");
        out.push((
            file.to_owned(),
            String::from_utf8_lossy(&bytes).into_owned(),
        ));
    }
    out
}

fn assert_same_outputs(dirs: &[PathBuf], flame: bool) {
    let first = outputs(&dirs[0], flame);
    for what in ["report", "diff", "diff markdown"] {
        let (_, text) = first.iter().find(|(w, _)| w == what).unwrap();
        assert!(!text.is_empty(), "{what} printed nothing");
    }
    for dir in &dirs[1..] {
        for ((what, expected), (_, got)) in first.iter().zip(outputs(dir, flame)) {
            assert_eq!(&got, expected, "{what} differs for {}", dir.display());
        }
    }
}

#[test]
fn the_oldest_schema_this_version_and_a_newer_version_read_the_same() {
    let oldest = read_fixture("head.json");
    assert!(oldest["functions"][0].get("running").is_none());
    let this = as_this_version(&oldest);
    let newer = as_newer_version(&this);
    let dirs = write_each(
        "one-reader-three",
        &[("oldest", &oldest), ("this", &this), ("newer", &newer)],
    );
    assert_same_outputs(&dirs, false);
    // The figures are the recorded ones, in every command's output.
    let report = stdout(&mprof(&dirs[0], &["report", "report.json"]));
    assert!(report.contains("diff_demo::fill_cache"), "{report}");
}

#[test]
fn sites_calls_and_live_read_the_same_with_a_newer_version_s_fields() {
    let this = with_sites(&read_fixture("head.json"));
    let newer = as_newer_version(&this);
    let dirs = write_each("one-reader-sites", &[("this", &this), ("newer", &newer)]);
    assert_same_outputs(&dirs, true);
    // The sites were read: the page lists them, and the report's tables.
    let page = std::fs::read_to_string(dirs[1].join("page.html")).unwrap();
    assert!(page.contains("diff_demo::helper (examples/diff_demo.rs:40)"));
    let report = stdout(&mprof(&dirs[1], &["report", "report.json"]));
    assert!(report.contains("diff_demo::helper"), "{report}");
}

#[test]
fn a_newer_schema_is_refused_by_every_reader() {
    let mut newer = as_newer_version(&as_this_version(&read_fixture("head.json")));
    newer["schema"] = json!(2);
    // A newer schema may change what its fields hold: they are not read.
    newer["functions"][0]["calls"] = json!("several");
    let dir = scratch("one-reader-schema-2");
    std::fs::write(dir.join("new.json"), newer.to_string()).unwrap();
    std::fs::copy(fixture("base.json"), dir.join("base.json")).unwrap();
    let message =
        "mprof: cannot read new.json: schema 2 is newer than this mprof reads (1); update mprof\n";
    let commands: [&[&str]; 5] = [
        &["report", "new.json"],
        &["diff", "base.json", "new.json"],
        &["html", "new.json"],
        &["pprof", "new.json", "-o", "new.pb.gz"],
        &["flamegraph", "new.json", "-o", "new.svg"],
    ];
    for args in commands {
        let out = mprof(&dir, args);
        assert_one_line_error(&out, "schema 2");
        assert_eq!(stderr(&out), message, "{args:?}");
        assert_eq!(out.status.code(), Some(2), "{args:?}");
    }
    assert!(!dir.join("new.html").exists());
    assert!(!dir.join("new.pb.gz").exists());
}
