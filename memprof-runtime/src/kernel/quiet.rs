//! Quiet calls: once [`QUIET_AFTER`](super::layout::QUIET_AFTER) calls in
//! a row of a function on one thread allocated and freed nothing, the
//! function's calls run as written, in a call region without rows, counted
//! in the `fn` row only. A quiet call during which the heap moved records
//! its figures in the `fn` row, whole, and the function's later calls
//! record their rows again, for good.
//!
//! PERF: a function that never allocates (a scanner, an accessor) is most
//! of a crate's calls, which the plain build inlines to nothing; a profiled
//! call with rows costs tens of nanoseconds, a quiet one a few.

use super::call::{process_net, push, thread_fn};
use super::layout::{
    Counters, FAST_QUIET, FnHead, Globals, LineCell, NO_SAMPLE, QUIET, QuietHead, ThreadFnHead,
    WITH_ROWS_AGAIN,
};
use super::owned::{get, load_u64, set};
use super::region::{allocated_in, allocs_in, close_in, close_quiet_in, open_in, quiet_in, row_at};
use core::sync::atomic::Ordering;

/// The side stack's room for a quiet call's head.
const QUIET_ROOM: usize = core::mem::size_of::<QuietHead>().next_multiple_of(16);

/// Enters a call quietly if `meta`'s function's calls are quiet and the
/// kernel may enter them (its `fast` permit, the thread's
/// aggregate of the current generation, room on the side stack): returns
/// the call's head on the side stack, or null, having done nothing.
///
/// # Safety
/// `meta` is a function's head and `g` the runtime's globals.
#[cfg_attr(memprof_kernel, allow(dead_code))]
#[inline(always)]
pub unsafe fn enter(meta: *const FnHead, g: *const Globals) -> *mut QuietHead {
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
            saved,
            start_allocs: allocs_in(t),
            start_allocated: allocated_in(t),
        })
    };
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
    let depth = get(&tf.depth) - 1;
    set(&tf.depth, depth);
    if depth == 0 {
        tf.calls.store(load_u64(&tf.calls) + 1, Ordering::Relaxed);
    }
    // Everything above it (nested calls) is gone already.
    set(&t.stack_top, head as *const QuietHead as *mut u8);
}

/// [`exit`] for a quiet call during which the heap moved: its figures, whole,
/// in the `fn` row, and rows again for the function's later calls.
#[inline(never)]
fn moved(head: &QuietHead, t: &Counters, tf: &ThreadFnHead, row: &LineCell, g: &Globals) {
    let stats = close_in(
        t,
        head.start,
        head.saved,
        head.start_allocs,
        head.start_allocated,
    );
    row.closed(&stats, process_net(g));
    // SAFETY: an aggregate's head is its function's, a static.
    unsafe { &*tf.head }
        .quiet
        .store(WITH_ROWS_AGAIN, Ordering::Relaxed);
}
