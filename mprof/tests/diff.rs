//! `mprof diff`: exact reports for hand-written reports and for the
//! recorded pair `tests/fixtures/diff/{base,head}.json` (see
//! `scripts/diff-fixtures`), its thresholds and its refusals.

mod common;

use common::report::{diff, function, simple, write};
use common::{assert_one_line_error, mprof, scratch, stderr, stdout};
use serde_json::json;
use std::path::PathBuf;

/// The recorded pair: examples/diff_demo, base and `DIFF_DEMO=head`.
fn fixture(name: &str) -> String {
    let path: PathBuf = [
        env!("CARGO_MANIFEST_DIR"),
        "..",
        "tests",
        "fixtures",
        "diff",
        name,
    ]
    .iter()
    .collect();
    path.to_str().unwrap().to_owned()
}

/// base: grows, shrinks, dropped; head: grows (more), shrinks (less), added.
fn four_kinds(name: &str) -> PathBuf {
    let dir = scratch(name);
    write(
        &dir,
        "base.json",
        vec![
            simple("app::grows", 1, 1000, 1000),
            simple("app::shrinks", 1, 4096, 4096),
            simple("app::dropped", 2, 600, 300),
        ],
    );
    write(
        &dir,
        "head.json",
        vec![
            simple("app::grows", 1, 1500, 2000),
            simple("app::shrinks", 1, 1024, 2048),
            simple("app::added", 1, 100, 100),
        ],
    );
    dir
}

#[test]
fn grown_shrunk_new_and_removed_functions() {
    let dir = four_kinds("diff-four-kinds");
    let (out, err, code) = diff(&dir, &["base.json", "head.json"]);
    assert_eq!((err.as_str(), code), ("", Some(0)));
    assert_eq!(
        out,
        r#"Filename: src/app.rs   Function: app::shrinks   Status: shrank

 Figure         Base      Head     Change   Change %
====================================================
 Calls             1         1          0       0.0%
 Peak        4.0 KiB   2.0 KiB   -2.0 KiB     -50.0%
 Kept/call   4.0 KiB   1.0 KiB   -3.0 KiB     -75.0%

Filename: src/app.rs   Function: app::grows   Status: grew

 Figure        Base      Head    Change   Change %
==================================================
 Calls            1         1         0       0.0%
 Peak        1000 B   2.0 KiB   +1000 B    +100.0%
 Kept/call   1000 B   1.5 KiB    +500 B     +50.0%

Filename: src/app.rs   Function: app::dropped   Status: removed

 Figure       Base   Head   Change   Change %
=============================================
 Calls           2
 Peak        300 B
 Kept/call   300 B

Filename: src/app.rs   Function: app::added   Status: new

 Figure      Base    Head   Change   Change %
=============================================
 Calls                  1
 Peak               100 B
 Kept/call          100 B
"#
    );
}

#[test]
fn kept_is_compared_per_call_when_calls_differ() {
    let dir = scratch("diff-per-call");
    write(&dir, "base.json", vec![simple("app::each", 2, 2000, 1500)]);
    write(&dir, "head.json", vec![simple("app::each", 4, 4000, 1500)]);
    let (out, _, code) = diff(&dir, &["base.json", "head.json", "--fail-over", "0%"]);
    assert_eq!(code, Some(0));
    assert_eq!(
        out,
        r#"Filename: src/app.rs   Function: app::each   Status: same

 Figure         Base      Head   Change   Change %
==================================================
 Calls             2         4       +2    +100.0%
 Peak        1.5 KiB   1.5 KiB      0 B       0.0%
 Kept/call    1000 B    1000 B      0 B       0.0%
"#
    );
}

#[test]
fn a_moved_line_still_matches_with_lines() {
    let dir = scratch("diff-moved-line");
    let base = function(
        "app::load",
        1,
        &[
            (20, None, None, "#[profile]"),
            (21, Some(3000), Some(3000), "fn load() -> Vec<u8> {"),
            (
                22,
                Some(1000),
                Some(1000),
                "    let header = vec![0u8; 1000];",
            ),
            (
                23,
                Some(2000),
                Some(2000),
                "    let body = vec![1u8; 2000];",
            ),
            (24, None, None, "    // done"),
            (25, None, None, "}"),
        ],
    );
    // A new line above `body`, which moves from 23 to 24, and `header`'s
    // text changed: removed and added.
    let head = function(
        "app::load",
        1,
        &[
            (20, None, None, "#[profile]"),
            (21, Some(4000), Some(4000), "fn load() -> Vec<u8> {"),
            (22, Some(500), Some(500), "    let header = vec![0u8; 500];"),
            (
                23,
                Some(1500),
                Some(1500),
                "    let footer = vec![2u8; 1500];",
            ),
            (
                24,
                Some(2000),
                Some(2000),
                "    let body = vec![1u8; 2000];",
            ),
            (25, None, None, "    // done"),
            (26, None, None, "}"),
        ],
    );
    write(&dir, "base.json", vec![base]);
    write(&dir, "head.json", vec![head]);
    let (out, _, code) = diff(&dir, &["base.json", "head.json", "--lines"]);
    assert_eq!(code, Some(0));
    assert_eq!(
        out,
        r#"Filename: src/app.rs   Function: app::load   Status: grew

 Figure         Base      Head    Change   Change %
===================================================
 Calls             1         1         0       0.0%
 Peak        2.9 KiB   3.9 KiB   +1000 B     +33.3%
 Kept/call   2.9 KiB   3.9 KiB   +1000 B     +33.3%

 Base #   Head #   Base incr.   Head incr.   Incr. change   Base peak   Head peak   Peak change   Diff      Line Contents
=========================================================================================================================
     21       21      2.9 KiB      3.9 KiB        +1000 B     2.9 KiB     3.9 KiB       +1000 B             fn load() -> Vec<u8> {
     22                1000 B                                  1000 B                             removed       let header = vec![0u8; 1000];
              22                     500 B                                  500 B                 added         let header = vec![0u8; 500];
              23                   1.5 KiB                                1.5 KiB                 added         let footer = vec![2u8; 1500];
     23       24      2.0 KiB      2.0 KiB            0 B     2.0 KiB     2.0 KiB           0 B                 let body = vec![1u8; 2000];
"#
    );
}

#[test]
fn markdown_puts_regressions_first() {
    let dir = four_kinds("diff-markdown");
    let (out, err, code) = diff(
        &dir,
        &[
            "base.json",
            "head.json",
            "--format",
            "markdown",
            "--fail-over",
            "10%",
        ],
    );
    assert_eq!(code, Some(1));
    assert_eq!(
        out,
        r#"| Function | Status | Calls | Peak | Peak change | Kept/call | Kept/call change |
| :-- | :-- | --: | --: | --: | --: | --: |
| `app::grows` | **past --fail-over** | 1 | 1000 B → 2.0 KiB | +1000 B (+100.0%) | 1000 B → 1.5 KiB | +500 B (+50.0%) |
| `app::added` | **past --fail-over** | none → 1 | none → 100 B |  | none → 100 B |  |
| `app::shrinks` | shrank | 1 | 4.0 KiB → 2.0 KiB | -2.0 KiB (-50.0%) | 4.0 KiB → 1.0 KiB | -3.0 KiB (-75.0%) |
| `app::dropped` | removed | 2 → none | 300 B → none |  | 300 B → none |  |
"#
    );
    assert_eq!(
        err,
        r#"mprof: app::grows: peak grew from 1000 B to 2.0 KiB (+1000 B, +100.0%), past --fail-over 10%
mprof: app::grows: kept/call grew from 1000 B to 1.5 KiB (+500 B, +50.0%), past --fail-over 10%
mprof: app::added: new, peak 100 B, past --fail-over 10%
mprof: app::added: new, kept/call 100 B, past --fail-over 10%
"#
    );
}

#[test]
fn gpu_peak_shows_where_device_allocations_were_counted() {
    let dir = scratch("diff-gpu");
    let mut base = simple("app::upload", 1, 0, 64);
    base["lines"][1]["gpu_peak"] = json!(1u64 << 20);
    let mut head = simple("app::upload", 1, 0, 64);
    head["lines"][1]["gpu_peak"] = json!(3u64 << 20);
    write(&dir, "base.json", vec![base]);
    write(&dir, "head.json", vec![head]);
    // Exactly 2 MiB more: not past 2 MiB.
    let (out, err, code) = diff(&dir, &["base.json", "head.json", "--fail-over", "2MiB"]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(
        out,
        r#"Filename: src/app.rs   Function: app::upload   Status: grew

 Figure         Base      Head     Change   Change %
====================================================
 Calls             1         1          0       0.0%
 Peak           64 B      64 B        0 B       0.0%
 Kept/call       0 B       0 B        0 B       0.0%
 GPU peak    1.0 MiB   3.0 MiB   +2.0 MiB    +200.0%
"#
    );
    let (_, err, code) = diff(&dir, &["base.json", "head.json", "--fail-over", "1.5MiB"]);
    assert_eq!(code, Some(1));
    assert_eq!(
        err,
        "mprof: app::upload: gpu peak grew from 1.0 MiB to 3.0 MiB (+2.0 MiB, +200.0%), \
         past --fail-over 1.5 MiB\n"
    );
}

#[test]
fn the_recorded_pair() {
    let dir = scratch("diff-recorded");
    let (out, err, code) = diff(&dir, &[&fixture("base.json"), &fixture("head.json")]);
    assert_eq!((err.as_str(), code), ("", Some(0)));
    assert_eq!(
        out,
        r#"Filename: examples/diff_demo.rs   Function: diff_demo::parse_records   Status: shrank

 Figure         Base        Head     Change   Change %
======================================================
 Calls             1           1          0       0.0%
 Peak        1.5 MiB   390.6 KiB   -1.1 MiB     -75.0%
 Kept/call       0 B         0 B        0 B       0.0%

Filename: examples/diff_demo.rs   Function: diff_demo::fill_cache   Status: grew

 Figure          Base        Head       Change   Change %
=========================================================
 Calls              3           3            0       0.0%
 Peak        64.1 KiB   320.1 KiB   +256.0 KiB    +399.4%
 Kept/call   64.0 KiB   320.1 KiB   +256.0 KiB    +399.9%

1 function unchanged, not shown (--all shows it)
"#
    );
}

#[test]
fn all_shows_the_unchanged_functions_too() {
    let dir = scratch("diff-recorded-all");
    let (out, err, code) = diff(
        &dir,
        &[&fixture("base.json"), &fixture("head.json"), "--all"],
    );
    assert_eq!((err.as_str(), code), ("", Some(0)));
    assert_eq!(
        out,
        r#"Filename: examples/diff_demo.rs   Function: diff_demo::parse_records   Status: shrank

 Figure         Base        Head     Change   Change %
======================================================
 Calls             1           1          0       0.0%
 Peak        1.5 MiB   390.6 KiB   -1.1 MiB     -75.0%
 Kept/call       0 B         0 B        0 B       0.0%

Filename: examples/diff_demo.rs   Function: diff_demo::fill_cache   Status: grew

 Figure          Base        Head       Change   Change %
=========================================================
 Calls              3           3            0       0.0%
 Peak        64.1 KiB   320.1 KiB   +256.0 KiB    +399.4%
 Kept/call   64.0 KiB   320.1 KiB   +256.0 KiB    +399.9%

Filename: examples/diff_demo.rs   Function: diff_demo::load_config   Status: same

 Figure         Base      Head   Change   Change %
==================================================
 Calls             1         1        0       0.0%
 Peak        2.9 KiB   2.9 KiB      0 B       0.0%
 Kept/call   2.9 KiB   2.9 KiB      0 B       0.0%
"#
    );
}

#[test]
fn only_what_changed_is_shown_by_default() {
    // Regression: one regression among 47 functions, most never called,
    // printed 362 lines.
    let dir = scratch("diff-changed-only");
    let never = |name| simple(name, 0, 0, 0);
    write(
        &dir,
        "base.json",
        vec![
            simple("app::grows", 1, 1000, 1000),
            simple("app::steady", 2, 200, 100),
            never("app::idle"),
            never("app::unused"),
        ],
    );
    write(
        &dir,
        "head.json",
        vec![
            simple("app::grows", 1, 2000, 2000),
            simple("app::steady", 2, 200, 100),
            never("app::idle"),
            never("app::unused"),
        ],
    );
    let (out, err, code) = diff(&dir, &["base.json", "head.json"]);
    assert_eq!((err.as_str(), code), ("", Some(0)));
    assert_eq!(
        out,
        r#"Filename: src/app.rs   Function: app::grows   Status: grew

 Figure        Base      Head    Change   Change %
==================================================
 Calls            1         1         0       0.0%
 Peak        1000 B   2.0 KiB   +1000 B    +100.0%
 Kept/call   1000 B   2.0 KiB   +1000 B    +100.0%

3 functions unchanged, not shown (--all shows them)
"#
    );
    let (out, _, code) = diff(&dir, &["base.json", "head.json", "--format", "markdown"]);
    assert_eq!(code, Some(0));
    assert_eq!(
        out,
        r#"| Function | Status | Calls | Peak | Peak change | Kept/call | Kept/call change |
| :-- | :-- | --: | --: | --: | --: | --: |
| `app::grows` | grew | 1 | 1000 B → 2.0 KiB | +1000 B (+100.0%) | 1000 B → 2.0 KiB | +1000 B (+100.0%) |

3 functions unchanged, not shown (--all shows them)
"#
    );
    // Nothing changed: the line alone.
    let (out, _, code) = diff(&dir, &["base.json", "base.json"]);
    assert_eq!(code, Some(0));
    assert_eq!(out, "4 functions unchanged, not shown (--all shows them)\n");
    let (out, _, _) = diff(&dir, &["base.json", "base.json", "--all"]);
    assert_eq!(out.matches("Filename: ").count(), 4, "{out}");
}

#[test]
fn the_recorded_pair_as_markdown_with_lines() {
    let dir = scratch("diff-recorded-markdown");
    let (out, _, code) = diff(
        &dir,
        &[
            &fixture("base.json"),
            &fixture("head.json"),
            "--format",
            "markdown",
            "--lines",
        ],
    );
    assert_eq!(code, Some(0));
    assert_eq!(
        out,
        r#"| Function | Status | Calls | Peak | Peak change | Kept/call | Kept/call change |
| :-- | :-- | --: | --: | --: | --: | --: |
| `diff_demo::parse_records` | shrank | 1 | 1.5 MiB → 390.6 KiB | -1.1 MiB (-75.0%) | 0 B → 0 B | 0 B (0.0%) |
| `diff_demo::fill_cache` | grew | 3 | 64.1 KiB → 320.1 KiB | +256.0 KiB (+399.4%) | 64.0 KiB → 320.1 KiB | +256.0 KiB (+399.9%) |

1 function unchanged, not shown (--all shows it)

<details><summary><code>diff_demo::parse_records</code>: lines</summary>

```text
 Base #   Head #   Base incr.   Head incr.   Incr. change   Base peak   Head peak   Peak change   Diff   Line Contents
======================================================================================================================
     29       29          0 B          0 B            0 B     1.5 MiB   390.6 KiB      -1.1 MiB          fn parse_records(head: bool) -> usize {
     30       30          0 B          0 B            0 B         0 B         0 B           0 B              let capacity = if head { 100_000 } else { 400_000 };
     31       31      1.5 MiB    390.6 KiB       -1.1 MiB     1.5 MiB   390.6 KiB      -1.1 MiB              let mut records: Vec<u32> = Vec::with_capacity(capacity);
     32       32          0 B          0 B            0 B         0 B         0 B           0 B              records.extend(0..100_000);
     33       33          0 B          0 B            0 B         0 B         0 B           0 B              records.iter().filter(|r| **r % 3 == 0).count()
     34       34     -1.5 MiB   -390.6 KiB       +1.1 MiB         0 B         0 B           0 B          }
```

</details>

<details><summary><code>diff_demo::fill_cache</code>: lines</summary>

```text
 Base #   Head #   Base incr.   Head incr.   Incr. change   Base peak   Head peak   Peak change   Diff   Line Contents
======================================================================================================================
     19       19     64.0 KiB    320.1 KiB     +256.0 KiB    64.1 KiB   320.1 KiB    +256.0 KiB          fn fill_cache(cache: &mut Vec<Vec<u8>>, head: bool) {
     20       20     64.0 KiB     64.0 KiB            0 B    64.0 KiB    64.0 KiB           0 B              let entry = vec![7u8; 64 * 1024];
     21       21         32 B         64 B          +32 B        96 B        96 B           0 B              cache.push(entry);
     22       22          0 B    256.0 KiB     +256.0 KiB         0 B   256.0 KiB    +256.0 KiB              if head {
     24       24                 256.0 KiB     +256.0 KiB               256.0 KiB    +256.0 KiB                  cache.push(vec![8u8; 256 * 1024]);
     26       26          0 B          0 B            0 B         0 B         0 B           0 B          }
```

</details>
"#
    );
}

#[test]
fn percent_threshold_fails_past_it_and_passes_below() {
    let dir = scratch("diff-percent");
    let (base, head) = (fixture("base.json"), fixture("head.json"));
    let (_, err, code) = diff(&dir, &[&base, &head, "--fail-over", "10%"]);
    assert_eq!(code, Some(1));
    assert_eq!(
        err,
        r#"mprof: diff_demo::fill_cache: peak grew from 64.1 KiB to 320.1 KiB (+256.0 KiB, +399.4%), past --fail-over 10%
mprof: diff_demo::fill_cache: kept/call grew from 64.0 KiB to 320.1 KiB (+256.0 KiB, +399.9%), past --fail-over 10%
"#
    );
    let (_, err, code) = diff(&dir, &[&base, &head, "--fail-over", "400%"]);
    assert_eq!(code, Some(0));
    assert_eq!(
        err,
        "mprof: no function's peak or kept/call grew past --fail-over 400%\n"
    );
}

#[test]
fn absolute_threshold_fails_past_it_and_passes_below() {
    let dir = scratch("diff-absolute");
    let (base, head) = (fixture("base.json"), fixture("head.json"));
    let (_, err, code) = diff(&dir, &[&base, &head, "--fail-over", "200KiB"]);
    assert_eq!(code, Some(1));
    assert_eq!(
        err,
        r#"mprof: diff_demo::fill_cache: peak grew from 64.1 KiB to 320.1 KiB (+256.0 KiB, +399.4%), past --fail-over 200.0 KiB
mprof: diff_demo::fill_cache: kept/call grew from 64.0 KiB to 320.1 KiB (+256.0 KiB, +399.9%), past --fail-over 200.0 KiB
"#
    );
    // MB is MiB, as in the runtime's sizes.
    let (_, err, code) = diff(&dir, &[&base, &head, "--fail-over", "1MB"]);
    assert_eq!(code, Some(0));
    assert_eq!(
        err,
        "mprof: no function's peak or kept/call grew past --fail-over 1.0 MiB\n"
    );
}

#[test]
fn a_bad_threshold_is_a_usage_error() {
    let dir = scratch("diff-bad-threshold");
    let out = mprof(&dir, &["diff", "a.json", "b.json", "--fail-over", "ten"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("expected a percentage such as 10%"),
        "{}",
        stderr(&out)
    );
}

/// `mprof diff` of `contents` (as bad.json) against the recorded base: the
/// one line on stderr and status 2, in either position.
fn refused(name: &str, contents: Option<&str>) -> String {
    let dir = scratch(name);
    if let Some(contents) = contents {
        std::fs::write(dir.join("bad.json"), contents).unwrap();
    }
    let good = fixture("base.json");
    let out = mprof(&dir, &["diff", "bad.json", &good]);
    assert_eq!(out.status.code(), Some(2));
    assert_one_line_error(&out, "bad.json");
    assert_eq!(stdout(&out), "");
    let swapped = mprof(&dir, &["diff", &good, "bad.json"]);
    assert_eq!(swapped.status.code(), Some(2));
    assert_eq!(stderr(&swapped), stderr(&out));
    stderr(&out)
}

#[test]
fn a_missing_file_is_refused() {
    assert_eq!(
        refused("diff-missing", None),
        "mprof: cannot read bad.json: no such file or directory\n"
    );
}

#[test]
fn a_file_that_is_not_json_is_refused() {
    assert_eq!(
        refused("diff-not-json", Some("Filename: x.rs\n")),
        "mprof: cannot read bad.json: not JSON (expected value at line 1 column 1)\n"
    );
}

#[test]
fn json_that_is_not_a_memprof_report_is_refused() {
    assert_eq!(
        refused("diff-not-memprof", Some(r#"{"name": "x"}"#)),
        r#"mprof: cannot read bad.json: not a memprof report (no `functions` list; write one with MEMPROF_JSON=FILE)
"#
    );
    assert_eq!(
        refused(
            "diff-wrong-fields",
            Some(r#"{"schema": 1, "functions": [{"name": 3}]}"#)
        ),
        "mprof: cannot read bad.json: not a memprof report (invalid type: integer `3`, expected a string at line 1 column 38)\n"
    );
}

#[test]
fn a_report_without_schema_is_refused_as_older() {
    assert_eq!(
        refused("diff-no-schema", Some(r#"{"functions": []}"#)),
        r#"mprof: cannot read bad.json: no schema version: written by a memprof older than this mprof (schema 1); record it again with this version of memprof
"#
    );
}

#[test]
fn other_schema_versions_are_refused() {
    assert_eq!(
        refused("diff-old-schema", Some(r#"{"schema": 0, "functions": []}"#)),
        "mprof: cannot read bad.json: schema 0 is older than this mprof reads (1); record it again with this version of memprof\n"
    );
    assert_eq!(
        refused("diff-new-schema", Some(r#"{"schema": 2, "functions": []}"#)),
        "mprof: cannot read bad.json: schema 2 is newer than this mprof reads (1); update mprof\n"
    );
}
