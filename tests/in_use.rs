//! Bytes in use (`Live`): what a line or function allocated that is still
//! allocated when the report is taken, whoever frees the rest and on
//! whichever thread, with `MEMPROF_SITES=1` (exact).

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

fn exit_report() -> Value {
    let dir = child::scratch_dir("in-use");
    let json = dir.join("report.json");
    run_child(
        "child_service",
        &[
            ("MEMPROF_SITES", "1"),
            ("MEMPROF_REPORT", "exit"),
            ("MEMPROF_JSON", json.to_str().unwrap()),
        ],
    );
    serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap()
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
    let report = exit_report();
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
}
