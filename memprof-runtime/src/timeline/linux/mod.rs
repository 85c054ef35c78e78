//! `mprof run` on Linux: configuration, the sampler thread and the calls'
//! `FUNC` and `CALLS` lines.

use super::{CallMark, FnMeta, Start};
use crate::alloc::{is_installed, process_net, untracked};
use std::cell::{Cell, UnsafeCell};
use std::ffi::CString;
use std::fmt::Write as _;
use std::os::unix::ffi::OsStrExt;
use std::sync::Once;
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};
use std::sync::atomic::{
    AtomicBool, AtomicI32, AtomicPtr, AtomicU8, AtomicU32, AtomicU64, AtomicUsize,
};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

mod intervals;
mod lines;
mod rings;
use intervals::*;
use lines::*;
use rings::*;

// ---- configuration and start -------------------------------------------

/// The environment variable `mprof run` sets: the `.dat` file to append to.
const FILE_VAR: &str = "MEMPROF_MPROF";
/// Seconds between `HEAP` samples.
const INTERVAL_VAR: &str = "MEMPROF_MPROF_INTERVAL";

const UNKNOWN: u8 = 0;
const OFF: u8 = 1;
const ON: u8 = 2;

/// Whether this process records, once the environment has been read.
static STATE: AtomicU8 = AtomicU8::new(UNKNOWN);
static INIT: Once = Once::new();
/// The `.dat` file, opened for appending; -1 until then.
static FD: AtomicI32 = AtomicI32::new(-1);
/// Sampling interval, in nanoseconds.
static INTERVAL_NS: AtomicU64 = AtomicU64::new(100_000_000);
/// Intervals of calls shorter than this (a tenth of the sampling
/// interval, in seconds, as `f64` bits) get no `FUNC` line: a plot could
/// not show them. They count in the `CALLS` totals.
static MIN_CALL_BITS: AtomicU64 = AtomicU64::new(0);
/// The RSS in MiB (`f64` bits) at the sampler's last reading; 0 before
/// the first.
static RSS_BITS: AtomicU64 = AtomicU64::new(0);
/// Set when the process exits: lines are written straight away from then
/// on, as no sampler will write the rings again.
static EXITED: AtomicBool = AtomicBool::new(false);

thread_local! {
    // NOTE: no destructor, so it is usable at any point of a thread's life.
    static DEPTH: Cell<u32> = const { Cell::new(0) };
}

// Starts the HEAP sampler as the program loads, so that its curve covers
// the whole run and not only what follows the first profiled call. The
// first profiled call would start it too (see `enabled`), should the
// linker leave this out.
#[used]
#[unsafe(link_section = ".init_array")]
static START_AT_LOAD: extern "C" fn() = start_at_load;

extern "C" fn start_at_load() {
    enabled();
}

/// Whether this process records a timeline for `mprof run`.
pub(crate) fn recording() -> bool {
    enabled()
}

#[inline(always)]
fn enabled() -> bool {
    match STATE.load(Relaxed) {
        ON => true,
        OFF => false,
        _ => init(),
    }
}

#[cold]
#[inline(never)]
fn init() -> bool {
    INIT.call_once(|| {
        let on = untracked(start);
        STATE.store(if on { ON } else { OFF }, Relaxed);
    });
    STATE.load(Relaxed) == ON
}

/// Opens and locks the file and starts the sampler; `false` if this
/// process is not to record.
fn start() -> bool {
    let Some(path) = std::env::var_os(FILE_VAR).filter(|p| !p.is_empty()) else {
        return false;
    };
    if let Some(secs) = std::env::var(INTERVAL_VAR)
        .ok()
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s > 0.0)
    {
        INTERVAL_NS.store((secs.max(0.001) * 1e9) as u64, Relaxed);
    }
    let interval = INTERVAL_NS.load(Relaxed) as f64 / 1e9;
    MIN_CALL_BITS.store((interval / 10.0).to_bits(), Relaxed);
    let Ok(path) = CString::new(path.as_bytes()) else {
        return false;
    };
    // SAFETY: `path` is a valid NUL-terminated string.
    let fd = unsafe {
        libc::open(
            path.as_ptr(),
            libc::O_WRONLY | libc::O_APPEND | libc::O_CREAT | libc::O_CLOEXEC,
            0o644,
        )
    };
    if fd < 0 {
        crate::stdio::warning!(
            "memprof: cannot open {FILE_VAR}={}: {}; not recording for mprof",
            path.to_string_lossy(),
            std::io::Error::last_os_error()
        );
        return false;
    }
    // SAFETY: `fd` is an open descriptor that this function owns.
    if unsafe { libc::flock(fd, libc::LOCK_EX | libc::LOCK_NB) } != 0
        && std::io::Error::last_os_error().kind() == std::io::ErrorKind::WouldBlock
    {
        // Another process of this run records. (A file system without
        // locks gives another error: then this process records.)
        // SAFETY: as above; it is not used again.
        unsafe { libc::close(fd) };
        return false;
    }
    FD.store(fd, Relaxed);
    refresh_rss();
    spawn_sampler();
    // SAFETY: `finish_at_exit` is a plain `extern "C" fn` that never
    // unwinds, as `atexit` requires.
    unsafe { libc::atexit(finish_at_exit) };
    true
}

// ---- the sampler ---------------------------------------------------------

/// Starts the sampler as a bare pthread with every signal blocked, so
/// that no Rust thread bookkeeping allocates for it and the program's
/// signal handlers never run on it.
fn spawn_sampler() {
    extern "C" fn run(_: *mut libc::c_void) -> *mut libc::c_void {
        untracked(sample_forever)
    }
    // SAFETY: plain libc calls on locals that live across them; the
    // thread's entry point never unwinds (nothing it calls panics).
    unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
        let mut attr: libc::pthread_attr_t = std::mem::zeroed();
        libc::pthread_attr_init(&mut attr);
        libc::pthread_attr_setstacksize(&mut attr, 256 * 1024);
        libc::pthread_attr_setdetachstate(&mut attr, libc::PTHREAD_CREATE_DETACHED);
        let mut thread: libc::pthread_t = std::mem::zeroed();
        if libc::pthread_create(&mut thread, &attr, run, std::ptr::null_mut()) == 0 {
            libc::pthread_setname_np(thread, c"memprof-mprof".as_ptr());
        }
        libc::pthread_attr_destroy(&mut attr);
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
    }
}

fn sample_forever() -> *mut libc::c_void {
    let interval = Duration::from_nanos(INTERVAL_NS.load(Relaxed));
    let origin = Instant::now();
    let mut tick: u32 = 0;
    loop {
        refresh_rss();
        if let Some(drain) = Drain::try_take() {
            write_rings(&drain);
        }
        write_heap_sample();
        // Deadlines, not sleeps of a fixed length, so samples do not drift.
        tick = tick.wrapping_add(1);
        let next = origin + interval * tick;
        if let Some(wait) = next.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
    }
}

fn refresh_rss() {
    RSS_BITS.store(rss_mib().to_bits(), Relaxed);
}

fn write_heap_sample() {
    // Without memprof's allocator (or before its first allocation)
    // there is no heap figure to give.
    if is_installed() {
        let heap = process_net().max(0) as f64 / MIB;
        let mut line = LineBuf::new();
        let _ = writeln!(line, "HEAP {heap:.6} {:.4}", unix_now());
        line.write_to_dat();
    }
}

/// The last lines, the `CALLS` totals and one last sample as the program
/// exits, so that a run shorter than an interval still has its heap.
extern "C" fn finish_at_exit() {
    untracked(|| {
        let drain = Drain::take();
        EXITED.store(true, Release);
        write_rings(&drain);
        close_open_intervals();
        write_totals();
        write_heap_sample();
        // Kept: the sampler, should it run on, writes nothing but HEAP.
        std::mem::forget(drain);
    });
}

/// The right to write the rings out: the sampler's each interval, or the
/// exiting thread's, never both at once.
struct Drain;

static DRAINING: AtomicBool = AtomicBool::new(false);

impl Drain {
    fn try_take() -> Option<Drain> {
        DRAINING
            .compare_exchange(false, true, Acquire, Relaxed)
            .is_ok()
            .then_some(Drain)
    }

    /// Waits for the sampler to finish writing (a few microseconds).
    fn take() -> Drain {
        loop {
            if let Some(drain) = Drain::try_take() {
                return drain;
            }
            std::thread::yield_now();
        }
    }
}

impl Drop for Drain {
    fn drop(&mut self) {
        DRAINING.store(false, Release);
    }
}

// ---- calls ---------------------------------------------------------------

/// Notes the entry of a profiled call. `nests`: the call is synchronous
/// and counts in the thread's depth until it returns.
#[inline]
pub(crate) fn call_start(nests: bool, meta: &FnMeta) -> CallMark {
    if !enabled() {
        return CallMark { start: None };
    }
    start_call(nests, meta)
}

#[cold]
#[inline(never)]
fn start_call(nests: bool, meta: &FnMeta) -> CallMark {
    let depth = DEPTH
        .try_with(|d| {
            let depth = d.get();
            if nests {
                d.set(depth + 1);
            }
            depth
        })
        .unwrap_or(0);
    let time = unix_now();
    let rss_mib = f64::from_bits(RSS_BITS.load(Relaxed));
    // NOTE: the slot's name is a `&'static str`; taking a slot allocates
    // nothing.
    let slot = slot_of(meta, depth);
    if let Some(slot) = INTERVALS.get(slot) {
        slot.with(|t| t.open(time, rss_mib));
    }
    CallMark {
        start: Some(Start {
            rss_mib,
            time,
            depth,
            nests,
            slot,
        }),
    }
}

/// Closes the call in its function's interval, and buffers the interval's
/// `FUNC` line if it was the last open call and lasted long enough.
/// Returns whether the call alone lasted long enough to draw.
#[inline]
pub(crate) fn call_end(mark: &CallMark, meta: &FnMeta) -> bool {
    match &mark.start {
        Some(start) => end_call(start, meta),
        None => false,
    }
}

#[cold]
#[inline(never)]
fn end_call(start: &Start, meta: &FnMeta) -> bool {
    if start.nests {
        let _ = DEPTH.try_with(|d| d.set(start.depth));
    }
    let time = unix_now();
    let closed = match INTERVALS.get(start.slot) {
        Some(slot) => slot.with(|t| t.close(time)),
        // The table is full: the call is its own interval.
        None => {
            OTHERS.with(|t| {
                t.open(start.time, start.rss_mib);
                t.close(time)
            });
            Some(Closed {
                start: start.time,
                start_rss: start.rss_mib,
                end: time,
            })
        }
    };
    if let Some(closed) = closed {
        write_interval(&closed, meta.name(), start.depth);
    }
    time - start.time >= f64::from_bits(MIN_CALL_BITS.load(Relaxed))
}

/// Buffers an interval's `FUNC` line, if it is long enough to draw.
fn write_interval(closed: &Closed, name: &str, depth: u32) {
    if closed.end - closed.start < f64::from_bits(MIN_CALL_BITS.load(Relaxed)) {
        return;
    }
    untracked(|| {
        let rss = rss_mib();
        // Fresher than the sampler's, for the calls that start next.
        RSS_BITS.store(rss.to_bits(), Relaxed);
        let mut line = LineBuf::new();
        line.push_str("FUNC ");
        line.push_name(name);
        let _ = writeln!(
            line,
            " {:.4} {:.4} {rss:.4} {:.4} {depth}",
            closed.start_rss, closed.start, closed.end
        );
        if line.is_whole() && !push_to_thread_ring(line.as_bytes()) {
            line.write_to_dat();
        }
    });
}

/// At exit: the intervals of calls still running (the program called
/// `process::exit`, or a task was never finished) end now.
fn close_open_intervals() {
    let now = unix_now();
    for slot in &INTERVALS {
        let Some(name) = slot.name() else {
            continue;
        };
        let closed = slot.with(|t| {
            if t.open == 0 {
                return None;
            }
            // The calls still running count, ended by the exit.
            let running = t.open;
            t.open = 1;
            t.calls += running - 1;
            t.close(now)
        });
        if let Some(closed) = closed {
            write_interval(&closed, name, slot.depth());
        }
    }
}
