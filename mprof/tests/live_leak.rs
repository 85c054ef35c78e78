//! A leak in a running async service, found by bytes in use (`Live`):
//! an order service on tokio, served over TCP from 127.0.0.1, whose
//! handler keeps every order in an idempotency cache that never evicts,
//! beside healthy functions whose results their callers free. Two
//! snapshots under a bounded load: the leaking line grows by what the
//! cache kept, to the byte with `MEMPROF_SITES=1` and within 10 % sampled,
//! its top stack names the user's insert, and the healthy functions, whose
//! kept bytes (`Kept`) grow with every request, hold nothing in use.
//!
//! The service is this test binary, run again (see `common::live`): a
//! thread accepts connections and reads one request line from each; a
//! tokio runtime of two workers runs the handler; the thread writes the
//! answer and closes the connection. NOTE: no duration is asserted.

// A value made on a line of its own and returned: a row of its own.
#![allow(clippy::let_and_return)]

mod common;

use common::live::{Service, snapshot};
use common::{mprof, scratch};
use serde_json::Value;
use std::collections::HashMap;
use std::hint::black_box;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Mutex;

/// Each order's answer, and the bytes the cache keeps of it.
const BODY: usize = 300;
/// An order's id, as the client sends it: `order-000042`.
const ID: usize = 12;

type Cache = Mutex<HashMap<String, Vec<u8>>>;

/// The SKU in the shop's form: freed by the handler.
#[memprof::profile]
fn normalize_sku(raw: &str) -> String {
    let sku = raw.trim().to_ascii_uppercase();
    sku
}

/// The prices of an order's lines: freed by the handler.
#[memprof::profile]
fn price_order(sku: &str, lines: usize) -> Vec<u64> {
    let prices: Vec<u64> = (0..lines).map(|i| (sku.len() + i) as u64 * 100).collect();
    prices
}

/// The leak: every order's id and answer, kept for ever.
#[inline(never)]
fn remember(cache: &Cache, id: &str, body: &str) {
    let mut cache = cache.lock().unwrap();
    cache.insert(id.to_owned(), body.as_bytes().to_vec());
}

#[memprof::profile]
async fn handle_order(request: String, cache: &'static Cache) -> String {
    let sku = normalize_sku(&request);
    tokio::task::yield_now().await;
    let prices = price_order(&sku, 4);
    let body = format!("{:0>width$}", prices.iter().sum::<u64>(), width = BODY);
    remember(cache, &request, &body);
    body
}

#[test]
#[ignore = "a child run: the tests below start it"]
fn service_child() {
    if std::env::var_os("MPROF_TEST_SERVICE").is_none() {
        return;
    }
    // The cache's table, made before any request: inserts allocate only
    // the order's own bytes.
    let cache: &'static Cache = Box::leak(Box::new(Mutex::new(HashMap::with_capacity(50_000))));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    // In the working directory, which the test made for this run.
    let port = listener.local_addr().unwrap().port();
    std::fs::write("port", port.to_string()).unwrap();
    println!("ready");
    for stream in listener.incoming() {
        let mut stream = stream.unwrap();
        let mut request = String::new();
        BufReader::new(&stream).read_line(&mut request).unwrap();
        if request.trim() == "quit" {
            break;
        }
        let request = request.trim().to_owned();
        let answer = runtime
            .block_on(runtime.spawn(handle_order(request, cache)))
            .unwrap();
        stream.write_all(answer.as_bytes()).unwrap();
        drop(black_box(answer));
    }
}

/// Sends orders `from..to`, one connection each, and reads each answer.
fn orders(port: u16, from: usize, to: usize) {
    for id in from..to {
        let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
        writeln!(stream, "order-{id:06}").unwrap();
        let mut answer = String::new();
        BufReader::new(&stream).read_line(&mut answer).unwrap();
        assert_eq!(answer.len(), BODY);
    }
}

/// The `fn` row or line `text` of `function` in a snapshot.
fn row<'a>(report: &'a Value, function: &str, text: &str) -> &'a Value {
    report["functions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"].as_str().unwrap().ends_with(function))
        .unwrap_or_else(|| panic!("no {function}"))["lines"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["contents"].as_str().unwrap().contains(text))
        .unwrap_or_else(|| panic!("no {text:?} in {function}"))
}

/// Growth of a row's bytes in use (Live) between two snapshots.
fn live_growth(before: &Value, after: &Value, function: &str, text: &str) -> i64 {
    growth(before, after, function, text, "in_use_bytes")
}

/// Growth of a row's `field` between two snapshots.
fn growth(before: &Value, after: &Value, function: &str, text: &str, field: &str) -> i64 {
    let at = |r: &Value| row(r, function, text)[field].as_i64().unwrap_or(0);
    at(after) - at(before)
}

/// Runs the service with `sites`, and returns two snapshots `orders` apart
/// (also written in `name`'s scratch directory as `before.json` and
/// `after.json`).
fn two_snapshots(sites: &str, name: &str, orders_between: usize) -> (Value, Value) {
    let dir = scratch(name);
    let service = Service::start(
        "leak",
        &dir,
        &[("MEMPROF_LIVE", "1"), ("MEMPROF_SITES", sites)],
    );
    let port: u16 = std::fs::read_to_string(dir.join("port"))
        .unwrap()
        .parse()
        .unwrap();
    orders(port, 0, 500);
    let before = snapshot(&dir, service.pid(), "before.json");
    orders(port, 500, 500 + orders_between);
    let after = snapshot(&dir, service.pid(), "after.json");
    let mut quit = TcpStream::connect(("127.0.0.1", port)).unwrap();
    writeln!(quit, "quit").unwrap();
    drop(quit);
    let (_, status) = service.finish();
    assert!(status.success());
    (before, after)
}

/// Bytes the cache keeps per order: its id and its answer.
const KEPT_PER_ORDER: i64 = (ID + BODY) as i64;

/// The healthy functions and lines, which free all they make.
const HEALTHY: [(&str, &str); 3] = [
    ("normalize_sku", "fn normalize_sku"),
    ("price_order", "fn price_order"),
    ("handle_order", "let prices = price_order"),
];

#[test]
fn exact_live_growth_is_the_leak_to_the_byte_and_nothing_elsewhere() {
    let n = 2000;
    let (before, after) = two_snapshots("1", "live-leak-exact", n);
    let leak = live_growth(&before, &after, "handle_order", "remember(cache");
    assert_eq!(leak, n as i64 * KEPT_PER_ORDER);
    let handler = live_growth(&before, &after, "handle_order", "async fn handle_order");
    assert_eq!(handler, leak);
    for (function, text) in HEALTHY {
        assert_eq!(
            live_growth(&before, &after, function, text),
            0,
            "{function}: {text}"
        );
    }
    // What Kept said instead: the healthy functions' results, which their
    // callers free, count as kept on every call.
    let kept = growth(
        &before,
        &after,
        "normalize_sku",
        "fn normalize_sku",
        "increment",
    );
    assert!(kept >= n as i64 * ID as i64, "{kept}");
    // The leaking line's top stack goes through the user's insert.
    let sites = row(&after, "handle_order", "remember(cache")["sites"]
        .as_array()
        .unwrap()
        .clone();
    let top = sites
        .iter()
        .max_by_key(|s| s["in_use_bytes"].as_u64().unwrap_or(0))
        .unwrap();
    let names: Vec<&str> = top["frames"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["function"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"live_leak::remember"), "{names:?}");
    assert!(
        !names.iter().any(|n| n.contains("memprof_runtime")),
        "{names:?}"
    );
    // `mprof diff` of the two snapshots ranks by what grew in use: the
    // handler first, grown; the healthy functions the same.
    let dir = scratch_of("live-leak-exact");
    let out = mprof(&dir, &["diff", "before.json", "after.json"]);
    let text = String::from_utf8_lossy(&out.stdout);
    let statuses: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("Filename:"))
        .map(|l| l.split("Function: ").nth(1).unwrap())
        .collect();
    assert_eq!(
        statuses,
        [
            "live_leak::handle_order   Status: grew",
            "live_leak::normalize_sku   Status: same",
            "live_leak::price_order   Status: same",
        ],
        "{text}"
    );
    // 2,000 orders of 312 bytes: 624,000 B.
    assert!(
        text.lines()
            .any(|l| l.starts_with(" Live ") && l.contains("+609.4 KiB")),
        "{text}"
    );
}

/// The scratch directory `scratch(name)` made, without emptying it.
fn scratch_of(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("mprof-{name}"))
}

#[test]
fn sampled_live_growth_is_the_leak_within_ten_percent() {
    let n = 6000;
    let (before, after) = two_snapshots("sample:1024", "live-leak-sampled", n);
    let planted = n as f64 * KEPT_PER_ORDER as f64;
    let leak = live_growth(&before, &after, "handle_order", "remember(cache");
    let error = (leak as f64 - planted) / planted;
    eprintln!("sampled live growth: {leak} B against {planted} B planted ({error:+.3})");
    assert!(
        error.abs() <= 0.10,
        "{leak} B against {planted} B: {error:+.3}"
    );
    for (function, text) in HEALTHY {
        let healthy = live_growth(&before, &after, function, text);
        assert!(
            (healthy.abs() as f64) <= 0.01 * planted,
            "{function}: {text}: {healthy} B"
        );
    }
}

/// The cells of the line of `text` whose contents have `contents`,
/// split on runs of two spaces or more.
fn cells_of<'a>(text: &'a str, contents: &str) -> Vec<&'a str> {
    let line = text
        .lines()
        .find(|l| l.contains(contents))
        .unwrap_or_else(|| panic!("no {contents:?} in {text}"));
    line.split("  ")
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .collect()
}

/// The README's live recipe to its end (issue 60): of two snapshots, `mprof
/// diff --lines` shows the handler's leaking line with its Live growth,
/// `mprof report` of the later one shows its Live, and so does `mprof top
/// --once --lines` of the running service. 100 orders, then 200 more, of
/// 312 bytes kept each: 31,200 B (30.5 KiB), then 93,600 B (91.4 KiB).
#[test]
fn the_recipe_ends_at_the_leaking_line() {
    let dir = scratch("live-leak-recipe");
    let service = Service::start(
        "leak",
        &dir,
        &[("MEMPROF_LIVE", "1"), ("MEMPROF_SITES", "1")],
    );
    let port: u16 = std::fs::read_to_string(dir.join("port"))
        .unwrap()
        .parse()
        .unwrap();
    let pid = service.pid().to_string();
    orders(port, 0, 100);
    snapshot(&dir, service.pid(), "before.json");
    orders(port, 100, 300);
    snapshot(&dir, service.pid(), "after.json");
    let top = mprof(
        &dir,
        &[
            "top",
            "--once",
            "-T",
            "0.1",
            "--lines",
            "handle_order",
            &pid,
        ],
    );
    let mut quit = TcpStream::connect(("127.0.0.1", port)).unwrap();
    writeln!(quit, "quit").unwrap();
    drop(quit);
    let (_, status) = service.finish();
    assert!(status.success());

    let leak = "remember(cache, &request, &body);";
    let out = mprof(&dir, &["diff", "before.json", "after.json", "--lines"]);
    let text = String::from_utf8_lossy(&out.stdout);
    // Base #, Head #, Base and Head incr., Incr. change, Base and Head
    // peak, Peak change, then Base and Head live and Live change.
    assert_eq!(
        cells_of(&text, leak)[8..],
        ["30.5 KiB", "91.4 KiB", "+60.9 KiB", leak],
        "{text}"
    );
    // A snapshot is a report `mprof report` reads: its top lines by Live
    // start with the leaking line.
    let out = mprof(&dir, &["report", "after.json"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    let top_live = text
        .split("Top lines by Live (still in use)\n")
        .nth(1)
        .unwrap_or_else(|| panic!("{text}"));
    let first = top_live.lines().nth(3).unwrap_or_default();
    assert!(
        first.starts_with(" 91.4 KiB ") && first.ends_with(leak),
        "{top_live}"
    );
    // `mprof top --once --lines`: the handler's lines, Live on each.
    let text = String::from_utf8_lossy(&top.stdout);
    assert!(top.status.success(), "{text}");
    assert!(
        text.lines()
            .nth(2)
            .unwrap_or_default()
            .starts_with("live_leak::handle_order ("),
        "{text}"
    );
    let row = cells_of(&text, leak);
    assert!(row.contains(&"91.4 KiB"), "{text}");
}
