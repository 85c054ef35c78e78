//! Calls and block cursors that the kernel keeps on the thread's side
//! stack: a synchronous call's entry and exit, and a nested block's cursor.

use super::layout::{
    CALL_KERNEL, CallHead, Counters, CursorHead, EVENTS, EVENTS_AFTER_TURNS, EdgeCounts, FAST_ALL,
    FnHead, Globals, HOT_AFTER, NEVER_HOT, NO_CELL, NO_SAMPLE, QUIET, QUIET_AFTER, ThreadFnHead,
    WITH_ROWS,
};
use super::owned::{get, load_u64, set};
use super::region::{allocated_in, allocs_in, close_in, close_quiet_in, open_in, quiet_in, row_at};
use super::rows_events::leave_events;
use super::step::step;
use core::cell::Cell;
use core::sync::atomic::Ordering;

/// The process's net heap: the overflow plus the slots claimed now, so
/// that its cost follows the threads that hold one (a few at most), not
/// every thread there ever was. The runtime reads it through this too
/// (`alloc::process_net`).
#[inline(always)]
pub fn process_net(g: &Globals) -> i64 {
    // SAFETY: `Globals` points at the runtime's statics.
    let (claimed, overflow) = unsafe { (&*g.claimed, &*g.overflow) };
    let mut claimed = claimed.load(Ordering::Relaxed);
    let mut sum = overflow.net.load(Ordering::Relaxed);
    while claimed != 0 {
        let i = claimed.trailing_zeros() as usize;
        // SAFETY: the runtime sets bits only for slots that exist.
        sum += unsafe { &*g.slots.add(i) }.net.load(Ordering::Relaxed);
        claimed &= claimed - 1;
    }
    sum
}

/// Takes `size` bytes (a multiple of 16) off the thread's side stack, or
/// returns null when it has no room (or none yet).
#[inline(always)]
pub(super) fn push(t: &Counters, size: usize) -> *mut u8 {
    let top = get(&t.stack_top);
    if (get(&t.stack_end) as usize).wrapping_sub(top as usize) < size || top.is_null() {
        return core::ptr::null_mut();
    }
    set(&t.stack_top, top.wrapping_add(size));
    top
}

/// The side stack's room for what the kernel puts there: a call's head, and
/// a cursor's.
pub const CALL_ROOM: usize = core::mem::size_of::<CallHead>().next_multiple_of(16);
pub const CURSOR_ROOM: usize = core::mem::size_of::<CursorHead>().next_multiple_of(16);

/// Where a call of `meta`'s function may be entered by the kernel: the
/// calling thread's counters, its aggregate of the function and the calls
/// of it open on the thread; `None` without the function's `fast` permit
/// at `least` this level, the thread's counters or aggregate, or (no call
/// open) with an aggregate of an older generation, which the runtime renews.
///
/// # Safety
/// `g` is the runtime's globals; the references last no longer than the
/// calling thread.
#[inline(always)]
pub(super) unsafe fn thread_fn<'t>(
    meta: &FnHead,
    g: &Globals,
    least: u8,
) -> Option<(&'t Counters, &'t ThreadFnHead, u32)> {
    if meta.fast.load(Ordering::Relaxed) < least {
        return None;
    }
    // SAFETY: as the caller promises.
    let offset = unsafe { &*g.tls_offset }.load(Ordering::Relaxed);
    let tp = super::thread::pointer();
    if offset == 0 || tp == 0 {
        return None;
    }
    // SAFETY: a non-zero offset leads from the thread pointer to this
    // thread's counters (see `tls`), which live as long as the thread.
    let t = unsafe { &*(tp.wrapping_add_signed(offset) as *const Counters) };
    let index = (meta.id.load(Ordering::Relaxed) as usize).wrapping_sub(1);
    if index >= get(&t.fns_len) {
        return None;
    }
    // SAFETY: `fns` holds `fns_len` entries (see `calls::thread`); a listed
    // aggregate lives as long as this thread.
    let tf = unsafe { (*get(&t.fns).add(index)).as_ref() }?;
    let depth = get(&tf.depth);
    if depth == 0 && load_u64(&tf.generation) != meta.generation.load(Ordering::Relaxed) {
        return None;
    }
    Some((t, tf, depth))
}

/// A synchronous call's entry, when the function's `fast` permit is set and
/// this thread has its aggregate and room on its side stack: finds the
/// thread's counters from the thread pointer, puts the call's head and its
/// body's cursor on the side stack, takes the rows, opens the call's region
/// and, unless `first` is `NO_CELL`, row `first`'s: the body's first
/// statement, whose step this saves. Returns the body's cursor, whose call's
/// `mode` is `CALL_KERNEL`, or null when the runtime's entry is to run
/// instead (nothing was done then).
///
/// # Safety
/// `meta` is a function's head and `g` the runtime's globals.
#[cfg_attr(memprof_kernel, allow(dead_code))]
#[inline(always)]
pub unsafe fn enter(meta: *const FnHead, g: *const Globals, first: u32) -> *mut CursorHead {
    // SAFETY: as the caller promises.
    let (meta, g) = unsafe { (&*meta, &*g) };
    let no = core::ptr::null_mut();
    // SAFETY: as the caller promises.
    let Some((t, tf, depth)) = (unsafe { thread_fn(meta, g, FAST_ALL) }) else {
        return no;
    };
    let thread_fn: *const ThreadFnHead = tf;
    let record = push(t, CALL_ROOM + CURSOR_ROOM).cast::<CallHead>();
    if record.is_null() {
        return no;
    }
    let top = record
        .cast::<u8>()
        .wrapping_add(CALL_ROOM)
        .cast::<CursorHead>();
    let cells = if depth == 0 {
        set(&tf.target, tf.cells);
        tf.cells
    } else {
        get(&tf.target)
    };
    set(&tf.depth, depth + 1);
    // PERF: the region first, then each head written once, whole. The first
    // row's region, if any, opens where the call's just did: its enclosing
    // watermark is that start, and the thread's counters are already as an
    // open leaves them.
    let (start, saved) = open_in(t);
    let allocs = allocs_in(t);
    let allocated = allocated_in(t);
    // PERF: the rows from `cells` as it is, not through the head written
    // below, whose store the loads would wait for.
    // SAFETY: the function's rows, from the thread's aggregate; row 0 is
    // the `fn` line's.
    unsafe { row_at(cells, 0) }.opened();
    if first != NO_CELL {
        // SAFETY: as above; generated code passes only cells below the count.
        unsafe { row_at(cells, first) }.opened();
    }
    // SAFETY: fresh room on this thread's side stack, aligned to 16.
    unsafe {
        top.write(CursorHead {
            call: record,
            cell: Cell::new(first),
            pending: Cell::new(NO_CELL),
            held: Cell::new(NO_CELL),
            counters: Cell::new(t as *const Counters),
            start: Cell::new(start),
            saved: Cell::new(start),
            start_allocs: Cell::new(allocs),
            start_allocated: Cell::new(allocated),
            events: Cell::new(t.events()),
            device_start: Cell::new(0),
            device_saved: Cell::new(0),
            outer: Cell::new(get(&t.open_cursor)),
        });
        record.write(CallHead {
            counters: Cell::new(t as *const Counters),
            cells: Cell::new(cells),
            base: Cell::new(process_net(g) - start),
            flags: Cell::new(0),
            mode: Cell::new(CALL_KERNEL),
            outermost: Cell::new(depth == 0),
            turns: Cell::new(0),
            thread_fn: Cell::new(thread_fn),
            start: Cell::new(start),
            saved: Cell::new(saved),
            start_allocs: Cell::new(allocs),
            start_allocated: Cell::new(allocated),
        })
    };
    set(&t.open_cursor, top);
    top
}

/// Ends a call if [`enter`] entered it (returns 0): closes its body's
/// cursor `top`, records its `fn` row and its call edge, leaves the
/// function's aggregate and takes both off the side stack. Returns 1,
/// having done nothing, for a call the runtime entered; 2, having done
/// nothing, when neither of the aggregate's latest edges is the one this
/// call was made from (see [`edge`]): the runtime finds it and calls this
/// again.
///
/// # Safety
/// `top` is the body's cursor of the innermost open synchronous call of this
/// thread.
#[cfg_attr(memprof_kernel, allow(dead_code))]
#[inline(always)]
pub unsafe fn exit(top: *const CursorHead) -> u32 {
    // SAFETY: as the caller promises.
    let call = unsafe { (*top).call };
    // SAFETY: as the caller promises.
    if get(&unsafe { &*call }.mode) != CALL_KERNEL {
        return 1;
    }
    // SAFETY: as the caller promises; `enter` set both pointers.
    let (cursor, call, t, tf) = unsafe {
        let call = &*call;
        (&*top, call, &*get(&call.counters), &*get(&call.thread_fn))
    };
    // SAFETY: the body's cursor's `outer` is null or a live cursor of this
    // thread, the caller's (see `enter`).
    let edge = match unsafe { edge(tf, get(&cursor.outer)) } {
        Edge::Counts(counts) => counts,
        Edge::None => core::ptr::null(),
        Edge::Unknown => return 2,
    };
    if get(&call.turns) == EVENTS {
        end_events(cursor, call, t, tf);
    }
    set(&t.open_cursor, get(&cursor.outer));
    let start = get(&call.start);
    if quiet_in(t, start, get(&call.start_allocs)) {
        // PERF: nothing was allocated or freed during the call, so neither
        // during the body's open row, which started where the call did: one
        // test for both regions.
        let cell = get(&cursor.cell);
        if cell != NO_CELL {
            call.row(cell)
                .closed_quiet(get(&call.base) + start, NO_SAMPLE);
        }
        close_quiet_in(t, get(&call.saved));
        call.row(0).closed_quiet(get(&call.base) + start, NO_SAMPLE);
        count_streak(tf, false, !get(&call.outermost));
        // SAFETY: null or the aggregate's edge, which outlives the call.
        if let Some(edge) = unsafe { edge.as_ref() } {
            edge.calls
                .store(load_u64(&edge.calls) + 1, Ordering::Relaxed);
        }
    } else {
        exit_loud(cursor, call, t, edge);
        count_streak(tf, true, !get(&call.outermost));
    }
    set(&tf.depth, get(&tf.depth) - 1);
    if get(&call.outermost) {
        tf.calls.store(load_u64(&tf.calls) + 1, Ordering::Relaxed);
    }
    // Everything above the frame (its blocks' cursors) is gone already.
    set(&t.stack_top, call as *const CallHead as *mut u8);
    0
}

/// After a call with rows ends, `moved` if the heap moved during it,
/// `nested` if it ran inside another call of its function on the thread:
/// counts the thread's calls in a row that moved nothing, and makes the
/// function's later calls quiet (see `quiet`) after [`QUIET_AFTER`]; or,
/// once [`HOT_AFTER`] of its calls on the thread moved the heap, none of
/// them nested, quiet whether they move it or not (their events placed on
/// their rows). The runtime counts the calls it entered itself while only
/// quiet calls may take the kernel's entry (`FAST_QUIET`).
#[inline(always)]
pub fn count_streak(tf: &ThreadFnHead, moved: bool, nested: bool) {
    if moved || nested {
        count_hot(tf, nested);
        if moved {
            set(&tf.streak, 0);
            return;
        }
    }
    let streak = get(&tf.streak) + 1;
    set(&tf.streak, streak);
    if streak == QUIET_AFTER {
        go_quiet(tf);
    }
}

/// [`count_streak`]'s count of calls that moved the heap, for
/// [`HOT_AFTER`]: past it for good once a call nested.
#[inline(always)]
fn count_hot(tf: &ThreadFnHead, nested: bool) {
    let hot = get(&tf.hot);
    if nested {
        set(&tf.hot, NEVER_HOT);
    } else if hot < HOT_AFTER {
        set(&tf.hot, hot + 1);
        if hot + 1 == HOT_AFTER {
            go_quiet(tf);
        }
    }
}

#[cold]
fn go_quiet(tf: &ThreadFnHead) {
    // SAFETY: an aggregate's head is its function's, a static.
    let quiet = &unsafe { &*tf.head }.quiet;
    // Only from calls with rows: never back from rows again.
    let _ = quiet.compare_exchange(WITH_ROWS, QUIET, Ordering::Relaxed, Ordering::Relaxed);
}

/// The row `cursor` held open since its call's rows began to take its
/// events (`CursorHead::held`) ends: the block or the call is done.
#[cold]
#[inline(never)]
pub fn release(cursor: &CursorHead, call: &CallHead) {
    call.row(get(&cursor.held)).released();
    set(&cursor.held, NO_CELL);
}

/// [`exit`]'s end of a call whose rows took its events: its body's held
/// row ends, and its events are no longer placed on its rows.
#[cold]
#[inline(never)]
fn end_events(cursor: &CursorHead, call: &CallHead, t: &Counters, tf: &ThreadFnHead) {
    if get(&cursor.held) != NO_CELL {
        release(cursor, call);
    }
    leave_events(t, tf);
}

/// [`exit`]'s closes for a call during which something was allocated or
/// freed: its body's open row, if any (a step to no row), then its `fn`
/// row. Out of line, so that [`exit`]'s quiet path saves no registers.
#[inline(never)]
fn exit_loud(cursor: &CursorHead, call: &CallHead, t: &Counters, edge: *const EdgeCounts) {
    if get(&cursor.cell) != NO_CELL {
        // SAFETY: the call's body cursor, live, which the kernel steps.
        unsafe { step(cursor, NO_CELL) };
    }
    let stats = close_in(
        t,
        get(&call.start),
        get(&call.saved),
        get(&call.start_allocs),
        get(&call.start_allocated),
    );
    call.row(0).closed(&stats, get(&call.base) + stats.end);
    // SAFETY: null or the aggregate's edge, which outlives the call.
    if let Some(edge) = unsafe { edge.as_ref() } {
        edge.calls
            .store(load_u64(&edge.calls) + 1, Ordering::Relaxed);
        let allocated = load_u64(&edge.allocated).wrapping_add(stats.allocated);
        edge.allocated.store(allocated, Ordering::Relaxed);
    }
}

/// Which call edge a call of `tf`'s function made from `outer`'s open row
/// counts in (see [`exit`]).
pub enum Edge {
    /// One of the aggregate's two latest edges, the one this call was made
    /// from: its counts (null where the caller has none).
    Counts(*const EdgeCounts),
    /// None: no profiled row is open (a call from unprofiled code), or
    /// its cursor is between rows.
    None,
    /// Another edge than the aggregate's latest two: the runtime's to
    /// find.
    Unknown,
}

/// The edge of a call of `tf`'s function whose caller's innermost cursor
/// was `outer` when it began: the row open there, with the caller's
/// aggregate, tell the edge; a call made from one of the two rows that the
/// function's latest edges on this thread came from finds it in two
/// compares each.
///
/// # Safety
/// `outer` is null or a live cursor of this thread.
#[inline(always)]
pub unsafe fn edge(tf: &ThreadFnHead, outer: *const CursorHead) -> Edge {
    // SAFETY: as the caller promises.
    let Some(outer) = (unsafe { outer.as_ref() }) else {
        return Edge::None;
    };
    let cell = get(&outer.cell);
    if cell == NO_CELL {
        return Edge::None;
    }
    // SAFETY: a live cursor in the chain belongs to an open synchronous
    // call of this thread, or to an `async fn` call polled on it, whose
    // head is live.
    let caller = unsafe { &*outer.call };
    let row = get(&caller.cells).wrapping_add(cell as usize);
    let from = get(&caller.thread_fn);
    for slot in &tf.edges {
        if row == get(&slot.row) && from == get(&slot.caller) {
            return Edge::Counts(get(&slot.counts));
        }
    }
    Edge::Unknown
}

/// A cursor for a nested block of the call whose body's cursor is `top`, if
/// the kernel steps that call's statements: a cursor head on the side
/// stack, at row `first` (the block's first statement, whose step this
/// saves) unless that is `NO_CELL`. Null for any other call, or none (`top`
/// null: `MEMPROF=off`), or no room, or a call whose rows may take its
/// events from now on, which the runtime answers: one that entered
/// [`EVENTS_AFTER_TURNS`] blocks (see `calls::rows_events`).
///
/// # Safety
/// `top` is null or the body's cursor of the innermost open synchronous call
/// of this thread.
#[cfg_attr(memprof_kernel, allow(dead_code))]
#[inline(always)]
pub unsafe fn cursor(top: *const CursorHead, first: u32) -> *mut CursorHead {
    // SAFETY: as the caller promises.
    let Some(top) = (unsafe { top.as_ref() }) else {
        return core::ptr::null_mut();
    };
    let call = top.call;
    // PERF: any call whose statements the kernel steps (its body's cursor
    // has the thread's counters), whoever entered it: a call the runtime
    // entered (a thread's first calls, which print tables) may run the
    // longest loops of the program, a test function's.
    let counters = get(&top.counters);
    if counters.is_null() {
        return core::ptr::null_mut();
    }
    // SAFETY: a cursor with counters has a call, open while it is.
    let turns = &unsafe { &*call }.turns;
    let turn = get(turns);
    if turn < EVENTS_AFTER_TURNS {
        set(turns, turn + 1);
    } else if turn == EVENTS_AFTER_TURNS {
        // A call whose rows may take its events from now on: the runtime's
        // cursor answers (see `calls::rows_events`).
        return core::ptr::null_mut();
    }
    // SAFETY: a cursor's counters are its call's thread's.
    let record = push(unsafe { &*counters }, CURSOR_ROOM).cast::<CursorHead>();
    if !record.is_null() {
        // SAFETY: `size` fresh bytes of this thread's side stack.
        unsafe {
            record.write(CursorHead {
                call,
                cell: Cell::new(NO_CELL),
                pending: Cell::new(NO_CELL),
                held: Cell::new(NO_CELL),
                counters: Cell::new(counters),
                start: Cell::new(0),
                saved: Cell::new(0),
                start_allocs: Cell::new(0),
                start_allocated: Cell::new(0),
                events: Cell::new(0),
                device_start: Cell::new(0),
                device_saved: Cell::new(0),
                outer: Cell::new(get(&(*counters).open_cursor)),
            })
        };
        // SAFETY: as above.
        set(&unsafe { &*counters }.open_cursor, record);
        if first != NO_CELL {
            // SAFETY: just written.
            unsafe { step(record, first) };
        }
    }
    record
}

/// The end of a block whose cursor [`cursor`] made: closes its open row and
/// takes it off the side stack (returns 0). Returns 1, having done nothing,
/// for a cursor the runtime made.
///
/// # Safety
/// `cursor` is null or the innermost cursor of this thread's open
/// synchronous calls.
#[cfg_attr(memprof_kernel, allow(dead_code))]
#[inline(always)]
pub unsafe fn cursor_end(cursor: *const CursorHead) -> u32 {
    // SAFETY: as the caller promises.
    let Some(head) = (unsafe { cursor.as_ref() }) else {
        return 0;
    };
    let counters = get(&head.counters);
    if counters.is_null() {
        return 1;
    }
    // SAFETY: a cursor's counters are its call's thread's.
    let t = unsafe { &*counters };
    // Everything above the innermost cursor is gone: if [`cursor`] made it,
    // it ends at the top of the side stack. A cursor the runtime made is a
    // larger record (see `probe`), or on the heap when the side stack is
    // full.
    if (cursor as usize).wrapping_add(CURSOR_ROOM) != get(&t.stack_top) as usize {
        return 1;
    }
    if get(&head.cell) != NO_CELL {
        // SAFETY: as the caller promises.
        unsafe { step(cursor, NO_CELL) };
    }
    if get(&head.held) != NO_CELL {
        // SAFETY: a cursor's call is open while it is.
        release(head, unsafe { &*head.call });
    }
    set(&t.open_cursor, get(&head.outer));
    set(&t.stack_top, cursor as *mut u8);
    0
}
