//! Each thread's share of the process-wide heap count: one slot per live
//! thread, written only by its owner, summed by readers.

use super::{COUNTING, OVERFLOW_SLOT, THREAD, TRACKING, set_mode};
use crate::kernel::layout::Globals;
use std::sync::atomic::{
    AtomicBool, AtomicI64, AtomicUsize,
    Ordering::{Relaxed, Release, SeqCst},
};

/// Number of per-thread slots; later threads share the overflow slot.
pub(crate) const SLOT_COUNT: usize = 1024;

pub(crate) use crate::kernel::layout::Slot;

impl Slot {
    pub(super) const fn new() -> Self {
        Slot {
            net: AtomicI64::new(0),
            claimed: AtomicBool::new(false),
        }
    }
}

pub(super) static SLOTS: [Slot; SLOT_COUNT] = [const { Slot::new() }; SLOT_COUNT];
/// How many slots have ever been claimed: readers sum only these.
static SLOTS_USED: AtomicUsize = AtomicUsize::new(0);
pub(super) static OVERFLOW: Slot = Slot::new();
/// Where a thread's `slot` points until it first allocates: always zero,
/// never written.
pub(super) static EMPTY: Slot = Slot::new();
pub(super) fn claim_slot() -> Option<&'static Slot> {
    let (i, slot) = SLOTS.iter().enumerate().find(|(_, slot)| {
        slot.claimed
            .compare_exchange(false, true, Relaxed, Relaxed)
            .is_ok()
    })?;
    SLOTS_USED.fetch_max(i + 1, SeqCst);
    Some(slot)
}

/// How many slots a process-wide sum reads: the most threads that have
/// held one at once.
pub fn in_use() -> usize {
    SLOTS_USED.load(Relaxed)
}

/// Hands the calling thread's slot back as the thread ends, so that the
/// slots in use (which every process-wide sum reads) follow the threads
/// alive, not every thread there ever was. Its count moves to the overflow
/// slot, through which the thread counts from then on.
///
/// Not inside [`super::untracked`], which would restore the old mode.
pub(crate) fn release() {
    let _ = THREAD.try_with(|t| {
        let mode = t.mode.get();
        if mode != COUNTING && mode != TRACKING {
            return;
        }
        // SAFETY: in these modes `slot` points into the static `SLOTS`.
        let slot = unsafe { &*t.slot.get() };
        let net = slot.net.load(Relaxed);
        t.private.net.store(net, Relaxed);
        t.slot.set(&t.private);
        set_mode(t, OVERFLOW_SLOT);
        // A reader summing meanwhile may see the count in both places or
        // in neither, as it may miss any allocation racing with it.
        OVERFLOW.net.fetch_add(net, Relaxed);
        slot.net.store(0, Relaxed);
        slot.claimed.store(false, Release);
    });
}

/// Net heap bytes of the whole process: the sum of every thread's slot. Costs
/// one pass over the slots of the threads alive (see [`release`]).
pub(crate) fn process_net() -> i64 {
    crate::kernel::region::process_net(&KERNEL_GLOBALS)
}

/// The process-wide state the kernel's call entry reads: the slots (this
/// module's) and the thread-pointer offset (`tls`'s).
pub(crate) static KERNEL_GLOBALS: Globals = Globals {
    tls_offset: &crate::tls::OFFSET,
    slots: SLOTS.as_ptr(),
    slots_used: &SLOTS_USED,
    overflow: &OVERFLOW,
};

/// Heap bytes in use by the whole process, as counted by memprof: what every
/// thread has allocated through the [`Allocator`](super::Allocator) and not
/// freed yet. Zero where no memprof allocator is installed.
///
/// Costs one pass over the counters of the threads alive; it takes no lock
/// and does not allocate.
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
