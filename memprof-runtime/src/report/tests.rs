//! Report data's unit tests: JSON's head, and merging processes.

use super::*;

#[test]
fn json_starts_with_the_schema_version() {
    assert_eq!(
        Report::default().to_json(),
        r#"{"schema":1,"functions":[],"summary":{"functions":[],"top_increment":[],"top_peak":[],"top_live":[]}}"#
    );
}

/// A line as a report shows `f`.
fn shown(f: &RowFigures, counted: bool) -> LineReport {
    let mut line = LineReport::empty(7, "let v = f();".to_owned());
    line.set_figures(f, counted);
    line
}

#[test]
fn processes_merge_by_the_rule_that_merges_threads() {
    let a = RowFigures {
        occurrences: 2,
        increment: -300,
        peak: 4096,
        allocations: 3,
        allocated: 5000,
        mem_usage: 10_000,
        gpu: Some(GpuFigures {
            increment: 1 << 20,
            usage: 3 << 20,
            peak: 2 << 20,
        }),
        driver: None,
        pool: Some(PoolFigures {
            increment: 4 << 20,
            allocated: 40 << 20,
            reserved: 64 << 20,
        }),
    };
    let b = RowFigures {
        occurrences: 5,
        increment: 1000,
        peak: 512,
        allocations: 9,
        allocated: 900,
        mem_usage: 12_000,
        gpu: Some(GpuFigures {
            increment: -(1 << 20),
            usage: 1 << 20,
            peak: 4 << 20,
        }),
        driver: Some(DriverFigures {
            increment: 64,
            usage: 700 << 20,
        }),
        pool: Some(PoolFigures {
            increment: -(1 << 20),
            allocated: 36 << 20,
            reserved: 96 << 20,
        }),
    };
    let mut threads = a;
    threads.add(&b);
    let mut processes = shown(&a, true);
    processes.add(&shown(&b, true));
    assert_eq!(processes, shown(&threads, true));
    assert_eq!(
        (processes.occurrences, processes.increment, processes.peak),
        (7, Some(700), Some(4096))
    );
    assert_eq!(
        (
            processes.allocations,
            processes.allocated_bytes,
            processes.mem_usage
        ),
        (Some(12), Some(5900), Some(12_000))
    );
    assert_eq!(
        (
            processes.gpu_increment,
            processes.gpu_usage,
            processes.gpu_peak
        ),
        (Some(0), Some(3 << 20), Some(4 << 20))
    );
    assert_eq!(
        (processes.gpu_driver_increment, processes.gpu_driver_usage),
        (Some(64), Some(700 << 20))
    );
    assert_eq!(
        (
            processes.pool_increment,
            processes.pool_allocated,
            processes.pool_reserved
        ),
        (Some(3 << 20), Some(40 << 20), Some(96 << 20))
    );
    // A line that never ran in either stays without figures.
    let mut never = shown(&RowFigures::default(), false);
    never.add(&shown(&RowFigures::default(), false));
    assert_eq!(
        (never.increment, never.mem_usage, never.gpu_usage),
        (None, None, None)
    );
}

#[test]
fn a_row_written_before_call_edges_reads_without_calls_or_within() {
    let mut row = LineReport::empty(3, "let v = f();".to_owned());
    row.calls = Some(vec![LineCall {
        function: "app::f".to_owned(),
        calls: 2,
        allocated_bytes: 64,
    }]);
    row.within = Some(2);
    let json = miniserde::json::to_string(&row);
    let added = r#","calls":[{"function":"app::f","calls":2,"allocated_bytes":64}],"within":2"#;
    assert!(json.ends_with(&format!("{added}}}")), "{json}");
    let back: LineReport = miniserde::json::from_str(&json).unwrap();
    assert_eq!(back, row);
    let older = json.replace(added, "");
    let read: LineReport = miniserde::json::from_str(&older).unwrap();
    assert_eq!((read.calls, read.within), (None, None));
}
