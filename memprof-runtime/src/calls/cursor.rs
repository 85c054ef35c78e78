//! Statement cursors: the per-statement recording that generated code calls.
//!
//! [`Cursor::enter`] before each statement closes the previous statement's
//! region and opens the next, so a statement costs one call and no local of
//! its own. [`Cursor::leave`] after the last statement opens the region of
//! the block's closing brace, where the block's locals are freed; the
//! cursor, declared first in the block and so dropped last, closes it.
//!
//! Left early (`return`, `?`, `break`, a panic), the block drops its cursor
//! as it unwinds, after its locals: the statement that was running is
//! charged with what leaving freed.

use super::frame::Frame;
use crate::alloc;
use crate::gpu::GpuMark;
pub(crate) use crate::kernel::layout::NO_CELL;
use crate::kernel::layout::{CALL_SLOW, CallHead, Counters, CursorHead};
use crate::owned::{get, set};
use crate::region::{
    Region, RegionStats, Scope, allocated_in, allocs_in, close_device_in, close_in, open_device_in,
    open_in,
};
use std::cell::Cell;
use std::marker::PhantomData;
use std::mem::MaybeUninit;

/// Walks one block's statements; see the module documentation.
///
/// Starts with the `CursorHead` that the kernel's step works on.
#[repr(C)]
pub struct Cursor<'a> {
    /// `call` is the frame, or null when the call records nothing
    /// (`MEMPROF=off`).
    head: CursorHead,
    /// PERF: written only when recording, so that under `MEMPROF=off` a
    /// cursor costs four stores.
    rest: MaybeUninit<CursorRest>,
    _frame: PhantomData<&'a Frame>,
}

/// What the slow step keeps beside the head.
#[derive(Debug)]
struct CursorRest {
    /// Where the current region's GPU figures started, if watched.
    gpu: Cell<Option<GpuMark>>,
    /// Process scope: the open watch.
    watch: Cell<(u32, i64)>,
    /// Where the current region's pool figures started, if read.
    pool: Cell<Option<crate::pool::PoolUsage>>,
    /// An `async fn` call's cursor with a row open: the call's innermost
    /// cursor before this one (see `calls::polling`).
    enclosing: Cell<*const CursorHead>,
    linked: Cell<bool>,
}

impl CursorRest {
    /// No region open. PERF: a constant, as `FrameState::UNSET` is.
    #[allow(clippy::declare_interior_mutable_const)]
    const UNSET: CursorRest = CursorRest {
        gpu: Cell::new(None),
        watch: Cell::new((u32::MAX, 0)),
        pool: Cell::new(None),
        enclosing: Cell::new(std::ptr::null()),
        linked: Cell::new(false),
    };
}

impl std::fmt::Debug for Cursor<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cursor")
            .field("recording", &!self.head.call.is_null())
            .finish_non_exhaustive()
    }
}

// SAFETY: a cursor is reached only through the generated code of the block
// that declared it, which runs on one thread at a time; holding `&Cursor`
// across `.await` only needs it to be `Send`.
unsafe impl Sync for Cursor<'_> {}
// SAFETY: as for `Sync`: the frame it points at moves with it (an `async
// fn`'s future), and only the thread polling it touches either. A cursor
// that moved keeps the counters of the thread that polled it last until its
// next poll renews them (`rebind`), before any step; nothing reads them in
// between.
unsafe impl Send for Cursor<'_> {}

impl<'a> Cursor<'a> {
    #[inline]
    pub(crate) fn new(frame: Option<&'a Frame>) -> Self {
        Self::for_call(frame.map_or(std::ptr::null(), |f| {
            std::ptr::from_ref(f).cast::<CallHead>()
        }))
    }

    /// A cursor of the call whose frame starts with `call` (null: none).
    /// Its slow step reads the rest of the frame: only for calls the
    /// runtime entered, which are the only ones that take it.
    #[inline]
    pub(crate) fn for_call(call: *const CallHead) -> Self {
        // The kernel steps the cursors of a call without `CALL_SLOW` (see
        // `CursorHead::counters`).
        // SAFETY: `call` is null or a frame's head, which outlives the cursor.
        let counters = match unsafe { call.as_ref() } {
            Some(head) if get(&head.flags) & CALL_SLOW == 0 => get(&head.counters),
            _ => std::ptr::null(),
        };
        Cursor {
            head: CursorHead {
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
                outer: Cell::new(std::ptr::null()),
            },
            rest: if call.is_null() {
                MaybeUninit::uninit()
            } else {
                MaybeUninit::new(CursorRest::UNSET)
            },
            _frame: PhantomData,
        }
    }

    /// The head the kernel's step works on.
    pub(crate) fn head(&self) -> &CursorHead {
        &self.head
    }

    /// The call, if it records.
    #[inline(always)]
    fn frame(&self) -> Option<&'a Frame> {
        // SAFETY: `call` is null or the `Frame` that made this cursor (its
        // head is its first field), which outlives it; only steps of calls
        // the runtime entered, whose frames are whole, come here.
        unsafe { self.head.call.cast::<Frame>().as_ref() }
    }

    /// Ends the current statement's region, if any, and starts cell `cell`'s.
    ///
    /// PERF: always inlined, in unoptimized builds too: a statement costs
    /// one call, into the kernel, which under `MEMPROF=off` returns at once.
    #[inline(always)]
    pub fn enter(&self, cell: u32) {
        // PERF: `MEMPROF=off` (no call) makes no call: an `async fn`, which
        // has no copy as written, steps its statements under it.
        if self.head.call.is_null() {
            return;
        }
        // SAFETY: this thread's live cursor, whose call is open.
        if unsafe { crate::kernel::step(&self.head, cell) } != 0 {
            self.step_slowly(cell);
        }
    }

    /// Ends the current statement's region; then starts the closing brace's
    /// region, cell `end`, unless it is `u32::MAX` (no such row).
    #[inline(always)]
    pub fn leave(&self, end: u32) {
        self.enter(end);
    }

    /// A guard that moves the cursor on to `end`, the closing brace's row,
    /// when it drops: made just before a block's tail or last statement
    /// (after that statement's own `let`s), so that no step of ours follows
    /// a statement that may diverge.
    #[inline]
    pub fn tail(&self, end: u32) -> TailGuard<'_, 'a> {
        TailGuard { cursor: self, end }
    }

    /// Closes the current region and opens cell `next`'s, if it is one: the
    /// step of the calls that the kernel leaves to the runtime (NVML
    /// sampling, process scope, counted device memory, `async fn` calls).
    #[cold]
    #[inline(never)]
    pub(crate) fn step_slowly(&self, next: u32) {
        if let Some(frame) = self.frame() {
            self.step(frame, next);
        }
    }

    fn step(&self, frame: &Frame, next: u32) {
        let is_async = get(&frame.state().is_async);
        if is_async {
            self.follow(frame, next);
        }
        if get(&frame.state().slow) {
            return self.step_sampled(frame, next);
        }
        let Some(t) = frame.counters() else {
            return;
        };
        if get(&frame.state().gpu) {
            return self.step_counted(frame, t, next);
        }
        let cell = get(&self.head.cell);
        if cell != NO_CELL {
            let stats = self.close_in(t);
            frame
                .row(cell)
                .closed(&stats, get(&frame.head.base) + stats.end);
        }
        self.open_next(frame, t, next);
        if is_async {
            self.to_kernel(frame, t, next);
        }
    }

    /// An `async fn` call's cursor: hands its steps to the kernel while it
    /// has a row open, with the polling thread's counters (each poll hands
    /// them the next polling thread's, see [`rebind`]):
    /// its step from row to row is then a synchronous call's. Opening its
    /// first row and closing its last stay here, which keep the call's
    /// chain of cursors (see [`Cursor::follow`]).
    ///
    /// PERF: every statement of an `async fn` took this slow step: a
    /// statement of a loop body 15 ns against 6 ns in a synchronous fn
    /// (`cargo bench --bench call_cost`, release), 10 ns since. What is
    /// left is each turn's body cursor joining and leaving the chain here.
    fn to_kernel(&self, frame: &Frame, t: &alloc::ThreadCounters, next: u32) {
        // A call whose later polls do not find its frame stays here.
        if next == NO_CELL || !frame.polls_find_it() {
            set(&self.head.counters, std::ptr::null());
        } else {
            set(&self.head.counters, std::ptr::from_ref::<Counters>(t));
            // The kernel's test of a quiet region (see `kernel::step`).
            set(&self.head.events, t.events());
        }
    }

    /// Keeps an `async fn` call's innermost open cursor, for allocation
    /// sites (see `calls::polling`) and call edges (the thread's innermost
    /// while the call is polled, see `calls::edges`): a cursor opening a row
    /// becomes it, and one closing its last gives the place back to the one
    /// it encloses.
    fn follow(&self, frame: &Frame, next: u32) {
        let rest = self.rest();
        let innermost = &frame.state().innermost_cursor;
        if next != NO_CELL && !get(&rest.linked) {
            set(&rest.enclosing, get(innermost));
            set(innermost, &raw const self.head);
            set(&rest.linked, true);
            super::edges::async_cursor_moved(&raw const self.head);
        } else if next == NO_CELL && get(&rest.linked) {
            if std::ptr::eq(get(innermost), &raw const self.head) {
                set(innermost, get(&rest.enclosing));
                super::edges::async_cursor_moved(get(innermost));
            }
            set(&rest.linked, false);
        }
    }

    /// [`Cursor::step`] of a thread-scope call that counts device
    /// allocations, which the kernel did not take (an `async fn`'s): the
    /// same steps, and the thread's device bytes beside, as the kernel's
    /// loud step does them.
    #[inline(never)]
    fn step_counted(&self, frame: &Frame, t: &alloc::ThreadCounters, next: u32) {
        let cell = get(&self.head.cell);
        if cell != NO_CELL {
            let stats = self.close_in(t);
            let device = close_device_in(
                t,
                get(&self.head.device_start),
                get(&self.head.device_saved),
            );
            frame
                .row(cell)
                .closed_with(&stats, get(&frame.head.base) + stats.end, Some(device));
        }
        self.open_next(frame, t, next);
        if next != NO_CELL {
            let (start, saved) = open_device_in(t);
            set(&self.head.device_start, start);
            set(&self.head.device_saved, saved);
        }
    }

    /// Closes the open thread-scope region on `t`.
    #[inline(always)]
    fn close_in(&self, t: &alloc::ThreadCounters) -> RegionStats {
        close_in(
            t,
            get(&self.head.start),
            get(&self.head.saved),
            get(&self.head.start_allocs),
            get(&self.head.start_allocated),
        )
    }

    /// Makes cell `next` the current one and, unless it is `NO_CELL`, opens
    /// its thread-scope region on `t`.
    #[inline(always)]
    fn open_next(&self, frame: &Frame, t: &alloc::ThreadCounters, next: u32) {
        set(&self.head.cell, next);
        if next != NO_CELL {
            frame.row(next).opened();
            let (start, saved) = open_in(t);
            set(&self.head.start, start);
            set(&self.head.saved, saved);
            set(&self.head.start_allocs, allocs_in(t));
            set(&self.head.start_allocated, allocated_in(t));
        }
    }

    /// [`Cursor::step`] with NVML sampling, a framework's pool or a
    /// process-wide region: one GPU sample, and one pool reading, end the
    /// current region and start the next.
    #[cold]
    #[inline(never)]
    fn step_sampled(&self, frame: &Frame, next: u32) {
        let (gpu, next_gpu) = if !get(&frame.state().gpu) {
            (None, None)
        } else if next == NO_CELL {
            (get(&self.rest().gpu).and_then(crate::gpu::end), None)
        } else {
            crate::gpu::step(get(&self.rest().gpu), frame.meta.scope == Scope::Process)
        };
        let pool = match get(&frame.state().pool) {
            true => crate::pool::read(),
            false => None,
        };
        let cell = get(&self.head.cell);
        if cell != NO_CELL {
            let mut region = self.region();
            let stats = region.close();
            if let (Some(start), Some(end)) = (get(&self.rest().pool), pool) {
                frame
                    .row(cell)
                    .closed_pool(crate::pool::figures(start, end));
            }
            frame.row(cell).closed_with(
                &stats,
                get(&frame.head.base) + stats.end,
                gpu.map(|g| (g.increment, g.usage, g.peak)),
            );
        }
        set(&self.head.cell, next);
        set(&self.rest().gpu, next_gpu);
        set(&self.rest().pool, pool.filter(|_| next != NO_CELL));
        if next != NO_CELL {
            frame.row(next).opened();
            let region = Region::open(frame.meta.scope);
            set(&self.head.start, region.start);
            set(&self.head.saved, region.saved);
            set(&self.head.start_allocs, region.start_allocs);
            set(&self.head.start_allocated, region.start_allocated);
            if let Some(watch) = region.watch {
                set(&self.rest().watch, watch.into_parts());
            }
        }
    }

    /// The open region, rebuilt from the cursor's fields.
    fn region(&self) -> Region {
        let (index, start) = get(&self.rest().watch);
        Region {
            start: get(&self.head.start),
            saved: get(&self.head.saved),
            start_allocs: get(&self.head.start_allocs),
            start_allocated: get(&self.head.start_allocated),
            watch: (index != u32::MAX).then(|| alloc::Watch::from_parts(index, start)),
        }
    }
}

impl Cursor<'_> {
    /// The slow step's state. Only while recording.
    #[inline(always)]
    fn rest(&self) -> &CursorRest {
        // SAFETY: written by `new` whenever the call records, and every
        // caller comes after a test of that.
        unsafe { &*(&self.rest as *const MaybeUninit<CursorRest>).cast::<CursorRest>() }
    }
}

impl Cursor<'_> {
    /// Closes the open region, if any: what dropping the cursor does.
    #[inline(always)]
    pub(crate) fn close(&self) {
        if get(&self.head.cell) != NO_CELL {
            self.enter(NO_CELL);
        }
        if get(&self.head.held) != NO_CELL {
            // SAFETY: a cursor with a held row has a call, open while it
            // is (see `calls::rows_events`).
            crate::kernel::call::release(&self.head, unsafe { &*self.head.call });
        }
    }
}

/// Hands the kernel's steps of the cursors of an `async fn` call with a
/// row open, from `innermost` out (see [`Cursor::to_kernel`]), the
/// counters of the thread now polling the call, and makes their next step
/// a loud one: since their last, the call may have moved threads, and its
/// polls' ends and starts moved the thread's watermarks, which the quiet
/// step takes as they were.
///
/// # Safety
/// `innermost` is null or the innermost linked cursor of an `async fn`
/// call, open (see `Frame::polled_here`).
pub(super) unsafe fn rebind(innermost: *const CursorHead) {
    let t = alloc::thread_counters().cast::<Counters>();
    // SAFETY: null, or this thread's counters, which live as long as it
    // does.
    let counters = unsafe { t.as_ref() };
    let mut cursor = innermost;
    // NOTE: the whole chain, however deep: a cursor left out would step
    // with another thread's counters.
    while !cursor.is_null() {
        // SAFETY: a linked cursor of the call, still open (as the caller
        // promises for the innermost, and `follow` keeps for the rest).
        let head = unsafe { &*cursor };
        if !get(&head.counters).is_null() {
            match counters {
                Some(counters) => {
                    set(&head.counters, t);
                    // The thread's count cannot reach its complement
                    // before the next step (over 2^63 events away).
                    set(&head.events, !counters.events());
                }
                None => set(&head.counters, std::ptr::null()),
            }
        }
        // SAFETY: as above.
        cursor = unsafe { enclosing(cursor) };
    }
}

/// The cursor that `cursor` encloses in its `async fn` call (see
/// [`Cursor::follow`]).
///
/// # Safety
/// `cursor` is the head of a linked cursor of an `async fn` call, open.
pub(super) unsafe fn enclosing(cursor: *const CursorHead) -> *const CursorHead {
    // SAFETY: the caller's promise: a whole `Cursor` of a recording call
    // (its head is its first field), whose rest is written.
    unsafe { get(&(*cursor.cast::<Cursor<'static>>()).rest().enclosing) }
}

impl Drop for Cursor<'_> {
    #[inline(always)]
    fn drop(&mut self) {
        self.close();
    }
}

/// Moves a [`Cursor`] from a block's tail expression to its closing brace
/// when dropped: after the tail's value is made, before the locals go.
#[derive(Debug)]
#[must_use]
pub struct TailGuard<'c, 'a> {
    cursor: &'c Cursor<'a>,
    end: u32,
}

impl Drop for TailGuard<'_, '_> {
    #[inline]
    fn drop(&mut self) {
        self.cursor.leave(self.end);
    }
}
