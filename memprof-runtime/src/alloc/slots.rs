//! Each thread's share of the process-wide heap count: a few slots, each
//! written only by the thread that claimed it, summed by readers (every
//! profiled call's entry, for Mem usage); the other threads' counts in one
//! atomic overflow.
//!
//! NOTE: why so few slots. A reader sums the claimed slots, so its cost is
//! the number of threads holding one: with a slot per thread, a profiled
//! call with 2,000 live threads read 2,000 cache lines. With `SLOT_COUNT`
//! slots it reads at most that many, however many threads there are. The
//! first threads to allocate (and any thread later, once a slot is free)
//! count with plain stores into their slot; the rest add to the overflow
//! with an atomic add, exact but slower under contention.
//!
//! Every thread that claims a slot gives it back as it ends, from a
//! thread-exit hook armed when it claims (see [`exit_hook`]), so that the
//! slots follow the threads alive: its count moves to the overflow, where
//! the net of every ended thread stays.

use super::{COUNTING, OVERFLOW_SLOT, RETIRED, THREAD, TRACKING, ThreadCounters, set_mode};
use crate::kernel::layout::Globals;
use std::sync::atomic::{
    AtomicI64, AtomicU64,
    Ordering::{Acquire, Relaxed, Release},
};

/// Number of per-thread slots: a profiled call reads at most this many.
pub const SLOT_COUNT: usize = 8;

/// All slots claimed.
const FULL: u64 = if SLOT_COUNT == 64 {
    u64::MAX
} else {
    (1 << SLOT_COUNT) - 1
};

pub(crate) use crate::kernel::layout::Slot;

impl Slot {
    pub(super) const fn new() -> Self {
        Slot {
            net: AtomicI64::new(0),
        }
    }
}

pub(super) static SLOTS: [Slot; SLOT_COUNT] = [const { Slot::new() }; SLOT_COUNT];
/// Bit `i` set: slot `i` belongs to a live thread. Readers sum only these.
static CLAIMED: AtomicU64 = AtomicU64::new(0);
pub(super) static OVERFLOW: Slot = Slot::new();
/// Where a thread's `slot` points until it first allocates: always zero,
/// never written.
pub(super) static EMPTY: Slot = Slot::new();

/// Claims a free slot for the calling thread, or `None` when all are taken.
/// Never allocates or blocks (see [`exit_hook::arm`]).
pub(super) fn claim_slot() -> Option<&'static Slot> {
    let mut claimed = CLAIMED.load(Relaxed);
    loop {
        if claimed == FULL {
            return None;
        }
        let bit = (!claimed).trailing_zeros();
        match CLAIMED.compare_exchange_weak(claimed, claimed | 1 << bit, Acquire, Relaxed) {
            Ok(_) => {
                exit_hook::arm();
                return Some(&SLOTS[bit as usize]);
            }
            Err(now) => claimed = now,
        }
    }
}

/// Whether a slot is free: one load, for a thread counting through the
/// overflow to try [`promote`].
#[inline]
pub(super) fn any_free() -> bool {
    CLAIMED.load(Relaxed) != FULL
}

/// Moves a thread that counts through the overflow to a slot of its own,
/// if one is free, so that a burst of threads does not leave the threads
/// that stay on the slow path. Returns whether it moved.
pub(super) fn promote(t: &ThreadCounters) -> bool {
    let Some(slot) = claim_slot() else {
        return false;
    };
    let net = t.private.net.load(Relaxed);
    slot.net.store(net, Relaxed);
    // A reader summing meanwhile may see the count in both places or in
    // neither, as it may miss any allocation racing with it.
    OVERFLOW.net.fetch_sub(net, Relaxed);
    t.slot.set(slot);
    set_mode(
        t,
        if t.wants_tracking.get() {
            TRACKING
        } else {
            COUNTING
        },
    );
    true
}

/// How many slots a process-wide sum reads: those claimed by live threads.
pub fn in_use() -> usize {
    CLAIMED.load(Relaxed).count_ones() as usize
}

/// Hands the calling thread's slot back as the thread ends, so that the
/// slots in use (which every process-wide sum reads) follow the threads
/// alive, not every thread there ever was. Its count moves to the overflow
/// slot, through which the thread counts from then on. Runs from the
/// thread's exit hook, and earlier for a thread that made profiled calls
/// (`calls::thread`); the second time finds nothing to do.
///
/// Not inside [`super::untracked`], which would restore the old mode.
pub(crate) fn release() {
    let _ = THREAD.try_with(|t| {
        let mode = t.mode.get();
        if mode == OVERFLOW_SLOT {
            // No slot to give back; a free one must not be taken any more.
            set_mode(t, RETIRED);
            return;
        }
        if mode != COUNTING && mode != TRACKING {
            return;
        }
        // SAFETY: in these modes `slot` points into the static `SLOTS`.
        let slot = unsafe { &*t.slot.get() };
        let index =
            (slot as *const Slot as usize - SLOTS.as_ptr() as usize) / std::mem::size_of::<Slot>();
        let net = slot.net.load(Relaxed);
        t.private.net.store(net, Relaxed);
        t.slot.set(&t.private);
        set_mode(t, RETIRED);
        // A reader summing meanwhile may see the count in both places or
        // in neither, as it may miss any allocation racing with it.
        OVERFLOW.net.fetch_add(net, Relaxed);
        slot.net.store(0, Relaxed);
        CLAIMED.fetch_and(!(1 << index), Release);
    });
}

/// The thread-exit hook that gives a slot back for every thread that
/// claimed one, profiled calls or not: a POSIX thread-specific value whose
/// destructor runs as the thread ends, after its Rust thread-locals'
/// destructors (which may still free memory it counts).
#[cfg(unix)]
mod exit_hook {
    use std::sync::atomic::{AtomicUsize, Ordering::AcqRel, Ordering::Acquire};

    /// The key plus one; 0 until the first claim creates it.
    static KEY: AtomicUsize = AtomicUsize::new(0);

    unsafe extern "C" fn on_thread_exit(_: *mut libc::c_void) {
        super::release();
    }

    /// Arms the hook for the calling thread.
    ///
    /// NOTE: runs inside the allocator's slow path. Neither call allocates
    /// through Rust's allocator or blocks in glibc: the key is created once,
    /// lock-free, at the process's first allocation (so it is among the
    /// first keys, whose values live in the thread's descriptor); a key past
    /// the first 32 would have its values `calloc`ed by libc, not by us.
    pub(super) fn arm() {
        let Some(key) = key() else {
            return;
        };
        // SAFETY: a key we created; any non-null value arms the destructor.
        unsafe { libc::pthread_setspecific(key, std::ptr::dangling::<u8>().cast()) };
    }

    fn key() -> Option<libc::pthread_key_t> {
        match KEY.load(Acquire) {
            0 => {}
            key => return Some((key - 1) as libc::pthread_key_t),
        }
        let mut key: libc::pthread_key_t = 0;
        // SAFETY: a valid out-pointer and an `extern "C"` destructor that
        // never unwinds.
        if unsafe { libc::pthread_key_create(&mut key, Some(on_thread_exit)) } != 0 {
            return None;
        }
        match KEY.compare_exchange(0, key as usize + 1, AcqRel, Acquire) {
            Ok(_) => Some(key),
            Err(theirs) => {
                // Another thread created one first: use that.
                // SAFETY: our own key, which no thread has a value for.
                unsafe { libc::pthread_key_delete(key) };
                Some((theirs - 1) as libc::pthread_key_t)
            }
        }
    }
}

/// No thread-exit hook here: threads that make profiled calls give their
/// slot back (`calls::thread`), others keep it.
#[cfg(not(unix))]
mod exit_hook {
    pub(super) fn arm() {}
}

/// Net heap bytes of the whole process: the overflow plus the slots claimed.
/// Costs at most `SLOT_COUNT` + 1 loads (see the module's NOTE).
pub(crate) fn process_net() -> i64 {
    crate::kernel::call::process_net(&KERNEL_GLOBALS)
}

/// The process-wide state the kernel's call entry reads: the slots (this
/// module's) and the thread-pointer offset (`tls`'s).
pub(crate) static KERNEL_GLOBALS: Globals = Globals {
    tls_offset: &crate::tls::OFFSET,
    slots: SLOTS.as_ptr(),
    claimed: &CLAIMED,
    overflow: &OVERFLOW,
};

/// Heap bytes in use by the whole process, as counted by memprof: what every
/// thread has allocated through the [`Allocator`](super::Allocator) and not
/// freed yet. Zero where no memprof allocator is installed.
///
/// Costs a few loads, however many threads there are; it takes no lock and
/// does not allocate.
///
/// ```
/// let before = memprof::process_heap();
/// let v = vec![0u8; 1 << 20];
/// assert!(memprof::process_heap() >= before + (1 << 20));
/// # drop(v);
/// ```
pub fn process_heap() -> u64 {
    process_net().max(0) as u64
}
