//! The counting allocator and the counters it feeds.
//!
//! Every allocation updates two things, neither of which allocates, locks or
//! panics:
//! - the calling thread's own counters (a `thread_local!` of plain `Cell`s
//!   with no destructor), which give exact per-thread figures and the
//!   high-water mark that statement peaks are read from;
//! - the thread's slot in a static array, written only by its owner with
//!   relaxed stores, so that other threads can sum the slots into a
//!   process-wide figure without the owner paying for atomic read-modify-write.
//!
//! Threads beyond [`SLOT_COUNT`] share one overflow slot through atomic adds:
//! still exact, only slower.
//!
//! While a process-scope region is open, allocations also feed a small set of
//! global watermarks (see [`watch_begin`]); otherwise that costs one relaxed
//! load per allocation.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicUsize, Ordering::Relaxed};

/// A global allocator that counts every byte it hands out, wrapping `A`.
///
/// Install it as the global allocator to make memprof's figures available:
///
/// ```ignore
/// #[global_allocator]
/// static ALLOC: memprof::Allocator = memprof::Allocator::system();
/// ```
///
/// The default `global-allocator` feature of the `memprof` crate does this for
/// you. To count on top of another allocator, turn that feature off and wrap
/// yours: `memprof::Allocator::new(mimalloc::MiMalloc)`.
#[derive(Debug, Default, Clone, Copy)]
pub struct Allocator<A = System> {
    inner: A,
}

impl Allocator<System> {
    /// A counting allocator over the system allocator.
    pub const fn system() -> Self {
        Allocator { inner: System }
    }
}

impl<A> Allocator<A> {
    /// A counting allocator over `inner`.
    pub const fn new(inner: A) -> Self {
        Allocator { inner }
    }
}

// SAFETY: every method forwards to `inner` with the caller's arguments
// unchanged, and only updates counters afterwards; the counting never touches
// the returned memory.
unsafe impl<A: GlobalAlloc> GlobalAlloc for Allocator<A> {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's guarantees.
        let ptr = unsafe { self.inner.alloc(layout) };
        if !ptr.is_null() {
            record(layout.size() as i64, 1, 0);
        }
        ptr
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's guarantees.
        let ptr = unsafe { self.inner.alloc_zeroed(layout) };
        if !ptr.is_null() {
            record(layout.size() as i64, 1, 0);
        }
        ptr
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { self.inner.dealloc(ptr, layout) };
        record(-(layout.size() as i64), 0, 1);
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded with the caller's guarantees.
        let new = unsafe { self.inner.realloc(ptr, layout, new_size) };
        if !new.is_null() {
            // NOTE: a realloc counts as one allocation and one deallocation,
            // and moves the byte count by the size difference only.
            record(new_size as i64 - layout.size() as i64, 1, 1);
        }
        new
    }
}

/// Number of per-thread slots; later threads share the overflow slot.
pub(crate) const SLOT_COUNT: usize = 1024;

/// One thread's share of the process-wide counters.
#[repr(align(64))]
pub(crate) struct Slot {
    claimed: AtomicBool,
    net: AtomicI64,
    allocs: AtomicU64,
    deallocs: AtomicU64,
}

impl Slot {
    const fn new() -> Self {
        Slot {
            claimed: AtomicBool::new(false),
            net: AtomicI64::new(0),
            allocs: AtomicU64::new(0),
            deallocs: AtomicU64::new(0),
        }
    }
}

static SLOTS: [Slot; SLOT_COUNT] = [const { Slot::new() }; SLOT_COUNT];
/// How many slots have ever been claimed: readers sum only these.
static SLOTS_USED: AtomicUsize = AtomicUsize::new(0);
static OVERFLOW: Slot = Slot::new();
/// Set once any thread allocates through a memprof [`Allocator`].
static INSTALLED: AtomicBool = AtomicBool::new(false);

/// The calling thread's counters. Only this thread reads or writes them.
///
/// `net`, `peak`, `allocs` and `deallocs` are real: moved by the allocator
/// alone. The rest is owned by the probes: `adjust_*` shift real values into
/// the current context's terms (an async task's own count while it is polled;
/// zero otherwise), `carry` holds the part of the innermost open region's
/// watermark that `peak` no longer shows, and `hi` the highest `peak` seen
/// since the current poll began.
pub(crate) struct ThreadCounters {
    pub(crate) net: Cell<i64>,
    pub(crate) peak: Cell<i64>,
    pub(crate) allocs: Cell<u64>,
    pub(crate) deallocs: Cell<u64>,
    pub(crate) paused: Cell<bool>,
    slot: Cell<*const Slot>,
    pub(crate) adjust_net: Cell<i64>,
    pub(crate) adjust_allocs: Cell<u64>,
    pub(crate) adjust_deallocs: Cell<u64>,
    pub(crate) carry: Cell<i64>,
    pub(crate) hi: Cell<i64>,
}

thread_local! {
    // NOTE: no field needs drop, so this registers no TLS destructor: the
    // allocator may touch it at any point of a thread's life, teardown included.
    pub(crate) static THREAD: ThreadCounters = const {
        ThreadCounters {
            net: Cell::new(0),
            peak: Cell::new(0),
            allocs: Cell::new(0),
            deallocs: Cell::new(0),
            paused: Cell::new(false),
            slot: Cell::new(std::ptr::null()),
            adjust_net: Cell::new(0),
            adjust_allocs: Cell::new(0),
            adjust_deallocs: Cell::new(0),
            carry: Cell::new(i64::MIN),
            hi: Cell::new(i64::MIN),
        }
    };
}

#[inline(always)]
fn record(delta: i64, allocs: u64, deallocs: u64) {
    let _ = THREAD.try_with(|t| {
        if t.paused.get() {
            return;
        }
        let net = t.net.get() + delta;
        t.net.set(net);
        if net > t.peak.get() {
            t.peak.set(net);
        }
        let a = t.allocs.get() + allocs;
        t.allocs.set(a);
        let d = t.deallocs.get() + deallocs;
        t.deallocs.set(d);

        let mut slot = t.slot.get();
        if slot.is_null() {
            slot = claim_slot();
            t.slot.set(slot);
        }
        if std::ptr::eq(slot, &OVERFLOW) {
            OVERFLOW.net.fetch_add(delta, Relaxed);
            OVERFLOW.allocs.fetch_add(allocs, Relaxed);
            OVERFLOW.deallocs.fetch_add(deallocs, Relaxed);
        } else {
            // SAFETY: non-overflow slot pointers point into the static `SLOTS`.
            let slot = unsafe { &*slot };
            // PERF: only this thread writes its slot, so plain stores suffice.
            slot.net.store(net, Relaxed);
            slot.allocs.store(a, Relaxed);
            slot.deallocs.store(d, Relaxed);
        }
        if WATCH_MASK.load(Relaxed) != 0 {
            watch_record(delta);
        }
    });
}

#[cold]
fn claim_slot() -> *const Slot {
    INSTALLED.store(true, Relaxed);
    for (i, slot) in SLOTS.iter().enumerate() {
        if slot
            .claimed
            .compare_exchange(false, true, Relaxed, Relaxed)
            .is_ok()
        {
            SLOTS_USED.fetch_max(i + 1, Relaxed);
            return slot;
        }
    }
    &OVERFLOW
}

/// Whether a memprof [`Allocator`] has counted anything in this process.
pub fn is_installed() -> bool {
    INSTALLED.load(Relaxed)
}

/// Process-wide counters, summed over every thread.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Totals {
    pub(crate) net: i64,
    pub(crate) allocs: u64,
    pub(crate) deallocs: u64,
}

/// Sums every thread's slot. Costs one pass over the slots claimed so far.
pub(crate) fn process_totals() -> Totals {
    let used = SLOTS_USED.load(Relaxed);
    let mut t = Totals {
        net: OVERFLOW.net.load(Relaxed),
        allocs: OVERFLOW.allocs.load(Relaxed),
        deallocs: OVERFLOW.deallocs.load(Relaxed),
    };
    for slot in &SLOTS[..used] {
        t.net += slot.net.load(Relaxed);
        t.allocs = t.allocs.wrapping_add(slot.allocs.load(Relaxed));
        t.deallocs = t.deallocs.wrapping_add(slot.deallocs.load(Relaxed));
    }
    t
}

/// Heap bytes in use by the whole process, as counted by memprof.
pub fn process_heap() -> u64 {
    process_totals().net.max(0) as u64
}

/// Runs `f` with this thread's counting paused: what `f` allocates and frees
/// shows in no figure. Everything `f` allocates must be freed inside `f` too,
/// or live for the rest of the process.
pub(crate) fn untracked<R>(f: impl FnOnce() -> R) -> R {
    struct Resume(bool);
    impl Drop for Resume {
        fn drop(&mut self) {
            let _ = THREAD.try_with(|t| t.paused.set(self.0));
        }
    }
    let was = THREAD.try_with(|t| t.paused.replace(true)).unwrap_or(true);
    let _resume = Resume(was);
    f()
}

// ---- process-scope watermarks -------------------------------------------

/// At most this many process-scope regions can track a peak at once.
const WATCHERS: usize = 64;
static WATCH_MASK: AtomicU64 = AtomicU64::new(0);
/// Net bytes allocated while any watcher was active: a running delta, only
/// ever read as differences.
static WATCH_NET: AtomicI64 = AtomicI64::new(0);
static WATCH_PEAK: [AtomicI64; WATCHERS] = [const { AtomicI64::new(0) }; WATCHERS];

#[cold]
fn watch_record(delta: i64) {
    let now = WATCH_NET.fetch_add(delta, Relaxed) + delta;
    if delta > 0 {
        let mut mask = WATCH_MASK.load(Relaxed);
        while mask != 0 {
            let i = mask.trailing_zeros() as usize;
            WATCH_PEAK[i].fetch_max(now, Relaxed);
            mask &= mask - 1;
        }
    }
}

/// A process-wide watermark, open from [`watch_begin`] to [`watch_end`].
#[derive(Debug)]
pub(crate) struct Watch {
    index: Option<u32>,
    start: i64,
}

/// Starts watching the process-wide high-water mark.
///
/// Allocations that race with this call may be missed by the peak (never by
/// the increment, which comes from the slots); with all 64 watchers busy the
/// peak falls back to the larger of the start and end figures.
pub(crate) fn watch_begin() -> Watch {
    let mut mask = WATCH_MASK.load(Relaxed);
    loop {
        let free = !mask;
        if free == 0 {
            return Watch {
                index: None,
                start: WATCH_NET.load(Relaxed),
            };
        }
        let i = free.trailing_zeros();
        let start = WATCH_NET.load(Relaxed);
        WATCH_PEAK[i as usize].store(start, Relaxed);
        match WATCH_MASK.compare_exchange(mask, mask | (1 << i), Relaxed, Relaxed) {
            Ok(_) => {
                return Watch {
                    index: Some(i),
                    start,
                }
            }
            Err(now) => mask = now,
        }
    }
}

/// Ends a watch and returns the highest rise above its start.
pub(crate) fn watch_end(watch: Watch) -> i64 {
    let end = WATCH_NET.load(Relaxed);
    let peak = match watch.index {
        Some(i) => {
            let peak = WATCH_PEAK[i as usize].load(Relaxed);
            WATCH_MASK.fetch_and(!(1 << i), Relaxed);
            peak
        }
        None => end,
    };
    (peak.max(end) - watch.start).max(0)
}
