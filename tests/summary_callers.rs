//! A line that calls a profiled function counts that function's bytes
//! too: in the summary's top lines it names the callee, so that a reader
//! never adds the two. One test in this binary, so that the summary holds
//! this program's functions only.

use memprof::profile;
use std::hint::black_box;

// The `let` gives the buffer a row of its own.
#[allow(clippy::let_and_return)]
#[profile]
fn load_lines(n: usize) -> Vec<u64> {
    let lines = black_box(vec![7u64; n]);
    lines
}

#[profile]
fn analyse(n: usize) -> usize {
    let lines = load_lines(n);
    let copy = black_box(lines.clone());
    copy.len() + lines.len()
}

#[test]
fn a_line_that_calls_a_profiled_function_names_it_in_the_top_lines() {
    assert_eq!(analyse(1024), 2048);
    let summary = memprof::report().summary();
    let text = summary.to_string();
    let top = text
        .split("Top lines by Increment")
        .nth(1)
        .unwrap()
        .split("Top lines by Peak")
        .next()
        .unwrap();
    let rows: Vec<&str> = top
        .lines()
        .filter(|l| l.contains("summary_callers::"))
        .map(|l| l.split_once("summary_callers::").unwrap().1)
        .collect();
    assert_eq!(
        rows,
        [
            "analyse      let lines = load_lines(n);   [calls summary_callers::load_lines]",
            "analyse      let copy = black_box(lines.clone());",
            "load_lines   let lines = black_box(vec![7u64; n]);",
        ],
        "{text}"
    );
    let callee = summary
        .top_increment
        .iter()
        .find(|l| l.contents == "let lines = load_lines(n);")
        .unwrap();
    assert_eq!(
        (callee.increment, callee.calls.as_deref()),
        (8192, Some("summary_callers::load_lines"))
    );
}
