//! `measure_in` and `assert_memory!(scope = ..)`: thread scope counts the
//! calling thread, process scope every thread, allocation counts included.
//! Its own test binary, one test: process scope counts every thread.

use memprof::{Scope, assert_memory, measure_in};

/// Two scoped workers, one after another, each returning a 1 MiB buffer and
/// dropping a 3 MiB scratch one; the calling thread allocates only bytes.
fn fan_out() -> Vec<Vec<u8>> {
    let mut parts = Vec::with_capacity(2);
    std::thread::scope(|s| {
        for _ in 0..2 {
            let part = s
                .spawn(|| {
                    let scratch = vec![0u8; 3 << 20];
                    drop(scratch);
                    vec![1u8; 1 << 20]
                })
                .join()
                .unwrap();
            parts.push(part);
        }
    });
    parts
}

#[test]
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
