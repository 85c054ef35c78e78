//! A line of an `async fn` is the caller of the profiled functions it calls
//! while it is polled (issue 60): a synchronous callee, and an `async fn`
//! awaited on it, are in the line's `calls` with their bytes, and the
//! summary's top lines mark it `[calls …]`, so that nobody adds the
//! callee's bytes to it a second time. Before, such a line had `"calls":
//! []`, and "Top lines by Live" read like 19.1 MiB of lines against a
//! 16.4 MiB heap. One test in this process, so that the report holds this
//! program's calls only; the other runs it in a child with exact sites.

// A value made on a line of its own and returned: a row of its own.
#![allow(clippy::let_and_return)]

#[path = "support/child.rs"]
mod child;

use child::{is_child, run_child};
use memprof::profile;
use serde_json::Value;
use std::future::Future;
use std::hint::black_box;
use std::pin::pin;
use std::sync::Mutex;
use std::task::{Context, Poll, Waker};

/// Every order `remember` was given, for ever: the leak.
static KEPT: Mutex<Vec<Vec<u8>>> = Mutex::new(Vec::new());

/// Returns `Pending` once: each handler is polled more than once.
struct YieldOnce(bool);

impl Future for YieldOnce {
    type Output = ();
    fn poll(mut self: std::pin::Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if std::mem::replace(&mut self.0, true) {
            Poll::Ready(())
        } else {
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    }
}

/// Polls `future` on this thread until it is ready.
fn block_on<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(out) = future.as_mut().poll(&mut cx) {
            return out;
        }
    }
}

/// Keeps a 1000-byte order: the synchronous callee.
#[profile]
fn remember(id: usize) {
    let order = black_box(vec![id as u8; 1000]);
    KEPT.lock().unwrap().push(order);
}

/// Makes a 300-byte body across an await: the `async fn` callee.
#[profile]
async fn fetch(n: usize) -> Vec<u8> {
    YieldOnce(false).await;
    let body = black_box(vec![2u8; n]);
    body
}

/// The handler: both calls on lines of its own, after an await.
#[profile]
async fn handle(id: usize) -> usize {
    YieldOnce(false).await;
    remember(id);
    let body = fetch(300).await;
    let len = body.len();
    len
}

/// Five requests, one after another on this thread. The first calls of
/// each function print tables of their own (the runtime enters them), the
/// later ones the kernel enters: the edges of both are counted.
fn serve() -> usize {
    // The orders' vector, made before any handler runs: a push allocates
    // nothing.
    KEPT.lock().unwrap().reserve(16);
    (0..5).map(|id| block_on(handle(id))).sum()
}

/// `(function, calls, allocated bytes)` of each call a line made.
fn calls_of(report: &Value, function: &str, text: &str) -> Vec<(String, u64, u64)> {
    line(report, function, text)["calls"]
        .as_array()
        .unwrap_or_else(|| panic!("no calls on {text:?}"))
        .iter()
        .map(|c| {
            (
                c["function"].as_str().unwrap().to_owned(),
                c["calls"].as_u64().unwrap(),
                c["allocated_bytes"].as_u64().unwrap(),
            )
        })
        .collect()
}

fn line<'a>(report: &'a Value, function: &str, text: &str) -> &'a Value {
    report["functions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == function)
        .unwrap_or_else(|| panic!("no {function}"))["lines"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["contents"].as_str().unwrap().contains(text))
        .unwrap_or_else(|| panic!("no {text:?} in {function}"))
}

/// A function's statement lines: its rows with figures after the `fn` row.
fn statements(function: &Value) -> impl Iterator<Item = &Value> {
    function["lines"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|l| !l["increment"].is_null())
        .skip(1)
}

fn owned(calls: &[(&str, u64, u64)]) -> Vec<(String, u64, u64)> {
    calls
        .iter()
        .map(|&(f, c, b)| (f.to_owned(), c, b))
        .collect()
}

/// The rows of one of the summary's top lists, from the function's name on.
fn top_rows<'a>(text: &'a str, title: &str) -> Vec<&'a str> {
    text.split(title)
        .nth(1)
        .unwrap_or_else(|| panic!("no {title:?} in {text}"))
        .split("\nTop lines by")
        .next()
        .unwrap()
        .lines()
        .filter(|l| !l.contains('↳'))
        .filter_map(|l| l.split_once("async_call_edges::").map(|(_, rest)| rest))
        .collect()
}

#[test]
fn an_async_fns_line_names_the_profiled_calls_it_made() {
    assert_eq!(serve(), 5 * 300);
    let report: Value = serde_json::from_str(&memprof::report().to_json()).unwrap();
    assert_eq!(
        calls_of(&report, "async_call_edges::handle", "remember(id);"),
        owned(&[("async_call_edges::remember", 5, 5000)])
    );
    assert_eq!(
        calls_of(
            &report,
            "async_call_edges::handle",
            "let body = fetch(300).await;"
        ),
        owned(&[("async_call_edges::fetch", 5, 1500)])
    );
    assert_eq!(calls_of(&report, "async_call_edges::handle", "let len"), []);
    // The handlers were polled from no profiled line.
    assert_eq!(
        calls_of(&report, "async_call_edges::handle", "async fn handle"),
        []
    );
    // The handler's lines are marked, their callees' are not: added up,
    // the unmarked lines count each byte once.
    let text = memprof::report().summary().to_string();
    assert_eq!(
        top_rows(&text, "Top lines by Increment"),
        [
            "handle     remember(id);   [calls async_call_edges::remember]",
            "remember   let order = black_box(vec![id as u8; 1000]);",
            "fetch      let body = black_box(vec![2u8; n]);",
            "handle     let body = fetch(300).await;   [calls async_call_edges::fetch]",
        ],
        "{text}"
    );
}

#[test]
#[ignore = "a child run: this file's tests start it"]
fn child_handlers() {
    if !is_child() {
        return;
    }
    assert_eq!(serve(), 5 * 300);
}

#[test]
fn top_lines_by_live_count_a_callees_bytes_once() {
    let dir = child::scratch_dir("async-call-edges");
    let json = dir.join("report.json");
    let (text, _) = run_child(
        "child_handlers",
        &[
            ("MEMPROF_SITES", "1"),
            ("MEMPROF_REPORT", "exit"),
            ("MEMPROF_JSON", json.to_str().unwrap()),
        ],
    );
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    // Every order is still kept: the handler's line and the callee's line
    // both hold the 5000 bytes, the second through the first.
    let call = line(&report, "async_call_edges::handle", "remember(id);");
    assert_eq!(call["in_use_bytes"], 5000);
    assert_eq!(
        calls_of(&report, "async_call_edges::handle", "remember(id);"),
        owned(&[("async_call_edges::remember", 5, 5000)])
    );
    let order = line(&report, "async_call_edges::remember", "let order");
    assert_eq!(order["in_use_bytes"], 5000);
    // The bodies were freed by their caller.
    assert_eq!(
        line(&report, "async_call_edges::handle", "let body")["in_use_bytes"],
        0
    );
    assert_eq!(
        calls_of(
            &report,
            "async_call_edges::handle",
            "let body = fetch(300).await;"
        ),
        owned(&[("async_call_edges::fetch", 5, 1500)])
    );
    assert_eq!(
        top_rows(&text, "Top lines by Live (still in use)"),
        [
            "handle     remember(id);   [calls async_call_edges::remember]",
            "remember   let order = black_box(vec![id as u8; 1000]);",
        ],
        "{text}"
    );
    // The lines not marked as callers add up to the program's Live, once.
    let live: u64 = report["functions"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(statements)
        .filter(|l| l["calls"].as_array().is_none_or(Vec::is_empty))
        .filter_map(|l| l["in_use_bytes"].as_u64())
        .sum();
    assert_eq!(live, 5000);
}
