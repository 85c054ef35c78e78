//! Rows that take their call's events: a call with rows that has turned a
//! loop `EVENTS_AFTER_TURNS` times, seldom allocating, stops stepping them,
//! and its allocations and frees are placed on its rows from their return
//! addresses, as a quiet call's are (see `quiet`): its head joins the
//! thread's quiet calls (`Counters::quiet_top`) until it ends. The runtime
//! decides which calls may (`calls::rows_events`); this keeps the thread's
//! chain of quiet calls, theirs too, and its allocator hook's mark.

use super::layout::{Counters, QUIET_MARK, QuietHead, ThreadFnHead};
use super::owned::{get, load_u64, set};
use core::sync::atomic::Ordering;

/// Places the events of the open outermost call of `tf`'s function on this
/// thread on its rows from now on, as a quiet call's, from the frame at
/// `anchor` (see `calls::rows_events`): links its head
/// (`ThreadFnHead::rows_events`) into the thread's quiet calls.
pub fn enter_events(t: &Counters, tf: &ThreadFnHead, anchor: usize) {
    tf.rows_events.set(QuietHead {
        counters: t,
        thread_fn: tf,
        anchor,
        outer: get(&t.quiet_top),
        ..QuietHead::NONE
    });
    join(t, tf.rows_events.as_ptr().cast_const());
}

/// Ends what [`enter_events`] began, as the call ends, and counts the call
/// in `ThreadFnHead::events_calls`. The quiet calls nested in it have
/// ended: its head is the thread's innermost.
#[cold]
#[inline(never)]
pub fn leave_events(t: &Counters, tf: &ThreadFnHead) {
    let head = tf.rows_events.get();
    if head.thread_fn.is_null() {
        return;
    }
    leave(t, head.outer);
    tf.rows_events.set(QuietHead::NONE);
    tf.events_calls
        .store(load_u64(&tf.events_calls) + 1, Ordering::Relaxed);
}

/// Makes `head`, whose `outer` is the thread's innermost quiet call, the
/// innermost (`Counters::quiet_top`), marking the allocator hook for the
/// first.
#[inline(always)]
pub(super) fn join(t: &Counters, head: *const QuietHead) {
    if get(&t.quiet_top).is_null() {
        mark_hook(t, true);
    }
    set(&t.quiet_top, head);
}

/// Takes the thread's innermost quiet call out of its chain, `outer`
/// innermost again, unmarking the allocator hook after the last.
#[inline(always)]
pub(super) fn leave(t: &Counters, outer: *const QuietHead) {
    set(&t.quiet_top, outer);
    if outer.is_null() {
        mark_hook(t, false);
    }
}

/// Marks the thread's allocator hook (see `QUIET_MARK`), or unmarks it.
/// A null hook (the allocator's slow path) stays null: the slow path asks
/// `quiet_top` itself.
#[inline(always)]
fn mark_hook(t: &Counters, on: bool) {
    let hook = get(&t.hook);
    if !hook.is_null() {
        set(
            &t.hook,
            hook.map_addr(|a| if on { a | QUIET_MARK } else { a & !QUIET_MARK }),
        );
    }
}
