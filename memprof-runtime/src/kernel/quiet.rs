//! Quiet calls: once [`QUIET_AFTER`](super::layout::QUIET_AFTER) calls in
//! a row of a function on one thread allocated and freed nothing, or, in a
//! build with frame pointers, once [`HOT_AFTER`](super::layout::HOT_AFTER)
//! calls on a thread moved the heap, none nested in another (see
//! `call::count_streak`), the function's calls run as written, in a call
//! region without rows, counted in the `fn` row only. A quiet call during
//! which the heap moved records its figures in the `fn` row, whole. Where
//! the build has frame pointers the call has an anchor (its frame), and
//! each allocation and free during it is placed on the row of the
//! statement that made it (`quiet_events` finds it from the return address
//! in the anchored frame): the function stays quiet, unless its calls nest
//! and more than one in `QUIET_AFTER` of them on a thread moved the heap.
//! Without an anchor the function's later calls record their rows again at
//! the first such call, for good.
//!
//! PERF: a function that never allocates (a scanner, an accessor) is most
//! of a crate's calls, which the plain build inlines to nothing; a profiled
//! call with rows costs tens of nanoseconds, a quiet one a few.

use super::call::{process_net, push, thread_fn};
use super::layout::{
    CALL_QUIET, CALL_SLOW, Counters, FAST_QUIET, FnHead, Globals, LineCell, NEVER_HOT, NO_SAMPLE,
    QUIET, QUIET_AFTER, QuietHead, ThreadFnHead, WITH_ROWS_AGAIN,
};
use super::owned::{get, load_u64, set};
use super::region::{allocated_in, allocs_in, close_in, close_quiet_in, open_in, quiet_in, row_at};
use super::rows_events::{join, leave};
use core::sync::atomic::Ordering;

/// A quiet call's room on the side stack.
pub const QUIET_ROOM: usize = core::mem::size_of::<QuietHead>().next_multiple_of(16);

/// Enters a call quietly if `meta`'s function's calls are quiet and the
/// kernel may enter them (its `fast` permit, the thread's
/// aggregate of the current generation, room on the side stack): returns
/// the call's head on the side stack, or null, having done nothing.
/// `anchor`: the frame pointer of the function running the body, or 0
/// (see `QuietHead`).
///
/// # Safety
/// `meta` is a function's head and `g` the runtime's globals.
#[cfg_attr(memprof_kernel, allow(dead_code))]
#[inline(always)]
pub unsafe fn enter(meta: *const FnHead, g: *const Globals, anchor: usize) -> *mut QuietHead {
    // SAFETY: as the caller promises.
    let (meta, g) = unsafe { (&*meta, &*g) };
    let no = core::ptr::null_mut();
    if meta.quiet.load(Ordering::Relaxed) != QUIET {
        return no;
    }
    // SAFETY: as the caller promises.
    let Some((t, tf, depth)) = (unsafe { thread_fn(meta, g, FAST_QUIET) }) else {
        return no;
    };
    if depth == 0 {
        // A call with rows nested in this one records into the aggregate.
        set(&tf.target, tf.cells);
    }
    let head = push(t, QUIET_ROOM).cast::<QuietHead>();
    if head.is_null() {
        return no;
    }
    set(&tf.depth, depth + 1);
    // The `fn` row's execution opens, so that a call nested in this one
    // (recursion) counts under the recursion rule.
    // SAFETY: the function's rows; row 0 is the `fn` line's.
    unsafe { row_at(tf.cells, 0) }.opened();
    let (start, saved) = open_in(t);
    // SAFETY: fresh room on this thread's side stack, aligned to 16.
    unsafe {
        head.write(QuietHead {
            counters: t,
            thread_fn: tf,
            start,
            flags: 0,
            mode: CALL_QUIET,
            saved,
            start_allocs: allocs_in(t),
            start_allocated: allocated_in(t),
            anchor,
            outer: get(&t.quiet_top),
        })
    };
    if anchor != 0 {
        join(t, head.cast_const());
    }
    head
}

/// Ends a quiet call that [`enter`] entered at `head`: counts it in the
/// `fn` row, with its figures if the heap moved during it, which ends the
/// function's quiet calls, and takes it off the side stack.
///
/// # Safety
/// `head` is the innermost quiet call of this thread, which [`enter`]
/// filled, and `g` the runtime's globals.
#[cfg_attr(memprof_kernel, allow(dead_code))]
#[inline(always)]
pub unsafe fn exit(head: *const QuietHead, g: *const Globals) {
    // SAFETY: as the caller promises.
    let (head, g) = unsafe { (&*head, &*g) };
    // SAFETY: `enter` filled both pointers with this thread's.
    let (t, tf): (&Counters, &ThreadFnHead) = unsafe { (&*head.counters, &*head.thread_fn) };
    // SAFETY: the function's rows; row 0 is the `fn` line's.
    let row = unsafe { row_at(tf.cells, 0) };
    if quiet_in(t, head.start, head.start_allocs) {
        close_quiet_in(t, head.saved);
        // A quiet call's Mem usage is not read: no process total per call.
        row.closed_quiet(i64::MIN, NO_SAMPLE);
    } else {
        moved(head, t, tf, row, g);
    }
    if head.anchor != 0 {
        leave(t, head.outer);
    }
    let depth = get(&tf.depth) - 1;
    set(&tf.depth, depth);
    if depth == 0 {
        tf.calls.store(load_u64(&tf.calls) + 1, Ordering::Relaxed);
        tf.quiet_calls
            .store(load_u64(&tf.quiet_calls) + 1, Ordering::Relaxed);
    }
    // Everything above it (nested calls) is gone already.
    set(&t.stack_top, head as *const QuietHead as *mut u8);
}

/// [`exit`] for a quiet call during which the heap moved: its figures, whole,
/// in the `fn` row, and rows again for the function's later calls where
/// its events were not placed on its rows, or where more than one in
/// [`QUIET_AFTER`] of its calls on this thread moved the heap.
#[inline(never)]
fn moved(head: &QuietHead, t: &Counters, tf: &ThreadFnHead, row: &LineCell, g: &Globals) {
    let stats = close_in(
        t,
        head.start,
        head.saved,
        head.start_allocs,
        head.start_allocated,
    );
    // Thread scope, as its caller's rows read it: the heap when the
    // innermost open call with rows on this thread began plus this
    // thread's count since. Reading the process heap instead takes every
    // other thread's slot, whose line its owner writes at each allocation:
    // two threads doing so on every call stalled both.
    let mem_usage = match enclosing_base(t) {
        Some(base) => base + stats.end,
        None => process_net(g),
    };
    row.closed(&stats, mem_usage);
    let moved = get(&tf.quiet_moved) + 1;
    set(&tf.quiet_moved, moved);
    // The `fn` row's Occurrences: every call on this thread, a recursion's
    // nested ones too, as `quiet_moved` counts them.
    let calls = load_u64(&row.occurrences);
    let often = moved > u64::from(QUIET_AFTER) && moved * u64::from(QUIET_AFTER) > calls;
    if get(&tf.depth) > 1 {
        // Nested in another call of the function (`exit` has not counted
        // this one out yet).
        set(&tf.hot, NEVER_HOT);
    }
    // A function whose calls nest keeps its events in the map, under a
    // lock: past one moved call in `QUIET_AFTER` its rows cost less.
    if head.anchor == 0 || (often && get(&tf.hot) == NEVER_HOT) {
        // SAFETY: an aggregate's head is its function's, a static.
        unsafe { &*tf.head }
            .quiet
            .store(WITH_ROWS_AGAIN, Ordering::Relaxed);
    }
}

/// `CallHead::base` of the innermost open call with rows on the thread of
/// `t`, where that call is synchronous and in thread scope (the kernel
/// steps its rows with these counters); otherwise none.
#[inline(always)]
fn enclosing_base(t: &Counters) -> Option<i64> {
    let cursor = get(&t.open_cursor);
    if cursor.is_null() {
        return None;
    }
    // SAFETY: the thread's innermost open cursor, on its side stack or in
    // an open call's frame, and its call, open as long as the cursor is.
    let call = unsafe { (*cursor).call };
    if call.is_null() {
        return None;
    }
    // SAFETY: as above.
    let call = unsafe { &*call };
    let own = core::ptr::eq(get(&call.counters), t);
    (own && get(&call.flags) & CALL_SLOW == 0).then(|| get(&call.base))
}
