//! A call whose rows take its events: once a call has turned its loops
//! `EVENTS_AFTER_TURNS` times (blocks entered through the kernel's cursor)
//! and allocated at most once in `TURNS_PER_ALLOCATION` of them, its
//! statements stop stepping and its blocks take no cursor, and its
//! allocations and frees are placed on its rows from their return
//! addresses, as a quiet call's are (`quiet_events`, `report::quiet`). Its
//! rows' Increment, Allocs and Allocated stay those of a run that steps
//! every statement; their Occurrences, Mem usage and Peak leave out the rest
//! of the call, as the table's note says.
//!
//! Which calls may: a synchronous call in thread scope that counts no
//! device bytes, records into its thread's aggregate (no table of its own)
//! and is the only open call of its function on the thread (the function's
//! calls never nested there, `ThreadFnHead::hot`), in an optimized build
//! with frame pointers, unless `MEMPROF_QUIET=off`. The rows open as the
//! call switches close with their figures so far and stay open for the
//! recursion rule until their blocks end (`CursorHead::held`).
//!
//! PERF: a block of such a call then costs a load and a compare
//! (`CursorHead::pending`, read by generated code before it asks the
//! kernel for a cursor), a statement in it a test of the null cursor (a
//! statement of a block open as the call switched, a call into the kernel
//! that returns at once); an allocation or a free, a walk of the frames
//! up to the call's and a few stores, about as much as a loud step and a
//! few quiet ones: a loop that allocates on most turns keeps its rows (on
//! lz4_flex's fixture, whose loop allocates three times a turn, events
//! cost more than the steps they spared).

use crate::kernel::layout::{
    CallHead, CursorHead, EVENTS, EVENTS_AFTER_TURNS, NEVER_HOT, NO_CELL, ROWS_KEPT, STOPPED,
    TURNS_PER_ALLOCATION,
};
use crate::kernel::region::allocs_in;
use crate::owned::get;

/// The answer to the kernel's ask (its block cursor none, for a call whose
/// `turns` reached `EVENTS_AFTER_TURNS`): lets the rows of the call of
/// `cursor` take its events from now on, if it may, or keeps them stepping
/// for the rest of the call. `anchor` is the frame of the function whose
/// block asked (see `sites::caller_anchor`), or 0 where not known.
///
/// # Safety
/// `cursor` is a live cursor, which the kernel steps, of the calling
/// thread's innermost open call.
pub(crate) unsafe fn begin(cursor: *const CursorHead, anchor: usize) {
    // Unoptimized, the generated code's probes are out of line: the
    // asking frame is theirs, not the function's.
    let anchor = if cfg!(memprof_unoptimized) { 0 } else { anchor };
    // SAFETY: as the caller promises.
    let call_at = unsafe { (*cursor).call };
    // SAFETY: a cursor the kernel steps has a call, open while it is.
    let call = unsafe { &*call_at };
    let counters = get(&call.counters);
    let thread_fn = get(&call.thread_fn);
    // SAFETY: a call's counters are its thread's, and its aggregate lives
    // as long as the thread; both null for none.
    let (Some(t), Some(tf)) = (unsafe { counters.as_ref() }, unsafe { thread_fn.as_ref() }) else {
        call.turns.set(ROWS_KEPT);
        return;
    };
    let innermost = get(&t.open_cursor);
    let allocations = allocs_in(t).wrapping_sub(get(&call.start_allocs));
    let may = anchor != 0
        && allocations.saturating_mul(TURNS_PER_ALLOCATION) <= u64::from(EVENTS_AFTER_TURNS)
        // SAFETY: null or the thread's innermost cursor, live.
        && unsafe { innermost.as_ref() }.is_some_and(|c| c.call == call_at)
        && get(&tf.depth) == 1
        && get(&call.flags) == 0
        && get(&call.cells) == tf.cells
        && get(&tf.hot) != NEVER_HOT
        && tf.rows_events.get().thread_fn.is_null()
        && crate::settings::get().quiet;
    if !may {
        call.turns.set(ROWS_KEPT);
        return;
    }
    // The call's cursors, innermost first: each open row closes with its
    // figures so far and stays open for the recursion rule.
    let mut at = innermost;
    // SAFETY: the thread's cursor chain: each live, listing the one before.
    while let Some(open) = unsafe { at.as_ref() } {
        if open.call != call_at {
            break;
        }
        let cell = get(&open.cell);
        if cell != NO_CELL {
            // SAFETY: a live cursor of this call, which the kernel steps.
            unsafe { crate::kernel::step(open, NO_CELL) };
            call.row(cell).opened();
            open.held.set(cell);
        }
        // After its step: a stopped cursor's steps do nothing.
        open.pending.set(STOPPED);
        at = get(&open.outer);
    }
    call.turns.set(EVENTS);
    crate::kernel::rows_events::enter_events(t, tf, anchor);
}

/// The end of a call the runtime entered, whose head is `call`, after its
/// body's cursor closed: if its rows took its events, they no longer do.
pub(crate) fn end(call: &CallHead) {
    if get(&call.turns) != EVENTS {
        return;
    }
    // SAFETY: set as the call's rows took its events (see `begin_at`): its
    // thread's counters and aggregate, which outlive the call.
    let (t, tf) = unsafe { (&*get(&call.counters), &*get(&call.thread_fn)) };
    crate::kernel::rows_events::leave_events(t, tf);
}
