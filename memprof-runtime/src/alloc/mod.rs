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
//! Threads beyond `SLOT_COUNT` share one overflow slot through atomic adds:
//! still exact, only slower; each moves to a slot of its own once one is
//! free (see `slots` for why there are few).
//!
//! Every special case leaves the fast path through one of two tests of
//! values it loads anyway: the thread's `hook`, null unless the thread is
//! simply counting (its first allocation, `track!` size classes, memprof's
//! own bookkeeping), and the thread-pointer offset of `tls`, zero while a
//! process-scope region is open (see `watch_begin`) or where the shortcut
//! cannot be used.
//!
//! Beside it: `slots` (the process-wide sum), `watch` (process-scope
//! watermarks) and `classes` (size-class tallies for `track!`).

use crate::kernel::layout::{Counters, QUIET_MARK};

mod allocator;
mod classes;
mod slots;
mod watch;

pub use allocator::Allocator;

use classes::{ClassTally, count_classes};
pub(crate) use classes::{SIZE_CLASSES, take_size_classes};
use slots::OVERFLOW;
#[doc(hidden)]
pub use slots::SLOT_COUNT;
pub use slots::in_use as slots_in_use;
pub use slots::process_heap;
use slots::{EMPTY, Slot, any_free, claim_slot, promote};
pub(crate) use slots::{KERNEL_GLOBALS, process_net, release as release_slot};
use watch::{WATCH_MASK, watch_record};
pub(crate) use watch::{Watch, watch_begin, watch_counts, watch_end};

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

/// Set once any thread allocates through a memprof [`Allocator`].
static INSTALLED: AtomicBool = AtomicBool::new(false);

/// Counting normally: the thread owns a slot.
const COUNTING: u8 = 0;
/// No slot yet: the thread has not allocated since it started.
const UNCLAIMED: u8 = 1;
/// All slots taken: this thread adds to the shared overflow slot.
const OVERFLOW_SLOT: u8 = 2;
/// Inside [`untracked`]: nothing is counted.
const PAUSED: u8 = 3;
/// Counting, and also counting by size class for `track!` checkpoints.
const TRACKING: u8 = 4;
/// The thread is ending and gave its slot back (or had none): it adds to
/// the overflow slot, as in `OVERFLOW_SLOT`, and claims no slot any more.
const RETIRED: u8 = 5;

/// The calling thread's counters. Only this thread reads or writes them.
///
/// Starts with the [`Counters`] that the allocator's fast path and the
/// statement probes share with the kernel (see there); the rest is the
/// allocator's slow path's own.
#[repr(C)]
pub(crate) struct ThreadCounters {
    /// What the fast paths touch. `hook` is set only through [`set_mode`].
    pub(crate) head: Counters,
    /// One of `COUNTING`, `UNCLAIMED`, `OVERFLOW_SLOT`, `PAUSED`, `TRACKING`,
    /// `RETIRED`; read on the slow path only.
    mode: Cell<u8>,
    /// Set by the thread's first `track!`: count by size class from now on.
    wants_tracking: Cell<bool>,
    /// `MEMPROF_SITES` records on this thread: its allocations and frees
    /// take the slow path, which reports them to `sites` (with sampled
    /// sites only those the fast path cannot tell apart, see [`set_mode`]).
    sites: Cell<bool>,
    /// This thread's net count when it has no slot of its own: summed into
    /// the process total through `OVERFLOW` instead.
    private: Slot,
    /// Allocations and frees by size class since the last checkpoint, while
    /// `wants_tracking`.
    classes: [Cell<ClassTally>; SIZE_CLASSES],
}

impl std::ops::Deref for ThreadCounters {
    type Target = Counters;

    #[inline(always)]
    fn deref(&self) -> &Counters {
        &self.head
    }
}

thread_local! {
    // NOTE: no field needs drop, so this registers no TLS destructor: the
    // allocator may touch it at any point of a thread's life, teardown included.
    pub(crate) static THREAD: ThreadCounters = const {
        ThreadCounters {
            head: Counters {
                hook: Cell::new(std::ptr::null()),
                allocs: Cell::new(0),
                peak: Cell::new(0),
                deallocs: Cell::new(0),
                allocated: Cell::new(0),
                until_sample: Cell::new(0),
                slot: Cell::new(&EMPTY),
                adjust_net: Cell::new(0),
                adjust_allocs: Cell::new(0),
                adjust_deallocs: Cell::new(0),
                adjust_allocated: Cell::new(0),
                carry: Cell::new(i64::MIN),
                hi: Cell::new(i64::MIN),
                fns: Cell::new(std::ptr::null()),
                fns_len: Cell::new(0),
                stack_top: Cell::new(std::ptr::null_mut()),
                stack_end: Cell::new(std::ptr::null_mut()),
                device_net: Cell::new(0),
                device_peak: Cell::new(0),
                device_carry: Cell::new(i64::MIN),
                device_events: Cell::new(0),
                open_cursor: Cell::new(std::ptr::null()),
                quiet_top: Cell::new(std::ptr::null()),
            },
            mode: Cell::new(UNCLAIMED),
            wants_tracking: Cell::new(false),
            sites: Cell::new(false),
            private: Slot::new(),
            classes: [const { Cell::new(ClassTally::ZERO) }; SIZE_CLASSES],
        }
    };
}

/// The calling thread's counters; null past its thread-locals' end.
///
/// PERF: through the thread-pointer shortcut where it is in use, which
/// saves a `thread_local!` lookup (several calls in unoptimized builds).
#[inline]
pub(crate) fn thread_counters() -> *const ThreadCounters {
    if crate::tls::SUPPORTED {
        let offset = crate::tls::offset();
        if offset != 0 {
            return crate::tls::thread_pointer().wrapping_add_signed(offset)
                as *const ThreadCounters;
        }
    }
    THREAD
        .try_with(|t| t as *const ThreadCounters)
        .unwrap_or(std::ptr::null())
}

/// Marks a `hook` whose thread's sites are sampled: the fast path counts
/// down to the next sampled allocation and asks the in-use filter about
/// each free (see [`record_in`]). `Slot`s are 128-byte aligned, so the
/// pointer's low bit is free.
const SAMPLED: usize = 1;

/// Switches the thread to `mode`, and its allocator hook with it.
///
/// With sampled sites a counting thread keeps its hook, marked
/// [`SAMPLED`]: only the allocations that are sampled and the frees of
/// blocks that may be followed take the slow path, which reports them to
/// `sites`. With exact sites every allocation and free takes it.
///
/// A counting thread inside a quiet call whose events are placed keeps its
/// hook marked `QUIET_MARK` (see `kernel::quiet`).
fn set_mode(t: &ThreadCounters, mode: u8) {
    t.mode.set(mode);
    let slot = t.slot.get();
    let quiet = if t.quiet_top.get().is_null() {
        0
    } else {
        QUIET_MARK
    };
    t.hook.set(match (mode == COUNTING, t.sites.get()) {
        (true, false) => slot.map_addr(|a| a | quiet),
        (true, true) if crate::sites::sample_mean().is_some() => {
            slot.map_addr(|a| a | SAMPLED | quiet)
        }
        _ => std::ptr::null(),
    });
}

/// Updates this thread's counters for `allocated` bytes handed out and
/// `freed` bytes returned (of the block at `old`, if `D` is not 0), `A`
/// allocations and `D` deallocations, unless a special case sends it to the
/// slow path: then returns false and leaves the work to [`counted_slowly`].
/// Never allocates, locks or panics.
#[inline(always)]
fn record<const A: u64, const D: u64>(allocated: usize, freed: usize, old: *mut u8) -> bool {
    if !crate::tls::SUPPORTED {
        // NOTE: with the shortcut an open watch zeroes the offset; here it
        // has to be asked.
        if WATCH_MASK.load(Relaxed) != 0 {
            return false;
        }
        return THREAD
            .try_with(|t| record_in::<A, D>(t, allocated, freed, old))
            // A thread past its thread-locals' end counts nothing.
            .unwrap_or(true);
    }
    // Zero while unknown, where it does not hold, and while a process-scope
    // watch is open.
    let offset = crate::tls::offset();
    if offset == 0 {
        return false;
    }
    let addr = crate::tls::thread_pointer().wrapping_add_signed(offset);
    // SAFETY: a non-zero offset was checked to lead from the thread pointer
    // to this thread's own `THREAD` (see `tls`), which lives as long as the
    // thread and needs no initialisation or destructor.
    let t = unsafe { &*(addr as *const ThreadCounters) };
    record_in::<A, D>(t, allocated, freed, old)
}

#[inline(always)]
fn record_in<const A: u64, const D: u64>(
    t: &ThreadCounters,
    allocated: usize,
    freed: usize,
    old: *mut u8,
) -> bool {
    let mut hook = t.hook.get();
    if hook.is_null() {
        return false;
    }
    // PERF: one test of bits of a value loaded anyway, for every program;
    // a program without sampled sites or quiet calls never takes the
    // branch.
    if hook.addr() & (SAMPLED | QUIET_MARK) != 0 {
        if hook.addr() & SAMPLED != 0 && !unsampled::<A, D>(t, allocated, old) {
            return false;
        }
        if hook.addr() & QUIET_MARK != 0 {
            // SAFETY: as below.
            count(
                t,
                unsafe { &*hook.map_addr(|a| a & !(SAMPLED | QUIET_MARK)) },
                allocated,
                freed,
                A,
                D,
            );
            to_quiet_events(t, (A, allocated), (D, freed));
            return true;
        }
        hook = hook.map_addr(|a| a & !SAMPLED);
    }
    // SAFETY: a non-null `hook` is the thread's claimed slot in `SLOTS`
    // (without its mark).
    // PERF: only this thread writes its slot, so a plain load and store
    // suffice.
    count(t, unsafe { &*hook }, allocated, freed, A, D);
    true
}

/// Hands an allocation or free made inside a quiet call whose events are
/// placed to `quiet_events`, with counting paused: what it allocates
/// shows nowhere.
#[cold]
#[inline(never)]
fn to_quiet_events(t: &ThreadCounters, allocations: (u64, usize), frees: (u64, usize)) {
    let mode = t.mode.get();
    set_mode(t, PAUSED);
    crate::quiet_events::record(t, allocations, frees);
    set_mode(t, mode);
}

/// With sampled sites: whether nothing here is for `sites`, so that the
/// fast path may count it: the allocation, if any (`A`), of `allocated`
/// bytes is not sampled (the countdown, which this moves, stays above 0),
/// and the block at `old` freed, if any (`D`), is followed by no table
/// (the in-use filter says so in one load). Otherwise the slow path
/// reports both, `sites` drawing the next distance, with the countdown as
/// it was: the same samples as when every allocation took the slow path.
#[inline(always)]
fn unsampled<const A: u64, const D: u64>(
    t: &ThreadCounters,
    allocated: usize,
    old: *mut u8,
) -> bool {
    if D != 0 && crate::sites::maybe_followed(old) {
        return false;
    }
    if A != 0 {
        // `Layout` keeps sizes below `isize::MAX`.
        let left = t.until_sample.get() - allocated as i64;
        if left <= 0 {
            return false;
        }
        t.until_sample.set(left);
    }
    true
}

#[inline(always)]
fn count(
    t: &ThreadCounters,
    slot: &Slot,
    allocated: usize,
    freed: usize,
    allocs: u64,
    deallocs: u64,
) {
    let net = slot.net.load(Relaxed) + (allocated as i64 - freed as i64);
    slot.net.store(net, Relaxed);
    // A pure free never raises the peak.
    if allocs != 0 && net > t.peak.get() {
        t.peak.set(net);
    }
    if allocs != 0 {
        t.allocs.set(t.allocs.get() + allocs);
        t.allocated.set(t.allocated.get() + allocated as u64);
    }
    if deallocs != 0 {
        t.deallocs.set(t.deallocs.get() + deallocs);
    }
}

/// Counts what [`record`] left to the slow path: `allocs` allocations of
/// `allocated` bytes in all (at `new`, null if not known yet) and
/// `deallocs` frees of `freed` bytes (of the block at `old`).
#[inline(always)]
fn record_slow(
    t: &ThreadCounters,
    (new, allocated, allocs): (*mut u8, usize, u64),
    (old, freed, deallocs): (*mut u8, usize, u64),
) {
    let delta = allocated as i64 - freed as i64;
    match t.mode.get() {
        PAUSED => return,
        // Here because a watch is open (fed below) or without the shortcut.
        // SAFETY: in `COUNTING` mode `slot` points into the static `SLOTS`.
        COUNTING => count(
            t,
            unsafe { &*t.slot.get() },
            allocated,
            freed,
            allocs,
            deallocs,
        ),
        TRACKING => {
            // SAFETY: in `TRACKING` mode, as in `COUNTING`, `slot` points
            // into the static `SLOTS`.
            count(
                t,
                unsafe { &*t.slot.get() },
                allocated,
                freed,
                allocs,
                deallocs,
            );
            count_classes(t, allocated, freed);
        }
        UNCLAIMED => {
            INSTALLED.store(true, Relaxed);
            crate::tls::learn(
                std::ptr::from_ref(t) as usize,
                std::mem::size_of::<ThreadCounters>(),
            );
            let (slot, mode) = match claim_slot() {
                Some(slot) if t.wants_tracking.get() => (slot, TRACKING),
                Some(slot) => (slot, COUNTING),
                None => {
                    OVERFLOW.net.fetch_add(delta, Relaxed);
                    (&t.private, OVERFLOW_SLOT)
                }
            };
            t.slot.set(slot);
            // With sites on, every thread's frees are followed: a block in
            // use is often freed on a thread that runs no profiled code.
            if crate::sites::follow_every_thread() {
                t.sites.set(true);
            }
            set_mode(t, mode);
            count(t, slot, allocated, freed, allocs, deallocs);
        }
        OVERFLOW_SLOT if any_free() && promote(t) => {
            // SAFETY: `promote` pointed `slot` into the static `SLOTS`.
            count(
                t,
                unsafe { &*t.slot.get() },
                allocated,
                freed,
                allocs,
                deallocs,
            );
            if t.wants_tracking.get() {
                count_classes(t, allocated, freed);
            }
        }
        _ => {
            count(t, &t.private, allocated, freed, allocs, deallocs);
            OVERFLOW.net.fetch_add(delta, Relaxed);
            if t.wants_tracking.get() {
                count_classes(t, allocated, freed);
            }
        }
    }
    if WATCH_MASK.load(Relaxed) != 0 {
        watch_record(delta, allocated, allocs, deallocs);
    }
    if !t.quiet_top.get().is_null() {
        to_quiet_events(t, (allocs, allocated), (deallocs, freed));
    }
    if t.sites.get() {
        report_to_sites(t, (new, allocated, allocs), (old, deallocs));
        // A thread that followed sites before they were configured takes
        // the fast path again once they are known to be sampled.
        if t.mode.get() == COUNTING
            && t.hook.get().is_null()
            && crate::sites::sample_mean().is_some()
        {
            set_mode(t, COUNTING);
        }
    }
}

/// Hands an allocation or free to `sites`, with counting paused: what the
/// unwinder may allocate shows nowhere. `sites` tells which profiled rows
/// were open when a block was allocated by the thread's allocation count
/// then (the clock that each row's start keeps).
#[inline(never)]
fn report_to_sites(
    t: &ThreadCounters,
    (new, allocated, allocs): (*mut u8, usize, u64),
    (old, deallocs): (*mut u8, u64),
) {
    let mode = t.mode.get();
    t.mode.set(PAUSED);
    if deallocs != 0 {
        crate::sites::free(old);
    }
    if allocs != 0 {
        let clock = t.allocs.get().wrapping_add(t.adjust_allocs.get());
        crate::sites::allocation(new, allocated, clock, &t.until_sample);
    }
    t.mode.set(mode);
}

/// Sends this thread's allocations through the slow path from now on,
/// which reports them to `sites` (`MEMPROF_SITES`).
pub(crate) fn route_to_sites() {
    let _ = THREAD.try_with(|t| {
        if !t.sites.get() {
            t.sites.set(true);
            set_mode(t, t.mode.get());
        }
    });
}

/// Whether this thread's allocations go to `sites` now.
fn routed_to_sites() -> bool {
    THREAD.try_with(|t| t.sites.get()).unwrap_or(false)
}

/// Whether a memprof [`Allocator`] has counted anything in this process.
pub fn is_installed() -> bool {
    INSTALLED.load(Relaxed)
}

/// This thread's own net count (not shifted into an async task's terms).
pub(crate) fn thread_net() -> i64 {
    THREAD.try_with(|t| t.net()).unwrap_or(0)
}

/// Starts counting this thread's allocations by size class, for `track!`.
/// From then on its allocations take the allocator's slow path.
pub(crate) fn start_tracking() {
    let _ = THREAD.try_with(|t| {
        t.wants_tracking.set(true);
        if t.mode.get() == COUNTING {
            set_mode(t, TRACKING);
        }
    });
}

/// Runs `f` with this thread's counting paused: what `f` allocates and frees
/// shows in no figure. Everything `f` allocates must be freed inside `f` too,
/// or live for the rest of the process.
pub(crate) fn untracked<R>(f: impl FnOnce() -> R) -> R {
    struct Resume(u8);
    impl Drop for Resume {
        fn drop(&mut self) {
            let _ = THREAD.try_with(|t| {
                // A `track!` inside may have asked for size classes.
                let tracking = self.0 == COUNTING && t.wants_tracking.get();
                set_mode(t, if tracking { TRACKING } else { self.0 });
            });
        }
    }
    let was = THREAD
        .try_with(|t| {
            let was = t.mode.get();
            set_mode(t, PAUSED);
            was
        })
        .unwrap_or(PAUSED);
    let _resume = Resume(was);
    f()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fast_path_fields_share_a_cache_line() {
        use std::mem::{align_of, offset_of};
        assert!(align_of::<ThreadCounters>() >= 64);
        assert_eq!(offset_of!(ThreadCounters, head), 0);
        assert_eq!(offset_of!(Counters, hook), 0);
        assert!(offset_of!(Counters, deallocs) + 8 <= 64);
        assert!(offset_of!(Counters, allocated) + 8 <= 64);
        assert!(offset_of!(Counters, until_sample) + 8 <= 64);
        // Not adjacent: see `peak`.
        assert_eq!(
            offset_of!(Counters, deallocs) - offset_of!(Counters, allocs),
            16
        );
    }
}
