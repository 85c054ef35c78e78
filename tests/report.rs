//! What `memprof::report()` holds: the functions that ran, not every one
//! registered; a call still running on the calling thread; and nothing of
//! its own making in any figure. Each test profiles functions of its own.
//!
//! A buffer whose contents nothing reads passes through `black_box`: an
//! optimized build (`cargo test --release`) removes such an allocation, and
//! its table then rightly shows nothing.

// The point is to allocate on the heap.
#![allow(clippy::useless_vec)]

use memprof::{Measurement, measure, profile};
use std::hint::black_box;

#[allow(dead_code)]
#[profile]
fn never_called() -> usize {
    let v = vec![0u8; 100];
    v.len()
}

#[profile]
fn called_once() -> usize {
    let v = vec![0u8; 100];
    v.len()
}

#[test]
fn functions_never_called_are_left_out_of_report_display_and_json() {
    // Regression: every registered function was listed, never-called ones as
    // "Calls: 0 (aggregated)" with an empty table.
    assert_eq!(called_once(), 100);
    let report = memprof::report();
    assert_eq!(report.function("called_once").unwrap().calls, 1);
    assert!(report.function("never_called").is_none());
    assert!(
        report
            .functions
            .iter()
            .all(|f| f.calls > 0 || f.running > 0)
    );
    let text = report.to_string();
    assert!(
        text.contains("Function: report::called_once   Calls: 1\n"),
        "{text}"
    );
    assert!(!text.contains("never_called"), "{text}");
    assert!(!text.contains("Calls: 0"), "{text}");
    let json = report.to_json();
    assert!(json.contains(r#""name":"report::called_once""#), "{json}");
    assert!(!json.contains("never_called"), "{json}");
}

#[profile]
fn called_before_a_report() -> usize {
    let v = vec![0u8; 100];
    v.len()
}

#[profile]
fn takes_a_report() -> usize {
    let report = memprof::report();
    let text = report.to_string();
    let n = report.functions.len();
    drop(report);
    n + text.len()
}

#[test]
fn taking_a_report_counts_nowhere() {
    // Regression: `let r = memprof::report();` showed +73 KiB on the user's
    // line, and its drop as much freed. (Its own function: `called_once`
    // is called once, by the test above, which runs beside this one.)
    assert_eq!(called_before_a_report(), 100);
    let (report, m) = measure(memprof::report);
    assert_eq!(m, Measurement::default());
    let (copy, m) = measure(|| report.clone());
    assert_eq!(m, Measurement::default());
    let ((), m) = measure(|| drop(copy));
    assert_eq!(m, Measurement::default());
    // The text is the caller's: what the formatter writes counts, and
    // nothing else.
    let (text, m) = measure(|| report.to_string());
    assert_eq!(m.increment, text.capacity() as i64);
    let ((), m) = measure(|| drop(report));
    assert_eq!(m, Measurement::default());
    drop(text);

    takes_a_report();
    let table = memprof::report()
        .function("takes_a_report")
        .unwrap()
        .clone();
    let row = |needle: &str| {
        let row = table.line_containing(needle).unwrap();
        (row.increment, row.peak)
    };
    assert_eq!(row("let report = memprof::report();"), (Some(0), Some(0)));
    assert_eq!(row("drop(report);"), (Some(0), Some(0)));
    // The text kept to the end of the call: its bytes, at its line.
    let text_row = row("let text = report.to_string();");
    assert!(text_row.0.unwrap() > 0, "{table}");
}

const REPORTS_LINE: u32 = line!() + 1;
#[profile]
fn reports_from_inside() -> memprof::Report {
    let v = black_box(vec![0u8; 1000]);
    let report = memprof::report();
    drop(v);
    report
}

#[test]
fn a_call_still_running_shows_as_running_with_its_rows_so_far() {
    // Regression: a call still running showed as "Calls: 0", without rows.
    let inside = reports_from_inside();
    let function = inside.function("reports_from_inside").unwrap();
    assert_eq!((function.calls, function.running), (0, 1));
    let figures: Vec<(u32, Option<i64>, u64)> = function
        .lines
        .iter()
        .map(|l| (l.line, l.increment, l.occurrences))
        .collect();
    let l = REPORTS_LINE;
    assert_eq!(
        figures,
        [
            (l, None, 0),
            // The `fn` row has its figures when the call ends.
            (l + 1, None, 0),
            (l + 2, Some(1000), 1),
            // The line running `report()`.
            (l + 3, None, 0),
            (l + 4, None, 0),
            (l + 5, None, 0),
            (l + 6, None, 0),
        ]
    );
    let title = function.to_string();
    assert_eq!(
        title.lines().next().unwrap(),
        "Filename: tests/report.rs   Function: report::reports_from_inside   Calls: 1 running"
    );
    drop(inside);
    let after = memprof::report();
    let function = after.function("reports_from_inside").unwrap();
    assert_eq!((function.calls, function.running), (1, 0));
}
