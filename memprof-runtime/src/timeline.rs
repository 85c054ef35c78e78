//! Cooperation with `mprof run`: a `FUNC` line per profiled call and `HEAP`
//! samples of the exact heap, appended to the run's `.dat` file.
//!
//! `mprof run` sets `MEMPROF_MPROF` to the absolute path of the `.dat` file it
//! writes, and `MEMPROF_MPROF_INTERVAL` to its sampling interval in seconds.
//! Without `MEMPROF_MPROF` nothing here runs: a profiled call pays one relaxed
//! load of [`STATE`].
//!
//! With it, the program:
//! - appends `FUNC <path> <rss_start> <t_start> <rss_end> <t_end> <depth>`
//!   when each `#[profile]` call returns (MiB and unix seconds, `%.4f`, as
//!   memory_profiler writes them). RSS comes from `/proc/self/statm`. The depth
//!   counts the profiled calls open on the thread, as memory_profiler's
//!   `TimeStamper` does: 0 for an outermost call, 1 inside it, and so on. An
//!   `async fn` may move between threads at each `.await`, so its call takes
//!   the depth of the thread it starts on and does not deepen the calls made
//!   inside it;
//! - runs a sampler thread that appends `HEAP <MiB %.6f> <t %.4f>` every
//!   interval, with the heap in use as the counting allocator sums it, and
//!   appends one last sample at exit.
//!
//! Both write straight into the `.dat` file, opened with `O_APPEND`, one
//! `write(2)` per line: the kernel appends each write whole, so lines from
//! the program and from `mprof run`'s own sampler (which also writes whole
//! lines with `O_APPEND`) interleave but never mix, and the file is complete
//! at every moment, even if either process is killed. Readers sort by time.
//!
//! Only one process of a run records: the first to take an exclusive `flock`
//! on the file. Programs that `mprof run` reaches through a wrapper (`cargo
//! run`, a shell script) still record; a profiled program started by another
//! one while that one records does not, so one `HEAP` series never mixes two
//! heaps.
//!
//! Nothing here allocates while the program runs: lines are formatted into
//! stack buffers and written with `libc::write`, and the sampler is a bare
//! `pthread` with every signal blocked that only sleeps, sums the allocator's
//! slots and writes. Setting up (reading the environment, starting the
//! thread) runs inside [`untracked`], so none of it shows in any figure.

use crate::calls::FnMeta;

/// What a profiled call noted at entry, for its `FUNC` line.
#[derive(Debug)]
pub(crate) struct CallMark {
    start: Option<Start>,
}

impl CallMark {
    /// A call that writes no `FUNC` line (`MEMPROF=off`).
    pub(crate) const fn none() -> Self {
        CallMark { start: None }
    }
}

#[derive(Debug)]
struct Start {
    rss_mib: f64,
    time: f64,
    depth: u32,
    /// Whether the call counted in the thread's depth (sync calls do).
    nests: bool,
}

#[cfg(target_os = "linux")]
pub(crate) use linux::{call_end, call_start};

#[cfg(not(target_os = "linux"))]
pub(crate) fn call_start(_nests: bool) -> CallMark {
    CallMark { start: None }
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn call_end(_mark: &CallMark, _meta: &FnMeta) {}

#[cfg(target_os = "linux")]
mod linux {
    use super::{CallMark, FnMeta, Start};
    use crate::alloc::{is_installed, process_net, untracked};
    use std::cell::Cell;
    use std::ffi::CString;
    use std::fmt::Write as _;
    use std::os::unix::ffi::OsStrExt;
    use std::sync::Once;
    use std::sync::atomic::{AtomicI32, AtomicU8, AtomicU64, Ordering::Relaxed};
    use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

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
            eprintln!(
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
        spawn_sampler();
        // SAFETY: `sample_at_exit` is a plain `extern "C" fn` that never
        // unwinds, as `atexit` requires.
        unsafe { libc::atexit(sample_at_exit) };
        true
    }

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
            write_heap_sample();
            // Deadlines, not sleeps of a fixed length, so samples do not drift.
            tick = tick.wrapping_add(1);
            let next = origin + interval * tick;
            if let Some(wait) = next.checked_duration_since(Instant::now()) {
                std::thread::sleep(wait);
            }
        }
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

    /// One last sample as the program exits, so that a run shorter than an
    /// interval still has its heap.
    extern "C" fn sample_at_exit() {
        untracked(write_heap_sample);
    }

    /// Notes the entry of a profiled call. `nests`: the call is synchronous
    /// and counts in the thread's depth until it returns.
    #[inline]
    pub(crate) fn call_start(nests: bool) -> CallMark {
        if !enabled() {
            return CallMark { start: None };
        }
        start_call(nests)
    }

    #[cold]
    #[inline(never)]
    fn start_call(nests: bool) -> CallMark {
        let depth = DEPTH
            .try_with(|d| {
                let depth = d.get();
                if nests {
                    d.set(depth + 1);
                }
                depth
            })
            .unwrap_or(0);
        CallMark {
            start: Some(Start {
                rss_mib: rss_mib(),
                time: unix_now(),
                depth,
                nests,
            }),
        }
    }

    /// Appends the call's `FUNC` line.
    #[inline]
    pub(crate) fn call_end(mark: &CallMark, meta: &FnMeta) {
        if let Some(start) = &mark.start {
            end_call(start, meta);
        }
    }

    #[cold]
    #[inline(never)]
    fn end_call(start: &Start, meta: &FnMeta) {
        untracked(|| {
            let (rss, time) = (rss_mib(), unix_now());
            if start.nests {
                let _ = DEPTH.try_with(|d| d.set(start.depth));
            }
            let mut line = LineBuf::new();
            line.push_str("FUNC ");
            // NOTE: memory_profiler splits FUNC lines on spaces, and Rust
            // paths such as `<T as Trait>::f` have some.
            for c in meta.name().chars() {
                line.push_char(if c.is_whitespace() { '_' } else { c });
            }
            let _ = writeln!(
                line,
                " {:.4} {:.4} {rss:.4} {time:.4} {}",
                start.rss_mib, start.time, start.depth
            );
            line.write_to_dat();
        });
    }

    const MIB: f64 = (1u64 << 20) as f64;

    fn unix_now() -> f64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64())
    }

    /// This process's resident set size in MiB, from `/proc/self/statm`; 0 if
    /// it cannot be read.
    fn rss_mib() -> f64 {
        let mut buf = [0u8; 128];
        // SAFETY: a constant NUL-terminated path; `buf` outlives the read and
        // the length passed is its size.
        let read = unsafe {
            let fd = libc::open(
                c"/proc/self/statm".as_ptr(),
                libc::O_RDONLY | libc::O_CLOEXEC,
            );
            if fd < 0 {
                return 0.0;
            }
            let n = libc::read(fd, buf.as_mut_ptr().cast(), buf.len());
            libc::close(fd);
            n
        };
        let Ok(n) = usize::try_from(read) else {
            return 0.0;
        };
        // "size resident shared text lib data dt", in pages.
        let resident = buf[..n]
            .split(|b| *b == b' ')
            .nth(1)
            .and_then(|f| std::str::from_utf8(f).ok())
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0);
        (resident * page_size()) as f64 / MIB
    }

    fn page_size() -> u64 {
        static PAGE: AtomicU64 = AtomicU64::new(0);
        match PAGE.load(Relaxed) {
            0 => {
                // SAFETY: `sysconf` has no preconditions.
                let size = u64::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) })
                    .ok()
                    .filter(|s| *s > 0)
                    .unwrap_or(4096);
                PAGE.store(size, Relaxed);
                size
            }
            size => size,
        }
    }

    /// One line, formatted on the stack. A name too long for it is cut
    /// short, so that the figures after it always fit; a line that still
    /// does not end in a newline is never written.
    struct LineBuf {
        bytes: [u8; 1024],
        len: usize,
    }

    /// Room kept after a name for the five figures of a `FUNC` line.
    const FIGURES: usize = 160;

    impl LineBuf {
        fn new() -> Self {
            LineBuf {
                bytes: [0; 1024],
                len: 0,
            }
        }

        fn push_str(&mut self, s: &str) {
            for c in s.chars() {
                self.push_char(c);
            }
        }

        /// Pushes a character of the name, leaving room for the figures.
        fn push_char(&mut self, c: char) {
            let mut utf8 = [0; 4];
            let c = c.encode_utf8(&mut utf8).as_bytes();
            if self.len + c.len() + FIGURES <= self.bytes.len() {
                self.bytes[self.len..self.len + c.len()].copy_from_slice(c);
                self.len += c.len();
            }
        }

        fn write_to_dat(&self) {
            let fd = FD.load(Relaxed);
            if fd < 0 || self.len == 0 || self.bytes[self.len - 1] != b'\n' {
                return;
            }
            // SAFETY: `fd` stays open for the life of the process; the slice
            // is initialised memory of the given length.
            unsafe {
                libc::write(fd, self.bytes.as_ptr().cast(), self.len);
            }
        }
    }

    impl std::fmt::Write for LineBuf {
        fn write_str(&mut self, s: &str) -> std::fmt::Result {
            let room = self.bytes.len() - self.len;
            if s.len() > room {
                return Err(std::fmt::Error);
            }
            self.bytes[self.len..self.len + s.len()].copy_from_slice(s.as_bytes());
            self.len += s.len();
            Ok(())
        }
    }
}
