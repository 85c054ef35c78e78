//! `#[profile]` next to test attributes, in either order, and async fns on
//! a real multi-threaded runtime.
//!
//! A buffer whose contents nothing reads passes through `black_box`: an
//! optimized build (`cargo test --release`) removes such an allocation, and
//! its table then rightly shows nothing.

// The point is to allocate on the heap.
#![allow(clippy::useless_vec)]

use memprof::profile;
use std::hint::black_box;

#[profile]
#[test]
fn profile_above_test() {
    let v = black_box(vec![1u8; 64]);
    assert_eq!(v.len(), 64);
}

#[test]
#[profile]
fn profile_below_test() {
    let v = vec![1u8; 32];
    assert_eq!(v.len(), 32);
}

#[profile]
#[tokio::test]
async fn profile_above_tokio_test() {
    let v = vec![1u8; 16];
    tokio::task::yield_now().await;
    assert_eq!(v.len(), 16);
}

#[tokio::test]
#[profile]
async fn profile_below_tokio_test() {
    let v = vec![1u8; 8];
    tokio::task::yield_now().await;
    assert_eq!(v.len(), 8);
}

#[profile]
async fn hops_between_workers(rounds: usize) -> usize {
    let mut kept = Vec::new();
    for _ in 0..rounds {
        kept.push(vec![0u8; 4096]);
        tokio::time::sleep(std::time::Duration::from_millis(1)).await;
    }
    kept.len()
}

#[test]
fn a_task_on_a_multi_threaded_runtime_counts_exactly_its_own_bytes() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .unwrap();
    // Noise on the other worker, allocating all the time.
    rt.spawn(async {
        loop {
            let noise = vec![0u8; 10_000];
            tokio::time::sleep(std::time::Duration::from_micros(200)).await;
            drop(noise);
        }
    });
    let n = rt.block_on(async { tokio::spawn(hops_between_workers(20)).await.unwrap() });
    assert_eq!(n, 20);
    rt.shutdown_background();

    let report = memprof::report();
    let t = report.function("hops_between_workers").unwrap();
    let fig = |text: &str| {
        let r = t.line_containing(text).unwrap();
        (r.increment.unwrap(), r.peak.unwrap(), r.occurrences)
    };
    // Twenty 4 KiB buffers, and the Vec holding them growing 4 -> 8 -> 16
    // -> 32 slots of 24 bytes: nothing of the noise, nothing of tokio.
    assert_eq!(fig("kept.push").2, 20);
    assert_eq!(fig("kept.push").0, 20 * 4096 + 32 * 24);
    assert_eq!(fig("tokio::time::sleep").0, 0);
}

#[test]
fn the_test_attribute_tables_exist() {
    profile_above_test();
    profile_below_test();
    let report = memprof::report();
    // libtest may run the test itself too, so count per execution.
    let t = report.function("profile_above_test").unwrap();
    let row = t.line_containing("let v = black_box(vec!").unwrap();
    assert_eq!(row.peak, Some(64));
    assert_eq!(row.increment, Some(64 * row.occurrences as i64));
}

// The same body under `#[test]` and under `#[tokio::test]` in either order.
// With `#[tokio::test]` above, its expansion moves the body into an `async`
// block that `#[profile]` then finds and instruments as an `async fn` body:
// the rows and figures are those of the other order, and building the
// runtime is in none of them.

#[profile]
#[test]
fn same_body_under_test() {
    let v = black_box(vec![1u8; 1000]);
    std::hint::black_box(());
    let w = black_box(vec![2u8; 3000]);
    assert_eq!(v.len() + w.len(), 4000);
}

#[profile]
#[tokio::test]
async fn same_body_profile_above_tokio_test() {
    let v = black_box(vec![1u8; 1000]);
    tokio::task::yield_now().await;
    let w = black_box(vec![2u8; 3000]);
    assert_eq!(v.len() + w.len(), 4000);
}

#[tokio::test]
#[profile]
async fn same_body_profile_below_tokio_test() {
    let v = black_box(vec![1u8; 1000]);
    tokio::task::yield_now().await;
    let w = black_box(vec![2u8; 3000]);
    assert_eq!(v.len() + w.len(), 4000);
}

/// Runs test `name` alone in a child process and returns the rows of its
/// table that ran: (line contents, increment, peak, occurrences).
fn rows_of_child(name: &str) -> Vec<(String, i64, u64, u64)> {
    let json = std::env::temp_dir().join(format!(
        "memprof-attributes-{}-{name}.json",
        std::process::id()
    ));
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([name, "--exact", "--test-threads=1"])
        .env("MEMPROF_REPORT", "off")
        .env("MEMPROF_JSON", &json)
        .env_remove("MEMPROF")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    std::fs::remove_file(&json).unwrap();
    let function = report["functions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"].as_str().unwrap().ends_with(&format!("::{name}")))
        .unwrap();
    assert_eq!(function["calls"], 1, "{function}");
    function["lines"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|l| !l["increment"].is_null())
        .map(|l| {
            (
                l["contents"].as_str().unwrap().trim().to_owned(),
                l["increment"].as_i64().unwrap(),
                l["peak"].as_u64().unwrap(),
                l["occurrences"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn tokio_test_above_or_below_profile_gives_the_rows_of_test() {
    let row =
        |text: &str, increment, peak, occurrences| (text.to_owned(), increment, peak, occurrences);
    let with_await = |name: &str| {
        vec![
            // Tokio keeps 64 bytes, allocated while it polled the test's
            // task: the list of tasks to wake that `yield_now` starts.
            row(&format!("async fn {name}() {{"), 64, 4064, 1),
            row("let v = black_box(vec![1u8; 1000]);", 1000, 1000, 1),
            row("tokio::task::yield_now().await;", 64, 64, 1),
            row("let w = black_box(vec![2u8; 3000]);", 3000, 3000, 1),
            row("assert_eq!(v.len() + w.len(), 4000);", 0, 0, 1),
            row("}", -4000, 0, 1),
        ]
    };
    assert_eq!(
        rows_of_child("same_body_profile_above_tokio_test"),
        with_await("same_body_profile_above_tokio_test")
    );
    assert_eq!(
        rows_of_child("same_body_profile_below_tokio_test"),
        with_await("same_body_profile_below_tokio_test")
    );
    assert_eq!(
        rows_of_child("same_body_under_test"),
        [
            row("fn same_body_under_test() {", 0, 4000, 1),
            row("let v = black_box(vec![1u8; 1000]);", 1000, 1000, 1),
            row("std::hint::black_box(());", 0, 0, 1),
            row("let w = black_box(vec![2u8; 3000]);", 3000, 3000, 1),
            row("assert_eq!(v.len() + w.len(), 4000);", 0, 0, 1),
            row("}", -4000, 0, 1),
        ]
    );
}
