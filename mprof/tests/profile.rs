//! `mprof pprof`, `mprof flamegraph` and `mprof diff --format pprof` on a
//! hand-written report: each line's own share on a stack of its sites'
//! frames and the lines that enclose it, exactly, in pprof's format and as
//! a flame graph; the diff per stack; misuse as one line.

mod common;

use common::{assert_one_line_error, mprof, scratch, stderr};
use memprof::{HeapProfile, HeapValues, SiteFrame};
use serde_json::{Value, json};
use std::path::Path;

fn row(line: u32, increment: Option<i64>, contents: &str, sites: Value) -> Value {
    json!({"line": line, "mem_usage": increment, "increment": increment,
           "peak": increment.map(|i| i.max(0)), "occurrences": 1,
           "allocations": increment.map(|_| 0), "allocated_bytes": increment.map(|_| 0),
           "gpu_usage": null, "gpu_increment": null, "gpu_peak": null,
           "gpu_driver_usage": null, "gpu_driver_increment": null, "pool_allocated": null,
           "pool_increment": null, "pool_reserved": null, "contents": contents,
           "sites": sites})
}

fn site(allocations: u64, bytes: u64, live: i64, frames: Value) -> Value {
    json!({"allocations": allocations, "allocated_bytes": bytes, "live_bytes": live,
           "estimated": false, "frames": frames})
}

/// A generic type's trait method, whose name pprof's readers would strip
/// (`::read`) were it written as is: memprof's readers read it whole.
const READ: &str = "<app::Reader<u8> as std::io::Read>::read";

/// `app::load`: a loop (line 12) whose body (line 13) reads through
/// [`READ`]; the loop's own line allocated 64 bytes itself.
fn report(dir: &Path, name: &str, reads: u64) {
    let read = json!([{"function": READ, "file": "src/read.rs", "line": 7}]);
    let through_read = site(reads, reads * 1000, 1000, read);
    let lines = vec![
        row(10, None, "#[profile]", Value::Null),
        row(11, Some(1064), "fn load(v: &mut Vec<Vec<u8>>) {", json!([])),
        row(
            12,
            Some(1064),
            "    for _ in 0..n {",
            json!([through_read, site(1, 64, 64, json!([]))]),
        ),
        row(
            13,
            Some(1000),
            "        v.push(read());",
            json!([through_read]),
        ),
        row(14, Some(0), "    }", json!([])),
        row(15, Some(0), "}", json!([])),
    ];
    let report = json!({"schema": 1, "functions": [
        {"name": "app::load", "file": "src/app.rs", "calls": 1, "running": 0, "gpu": null,
         "gpu_driver": null, "pool": null, "lines": lines}]});
    std::fs::write(dir.join(name), report.to_string()).unwrap();
}

fn line(n: u32) -> SiteFrame {
    SiteFrame {
        function: "app::load".to_owned(),
        file: Some("src/app.rs".to_owned()),
        line: Some(n),
    }
}

fn read_frame() -> SiteFrame {
    SiteFrame {
        function: READ.to_owned(),
        file: Some("src/read.rs".to_owned()),
        line: Some(7),
    }
}

fn values(objects: i64, space: i64, inuse: i64) -> HeapValues {
    HeapValues {
        alloc_objects: objects,
        alloc_space: space,
        inuse_objects: 0,
        inuse_space: inuse,
    }
}

fn samples(path: &Path) -> Vec<(Vec<SiteFrame>, HeapValues)> {
    let bytes = std::fs::read(path).unwrap();
    let profile = HeapProfile::from_pprof(&bytes).unwrap();
    profile.samples.into_iter().collect()
}

#[test]
fn mprof_pprof_writes_each_line_s_own_share_under_the_lines_that_enclose_it() {
    let dir = scratch("profile-pprof");
    report(&dir, "run.json", 3);
    let out = mprof(&dir, &["pprof", "run.json", "-o", "heap.pb.gz"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stderr(&out), "mprof: wrote heap.pb.gz\n");
    assert_eq!(
        samples(&dir.join("heap.pb.gz")),
        [
            (
                vec![read_frame(), line(13), line(12)],
                values(3, 3000, 1000)
            ),
            (vec![line(12)], values(1, 64, 64)),
        ]
    );
}

/// The frames' titles in `mprof flamegraph INPUT -o flame.svg ARGS`'s SVG,
/// sorted.
fn flame_titles(dir: &Path, input: &str, args: &[&str]) -> Vec<String> {
    let mut command = vec!["flamegraph", input, "-o", "flame.svg"];
    command.extend(args);
    let out = mprof(dir, &command);
    assert!(out.status.success(), "{}", stderr(&out));
    let svg = std::fs::read_to_string(dir.join("flame.svg")).unwrap();
    let mut titles: Vec<String> = svg
        .split("<title>")
        .skip(1)
        .filter_map(|t| t.split("</title>").next())
        .map(str::to_owned)
        .collect();
    titles.sort();
    titles
}

#[test]
fn mprof_flamegraph_draws_function_lines_then_sites() {
    let dir = scratch("profile-flamegraph");
    report(&dir, "run.json", 3);
    let out = mprof(&dir, &["pprof", "run.json", "-o", "heap.pb.gz"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let read = "&lt;app::Reader&lt;u8&gt; as std::io::Read&gt;::read (src/read.rs:7)";
    // From the report and from its profile: the same graph, the site's
    // frame by its full name.
    for input in ["run.json", "heap.pb.gz"] {
        // Bytes in use by default, as pprof's viewers draw a heap profile;
        // --inuse, which older command lines give, says the same.
        let in_use = [
            format!("{read} (1,000 bytes, 93.98%)"),
            "all (1,064 bytes, 100%)".to_owned(),
            "app::load (1,064 bytes, 100.00%)".to_owned(),
            "src/app.rs:12 (1,064 bytes, 100.00%)".to_owned(),
            "src/app.rs:13 (1,000 bytes, 93.98%)".to_owned(),
        ];
        assert_eq!(flame_titles(&dir, input, &[]), in_use, "{input}");
        assert_eq!(flame_titles(&dir, input, &["--inuse"]), in_use, "{input}");
        assert_eq!(
            flame_titles(&dir, input, &["--allocated"]),
            [
                format!("{read} (3,000 bytes, 97.91%)"),
                "all (3,064 bytes, 100%)".to_owned(),
                "app::load (3,064 bytes, 100.00%)".to_owned(),
                "src/app.rs:12 (3,064 bytes, 100.00%)".to_owned(),
                "src/app.rs:13 (3,000 bytes, 97.91%)".to_owned(),
            ],
            "{input}"
        );
    }
}

#[test]
fn mprof_diff_format_pprof_holds_what_grew_per_stack() {
    let dir = scratch("profile-diff");
    report(&dir, "base.json", 1);
    report(&dir, "head.json", 3);
    let out = mprof(
        &dir,
        &[
            "diff",
            "base.json",
            "head.json",
            "--format",
            "pprof",
            "-o",
            "d.pb.gz",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        samples(&dir.join("d.pb.gz")),
        [(vec![read_frame(), line(13), line(12)], values(2, 2000, 0))]
    );
    // The other way round: negative.
    let out = mprof(
        &dir,
        &[
            "diff",
            "head.json",
            "base.json",
            "--format",
            "pprof",
            "-o",
            "d.pb.gz",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        samples(&dir.join("d.pb.gz")),
        [(vec![read_frame(), line(13), line(12)], values(-2, -2000, 0))]
    );
}

#[test]
fn misuse_is_one_line() {
    let dir = scratch("profile-misuse");
    std::fs::write(dir.join("notes.txt"), "not a profile").unwrap();
    let out = mprof(&dir, &["pprof", "notes.txt", "-o", "heap.pb.gz"]);
    assert_one_line_error(
        &out,
        "cannot read notes.txt: neither a memprof report nor a heap profile",
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(!dir.join("heap.pb.gz").exists());
    let out = mprof(&dir, &["flamegraph", "missing.json", "-o", "f.svg"]);
    assert_one_line_error(&out, "missing.json");
    std::fs::write(dir.join("empty.json"), r#"{"schema":1,"functions":[]}"#).unwrap();
    let out = mprof(&dir, &["flamegraph", "empty.json", "-o", "f.svg"]);
    assert_one_line_error(
        &out,
        "no stack has bytes in use to draw (--allocated draws bytes allocated, freed or not)",
    );
    let out = mprof(
        &dir,
        &["flamegraph", "empty.json", "-o", "f.svg", "--allocated"],
    );
    assert_one_line_error(&out, "no stack has bytes allocated to draw");
    let out = mprof(
        &dir,
        &[
            "flamegraph",
            "run.json",
            "-o",
            "f.svg",
            "--allocated",
            "--inuse",
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    let out = mprof(&dir, &["diff", "a.json", "b.json", "--format", "pprof"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--output <FILE>"), "{}", stderr(&out));
}
