//! `measure_in` and `assert_memory!(scope = ..)`: thread scope counts the
//! calling thread, process scope every thread, allocation counts included.
//! Its own test binary, one test: process scope counts every thread.

#[path = "support/fan_out.rs"]
mod fan_out;

use memprof::{Scope, assert_memory, measure_in};

/// The workers of every test here.
fn fan_out() -> Vec<Vec<u8>> {
    fan_out::fan_out(2, 3 << 20)
}

fn thread_and_process_scope_measure_a_fan_out() {
    let (parts, m) = measure_in(Scope::Process, fan_out);
    assert_eq!(parts.len(), 2);
    // The first part kept, the second being made: 1 + 3 MiB over the start,
    // and a little more than 2 MiB for the threads' own start-up.
    assert!(
        m.increment >= 2 << 20 && m.increment < (2 << 20) + (64 << 10),
        "{m:?}"
    );
    assert!(
        m.peak >= 4 << 20 && m.peak < (4 << 20) + (64 << 10),
        "{m:?}"
    );
    assert!(m.allocations >= 5, "{m:?}");
    drop(parts);

    let (parts, m) = measure_in(Scope::Thread, fan_out);
    // The `Vec` of the parts, and what spawning takes on the calling
    // thread: bytes, not the workers' mebibytes.
    assert!(m.increment < 1024 && m.peak < 1024, "{m:?}");
    drop(parts);

    let parts = assert_memory!(scope = "process", increment >= 2 MiB, peak >= 4 MiB, {
        fan_out()
    });
    drop(parts);
    let parts = assert_memory!(peak < 1 KiB, { fan_out() });
    drop(parts);
}

// NOTE: no libtest harness (`harness = false`): its main thread records each
// test it starts (a name, a table entry) while the test runs, and process
// scope would count those bytes.
fn main() {
    thread_and_process_scope_measure_a_fan_out();
    println!("measure_scope: ok");
}
