//! Cooperation with `mprof run`: `FUNC` lines for the profiled calls long
//! enough to show on a plot, one `SHORT` line per function for the others,
//! and `HEAP` samples of the exact heap, appended to the run's `.dat` file.
//!
//! `mprof run` sets `MEMPROF_MPROF` to the absolute path of the `.dat` file it
//! writes, and `MEMPROF_MPROF_INTERVAL` to its sampling interval in seconds.
//! Without `MEMPROF_MPROF` nothing here runs: a profiled call pays one relaxed
//! load of [`STATE`].
//!
//! With it, the program:
//! - writes `FUNC <path> <rss_start> <t_start> <rss_end> <t_end> <depth>` for
//!   each `#[profile]` call that lasted at least a tenth of the interval (MiB
//!   and unix seconds, `%.4f`, as memory_profiler writes them). The depth
//!   counts the profiled calls open on the thread, as memory_profiler's
//!   `TimeStamper` does: 0 for an outermost call, 1 inside it, and so on,
//!   short calls included. An `async fn` may move between threads at each
//!   `.await`, so its call takes the depth of the thread it starts on and
//!   does not deepen the calls made inside it;
//! - counts the shorter calls instead, and writes at exit one line per
//!   function that had any: `SHORT <path> <calls> <seconds %.6f>`, the
//!   number of calls left out and the time spent in them. A plot could not
//!   show them (a tenth of an interval is under one sample), and a program
//!   that makes millions of them would otherwise write a line, and pay a
//!   system call, for each. memory_profiler's reader skips the prefix;
//! - runs a sampler thread that, every interval, reads the process's RSS
//!   from `/proc/self/statm` into [`RSS_BITS`], writes out the `FUNC` lines
//!   buffered since the last interval, and appends
//!   `HEAP <MiB %.6f> <t %.4f>` with the heap in use as the counting
//!   allocator sums it. At exit it writes the last lines, the `SHORT`
//!   summary and one last `HEAP` sample.
//!
//! So a profiled call makes no system call: it reads the clock (the vDSO),
//! takes its start RSS from the last reading (the sampler's, at most one
//! interval old, or the end of the last long call if later), and, if it
//! lasted long enough to be drawn, reads `/proc/self/statm` once for its end
//! RSS and copies its line into its thread's ring buffer. A bracket's start
//! may so miss what the last moments before the call added to RSS; its end
//! is exact.
//! Each thread that ends a long call leases one of [`RINGS`] fixed rings;
//! the sampler writes each ring out with one `writev(2)` of whole lines. A
//! thread that finds no free ring, or a full one, writes its line itself.
//!
//! The file is opened with `O_APPEND` and written in whole lines: the kernel
//! appends each write whole, so lines from the program and from `mprof
//! run`'s own sampler (which also writes whole lines with `O_APPEND`)
//! interleave but never mix, and the file is complete up to the last
//! interval, even if either process is killed. Readers sort by time.
//!
//! Only one process of a run records: the first to take an exclusive `flock`
//! on the file. Programs that `mprof run` reaches through a wrapper (`cargo
//! run`, a shell script) still record; a profiled program started by another
//! one while that one records does not, so one `HEAP` series never mixes two
//! heaps.
//!
//! Nothing here allocates while the program runs: lines are formatted into
//! stack buffers, rings and the short-call table are fixed statics, and the
//! sampler is a bare `pthread` with every signal blocked that only sleeps,
//! reads, sums the allocator's slots and writes. Setting up (reading the
//! environment, starting the thread, a thread's first lease of a ring) runs
//! inside [`untracked`], so none of it shows in any figure.

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
    use std::cell::{Cell, UnsafeCell};
    use std::ffi::CString;
    use std::fmt::Write as _;
    use std::os::unix::ffi::OsStrExt;
    use std::sync::Once;
    use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};
    use std::sync::atomic::{AtomicBool, AtomicI32, AtomicPtr, AtomicU8, AtomicU64, AtomicUsize};
    use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

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
    /// Calls shorter than this (a tenth of the interval, in seconds, as
    /// `f64` bits) go to the `SHORT` summary instead of a `FUNC` line.
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

    /// The last lines, the `SHORT` summary and one last sample as the
    /// program exits, so that a run shorter than an interval still has its
    /// heap.
    extern "C" fn finish_at_exit() {
        untracked(|| {
            let drain = Drain::take();
            EXITED.store(true, Release);
            write_rings(&drain);
            write_short_summary();
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
                rss_mib: f64::from_bits(RSS_BITS.load(Relaxed)),
                time: unix_now(),
                depth,
                nests,
            }),
        }
    }

    /// Buffers the call's `FUNC` line, or counts it as a short one.
    #[inline]
    pub(crate) fn call_end(mark: &CallMark, meta: &FnMeta) {
        if let Some(start) = &mark.start {
            end_call(start, meta);
        }
    }

    #[cold]
    #[inline(never)]
    fn end_call(start: &Start, meta: &FnMeta) {
        if start.nests {
            let _ = DEPTH.try_with(|d| d.set(start.depth));
        }
        let time = unix_now();
        let seconds = (time - start.time).max(0.0);
        if seconds < f64::from_bits(MIN_CALL_BITS.load(Relaxed)) {
            note_short_call(meta, seconds);
            return;
        }
        untracked(|| {
            let rss = rss_mib();
            // Fresher than the sampler's, for the calls that start next.
            RSS_BITS.store(rss.to_bits(), Relaxed);
            let mut line = LineBuf::new();
            line.push_str("FUNC ");
            line.push_name(meta.name());
            let _ = writeln!(
                line,
                " {:.4} {:.4} {rss:.4} {time:.4} {}",
                start.rss_mib, start.time, start.depth
            );
            if line.is_whole() && !push_to_thread_ring(line.as_bytes()) {
                line.write_to_dat();
            }
        });
    }

    // ---- the rings -----------------------------------------------------------

    /// Threads that can buffer their lines at once; others write their own.
    const RINGS: usize = 64;
    /// Bytes of one ring: a few hundred lines, where one interval brings at
    /// most ten calls a level deep.
    const RING_BYTES: usize = 32 * 1024;

    const FREE: u8 = 0;
    const LEASED: u8 = 1;
    /// Its thread has ended: free once written out.
    const RETURNED: u8 = 2;

    /// One thread's `FUNC` lines, from the thread (which adds at `head`) to
    /// the sampler (which writes out from `tail`). Both count bytes since the
    /// ring was first used; the bytes live at their positions modulo
    /// `RING_BYTES`.
    struct Ring {
        state: AtomicU8,
        head: AtomicUsize,
        tail: AtomicUsize,
        bytes: UnsafeCell<[u8; RING_BYTES]>,
    }

    // SAFETY: `bytes` is shared by one writer (the leasing thread, outside
    // `tail..head`) and one reader (the holder of `Drain`, inside it), which
    // hand the bytes over through `head` and `tail` with Release/Acquire.
    unsafe impl Sync for Ring {}

    impl Ring {
        const fn new() -> Self {
            Ring {
                state: AtomicU8::new(FREE),
                head: AtomicUsize::new(0),
                tail: AtomicUsize::new(0),
                bytes: UnsafeCell::new([0; RING_BYTES]),
            }
        }

        /// Adds a line; `false` if it does not fit. Only the leasing thread
        /// calls it.
        fn push(&self, line: &[u8]) -> bool {
            let head = self.head.load(Relaxed);
            let tail = self.tail.load(Acquire);
            if RING_BYTES - (head - tail) < line.len() {
                return false;
            }
            let at = head % RING_BYTES;
            let first = line.len().min(RING_BYTES - at);
            let base = self.bytes.get().cast::<u8>();
            // SAFETY: `at..at + first` and `0..line.len() - first` lie in the
            // ring and outside `tail..head`, which the sampler alone reads;
            // the check above keeps them from reaching into it.
            unsafe {
                std::ptr::copy_nonoverlapping(line.as_ptr(), base.add(at), first);
                std::ptr::copy_nonoverlapping(line.as_ptr().add(first), base, line.len() - first);
            }
            self.head.store(head + line.len(), Release);
            true
        }

        /// Writes out the lines added so far, in one `writev`. Only the
        /// holder of `Drain` calls it.
        fn write_out(&self, _drain: &Drain, fd: i32) {
            let tail = self.tail.load(Relaxed);
            let head = self.head.load(Acquire);
            if head == tail {
                return;
            }
            let at = tail % RING_BYTES;
            let len = head - tail;
            let first = len.min(RING_BYTES - at);
            let base = self.bytes.get().cast::<u8>();
            // SAFETY: `tail..head` holds whole lines that the thread will not
            // touch until `tail` moves past them; both pieces lie in the ring.
            unsafe {
                let parts = [
                    libc::iovec {
                        iov_base: base.add(at).cast(),
                        iov_len: first,
                    },
                    libc::iovec {
                        iov_base: base.cast(),
                        iov_len: len - first,
                    },
                ];
                libc::writev(fd, parts.as_ptr(), if first == len { 1 } else { 2 });
            }
            self.tail.store(head, Release);
        }
    }

    static RING_POOL: [Ring; RINGS] = [const { Ring::new() }; RINGS];

    /// The ring a thread leased, returned when the thread ends.
    struct Lease(Cell<usize>);

    const NOT_LEASED: usize = usize::MAX;
    /// Every ring was leased when the thread asked: it writes its own lines.
    const NONE_FREE: usize = usize::MAX - 1;

    impl Drop for Lease {
        fn drop(&mut self) {
            if let Some(ring) = RING_POOL.get(self.0.get()) {
                ring.state.store(RETURNED, Release);
            }
        }
    }

    thread_local! {
        static LEASE: Lease = const { Lease(Cell::new(NOT_LEASED)) };
    }

    /// Adds the line to this thread's ring, leasing one first if needed;
    /// `false` if the line is to be written straight away.
    fn push_to_thread_ring(line: &[u8]) -> bool {
        if EXITED.load(Acquire) {
            return false;
        }
        LEASE
            .try_with(|lease| {
                if lease.0.get() == NOT_LEASED {
                    lease.0.set(lease_ring());
                }
                RING_POOL.get(lease.0.get()).is_some_and(|r| r.push(line))
            })
            .unwrap_or(false)
    }

    fn lease_ring() -> usize {
        RING_POOL
            .iter()
            .position(|r| {
                r.state
                    .compare_exchange(FREE, LEASED, Acquire, Relaxed)
                    .is_ok()
            })
            .unwrap_or(NONE_FREE)
    }

    /// Writes every ring out, and frees those whose thread has ended.
    fn write_rings(drain: &Drain) {
        let fd = FD.load(Relaxed);
        for ring in &RING_POOL {
            match ring.state.load(Acquire) {
                FREE => {}
                LEASED => ring.write_out(drain, fd),
                _ => {
                    ring.write_out(drain, fd);
                    ring.state.store(FREE, Release);
                }
            }
        }
    }

    // ---- short calls ---------------------------------------------------------

    /// Functions whose short calls are counted apart; more share one line.
    const SHORT_SLOTS: usize = 4096;

    /// The short calls of one function: keyed by its `FnMeta`'s address.
    struct ShortCalls {
        meta: AtomicPtr<FnMeta>,
        /// The function's name, set by the thread that took the slot.
        name: AtomicPtr<u8>,
        name_len: AtomicUsize,
        calls: AtomicU64,
        nanos: AtomicU64,
    }

    impl ShortCalls {
        const fn new() -> Self {
            ShortCalls {
                meta: AtomicPtr::new(std::ptr::null_mut()),
                name: AtomicPtr::new(std::ptr::null_mut()),
                name_len: AtomicUsize::new(0),
                calls: AtomicU64::new(0),
                nanos: AtomicU64::new(0),
            }
        }

        fn add(&self, seconds: f64) {
            // PERF: shared counters; the functions called often enough for
            // this to contend are the ones the line exists for.
            self.calls.fetch_add(1, Relaxed);
            self.nanos.fetch_add((seconds * 1e9) as u64, Relaxed);
        }

        fn name(&self) -> Option<&'static str> {
            let ptr = self.name.load(Acquire);
            if ptr.is_null() {
                return None;
            }
            let len = self.name_len.load(Relaxed);
            // SAFETY: `ptr` and `len` were taken from a `&'static str` (see
            // `note_short_call`), `len` stored before `ptr` was released.
            Some(unsafe { std::str::from_utf8_unchecked(std::slice::from_raw_parts(ptr, len)) })
        }
    }

    static SHORT: [ShortCalls; SHORT_SLOTS] = [const { ShortCalls::new() }; SHORT_SLOTS];
    /// Short calls of the functions that found the table full.
    static SHORT_OTHERS: ShortCalls = ShortCalls::new();

    fn note_short_call(meta: &FnMeta, seconds: f64) {
        let key = std::ptr::from_ref(meta).cast_mut();
        let hash = (key as usize >> 3).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let first = hash >> (usize::BITS - SHORT_SLOTS.trailing_zeros());
        for probe in 0..SHORT_SLOTS {
            let slot = &SHORT[(first + probe) % SHORT_SLOTS];
            let found = slot.meta.load(Relaxed);
            if found == key {
                return slot.add(seconds);
            }
            if found.is_null() {
                match slot
                    .meta
                    .compare_exchange(std::ptr::null_mut(), key, Relaxed, Relaxed)
                {
                    Ok(_) => {
                        let name = meta.name();
                        slot.name_len.store(name.len(), Relaxed);
                        slot.name.store(name.as_ptr().cast_mut(), Release);
                        return slot.add(seconds);
                    }
                    Err(other) if other == key => return slot.add(seconds),
                    Err(_) => {}
                }
            }
        }
        SHORT_OTHERS.add(seconds);
    }

    fn write_short_summary() {
        let slots = SHORT.iter().filter_map(|s| Some((s.name()?, s)));
        for (name, slot) in slots.chain([("(others)", &SHORT_OTHERS)]) {
            let calls = slot.calls.load(Relaxed);
            if calls == 0 {
                continue;
            }
            let mut line = LineBuf::new();
            line.push_str("SHORT ");
            line.push_name(name);
            let seconds = slot.nanos.load(Relaxed) as f64 / 1e9;
            let _ = writeln!(line, " {calls} {seconds:.6}");
            line.write_to_dat();
        }
    }

    // ---- figures -------------------------------------------------------------

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

    // ---- lines ---------------------------------------------------------------

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

        /// Pushes a function's path.
        fn push_name(&mut self, name: &str) {
            // NOTE: memory_profiler splits FUNC lines on spaces, and Rust
            // paths such as `<T as Trait>::f` have some.
            for c in name.chars() {
                self.push_char(if c.is_whitespace() { '_' } else { c });
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

        fn as_bytes(&self) -> &[u8] {
            &self.bytes[..self.len]
        }

        fn is_whole(&self) -> bool {
            self.len > 0 && self.bytes[self.len - 1] == b'\n'
        }

        fn write_to_dat(&self) {
            let fd = FD.load(Relaxed);
            if fd < 0 || !self.is_whole() {
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
