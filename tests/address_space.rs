//! memprof's per-thread address space stays small: under `RLIMIT_AS`
//! (`ulimit -v`), a program with 200 live threads that made profiled calls
//! can still reserve 600 MiB, as it can unprofiled, also with allocation
//! sites recorded on every thread. Runs without libtest's
//! harness: the limit applies to a child process of this binary.

// The point is to allocate on the heap.
#![allow(clippy::useless_vec)]

use memprof::profile;
use std::process::Command;
use std::sync::{Arc, Barrier};

/// The limit, as `ulimit -v 2000000` sets it.
const LIMIT: u64 = 2_000_000 * 1024;
const THREADS: usize = 200;

#[profile]
fn nested(depth: usize) -> usize {
    let v = vec![0u8; 16];
    if depth == 0 {
        v.len()
    } else {
        nested(depth - 1) + v.len()
    }
}

/// The child: limits its address space, starts the threads, each making
/// profiled calls (50 deep), and reserves 600 MiB while they live.
fn child() -> bool {
    let limit = libc::rlimit {
        rlim_cur: LIMIT,
        rlim_max: LIMIT,
    };
    // SAFETY: a valid `rlimit`.
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_AS, &limit) }, 0);
    let all = Arc::new(Barrier::new(THREADS + 1));
    let threads: Vec<_> = (0..THREADS)
        .map(|_| {
            let all = Arc::clone(&all);
            std::thread::spawn(move || {
                assert_eq!(nested(50), 51 * 16);
                all.wait();
                all.wait();
            })
        })
        .collect();
    all.wait();
    let mut big: Vec<u8> = Vec::new();
    let reserved = big.try_reserve_exact(600 << 20).is_ok();
    drop(big);
    all.wait();
    threads.into_iter().for_each(|t| t.join().unwrap());
    reserved
}

fn main() {
    if std::env::args().nth(1).as_deref() == Some("child") {
        std::process::exit(if child() { 0 } else { 1 });
    }
    // `sites`: MEMPROF_SITES=1, whose per-thread tables are mapped too.
    for memprof in ["off", "on", "sites"] {
        let sites = if memprof == "sites" { "1" } else { "0" };
        let memprof = if memprof == "sites" { "on" } else { memprof };
        let out = Command::new(std::env::current_exe().unwrap())
            .arg("child")
            .env("MEMPROF", memprof)
            .env("MEMPROF_SITES", sites)
            .env("MEMPROF_REPORT", "off")
            // glibc reserves 64 MiB of address space per malloc arena, up to
            // 8 per core: two, so that the figure does not follow the machine.
            .env("MALLOC_ARENA_MAX", "2")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "MEMPROF={memprof} MEMPROF_SITES={sites}: 600 MiB could not be reserved \
             under RLIMIT_AS with {THREADS} threads: {out:?}"
        );
    }
    println!("address_space: 600 MiB reserved with {THREADS} profiled threads under RLIMIT_AS");
}
