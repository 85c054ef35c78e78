//! The statement step: a cursor's open row closes and the next opens, on
//! the quiet path (nothing allocated or freed since the row opened) in a
//! few loads and stores.

use super::layout::{
    CALL_DEVICE, CALL_SLOW, CallHead, Counters, CursorHead, NO_CELL, NO_SAMPLE, STOPPED,
};
use super::owned::{get, set};
use super::region::{
    allocated_in, allocs_in, close_device_in, close_device_quiet_in, close_in, close_quiet_in,
    open_device_in, open_in,
};

/// The statement step: closes the cursor's open row, if any, and opens row
/// `next`, unless it is `NO_CELL`. Returns 0 when done, 1 when the call
/// takes the runtime's slow step instead (nothing was done then).
///
/// # Safety
/// `cursor` is null or points at a live cursor of the calling thread, whose
/// `call`, if not null, is a call still open, entered on this thread, or an
/// `async fn` call being polled on it (whose cursors' counters each poll
/// renews, see `Cursor::to_kernel` in the runtime).
#[cfg_attr(memprof_kernel, allow(dead_code))]
#[inline(always)]
pub unsafe fn step(cursor: *const CursorHead, next: u32) -> u32 {
    // SAFETY: as the caller promises.
    let Some(cursor) = (unsafe { cursor.as_ref() }) else {
        return 0;
    };
    let counters = get(&cursor.counters);
    if counters.is_null() {
        if cursor.call.is_null() {
            return 0;
        }
        set(&cursor.pending, next);
        return 1;
    }
    // SAFETY: a cursor's counters are those of the thread running its call
    // (for an `async fn` call, of the thread polling it, renewed by each
    // poll), which live as long as the thread.
    let t = unsafe { &*counters };
    // SAFETY: as the caller promises.
    let call = unsafe { &*cursor.call };
    if next == NO_CELL && get(&call.flags) & CALL_SLOW != 0 {
        // An `async fn` call's cursor closing its last row: the runtime
        // keeps the call's chain of cursors (see `Cursor::to_kernel`).
        // PERF: a compare of an argument on every step, and a load only at
        // a block's end.
        set(&cursor.pending, next);
        return 1;
    }
    let cell = get(&cursor.cell);
    if cell != NO_CELL && t.events() == get(&cursor.events) {
        // PERF: the fast path of almost every statement: nothing was
        // allocated or freed since the row's region opened. The next
        // row's region would open where this one started, under the same
        // enclosing watermark and allocation count: the cursor keeps
        // them, and the thread's counters stay as they are (their
        // `carry` holds nothing above the start, which every close reads
        // together with `peak`, at least the start since this region
        // opened).
        step_quiet(cursor, call, t, next, false);
        return 0;
    }
    if get(&cursor.pending) == STOPPED {
        // The call's rows take its events (see `calls::rows_events`): no
        // row is open, and none opens. Its blocks have no cursor, so this
        // is a statement of a block that was open as the call switched.
        return 0;
    }
    if cell != NO_CELL && get(&call.flags) & CALL_DEVICE != 0 {
        step_device(cursor, call, t, next);
    } else {
        step_loud(cursor, call, t, next);
    }
    0
}

/// [`step`] of a call that counts device bytes (`CALL_DEVICE`), with a row
/// open: its quiet path, where neither the heap nor the device bytes moved
/// since the row opened (the row's device bytes after are then its start),
/// or [`step_loud`].
///
/// PERF: out of line, as [`step_loud`], and apart from it, so that this
/// path saves few registers. Such a call's rows keep the complement of the
/// thread's heap and device events in `CursorHead::events`, which no count
/// of heap events alone reaches (it would take 2^63 events): [`step`]'s
/// quiet test fails for them, at no cost to the calls that count none.
#[inline(never)]
fn step_device(cursor: &CursorHead, call: &CallHead, t: &Counters, next: u32) {
    if !all_events(t) != get(&cursor.events) {
        return step_loud(cursor, call, t, next);
    }
    step_quiet(cursor, call, t, next, true);
}

/// Closes the cursor's open row, in whose region nothing moved, and opens
/// row `next`, if any, where it started; `device`: the row counts device
/// bytes too, whose bytes after are then its start.
#[inline(always)]
fn step_quiet(cursor: &CursorHead, call: &CallHead, t: &Counters, next: u32, device: bool) {
    let device_usage = if device {
        get(&cursor.device_start)
    } else {
        NO_SAMPLE
    };
    call.row(get(&cursor.cell))
        .closed_quiet(get(&call.base) + get(&cursor.start), device_usage);
    set(&cursor.cell, next);
    if next == NO_CELL {
        close_quiet_in(t, get(&cursor.saved));
        if device {
            close_device_quiet_in(t, get(&cursor.device_saved));
        }
    } else {
        call.row(next).opened();
    }
}

/// [`step`] where the open row's region saw an allocation or a free, or
/// where no row is open: closes the region, if any, with its figures, and
/// opens row `next`'s.
///
/// PERF: out of line, so that [`step`]'s quiet path saves no registers.
#[inline(never)]
fn step_loud(cursor: &CursorHead, call: &CallHead, t: &Counters, next: u32) {
    if get(&cursor.cell) != NO_CELL {
        close_loud(cursor, call, t);
    }
    set(&cursor.cell, next);
    if next != NO_CELL {
        call.row(next).opened();
        let (start, saved) = open_in(t);
        set(&cursor.start, start);
        set(&cursor.saved, saved);
        set(&cursor.start_allocs, allocs_in(t));
        set(&cursor.start_allocated, allocated_in(t));
        if get(&call.flags) & CALL_DEVICE != 0 {
            let (device_start, device_saved) = open_device_in(t);
            set(&cursor.device_start, device_start);
            set(&cursor.device_saved, device_saved);
            set(&cursor.events, !all_events(t));
        } else {
            set(&cursor.events, t.events());
        }
    }
}

/// The thread's heap and device events together: any event of either moves
/// it.
#[inline(always)]
fn all_events(t: &Counters) -> u64 {
    t.events().wrapping_add(get(&t.device_events))
}

/// Closes the cursor's open row's region, which saw an allocation or a
/// free, and records its figures.
#[inline(always)]
fn close_loud(cursor: &CursorHead, call: &CallHead, t: &Counters) {
    let stats = close_in(
        t,
        get(&cursor.start),
        get(&cursor.saved),
        get(&cursor.start_allocs),
        get(&cursor.start_allocated),
    );
    let device = (get(&call.flags) & CALL_DEVICE != 0)
        .then(|| close_device_in(t, get(&cursor.device_start), get(&cursor.device_saved)));
    call.row(get(&cursor.cell))
        .closed_with(&stats, get(&call.base) + stats.end, device);
}
