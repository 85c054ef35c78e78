//! What watching a running program costs: `cargo bench --bench live_cost`.
//!
//! The bench is the program watched: 1,000 profiled functions (generated
//! below), each called once, with `MEMPROF_LIVE=1` set before the first
//! profiled call, so that the runtime's `memprof-live` thread listens. It
//! prints:
//! - a snapshot of the 1,000 functions: the round trip on the socket
//!   (connect, request, the whole JSON read back), median and longest of
//!   100, and the CPU time the `memprof-live` thread spent per snapshot
//!   (from `/proc`, in clock ticks);
//! - the longest stall of a profiled loop: the longest gap between two
//!   consecutive calls of a profiled function on the main thread, while
//!   another thread takes 100 snapshots back to back; then while another
//!   thread does as much work of its own (allocating and filling 1.5 MB
//!   strings) for as long, outside memprof; then with no other thread. With
//!   fewer cores than runnable threads the gaps are the scheduler's (a time
//!   slice is milliseconds): the snapshots hold the loop up only if their
//!   gaps exceed those of the work beside it. Also how many gaps exceed
//!   100 us in each, and the loop's thread's context switches: voluntary
//!   ones (it waited for something: a lock, I/O) would be memprof holding
//!   it up; involuntary ones are the scheduler's.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::time::{Duration, Instant};

macro_rules! ten_functions {
    () => {
        #[memprof::profile]
        pub fn f0() -> usize {
            let v = vec![0u8; 64];
            v.len()
        }
        #[memprof::profile]
        pub fn f1() -> usize {
            let v = vec![1u8; 64];
            v.len()
        }
        #[memprof::profile]
        pub fn f2() -> usize {
            let v = vec![2u8; 64];
            v.len()
        }
        #[memprof::profile]
        pub fn f3() -> usize {
            let v = vec![3u8; 64];
            v.len()
        }
        #[memprof::profile]
        pub fn f4() -> usize {
            let v = vec![4u8; 64];
            v.len()
        }
        #[memprof::profile]
        pub fn f5() -> usize {
            let v = vec![5u8; 64];
            v.len()
        }
        #[memprof::profile]
        pub fn f6() -> usize {
            let v = vec![6u8; 64];
            v.len()
        }
        #[memprof::profile]
        pub fn f7() -> usize {
            let v = vec![7u8; 64];
            v.len()
        }
        #[memprof::profile]
        pub fn f8() -> usize {
            let v = vec![8u8; 64];
            v.len()
        }
        #[memprof::profile]
        pub fn f9() -> usize {
            let v = vec![9u8; 64];
            v.len()
        }
        pub fn all() -> usize {
            f0() + f1() + f2() + f3() + f4() + f5() + f6() + f7() + f8() + f9()
        }
    };
}

macro_rules! ten_modules {
    ($($body:tt)*) => {
        pub mod m0 { $($body)* }
        pub mod m1 { $($body)* }
        pub mod m2 { $($body)* }
        pub mod m3 { $($body)* }
        pub mod m4 { $($body)* }
        pub mod m5 { $($body)* }
        pub mod m6 { $($body)* }
        pub mod m7 { $($body)* }
        pub mod m8 { $($body)* }
        pub mod m9 { $($body)* }
        pub fn all() -> usize {
            m0::all() + m1::all() + m2::all() + m3::all() + m4::all()
                + m5::all() + m6::all() + m7::all() + m8::all() + m9::all()
        }
    };
}

mod thousand {
    ten_modules! { ten_modules! { ten_functions!(); } }
}

/// The profiled loop's body.
#[memprof::profile]
fn tick(i: usize) -> usize {
    let v = vec![0u8; 32 + i % 32];
    v.len()
}

fn socket() -> PathBuf {
    let dir = PathBuf::from(std::env::var_os("XDG_RUNTIME_DIR").unwrap());
    dir.join("memprof")
        .join(format!("{}.sock", std::process::id()))
}

/// One snapshot's round trip: its length in bytes.
fn snapshot() -> usize {
    let mut stream = UnixStream::connect(socket()).expect("the program listens");
    stream.write_all(b"snapshot\n").unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).unwrap();
    assert!(
        answer.starts_with(b"ok\n"),
        "{}",
        String::from_utf8_lossy(&answer)
    );
    answer.len()
}

/// CPU time of the thread named `name`, in clock ticks.
fn thread_ticks(name: &str) -> Option<u64> {
    for task in std::fs::read_dir("/proc/self/task").ok()? {
        let path = task.ok()?.path();
        let comm = std::fs::read_to_string(path.join("comm")).ok()?;
        if comm.trim() != name {
            continue;
        }
        let stat = std::fs::read_to_string(path.join("stat")).ok()?;
        let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
        // utime and stime: fields 14 and 15 of the line, 12 and 13 after
        // the command.
        return Some(fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?);
    }
    None
}

/// The gaps of a profiled loop.
struct Gaps {
    longest: Duration,
    over_100us: u64,
    calls: u64,
    /// The loop's thread's context switches: voluntary (it waited: a lock,
    /// a page fault's I/O) and involuntary (the scheduler preempted it).
    waited: i64,
    preempted: i64,
}

/// The calling thread's (voluntary, involuntary) context switches so far.
fn context_switches() -> (i64, i64) {
    // SAFETY: `getrusage` fills a zeroed `rusage`.
    unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_THREAD, &mut usage);
        (usage.ru_nvcsw, usage.ru_nivcsw)
    }
}

impl std::fmt::Display for Gaps {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(
            f,
            "longest {:.1} us, {} gaps over 100 us in {} calls; the thread waited {} times, \
             was preempted {} times",
            self.longest.as_secs_f64() * 1e6,
            self.over_100us,
            self.calls,
            self.waited,
            self.preempted,
        )
    }
}

/// Calls `tick` until `done`, or `calls` times.
fn profiled_loop(done: &AtomicBool, calls: Option<u64>) -> Gaps {
    let mut gaps = Gaps {
        longest: Duration::ZERO,
        over_100us: 0,
        calls: 0,
        waited: 0,
        preempted: 0,
    };
    let (waited, preempted) = context_switches();
    let mut last = Instant::now();
    while !done.load(Relaxed) && calls.is_none_or(|c| gaps.calls < c) {
        std::hint::black_box(tick(gaps.calls as usize));
        let now = Instant::now();
        let gap = now - last;
        gaps.longest = gaps.longest.max(gap);
        gaps.over_100us += u64::from(gap > Duration::from_micros(100));
        last = now;
        gaps.calls += 1;
    }
    let (waited_after, preempted_after) = context_switches();
    gaps.waited = waited_after - waited;
    gaps.preempted = preempted_after - preempted;
    gaps
}

/// Work outside memprof's: 1.5 MB strings made and filled, for `length`.
fn busy(length: Duration) {
    let start = Instant::now();
    while start.elapsed() < length {
        let text: String = (0..1_500_000)
            .map(|i| char::from(b'a' + (i % 26) as u8))
            .collect();
        std::hint::black_box(text);
    }
}

fn main() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("live-cost");
    let _ = std::fs::create_dir_all(&dir);
    // SAFETY: no other thread runs yet.
    unsafe {
        std::env::set_var("MEMPROF_LIVE", "1");
        std::env::set_var("MEMPROF_REPORT", "off");
        std::env::set_var("XDG_RUNTIME_DIR", &dir);
    }
    assert_eq!(thousand::all(), 64 * 1000);

    const SNAPSHOTS: u32 = 100;
    let mut times = Vec::new();
    let ticks_before = thread_ticks("memprof-live");
    let mut bytes = 0;
    for _ in 0..SNAPSHOTS {
        let start = Instant::now();
        bytes = snapshot();
        times.push(start.elapsed());
    }
    let ticks_after = thread_ticks("memprof-live");
    times.sort();
    // SAFETY: a plain query.
    let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    println!(
        "snapshot of 1,000 functions ({} KiB of JSON), round trip: median {:.1} ms, longest {:.1} ms",
        bytes / 1024,
        times[times.len() / 2].as_secs_f64() * 1e3,
        times[times.len() - 1].as_secs_f64() * 1e3,
    );
    if let (Some(before), Some(after)) = (ticks_before, ticks_after) {
        println!(
            "memprof-live thread CPU per snapshot: {:.1} ms ({} ticks of {:.0} ms over {SNAPSHOTS})",
            (after - before) as f64 / per_second * 1e3 / f64::from(SNAPSHOTS),
            after - before,
            1e3 / per_second,
        );
    }

    let done = AtomicBool::new(false);
    let start = Instant::now();
    let during = std::thread::scope(|scope| {
        scope.spawn(|| {
            for _ in 0..SNAPSHOTS {
                snapshot();
            }
            done.store(true, Relaxed);
        });
        profiled_loop(&done, None)
    });
    let length = start.elapsed();
    let done = AtomicBool::new(false);
    let beside = std::thread::scope(|scope| {
        scope.spawn(|| {
            busy(length);
            done.store(true, Relaxed);
        });
        profiled_loop(&done, None)
    });
    let alone = profiled_loop(&AtomicBool::new(false), Some(during.calls));
    println!(
        "profiled loop during {SNAPSHOTS} snapshots ({:.2} s): {during}",
        length.as_secs_f64()
    );
    println!("profiled loop beside as long a busy thread outside memprof: {beside}");
    println!("profiled loop alone: {alone}");
}
