//! The statement step: a cursor's open row closes and the next opens, on
//! the quiet path (nothing allocated or freed since the row opened) in a
//! few loads and stores.

use super::layout::{CallHead, Counters, CursorHead, NO_CELL};
use super::owned::{get, set};
use super::region::{allocated_in, allocs_in, close_in, close_quiet_in, open_in};

/// The statement step: closes the cursor's open row, if any, and opens row
/// `next`, unless it is `NO_CELL`. Returns 0 when done, 1 when the call
/// takes the runtime's slow step instead (nothing was done then).
///
/// # Safety
/// `cursor` is null or points at a live cursor of the calling thread, whose
/// `call`, if not null, is a call entered on this thread and still open.
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
    // SAFETY: a cursor's counters are its call's thread's, which live as
    // long as the thread.
    let t = unsafe { &*counters };
    // SAFETY: as the caller promises.
    let call = unsafe { &*cursor.call };
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
        call.row(cell)
            .closed_quiet(get(&call.base) + get(&cursor.start));
        set(&cursor.cell, next);
        if next == NO_CELL {
            close_quiet_in(t, get(&cursor.saved));
        } else {
            call.row(next).opened();
        }
        return 0;
    }
    step_loud(cursor, call, t, next);
    0
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
        set(&cursor.events, t.events());
    }
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
    call.row(get(&cursor.cell))
        .closed(&stats, get(&call.base) + stats.end);
}
