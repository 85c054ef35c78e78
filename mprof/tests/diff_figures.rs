//! `mprof diff`'s figures beyond memory held: bytes allocated per call
//! (shown in a unit, never judged), allocations per call below one, and a
//! framework's pool (Pool allocated judged, its reserve shown), on
//! hand-written reports.

mod common;

use common::report::{diff, simple, write};
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
