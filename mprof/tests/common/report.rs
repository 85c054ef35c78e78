//! Hand-written `MEMPROF_JSON` reports for `mprof diff`'s tests, and `mprof
//! diff` run on them.

use super::{mprof, stderr, stdout};
use serde_json::{Value, json};
use std::path::Path;

/// A row of a hand-written report: line, increment, peak, contents.
pub type Row<'a> = (u32, Option<i64>, Option<u64>, &'a str);

pub fn function(name: &str, calls: u64, rows: &[Row]) -> Value {
    let lines: Vec<Value> = rows
        .iter()
        .map(|&(line, increment, peak, contents)| {
            json!({"line": line, "mem_usage": increment, "increment": increment,
                   "peak": peak, "occurrences": calls, "gpu_usage": null,
                   "gpu_increment": null, "gpu_peak": null, "gpu_driver_usage": null,
                   "gpu_driver_increment": null, "contents": contents})
        })
        .collect();
    json!({"name": name, "file": "src/app.rs", "calls": calls, "gpu": null,
           "gpu_driver": null, "lines": lines})
}

/// A function whose `fn` row has `kept` (over all calls) and `peak`.
pub fn simple(name: &str, calls: u64, kept: i64, peak: u64) -> Value {
    function(
        name,
        calls,
        &[
            (10, None, None, "#[profile]"),
            (11, Some(kept), Some(peak), "fn f() {"),
            (12, Some(kept), Some(peak), "    let v = vec![0u8; n];"),
            (13, None, None, "}"),
        ],
    )
}

/// Writes a schema-1 report of `functions` to `dir/name`.
pub fn write(dir: &Path, name: &str, functions: Vec<Value>) {
    let report = json!({"schema": 1, "functions": functions});
    std::fs::write(dir.join(name), report.to_string()).unwrap();
}

/// `mprof diff` with `args` after the two files; (stdout, stderr, status).
pub fn diff(dir: &Path, args: &[&str]) -> (String, String, Option<i32>) {
    let mut all = vec!["diff"];
    all.extend(args);
    let out = mprof(dir, &all);
    (stdout(&out), stderr(&out), out.status.code())
}
