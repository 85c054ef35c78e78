//! A line is marked as calling a profiled function only where the runtime
//! saw that function's calls begin while the line was open (issue 51): a
//! method of another type with the same name (`Vec::push` beside a
//! profiled `Stack::push`) is no call of it, a line that calls two profiled
//! functions names both, and a `while` whose condition reaches a profiled
//! function through one that is not profiled names it. A top line inside
//! another listed line of its function (a `for`'s body) says so. One test
//! in this binary, so that the report holds this program's calls only.

use memprof::profile;
use std::hint::black_box;

struct Stack {
    items: Vec<u64>,
}

impl Stack {
    #[profile]
    fn push(&mut self, item: u64) {
        self.items.push(item);
    }
}

#[profile]
fn bytes(n: usize) -> Vec<u8> {
    black_box(vec![1u8; n])
}

#[profile]
fn words(n: usize) -> Vec<u64> {
    black_box(vec![2u64; n])
}

/// Takes one from `left` with a 64-byte scratch buffer; true while some
/// are left.
#[profile]
fn step(left: &mut usize) -> bool {
    let scratch = black_box(vec![0u8; 64]);
    *left -= 1;
    scratch.len() == 64 && *left > 0
}

/// Not profiled: the `while` line's call of `step` goes through it.
fn more(left: &mut usize) -> bool {
    step(left)
}

#[profile]
fn run() -> usize {
    let mut stack = Stack { items: Vec::new() };
    let mut plain: Vec<u64> = Vec::new();
    for i in 0..5 {
        plain.push(i);
        stack.push(i);
    }
    let both = bytes(100).len() + words(10).len();
    let mut left = 4;
    let mut rounds = 0;
    while more(&mut left) {
        rounds += 1;
    }
    plain.len() + stack.items.len() + both + rounds
}

/// Allocates nothing.
#[profile]
fn tag(n: usize) -> usize {
    black_box(n + 1)
}

/// One function called from two rows by turns.
#[profile]
fn alternate() -> usize {
    let mut sum = 0;
    for i in 0..3 {
        let a = tag(i);
        let b = tag(a);
        sum += a + b;
    }
    sum
}

/// `(function, calls, allocated bytes)` of each call the row made.
fn calls_of(report: &memprof::Report, text: &str) -> Vec<(String, u64, u64)> {
    let function = if text.contains("tag(") {
        "alternate"
    } else {
        "run"
    };
    let run = report.function(function).unwrap();
    let row = run.line_containing(text).unwrap();
    row.calls
        .as_ref()
        .unwrap()
        .iter()
        .map(|c| (c.function.clone(), c.calls, c.allocated_bytes))
        .collect()
}

#[test]
fn markers_come_from_the_calls_the_runtime_saw_begin() {
    assert_eq!(run(), 5 + 5 + 110 + 3);
    assert_eq!(alternate(), 3 + 5 + 7);
    let report = memprof::report();
    let owned = |v: &[(&str, u64, u64)]| -> Vec<(String, u64, u64)> {
        v.iter().map(|&(f, c, b)| (f.to_owned(), c, b)).collect()
    };
    // `Vec::push`, though a profiled function is called `push` too.
    assert_eq!(calls_of(&report, "plain.push(i);"), []);
    // 5 calls; the first allocates 4 items (32 B), the fifth grows to 8 (64 B).
    assert_eq!(
        calls_of(&report, "stack.push(i);"),
        owned(&[("call_edges::Stack::push", 5, 96)])
    );
    assert_eq!(
        calls_of(&report, "let both"),
        owned(&[("call_edges::bytes", 1, 100), ("call_edges::words", 1, 80)])
    );
    // Four conditions, each a call of `step` through `more` (64 B each).
    assert_eq!(
        calls_of(&report, "while more(&mut left) {"),
        owned(&[("call_edges::step", 4, 256)])
    );
    assert_eq!(calls_of(&report, "rounds += 1;"), []);
    assert_eq!(
        calls_of(&report, "let a = tag(i);"),
        owned(&[("call_edges::tag", 3, 0)])
    );
    assert_eq!(
        calls_of(&report, "let b = tag(a);"),
        owned(&[("call_edges::tag", 3, 0)])
    );
    // A row that never ran has no list; the `fn` row's calls are those
    // made from outside any profiled row (none here).
    assert_eq!(calls_of(&report, "fn run()"), []);

    let summary = report.summary();
    let text = summary.to_string();
    let marked = |contents: &str| -> Vec<String> {
        text.lines()
            .filter(|l| l.contains(contents))
            .map(|l| l.split_once(contents).unwrap().1.trim().to_owned())
            .collect()
    };
    // Each in both top lists (Increment, then Peak) where it is in both.
    // No call marked on `Vec::push`'s line; both lines are inside the
    // `for` of line 52, listed too, whose 128 B are theirs.
    assert_eq!(
        marked("plain.push(i);"),
        ["[in line 52]", "[in line 52]"],
        "{text}"
    );
    assert_eq!(
        marked("stack.push(i);"),
        [
            "[calls call_edges::Stack::push]   [in line 52]",
            "[calls call_edges::Stack::push]   [in line 52]"
        ],
        "{text}"
    );
    assert_eq!(marked("for i in 0..5 {"), ["", ""], "{text}");
    assert_eq!(
        marked("let both = bytes(100).len() + words(10).len();"),
        ["[calls call_edges::bytes, call_edges::words]"],
        "{text}"
    );
    assert_eq!(
        marked("while more(&mut left) {"),
        ["[calls call_edges::step]"],
        "{text}"
    );
    let top = summary
        .top_peak
        .iter()
        .find(|l| l.contents.starts_with("let both"))
        .unwrap();
    assert_eq!(top.calls.as_deref(), Some("call_edges::bytes"));
    assert_eq!((top.callees.len(), top.within), (2, None));
    let inner = summary
        .top_increment
        .iter()
        .find(|l| l.contents == "plain.push(i);")
        .unwrap();
    assert_eq!((inner.increment, inner.within), (64, Some(52)));
    let run = report.function("run").unwrap();
    assert_eq!(run.line_containing("plain.push").unwrap().within, Some(52));
    assert_eq!(run.line_containing("for i in").unwrap().within, Some(49));
}
