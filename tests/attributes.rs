//! `#[profile]` next to test attributes, in either order, and async fns on
//! a real multi-threaded runtime.

// The point is to allocate on the heap.
#![allow(clippy::useless_vec)]

use memprof::profile;

#[profile]
#[test]
fn profile_above_test() {
    let v = vec![1u8; 64];
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
    let row = t.line_containing("let v = vec!").unwrap();
    assert_eq!(row.peak, Some(64));
    assert_eq!(row.increment, Some(64 * row.occurrences as i64));
}
