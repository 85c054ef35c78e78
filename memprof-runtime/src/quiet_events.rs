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
//! PERF: an event here costs a walk of the frames between the allocation
//! and the outermost quiet call, and a locked map update per quiet function
//! open: microseconds rather than nanoseconds. Quiet calls move the heap
//! rarely by construction (a function whose calls do more than one in
//! `QUIET_AFTER` times takes its rows again), so this is a cost per rare
//! event, where the rows it replaces cost on every statement of every call.

use crate::kernel::layout::{Counters, FnHead, QuietHead};
use std::collections::HashMap;
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
/// counting paused, as it allocates.
#[inline(never)]
pub(crate) fn record(
    t: &Counters,
    (allocations, allocated): (u64, usize),
    (frees, freed): (u64, usize),
) {
    let mut functions = [0usize; MAX_OPEN];
    let mut anchors = [0usize; MAX_OPEN];
    let mut open = 0;
    let mut head = t.quiet_top.get();
    while !head.is_null() && open < MAX_OPEN {
        // SAFETY: the thread's open quiet calls, on its side stack, each
        // listing the one outside it (see `QuietHead`).
        let call: &QuietHead = unsafe { &*head };
        // SAFETY: a quiet call's aggregate lives as long as its thread.
        functions[open] = unsafe { (*call.thread_fn).head } as usize;
        anchors[open] = call.anchor;
        head = call.outer;
        open += 1;
    }
    let mut rets = [0usize; MAX_OPEN];
    crate::sites::returns_into(&anchors[..open], &mut rets[..open]);
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
    let mut events = events();
    let events = events.get_or_insert_with(HashMap::new);
    for (i, &function) in functions[..open].iter().enumerate() {
        // Each function once: its first (innermost) frame gathers its
        // frames' addresses.
        if functions[..i].contains(&function) {
            continue;
        }
        let addresses: Box<[usize]> = (i..open)
            .filter(|&j| functions[j] == function)
            .map(|j| rets[j])
            .collect();
        let sum = events.entry((function, addresses)).or_default();
        sum.allocations += tally.allocations;
        sum.frees += tally.frees;
        sum.allocated += tally.allocated;
        sum.net += tally.net;
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
