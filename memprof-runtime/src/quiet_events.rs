//! The allocations and frees made during quiet calls (see `kernel::quiet`),
//! each kept with the return addresses that tell on which statement of
//! each quiet function open on the thread it happened: the allocator hands
//! every such event here (its hook carries `QUIET_MARK`), and a report maps
//! the addresses to rows (see `report`), so that a function whose calls run
//! as written keeps exact Increment, Allocs and Allocated on its lines.
//!
//! The return address into a quiet function is the one its callee's frame
//! holds: a walk through the frame pointers from the allocator up to the
//! frame that each open quiet call anchored (its frame pointer, taken as
//! the call began). Events whose walk does not reach a function's frame (a
//! frame without a frame pointer between them) are kept with address 0:
//! the report counts them as not placed on a line.
//!
//! An event whose quiet functions are each open once on the thread goes
//! into the slots of their aggregates (`ThreadFnHead::events`), one per
//! return address, written by that thread alone; a report adds them up
//! with the rest (`FnMeta::quiet_events`), and a thread that ends hands
//! its slots to the map. The others (a recursion's frames, an address past
//! the slots, a frame not reached) go to one map under a lock.
//!
//! PERF: an event in slots costs a walk of the frames between the
//! allocation and the outermost quiet call and a few stores, about as much
//! as the statement steps it spares a call with rows; one in the map costs
//! a lock and a keyed update per function, so a function whose calls nest
//! takes its rows again when they move the heap often (see `kernel::quiet`).

use crate::kernel::layout::{Counters, FnHead, QuietHead, ThreadFnHead};
use crate::owned::{load_i64, load_u64, load_usize};
use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Mutex, MutexGuard};

/// Quiet calls open at once on a thread beyond which an event's outer
/// calls are not placed (a deep recursion): its walk stops here.
const MAX_OPEN: usize = 64;

/// What the events kept under one key added up to.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Tally {
    /// Allocations (a `realloc` counts as one), as the rows' Allocs.
    pub(crate) allocations: u64,
    /// Frees (a `realloc` counts as one too).
    pub(crate) frees: u64,
    /// Their bytes (a `realloc`'s new size), as the rows' Allocated.
    pub(crate) allocated: u64,
    /// Bytes allocated minus bytes freed, as the rows' Increment.
    pub(crate) net: i64,
}

/// A function (its head's address) and the return addresses into its
/// frames open at an event, innermost first: one for a call, several for a
/// recursion; 0 for a frame the walk did not reach.
type Key = (usize, Box<[usize]>);

/// Every quiet function's events, by key. Taken by the allocator's slow
/// path with counting paused, by a report, and before `fork`.
static EVENTS: Mutex<Option<HashMap<Key, Tally>>> = Mutex::new(None);

fn events() -> MutexGuard<'static, Option<HashMap<Key, Tally>>> {
    EVENTS.lock().unwrap_or_else(|e| e.into_inner())
}

/// Keeps an event of the calling thread, whose counters are `t`, made
/// while a quiet call with an anchor was open: `allocations` allocations of
/// `allocated` bytes, `frees` frees of `freed` bytes. To be called with
/// counting paused, as it may allocate.
#[inline(never)]
pub(crate) fn record(
    t: &Counters,
    (allocations, allocated): (u64, usize),
    (frees, freed): (u64, usize),
) {
    let tally = Tally {
        allocations,
        frees,
        allocated: if allocations == 0 {
            0
        } else {
            allocated as u64
        },
        net: allocated as i64 - freed as i64,
    };
    let mut open = 0;
    let mut head = t.quiet_top.get();
    while !head.is_null() && open < FEW {
        // SAFETY: the thread's open quiet calls, on its side stack, each
        // listing the one outside it (see `QuietHead`).
        head = unsafe { (*head).outer };
        open += 1;
    }
    // PERF: arrays as long as the quiet calls open, almost always a few:
    // four arrays of `MAX_OPEN` entries, 2 KiB zeroed for every event,
    // made `memset` the largest part of an event's cost.
    if head.is_null() {
        record_in::<FEW>(t, tally);
    } else {
        record_in::<MAX_OPEN>(t, tally);
    }
}

/// Quiet calls open at once on a thread that [`record`]'s common case
/// holds.
const FEW: usize = 4;

/// [`record`] for at most `N` quiet calls open on the thread.
fn record_in<const N: usize>(t: &Counters, tally: Tally) {
    let mut aggregates = [std::ptr::null::<ThreadFnHead>(); N];
    let mut anchors = [0usize; N];
    let mut open = 0;
    let mut head = t.quiet_top.get();
    while !head.is_null() && open < N {
        // SAFETY: as in `record`.
        let call: &QuietHead = unsafe { &*head };
        aggregates[open] = call.thread_fn;
        anchors[open] = call.anchor;
        head = call.outer;
        open += 1;
    }
    let mut rets = [0usize; N];
    crate::sites::returns_into(&anchors[..open], &mut rets[..open]);
    // SAFETY: the open quiet calls' aggregates: this thread's, alive as
    // long as it is.
    let (aggregates, rets) = (&aggregates[..open], &rets[..open]);
    if !unsafe { in_slots::<N>(aggregates, rets, tally) } {
        // SAFETY: as above.
        unsafe { in_map(aggregates, rets, tally) };
    }
}

/// Adds `tally` to the slots of the open quiet calls' `aggregates` at the
/// return addresses `rets` into their frames, where each function is open
/// once, each address was reached and each aggregate has a slot for it
/// (see `ThreadFnHead::events`); otherwise adds nothing and returns false.
///
/// # Safety
/// `aggregates` are the calling thread's, at most `N`.
unsafe fn in_slots<const N: usize>(
    aggregates: &[*const ThreadFnHead],
    rets: &[usize],
    tally: Tally,
) -> bool {
    let mut found = [0usize; N];
    for (i, &aggregate) in aggregates.iter().enumerate() {
        if rets[i] == 0 || aggregates[..i].contains(&aggregate) {
            return false;
        }
        // SAFETY: as the caller promises.
        let slots = unsafe { &(*aggregate).events };
        // Slots are taken in order and freed only all together: one with
        // the address comes before any free one.
        let slot = slots.iter().position(|slot| {
            let ret = load_usize(&slot.ret);
            ret == rets[i] || ret == 0
        });
        match slot {
            Some(k) => found[i] = k,
            None => return false,
        }
    }
    for (i, &aggregate) in aggregates.iter().enumerate() {
        // SAFETY: as the caller promises.
        let slot = unsafe { &(*aggregate).events[found[i]] };
        slot.ret.store(rets[i], Ordering::Relaxed);
        slot.allocations.store(
            load_u64(&slot.allocations) + tally.allocations,
            Ordering::Relaxed,
        );
        slot.frees
            .store(load_u64(&slot.frees) + tally.frees, Ordering::Relaxed);
        slot.allocated.store(
            load_u64(&slot.allocated) + tally.allocated,
            Ordering::Relaxed,
        );
        slot.net
            .store(load_i64(&slot.net) + tally.net, Ordering::Relaxed);
    }
    true
}

/// Adds `tally` to the map, under each function of the open quiet calls'
/// `aggregates` once, with the return addresses `rets` into its frames.
///
/// # Safety
/// `aggregates` are the calling thread's.
unsafe fn in_map(aggregates: &[*const ThreadFnHead], rets: &[usize], tally: Tally) {
    // SAFETY: as the caller promises; a head is its function's, a static.
    let functions: Vec<usize> = aggregates
        .iter()
        .map(|&aggregate| unsafe { (*aggregate).head } as usize)
        .collect();
    let mut events = events();
    let events = events.get_or_insert_with(HashMap::new);
    for (i, &function) in functions.iter().enumerate() {
        // Each function once: its first (innermost) frame gathers its
        // frames' addresses.
        if functions[..i].contains(&function) {
            continue;
        }
        let addresses: Box<[usize]> = (i..functions.len())
            .filter(|&j| functions[j] == function)
            .map(|j| rets[j])
            .collect();
        add(events.entry((function, addresses)).or_default(), &tally);
    }
}

fn add(sum: &mut Tally, tally: &Tally) {
    sum.allocations += tally.allocations;
    sum.frees += tally.frees;
    sum.allocated += tally.allocated;
    sum.net += tally.net;
}

/// The events an aggregate keeps in its slots: each return address (one
/// frame) and what its events add up to.
pub(crate) fn in_slots_of(aggregate: &ThreadFnHead) -> Vec<(Box<[usize]>, Tally)> {
    aggregate
        .events
        .iter()
        .map(|slot| (slot.ret.load(Ordering::Relaxed), slot))
        .take_while(|&(ret, _)| ret != 0)
        .map(|(ret, slot)| {
            let tally = Tally {
                allocations: slot.allocations.load(Ordering::Relaxed),
                frees: slot.frees.load(Ordering::Relaxed),
                allocated: slot.allocated.load(Ordering::Relaxed),
                net: slot.net.load(Ordering::Relaxed),
            };
            (Box::from([ret]), tally)
        })
        .collect()
}

/// Moves an ending thread's aggregate's slots into the map, under
/// `head`'s function.
pub(crate) fn absorb(head: &FnHead, aggregate: &ThreadFnHead) {
    let kept = in_slots_of(aggregate);
    if kept.is_empty() {
        return;
    }
    let function = std::ptr::from_ref(head) as usize;
    let mut events = events();
    let events = events.get_or_insert_with(HashMap::new);
    for (addresses, tally) in kept {
        add(events.entry((function, addresses)).or_default(), &tally);
    }
}

/// Empties an aggregate's slots (its owner, as `memprof::reset` renews it).
pub(crate) fn clear_slots(aggregate: &ThreadFnHead) {
    for slot in &aggregate.events {
        slot.ret.store(0, Ordering::Relaxed);
        slot.allocations.store(0, Ordering::Relaxed);
        slot.frees.store(0, Ordering::Relaxed);
        slot.allocated.store(0, Ordering::Relaxed);
        slot.net.store(0, Ordering::Relaxed);
    }
}

/// The events kept for `head`'s function: the return addresses into its
/// frames (innermost first, 0 where not reached) and what they add up to.
pub(crate) fn of(head: &FnHead) -> Vec<(Box<[usize]>, Tally)> {
    let function = std::ptr::from_ref(head) as usize;
    events().as_ref().map_or_else(Vec::new, |events| {
        events
            .iter()
            .filter(|((f, _), _)| *f == function)
            .map(|((_, addresses), tally)| (addresses.clone(), *tally))
            .collect()
    })
}

/// Forgets `head`'s function's events (`memprof::reset`).
pub(crate) fn forget(head: &FnHead) {
    let function = std::ptr::from_ref(head) as usize;
    if let Some(events) = events().as_mut() {
        events.retain(|(f, _), _| *f != function);
    }
}

/// The events' lock, held across `fork`.
#[cfg(unix)]
pub(crate) type HeldForFork = MutexGuard<'static, Option<HashMap<Key, Tally>>>;

/// Takes the events' lock for `fork` (see `fork`), so that a child never
/// inherits it held by a thread it does not have.
#[cfg(unix)]
pub(crate) fn hold_for_fork() -> HeldForFork {
    events()
}
