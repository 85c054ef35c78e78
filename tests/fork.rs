//! `fork` while other threads run memprof code (calls on many threads,
//! threads starting and ending, `report()` in a loop): each child makes
//! profiled calls, prints and exits, and none hangs on a lock or a row
//! write that a thread of the parent held as it forked; then all of it
//! again with allocation sites recorded. Runs without libtest's harness,
//! as its own process.

use memprof::profile;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::time::{Duration, Instant};

const FORKS: usize = 300;
/// How long a child may take before it counts as hung. NOTE: not a timing
/// assertion: a child takes milliseconds, and the bound only turns a hang
/// (a lock or a row write that never ends) into a failure, with margin for
/// any load. Once one child has hung the verdict is in, and the others get
/// `AFTER_A_HANG`, so that a broken build fails in seconds, not hours.
const PATIENCE: Duration = Duration::from_secs(120);
const AFTER_A_HANG: Duration = Duration::from_secs(1);

#[profile]
fn busy(n: usize) -> usize {
    let v = vec![1u8; n % 512 + 1];
    let w = v.clone();
    v.len() + w.len()
}

#[profile]
fn first_called_in_the_child(n: usize) -> usize {
    let v = vec![0u8; n];
    v.len()
}

fn main() {
    // Tables at exit only: the parent's threads print nothing, so that no
    // child inherits the standard library's stdout lock held (see `fork`).
    // SAFETY: no other thread runs yet.
    unsafe { std::env::set_var("MEMPROF_REPORT", "exit") };
    busy(1);
    let stop = Arc::new(AtomicBool::new(false));
    let mut workers = Vec::new();
    for _ in 0..2 {
        let stop = Arc::clone(&stop);
        workers.push(std::thread::spawn(move || {
            while !stop.load(Relaxed) {
                std::hint::black_box(memprof::report());
            }
        }));
    }
    for i in 0..2 {
        let stop = Arc::clone(&stop);
        workers.push(std::thread::spawn(move || {
            let mut n: usize = i;
            while !stop.load(Relaxed) {
                n = n.wrapping_add(busy(n));
                // Threads that start and end take the lists' locks too.
                if n.is_multiple_of(64) {
                    std::thread::spawn(move || busy(n)).join().unwrap();
                }
            }
        }));
    }

    let mut hung = 0;
    let mut failed = 0;
    for _ in 0..FORKS {
        // SAFETY: the child only makes calls that are safe after `fork` in
        // a Rust program whose other threads hold no standard library
        // lock, then leaves through libc's `exit`.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork failed");
        if pid == 0 {
            // Tables and the memit! line to /dev/null.
            // SAFETY: plain file descriptor calls.
            unsafe {
                let null = libc::open(c"/dev/null".as_ptr(), libc::O_WRONLY);
                libc::dup2(null, 1);
            }
            let n = busy(7) + first_called_in_the_child(100);
            let n = memprof::memit!(n + busy(3));
            std::hint::black_box(memprof::report());
            // NOTE: libc's `exit`, which runs the `atexit` handlers (our
            // exit tables among them), not `std::process::exit`: that first
            // runs the standard library's clean-up, which takes its lock of
            // threads' stack guards, and a parent thread starting or ending
            // a thread as the process forked leaves it held in the child.
            // A program without memprof hangs there too (25 of 3,000 such
            // children did, on Rust 1.95).
            // SAFETY: the C library's `exit`; this thread holds no lock.
            unsafe { libc::exit(if n > 0 { 0 } else { 1 }) }
        }
        let patience = if hung == 0 { PATIENCE } else { AFTER_A_HANG };
        match wait_for(pid, patience) {
            Some(0) => {}
            Some(_) => failed += 1,
            None => hung += 1,
        }
    }
    stop.store(true, Relaxed);
    for worker in workers {
        worker.join().unwrap();
    }
    assert_eq!(
        (hung, failed),
        (0, 0),
        "of {FORKS} children, hung and failed"
    );
    println!("fork: {FORKS} children, none hung");
    // Again with allocation sites recorded, whose reports symbolize under a
    // lock of their own (held across `fork` as the others are).
    if std::env::var_os("MEMPROF_SITES").is_none() {
        let status = std::process::Command::new(std::env::current_exe().unwrap())
            .env("MEMPROF_SITES", "1")
            .status()
            .unwrap();
        assert!(status.success(), "with MEMPROF_SITES=1: {status}");
    }
}

/// The child's exit status, or `None` (after killing it) if it is still
/// running after `patience`.
fn wait_for(pid: libc::pid_t, patience: Duration) -> Option<i32> {
    let start = Instant::now();
    loop {
        let mut status = 0;
        // SAFETY: our own child; `status` is ours.
        let done = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        if done == pid {
            return Some(if libc::WIFEXITED(status) {
                libc::WEXITSTATUS(status)
            } else {
                -1
            });
        }
        if start.elapsed() > patience {
            // SAFETY: our own child, then reaped.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                libc::waitpid(pid, &mut status, 0);
            }
            return None;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}
