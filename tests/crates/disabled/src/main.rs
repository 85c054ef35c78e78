//! Every memprof annotation, built by `tests/disabled.rs` with memprof's
//! default features off, and with `--features on` as the control. Prints its
//! figures on stderr; anything on stdout comes from memprof.

// What the macros emit must not warn in either build.
#![deny(warnings)]

use memprof::{assert_memory, memit, profile, track};

/// Twin of `plain_build`, with `#[profile]` and a size argument (which, with
/// the feature off, is still checked at compile time).
#[profile(limit = "1 GiB")]
#[unsafe(no_mangle)]
pub fn profiled_build(n: u64) -> Vec<u64> {
    let mut v = Vec::new();
    for i in 0..n {
        v.push(i.wrapping_mul(3));
    }
    v
}

#[unsafe(no_mangle)]
pub fn plain_build(n: u64) -> Vec<u64> {
    let mut v = Vec::new();
    for i in 0..n {
        v.push(i.wrapping_mul(3));
    }
    v
}

fn main() {
    let v = profiled_build(1000);
    assert_eq!(v, plain_build(1000));
    let len = memit!(v.len());
    // A `#[must_use]` value dropped in statement position, as in the enabled build.
    memit!(v.len());
    // Exactly one allocation: true when measured, false if zeros were checked.
    let ten = assert_memory!(allocations == 1, { vec![0u8; 10].len() });
    track!();
    let (_, m) = memprof::measure(|| vec![0u8; 4096]);
    eprintln!(
        "enabled: {}, len {len} {ten}, heap counted: {}, measured peak: {}, profiled functions: {}",
        memprof::ENABLED,
        memprof::process_heap() > 0,
        m.peak,
        memprof::report().functions.len(),
    );
}
