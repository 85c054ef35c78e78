//! `mprof diff`'s figures beyond memory held: bytes allocated per call
//! (shown in a unit, never judged), allocations per call below one, and a
//! framework's pool (Pool allocated judged, its reserve shown), on
//! hand-written reports.

mod common;

use common::report::{diff, function, simple, write};
use common::scratch;
use serde_json::json;

#[test]
fn bytes_allocated_per_call_show_in_a_unit_and_are_not_judged() {
    let dir = scratch("diff-allocated");
    let mut base = simple("app::parse", 2, 0, 64);
    base["lines"][1]["allocated_bytes"] = json!(2u64 << 20);
    let mut head = simple("app::parse", 2, 0, 64);
    head["lines"][1]["allocated_bytes"] = json!(10u64 << 20);
    write(&dir, "base.json", vec![base]);
    write(&dir, "head.json", vec![head]);
    // The churn grew fivefold: shown, in bytes, but held memory did not
    // move, so nothing is past --fail-over and the status stays "same".
    let (out, err, code) = diff(
        &dir,
        &["base.json", "head.json", "--all", "--fail-over", "1%"],
    );
    assert_eq!(
        (err.as_str(), code),
        (
            "mprof: no function's peak or kept/call grew past --fail-over 1%\n",
            Some(0)
        )
    );
    assert_eq!(
        out,
        r#"Filename: src/app.rs   Function: app::parse   Status: same

 Figure              Base      Head     Change   Change %
=========================================================
 Calls                  2         2          0       0.0%
 Peak                64 B      64 B        0 B       0.0%
 Kept/call            0 B       0 B        0 B       0.0%
 Allocated/call   1.0 MiB   5.0 MiB   +4.0 MiB    +400.0%
"#
    );
}

#[test]
fn allocations_per_call_below_one_are_shown_not_rounded_to_zero() {
    let dir = scratch("diff-allocs-per-call");
    // 20 allocations over 113,331 calls, then 40.
    let mut base = simple("app::parse", 113_331, 0, 64);
    base["lines"][1]["allocations"] = json!(20);
    let mut head = simple("app::parse", 113_331, 0, 64);
    head["lines"][1]["allocations"] = json!(40);
    write(&dir, "base.json", vec![base]);
    write(&dir, "head.json", vec![head]);
    let (out, err, code) = diff(&dir, &["base.json", "head.json", "--all"]);
    assert_eq!((err.as_str(), code), ("", Some(0)));
    assert!(
        out.contains(" Allocs/call   0.00018   0.00035   +0.00018    +100.0%\n"),
        "{out}"
    );
}

#[test]
fn a_framework_s_pool_is_compared_where_either_report_read_one() {
    let dir = scratch("diff-pool");
    let mut base = simple("app::train", 1, 0, 64);
    base["lines"][1]["pool_allocated"] = json!(1u64 << 20);
    base["lines"][1]["pool_reserved"] = json!(4u64 << 20);
    let mut head = simple("app::train", 1, 0, 64);
    head["lines"][1]["pool_allocated"] = json!(3u64 << 20);
    head["lines"][1]["pool_reserved"] = json!(8u64 << 20);
    write(&dir, "base.json", vec![base]);
    write(&dir, "head.json", vec![head]);
    // The tensors held grew: judged; the reserve, a cache, is shown only.
    let (out, err, code) = diff(&dir, &["base.json", "head.json", "--fail-over", "50%"]);
    assert_eq!(code, Some(1), "{err}");
    assert_eq!(
        out,
        r#"Filename: src/app.rs   Function: app::train   Status: grew   Past --fail-over: Pool allocated

 Figure              Base      Head     Change   Change %
=========================================================
 Calls                  1         1          0       0.0%
 Peak                64 B      64 B        0 B       0.0%
 Kept/call            0 B       0 B        0 B       0.0%
 Pool allocated   1.0 MiB   3.0 MiB   +2.0 MiB    +200.0%
 Pool reserved    4.0 MiB   8.0 MiB   +4.0 MiB    +100.0%
"#
    );
}

/// A function's lines with bytes in use, as two snapshots of a running
/// program have them (`MEMPROF_SITES`).
fn handler(calls: u64, live: u64) -> serde_json::Value {
    let mut function = function(
        "app::handle",
        calls,
        &[
            (20, None, None, "#[profile]"),
            (
                21,
                Some(300 * calls as i64),
                Some(400),
                "async fn handle() {",
            ),
            (
                22,
                Some(300 * calls as i64),
                Some(300),
                "    remember(&id);",
            ),
            (23, Some(0), Some(100), "    let prices = price();"),
            (24, None, None, "}"),
        ],
    );
    for (row, bytes) in [(1, live), (2, live), (3, 0)] {
        function["lines"][row]["in_use_bytes"] = json!(bytes);
    }
    function
}

#[test]
fn lines_show_live_where_the_runs_have_it() {
    let dir = scratch("diff-lines-live");
    // Two snapshots a while apart: 1 call, then 3, each keeping 312 bytes
    // in use on the line that calls `remember`; Kept/call stays the same,
    // the leaking line's Live grows by 624 B.
    write(&dir, "before.json", vec![handler(1, 312)]);
    write(&dir, "after.json", vec![handler(3, 936)]);
    let (out, err, code) = diff(&dir, &["before.json", "after.json", "--lines"]);
    assert_eq!((code, err.as_str()), (Some(0), ""), "{out}");
    assert_eq!(
        out,
        r#"Filename: src/app.rs   Function: app::handle   Status: grew

 Figure       Base    Head   Change   Change %
==============================================
 Calls           1       3       +2    +200.0%
 Peak        400 B   400 B      0 B       0.0%
 Kept/call   300 B   300 B      0 B       0.0%
 Live        312 B   936 B   +624 B    +200.0%

 Base #   Head #   Base incr.   Head incr.   Incr. change   Base peak   Head peak   Peak change   Base live   Head live   Live change   Diff   Line Contents
============================================================================================================================================================
     21       21        300 B        300 B            0 B       400 B       400 B           0 B       312 B       936 B        +624 B          async fn handle() {
     22       22        300 B        300 B            0 B       300 B       300 B           0 B       312 B       936 B        +624 B              remember(&id);
     23       23          0 B          0 B            0 B       100 B       100 B           0 B         0 B         0 B           0 B              let prices = price();
"#
    );
    // Without bytes in use, no Live columns (`diff.rs`:
    // `a_moved_line_still_matches_with_lines`).
}

#[test]
fn a_per_call_average_that_moved_by_its_rounding_has_not_changed() {
    let dir = scratch("diff-rounding");
    // −9,400 B over 100 calls, then −18,600 B over 200: −94 B a call, then
    // −93 B, truncated; a third run keeps −92 B a call, past the tolerance
    // (1 B and 0.1 % of 94 B).
    write(
        &dir,
        "base.json",
        vec![simple("app::drain", 100, -9_400, 64)],
    );
    write(
        &dir,
        "head.json",
        vec![simple("app::drain", 200, -18_600, 64)],
    );
    write(
        &dir,
        "later.json",
        vec![simple("app::drain", 200, -18_400, 64)],
    );
    let (out, err, code) = diff(&dir, &["base.json", "head.json", "--all"]);
    assert_eq!((err.as_str(), code), ("", Some(0)));
    assert_eq!(
        out,
        r#"Filename: src/app.rs   Function: app::drain   Status: same

 Figure       Base    Head   Change   Change %
==============================================
 Calls         100     200     +100    +100.0%
 Peak         64 B    64 B      0 B       0.0%
 Kept/call   -94 B   -93 B     +1 B        n/a
"#
    );
    let (out, _, _) = diff(&dir, &["base.json", "later.json", "--all"]);
    assert!(
        out.starts_with("Filename: src/app.rs   Function: app::drain   Status: changed\n"),
        "{out}"
    );
    assert!(
        out.contains(" Kept/call   -94 B   -92 B     +2 B        n/a\n"),
        "{out}"
    );
}
