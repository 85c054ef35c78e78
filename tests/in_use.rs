//! Bytes in use (`Live`): what a line or function allocated that is still
//! allocated when the report is taken, whoever frees the rest and on
//! whichever thread, with `MEMPROF_SITES=1` (exact).

// A value made on a line of its own and returned: a row of its own.
#![allow(clippy::let_and_return)]

#[path = "support/child.rs"]
mod child;

use child::{is_child, run_child};
use serde_json::Value;
use std::hint::black_box;
use std::sync::Mutex;

static KEPT: Mutex<Vec<Vec<u8>>> = Mutex::new(Vec::new());

/// Keeps each order for ever: the leak.
#[memprof::profile]
#[inline(never)]
fn remember(n: usize) {
    for _ in 0..n {
        let order = black_box(vec![1u8; 300]);
        KEPT.lock().unwrap().push(order);
    }
}

/// Returns what it made: freed by the caller, outside profiled code.
#[memprof::profile]
#[inline(never)]
fn price() -> Vec<u8> {
    let quote = black_box(vec![2u8; 1000]);
    quote
}

/// Hands what it makes to another thread, which frees it.
#[memprof::profile]
#[inline(never)]
fn hand_off(to: &std::sync::mpsc::SyncSender<Vec<u8>>) {
    let body = black_box(vec![3u8; 500]);
    to.send(body).unwrap();
}

static CACHE: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Builds a key across an await, on whichever worker resumes it.
#[inline(never)]
fn key_of(id: usize) -> String {
    black_box(format!("order-{id:06}"))
}

/// An async handler that caches every key: the leak, across `.await`.
#[memprof::profile]
async fn handle(id: usize) -> usize {
    tokio::task::yield_now().await;
    let key = key_of(id);
    tokio::task::yield_now().await;
    let len = key.len();
    CACHE.lock().unwrap().push(key);
    len
}

#[test]
#[ignore = "a child run: this file's tests start it"]
fn child_async() {
    if !is_child() {
        return;
    }
    // The cache's own vector, made before any handler runs.
    CACHE.lock().unwrap().reserve(1000);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap();
    let total: usize = runtime.block_on(async {
        let tasks: Vec<_> = (0..200).map(|id| tokio::spawn(handle(id))).collect();
        let mut total = 0;
        for task in tasks {
            total += task.await.unwrap();
        }
        total
    });
    assert_eq!(total, 200 * 12);
}

#[test]
fn async_calls_have_sites_and_live_bytes_across_awaits_and_threads() {
    let dir = child::scratch_dir("in-use-async");
    let json = dir.join("report.json");
    run_child(
        "child_async",
        &[
            ("MEMPROF_SITES", "1"),
            ("MEMPROF_REPORT", "exit"),
            ("MEMPROF_JSON", json.to_str().unwrap()),
        ],
    );
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    // 200 keys of 12 bytes, each in a block of its own, still cached.
    let key = line(&report, "in_use::handle", "let key = key_of(id);");
    assert_eq!((figures(key).0, figures(key).1), (200, 2400));
    let sites = key["sites"].as_array().unwrap();
    let top = &sites[0];
    assert_eq!(top["allocated_bytes"], 2400, "{sites:?}");
    assert_eq!(top["in_use_bytes"], 2400, "{sites:?}");
    let names: Vec<&str> = top["frames"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["function"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"in_use::key_of"), "{names:?}");
    // The push into the reserved vector allocates nothing.
    let push = line(&report, "in_use::handle", "push(key)");
    assert_eq!((figures(push).0, figures(push).1), (0, 0));
    let handle = line(&report, "in_use::handle", "async fn handle");
    assert_eq!((figures(handle).0, figures(handle).1), (200, 2400));
}

/// A small async call with a few rows, for many calls on one thread.
#[memprof::profile]
async fn tiny(id: usize) -> usize {
    let key = key_of(id);
    tokio::task::yield_now().await;
    let len = key.len();
    len
}

#[test]
#[ignore = "a child run: this file's tests start it"]
fn child_many_async_calls() {
    if !is_child() {
        return;
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let total: usize = runtime.block_on(async {
        let mut total = 0;
        for id in 0..20_000 {
            total += tiny(id).await;
        }
        total
    });
    assert_eq!(total, 20_000 * 12);
}

#[test]
fn twenty_thousand_async_calls_on_one_thread_keep_every_site() {
    let dir = child::scratch_dir("in-use-many");
    let json = dir.join("report.json");
    run_child(
        "child_many_async_calls",
        &[
            ("MEMPROF_SITES", "1"),
            ("MEMPROF_REPORT", "exit"),
            ("MEMPROF_JSON", json.to_str().unwrap()),
        ],
    );
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    // Each key's 12 bytes, in sites that add up to the line's: none lost
    // to a full table.
    let key = line(&report, "in_use::tiny", "let key = key_of(id);");
    assert_eq!(key["allocated_bytes"], 240_000);
    let sites: u64 = key["sites"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["allocated_bytes"].as_u64().unwrap())
        .sum();
    assert_eq!(sites, 240_000);
}

#[test]
#[ignore = "a child run: this file's tests start it"]
fn child_service() {
    if !is_child() {
        return;
    }
    // Bounded: its buffer is made here, so a send allocates nothing.
    let (to, from) = std::sync::mpsc::sync_channel::<Vec<u8>>(16);
    let freer = std::thread::spawn(move || from.into_iter().map(|v| v.len()).sum::<usize>());
    for _ in 0..10 {
        drop(black_box(price()));
        hand_off(&to);
    }
    drop(to);
    assert_eq!(freer.join().unwrap(), 5000);
    remember(100);
}

/// The report at exit, as JSON, and the text printed at exit.
fn exit_report() -> (Value, String) {
    let dir = child::scratch_dir("in-use");
    let json = dir.join("report.json");
    let (text, _) = run_child(
        "child_service",
        &[
            ("MEMPROF_SITES", "1"),
            ("MEMPROF_REPORT", "exit"),
            ("MEMPROF_JSON", json.to_str().unwrap()),
        ],
    );
    let report = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    (report, text)
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

/// `(in_use_allocations, in_use_bytes, increment)` of a line.
fn figures(line: &Value) -> (u64, u64, i64) {
    (
        line["in_use_allocations"].as_u64().unwrap(),
        line["in_use_bytes"].as_u64().unwrap(),
        line["increment"].as_i64().unwrap(),
    )
}

#[test]
fn live_is_what_is_still_allocated_whoever_frees_it() {
    let (report, text) = exit_report();
    // The leak: every order, and the vector that holds them (its last
    // capacity, 128 orders of 24 bytes, one block).
    let order = line(&report, "in_use::remember", "let order");
    assert_eq!(figures(order).0, 100);
    assert_eq!(figures(order).1, 30_000);
    let push = line(&report, "in_use::remember", "push(order)");
    assert_eq!((figures(push).0, figures(push).1), (1, 128 * 24));
    let remember = line(&report, "in_use::remember", "fn remember");
    assert_eq!(
        figures(remember),
        (101, 30_000 + 128 * 24, 30_000 + 128 * 24)
    );
    // The quote it returns is kept by the call (Kept counts it), but the
    // caller freed it: nothing in use.
    let price = line(&report, "in_use::price", "fn price");
    assert_eq!(figures(price), (0, 0, 10_000));
    // Freed on another thread: nothing in use, though the call kept it.
    let hand_off = line(&report, "in_use::hand_off", "fn hand_off");
    assert_eq!(figures(hand_off), (0, 0, 5000));
    // The leaking line's stack names the allocation below it.
    let sites = order["sites"].as_array().unwrap();
    assert_eq!(sites.len(), 1, "{sites:?}");
    assert_eq!(sites[0]["in_use_bytes"], 30_000);
    // The exit summary: a Live column, and the lines still holding bytes,
    // most first; the functions that freed all they made read 0 B.
    let live = text
        .split("Top lines by Live (still in use)\n")
        .nth(1)
        .unwrap();
    let rows: Vec<&str> = live
        .lines()
        .filter(|l| l.contains("in_use::"))
        .map(|l| l.split("in_use::remember").nth(1).unwrap_or(l).trim())
        .collect();
    assert_eq!(
        rows,
        [
            "for _ in 0..n {",
            "let order = black_box(vec![1u8; 300]);   [in line 22]",
            "KEPT.lock().unwrap().push(order);   [in line 22]",
        ],
        "{live}"
    );
    let summary = text.split("Summary:").nth(1).unwrap();
    let price = summary
        .lines()
        .find(|l| l.contains("in_use::price "))
        .unwrap();
    let cells: Vec<&str> = price
        .split("  ")
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .collect();
    assert_eq!(
        cells[..4],
        ["1000 B", "1000 B", "9.8 KiB", "0 B"],
        "{price}"
    );
}
