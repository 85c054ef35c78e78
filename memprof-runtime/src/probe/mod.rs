//! What generated code calls for a profiled function: [`SyncCall`] and its
//! [`StackCursor`]s for a synchronous function, whose state lives on the
//! thread's side stack; [`CallFrame`] and the [`CallGuard`] that ends a call
//! for an `async fn`, whose state lives in its future. The top layer: it
//! wires a call's end to the budgets, the `mprof run` timeline and the
//! printed tables.

mod open_rows;
mod quiet;

pub use quiet::QuietCall;

use crate::alloc::KERNEL_GLOBALS;
use crate::calls::stack::{self, Place};
use crate::calls::{Cursor, FnMeta, Frame};
use crate::kernel::layout::{CallHead, CursorHead, EVENTS_AFTER_TURNS, NO_CELL, STOPPED};
use crate::timeline::CallMark;
use std::alloc::Layout;
use std::marker::PhantomData;

/// One synchronous call of a profiled function, declared first in its body,
/// and the statement cursor of that body (see [`Cursor`]): a pointer to the
/// body's cursor on the thread's side stack, which leads to the call's
/// frame; null when the call records nothing (`MEMPROF=off`). Ends the call
/// when dropped.
///
/// PERF: everything the expansion calls on the way in and per block is a
/// test around one call into the kernel, which does the whole work for a
/// function's steady-state calls; the runtime's slower paths are out of
/// line. A statement is one call of [`statement`], which in unoptimized
/// builds is the kernel's own function. In optimized builds the rest is
/// inlined into the user's code. In unoptimized builds (`opt-level = 0`,
/// the dev profile) it is calls, because an unoptimized caller keeps every
/// inlined local in its own frame: inlined, a dozen statements' worth of
/// temporaries would multiply the stack each level of a recursion takes.
/// The frame doubles as the body's cursor for the same reason: a pointer
/// less per call.
#[derive(Debug)]
#[must_use]
#[repr(transparent)]
pub struct SyncCall {
    /// The body's cursor, which generated code passes to [`statement`].
    pub probe: Probe,
}

/// The statement cursor of one nested block of a [`SyncCall`]: see
/// [`Cursor`], which it points at on the side stack (null: records nothing).
#[derive(Debug)]
#[must_use]
#[repr(transparent)]
pub struct StackCursor {
    /// The cursor, which generated code passes to [`statement`].
    pub probe: Probe,
}

/// Where a [`SyncCall`]'s or [`StackCursor`]'s statement steps go: a pointer
/// to a cursor of this thread on its side stack (or the heap), null when the
/// call records nothing. Only the runtime makes one, and only inside the
/// call or block it belongs to, which outlives every `&Probe`: so a
/// `&Probe` always leads to a live cursor or to null, which is what makes
/// [`statement`] safe to call.
#[derive(Debug)]
#[repr(transparent)]
pub struct Probe(*const CursorHead);

#[cfg(memprof_kernel)]
unsafe extern "C" {
    /// A statement's step, as generated code takes it: ends the current
    /// statement's region of `probe`'s cursor, if any, and starts cell
    /// `cell`'s (`u32::MAX`: none).
    ///
    /// PERF: in unoptimized builds, the kernel's own function: a statement
    /// costs generated code one call, straight into optimized code, with no
    /// unoptimized runtime function between (each is a dozen loads and
    /// stores through the stack). The kernel calls back into the runtime
    /// for the calls whose steps it leaves to it.
    #[link_name = "memprof_kernel_0_1_0_statement"]
    pub safe fn statement(probe: &Probe, cell: u32);

    /// Hands the kernel [`slow_step`].
    #[link_name = "memprof_kernel_0_1_0_set_slow"]
    safe fn set_slow(step: unsafe extern "C" fn(*const CursorHead));
}

/// A statement's step, as generated code takes it: ends the current
/// statement's region of `probe`'s cursor, if any, and starts cell `cell`'s
/// (`u32::MAX`: none).
///
/// PERF: out of line in unoptimized builds (the pure-Rust kernel's), as
/// the other probes are there: inlined, each statement's temporaries would
/// take room in the caller's frame.
#[cfg(not(memprof_kernel))]
#[cfg_attr(memprof_unoptimized, inline(never))]
#[cfg_attr(not(memprof_unoptimized), inline(always))]
pub fn statement(probe: &Probe, cell: u32) {
    step(probe.0, cell);
}

/// The step that the kernel's [`statement`] leaves to the runtime, to the
/// row the kernel wrote in the cursor. NOTE: a panic must not unwind into
/// the kernel, which is built to abort: one here is caught, and the row's
/// figures are lost rather than the program.
#[cfg(memprof_kernel)]
unsafe extern "C" fn slow_step(cursor: *const CursorHead) {
    let step = std::panic::AssertUnwindSafe(|| {
        // SAFETY: the kernel passes the live cursor it was given, after
        // writing the row it was to open there.
        let next = unsafe { (*cursor).pending.get() };
        step_slowly(cursor, next);
    });
    let _ = std::panic::catch_unwind(step);
}

/// Moves a [`SyncCall`]'s or [`StackCursor`]'s cursor from a block's last
/// statement or tail expression to its closing brace's row, `end`, when
/// dropped, as `TailGuard` does for a [`Cursor`]: right after it, before the
/// block's locals drop, however the block ends. Generated code makes it as
/// a struct, with no call, and declares it just before that statement, so
/// that no step of ours follows a statement that may diverge.
#[derive(Debug)]
#[must_use]
pub struct StackTail<'c> {
    /// The block's cursor.
    pub probe: &'c Probe,
    /// The closing brace's row, or `u32::MAX` for none.
    pub end: u32,
}

/// A call the runtime entered, on the side stack (or the heap).
#[repr(C)]
struct CallRecord {
    /// First, as a frame starts with its head.
    frame: Frame,
    /// The body's cursor.
    top: Cursor<'static>,
    mark: CallMark,
    place: Place,
    /// Tables printed during the call are held back until it ends (see
    /// `output::budgeted_call_started`).
    holds: bool,
}

/// A cursor the runtime made, on the side stack (or the heap).
#[repr(C)]
struct CursorRecord {
    cursor: Cursor<'static>,
    place: Place,
}

// The kernel tells a cursor it made from one the runtime made by the room
// it takes on the side stack (see `kernel::call::cursor_end`).
const _: () = assert!(
    std::mem::size_of::<CursorRecord>().next_multiple_of(16) != crate::kernel::call::CURSOR_ROOM
);

/// Ends the current statement's region of `cursor`, if any, and starts cell
/// `cell`'s.
#[inline(always)]
fn step(cursor: *const CursorHead, cell: u32) {
    // PERF: `MEMPROF=off` (no cursor) makes no call: a statement of a body
    // that has no as-written copy (a recursive function) costs a test; so
    // does one in a block of a call whose rows take its events, which has
    // no cursor (`calls::rows_events`).
    if cursor.is_null() {
        return;
    }
    // SAFETY: this thread's live cursor.
    if unsafe { crate::kernel::step(cursor, cell) } != 0 {
        step_slowly(cursor, cell);
    }
}

impl SyncCall {
    /// Starts a call of `meta`'s function, and its body's first statement,
    /// row `first`, unless that is `u32::MAX` (the body starts otherwise).
    #[cfg_attr(memprof_unoptimized, inline(never))]
    #[cfg_attr(not(memprof_unoptimized), inline(always))]
    pub fn start(meta: &'static FnMeta, first: u32) -> SyncCall {
        Self::started(meta, first)
    }

    /// [`SyncCall::start`] out of line: what generated code calls in a
    /// build with debug assertions (the dev profile, unoptimized), where
    /// `cargo memprof` builds this runtime optimized all the same. Inlined,
    /// the start would be compiled again, unoptimized and with the pointer
    /// checks of debug assertions, into every profiled function: more for
    /// rustc to compile (each doctest compiles the generic functions it
    /// calls) and slower to run than one call into the optimized runtime.
    #[inline(never)]
    pub fn start_outlined(meta: &'static FnMeta, first: u32) -> SyncCall {
        Self::started(meta, first)
    }

    #[inline(always)]
    fn started(meta: &'static FnMeta, first: u32) -> SyncCall {
        // PERF: `MEMPROF=off` asks neither the kernel nor the runtime.
        if crate::calls::is_off() {
            return SyncCall {
                probe: Probe(std::ptr::null()),
            };
        }
        // SAFETY: a function's head and the runtime's globals.
        let top = unsafe { crate::kernel::enter(&meta.head, &KERNEL_GLOBALS, first) };
        SyncCall {
            probe: Probe(if top.is_null() {
                enter_slowly(meta, first)
            } else {
                top
            }),
        }
    }

    /// The statement cursor of one nested block, at its first statement,
    /// row `first`, unless that is `u32::MAX`.
    #[cfg_attr(memprof_unoptimized, inline(never))]
    #[cfg_attr(not(memprof_unoptimized), inline(always))]
    pub fn cursor(&self, first: u32) -> StackCursor {
        self.cursor_from(first, false)
    }

    /// [`SyncCall::cursor`] out of line, for the same builds and the same
    /// reasons as [`SyncCall::start_outlined`]: a block's cursor was most
    /// of what profiling added to an unoptimized function (pulldown-cmark's
    /// `handle_inline_pass1`: 75 blocks, 2,271 lines of LLVM IR as written,
    /// 11,408 profiled).
    #[inline(never)]
    pub fn cursor_outlined(&self, first: u32) -> StackCursor {
        self.cursor_from(first, true)
    }

    /// The cursor, from the function's code (`outlined` false: inlined
    /// into it) or from [`SyncCall::cursor_outlined`], whose caller is the
    /// function: either way the function's frame anchors the events its
    /// rows may take (see `cursor_slowly`).
    #[inline(always)]
    fn cursor_from(&self, first: u32, outlined: bool) -> StackCursor {
        let top = self.probe.0;
        // A call whose rows take its events gives its blocks no cursor
        // (see `calls::rows_events`).
        // SAFETY: null or this thread's innermost open call's body cursor.
        if top.is_null() || unsafe { (*top).pending.get() } == STOPPED {
            return StackCursor {
                probe: Probe(std::ptr::null()),
            };
        }
        // SAFETY: this thread's innermost open call.
        let cursor = unsafe { crate::kernel::cursor(top, first) };
        if !cursor.is_null() {
            return StackCursor {
                probe: Probe(cursor),
            };
        }
        let anchor = if outlined {
            crate::sites::caller_anchor()
        } else {
            crate::sites::anchor()
        };
        StackCursor {
            probe: Probe(cursor_slowly(top, first, anchor)),
        }
    }
}

impl Drop for SyncCall {
    // PERF: inlined into the drop glue only, in unoptimized builds too, so
    // that an end costs one unoptimized call.
    #[inline(always)]
    fn drop(&mut self) {
        let top = self.probe.0;
        if top.is_null() {
            return;
        }
        // SAFETY: this thread's innermost open call.
        match unsafe { crate::kernel::exit(top) } {
            0 => {}
            1 => exit_slowly(top),
            _ => exit_with_new_edge(top),
        }
    }
}

impl Drop for StackCursor {
    // PERF: inlined into the drop glue only, in unoptimized builds too, so
    // that an end costs one unoptimized call.
    #[inline(always)]
    fn drop(&mut self) {
        let cursor = self.probe.0;
        // SAFETY: this thread's innermost cursor, or null.
        if !cursor.is_null() && unsafe { crate::kernel::cursor_end(cursor) } != 0 {
            cursor_end_slowly(cursor);
        }
    }
}

impl Drop for StackTail<'_> {
    // PERF: inlined into the drop glue only, in unoptimized builds too, so
    // that an end costs one unoptimized call.
    #[inline(always)]
    fn drop(&mut self) {
        step(self.probe.0, self.end);
    }
}

/// Allocation sites, if recorded, read the rows open on a thread through
/// [`open_rows::walk`].
fn sites_read_open_rows() {
    if crate::sites::enabled() {
        crate::sites::set_walker(open_rows::walk);
    }
}

/// [`SyncCall::start`] for a call the kernel does not enter: its first
/// calls, tables, budgets, GPU, process scope, `MEMPROF=off` (null).
#[inline(never)]
fn enter_slowly(meta: &'static FnMeta, first: u32) -> *const CursorHead {
    if !crate::calls::switch_on_entry() {
        return std::ptr::null();
    }
    // Before any statement of this call, which may take the slow step.
    #[cfg(memprof_kernel)]
    set_slow(slow_step);
    sites_read_open_rows();
    let layout = Layout::new::<CallRecord>();
    let (room, place) = stack::push(layout);
    let record = room.cast::<CallRecord>();
    // SAFETY: fresh room for a record; the body's cursor points at the
    // frame beside it.
    unsafe {
        record.write(CallRecord {
            frame: Frame::new(meta),
            top: Cursor::for_call(std::ptr::null()),
            mark: CallMark::none(),
            place,
            holds: false,
        })
    };
    // SAFETY: just written; only this thread reaches it.
    let record = unsafe { &mut *record };
    // The kernel may enter only quiet calls while `mprof run` times them.
    record.frame.enter_recording(crate::timeline::recording());
    record.holds = meta.has_budget() && crate::output::budgeted_call_started();
    record.top = Cursor::for_call(std::ptr::from_ref(&record.frame).cast::<CallHead>());
    crate::output::at_first_call();
    // A recursion is one call on the timeline, as in `Calls`: its outermost.
    if record.frame.is_outermost() {
        record.mark = crate::timeline::call_start(true, meta);
    }
    crate::calls::edges::cursor_began(record.top.head());
    let top = std::ptr::from_ref(&record.top).cast::<CursorHead>();
    if first != NO_CELL {
        step(top, first);
    }
    top
}

/// [`SyncCall`]'s end for a call the kernel entered, made from another row
/// than its function's latest call on this thread: the runtime finds that
/// row's edge, then the kernel ends the call, counting in it.
#[inline(never)]
fn exit_with_new_edge(top: *const CursorHead) {
    // SAFETY: the kernel returned 2 for this call: it entered it, and its
    // caller's cursor has a row open.
    unsafe { crate::calls::edges::find_for_kernel(top) };
    // SAFETY: as for the first try, which did nothing.
    let again = unsafe { crate::kernel::exit(top) };
    // The edge found is the one the kernel compares.
    debug_assert_eq!(again, 0);
}

/// [`SyncCall`]'s end for a call the runtime entered.
#[inline(never)]
fn exit_slowly(top: *const CursorHead) {
    /// Drops the record and gives its room back, also when `finish` panics
    /// (a budget).
    struct Release(*mut CallRecord);
    impl Drop for Release {
        fn drop(&mut self) {
            // SAFETY: the record, finished; nothing refers to it any more.
            unsafe {
                let place = (*self.0).place;
                std::ptr::drop_in_place(self.0);
                stack::pop(self.0.cast(), place, Layout::new::<CallRecord>());
            }
        }
    }
    let offset = std::mem::offset_of!(CallRecord, top);
    let release = Release(
        top.cast::<u8>()
            .wrapping_sub(offset)
            .cast::<CallRecord>()
            .cast_mut(),
    );
    // SAFETY: a call the runtime entered is a whole record, reached from its
    // body's cursor.
    let record = unsafe { &*release.0 };
    // The body's closing brace ends before the call does.
    record.top.close();
    crate::calls::rows_events::end(&record.frame.head);
    let outer = record.top.head().outer.get();
    crate::calls::edges::cursor_ended(record.top.head());
    finish(&record.frame, &record.mark, record.holds, outer);
}

/// [`SyncCall::cursor`] where the kernel made none: a call the runtime
/// entered, a full side stack, or a call whose rows may take its events
/// from now on (see `calls::rows_events`), whose answer this gives, with
/// `anchor`, the function's frame. `top`: the call's body cursor.
#[inline(never)]
fn cursor_slowly(top: *const CursorHead, first: u32, anchor: usize) -> *const CursorHead {
    // SAFETY: a live body cursor leads to its call's frame.
    let frame = unsafe { &*(*top).call };
    if frame.turns.get() == EVENTS_AFTER_TURNS {
        // SAFETY: the body cursor of the thread's innermost open call,
        // which the kernel steps.
        unsafe { crate::calls::rows_events::begin(top, anchor) };
        // SAFETY: as above.
        if unsafe { (*top).pending.get() } == STOPPED {
            return std::ptr::null();
        }
        // SAFETY: as above; the call is answered: the kernel makes the
        // cursor if it can.
        let cursor = unsafe { crate::kernel::cursor(top, first) };
        if !cursor.is_null() {
            return cursor;
        }
    }
    let frame: *const CallHead = frame;
    let layout = Layout::new::<CursorRecord>();
    let (room, place) = stack::push(layout);
    let record = room.cast::<CursorRecord>();
    // SAFETY: fresh room for a record.
    unsafe {
        record.write(CursorRecord {
            cursor: Cursor::for_call(frame),
            place,
        })
    };
    // SAFETY: just written.
    crate::calls::edges::cursor_began(unsafe { (*record).cursor.head() });
    let cursor = record.cast::<CursorHead>();
    if first != NO_CELL {
        step(cursor, first);
    }
    cursor
}

/// [`step`] of a call the runtime entered.
#[inline(never)]
fn step_slowly(cursor: *const CursorHead, cell: u32) {
    // SAFETY: the kernel leaves only calls the runtime entered to this, whose
    // cursors the runtime made whole.
    unsafe { &*cursor.cast::<Cursor<'static>>() }.step_slowly(cell);
}

/// [`StackCursor`]'s end for a cursor the runtime made.
#[inline(never)]
fn cursor_end_slowly(cursor: *const CursorHead) {
    let record = cursor.cast::<CursorRecord>().cast_mut();
    // SAFETY: a cursor the runtime made is a whole record; dropping the
    // cursor closes its open row.
    unsafe {
        crate::calls::edges::cursor_ended((*record).cursor.head());
        let place = (*record).place;
        std::ptr::drop_in_place(record);
        stack::pop(record.cast(), place, Layout::new::<CursorRecord>());
    }
}

/// One call of a profiled `async fn`, declared first in its body. `N`, the
/// number of rows the function records, is kept for the generated code's
/// shape: the rows live in the thread's aggregate, not in the frame.
#[derive(Debug)]
pub struct CallFrame<const N: usize> {
    frame: Frame,
    _rows: PhantomData<[(); N]>,
}

impl<const N: usize> CallFrame<N> {
    /// An empty frame for `meta`.
    #[inline]
    pub fn new(meta: &'static FnMeta) -> Self {
        CallFrame {
            frame: Frame::new(meta),
            _rows: PhantomData,
        }
    }

    /// Starts an `async fn` call: printed under the same rules as a
    /// synchronous call.
    #[inline]
    pub fn enter_async(&self) -> CallGuard<'_> {
        self.frame.enter_async();
        if self.frame.is_recording() {
            // The row polling it now is its caller (see `calls::edges`).
            self.frame
                .set_async_caller(crate::calls::edges::caller_here());
            sites_read_open_rows();
        }
        CallGuard::new(&self.frame, false)
    }

    /// The statement cursor of one block: see [`Cursor`].
    #[inline]
    pub fn cursor(&self) -> Cursor<'_> {
        // `enter` ran before any block of the body: `gpu` and the rows are
        // set, or the call records nothing.
        Cursor::new(self.frame.is_recording().then_some(&self.frame))
    }
}

/// Closes a call when dropped: records the `fn` row, checks the budgets,
/// writes the `FUNC` line, and prints the call's table if it has one.
#[derive(Debug)]
#[must_use]
pub struct CallGuard<'a> {
    frame: &'a Frame,
    /// The call's start, for its `FUNC` line under `mprof run`.
    mark: CallMark,
}

impl<'a> CallGuard<'a> {
    #[inline(always)]
    fn new(frame: &'a Frame, nests: bool) -> Self {
        let mark = if frame.is_runtime_entered() {
            crate::output::at_first_call();
            if frame.is_outermost() {
                crate::timeline::call_start(nests, frame.meta)
            } else {
                CallMark::none()
            }
        } else {
            CallMark::none()
        };
        CallGuard { frame, mark }
    }
}

impl Drop for CallGuard<'_> {
    #[inline(always)]
    fn drop(&mut self) {
        if self.frame.is_recording() {
            // An `async fn` call: it named its caller's row at its first
            // poll (see `calls::edges`).
            finish(self.frame, &self.mark, false, std::ptr::null());
        }
    }
}

/// Ends a recording call: see [`CallGuard`]. `holds`: tables printed during
/// it were held back (see `output::budgeted_call_started`); `outer`: the
/// caller's cursor, for the call's edge (null: none).
#[inline(never)]
fn finish(frame: &Frame, mark: &CallMark, holds: bool, outer: *const CursorHead) {
    let meta = frame.meta;
    let drawn = crate::timeline::call_end(mark, meta);
    let exit = frame.exit();
    crate::calls::edges::count_runtime_call(frame, outer, exit.stats.allocated);
    // A call long enough to show on `mprof run`'s plot is not one to stop
    // timing.
    frame.count_streak(drawn || exit.stats.allocations != 0 || exit.stats.increment != 0);
    let over_budget = if meta.has_budget() {
        crate::budget::Budget::check(meta, &exit.stats)
    } else {
        None
    };
    // The call's own table, for a budget message, before it is merged.
    let message = over_budget
        .filter(|_| !std::thread::panicking())
        .map(|budget| budget.message(meta, frame.cells(), &exit.facts));
    let held = match holds {
        true => crate::output::budgeted_call_ended(message.is_some()),
        false => String::new(),
    };
    if let Some(message) = message {
        // A budget is an assertion: the call fails after it returns, as
        // pytest-memray's `limit_memory` fails a test. NOTE: the panic's
        // location is this line (`#[track_caller]` does not reach through
        // `Drop`), so the message names the function's own. Its table is in
        // the message, and printed only there; the tables held back during
        // the call follow it.
        let message = crate::output::with_held(message, &held);
        // NOTE: made outside every figure, so freed so.
        crate::alloc::untracked(|| drop(held));
        drop(exit);
        panic!("{message}");
    }
    if !held.is_empty() {
        crate::sink::emit(&held);
    }
    crate::alloc::untracked(|| drop(held));
    if let Some((table, nth)) = exit.table {
        crate::output::call_finished(meta, table.cells(), nth, &exit.facts);
    }
    crate::output::call_ended_after_report();
}
