//! The first thing to run: `cargo run --example quickstart`.
use memprof::{memit, profile};

#[profile]
fn addition() -> Vec<u64> {
    let a = vec![1u64; 10];
    let b = vec![2u64; 3_000_000];
    let s = [a, b.clone()].concat();
    // A temporary buffer that is gone by the next line still shows as Peak.
    let checksum: u64 = s.iter().map(|x| x * 2).collect::<Vec<_>>().iter().sum();
    for _ in 0..3 {
        let _c = vec![3u64; 100_000];
    }
    drop(b);
    assert!(checksum > 0);
    s
}

fn main() {
    let v = memit!(addition());
    let (_, m) = memprof::measure(addition);
    println!(
        "measure: increment {} B, peak {} B, {} allocations",
        m.increment, m.peak, m.allocations
    );
    drop(v);
}
