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
use crate::owned::{get, set};
use crate::region::{Region, Scope, close_in, open_in};
use std::cell::Cell;
use std::mem::MaybeUninit;

/// No region open, or no scope-end row.
pub(crate) const NO_CELL: u32 = u32::MAX;

/// Walks one block's statements; see the module documentation.
pub struct Cursor<'a> {
    /// `None` when the call records nothing (`MEMPROF=off`).
    frame: Option<&'a Frame>,
    /// PERF: written only when `frame` is `Some`, so that under
    /// `MEMPROF=off` a cursor costs one store.
    state: MaybeUninit<CursorState>,
}

/// Where a [`Cursor`] is: the open region, if any.
#[derive(Debug)]
struct CursorState {
    cell: Cell<u32>,
    start: Cell<i64>,
    saved: Cell<i64>,
    /// Where the current region's GPU figures started, if watched.
    gpu: Cell<Option<GpuMark>>,
    /// Process scope: the open watch.
    watch: Cell<(u32, i64)>,
}

impl CursorState {
    /// No region open. PERF: a constant, as `FrameState::UNSET` is.
    #[allow(clippy::declare_interior_mutable_const)]
    const UNSET: CursorState = CursorState {
        cell: Cell::new(NO_CELL),
        start: Cell::new(0),
        saved: Cell::new(0),
        gpu: Cell::new(None),
        watch: Cell::new((u32::MAX, 0)),
    };
}

impl std::fmt::Debug for Cursor<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cursor")
            .field("recording", &self.frame.is_some())
            .finish_non_exhaustive()
    }
}

// SAFETY: a cursor is reached only through the generated code of the block
// that declared it, which runs on one thread at a time; holding `&Cursor`
// across `.await` only needs it to be `Send`.
unsafe impl Sync for Cursor<'_> {}

impl<'a> Cursor<'a> {
    #[inline]
    pub(crate) fn new(frame: Option<&'a Frame>) -> Self {
        Cursor {
            frame,
            state: match frame {
                Some(_) => MaybeUninit::new(CursorState::UNSET),
                None => MaybeUninit::uninit(),
            },
        }
    }

    /// Ends the current statement's region, if any, and starts cell `cell`'s.
    #[inline]
    pub fn enter(&self, cell: u32) {
        // PERF: under `MEMPROF=off` a statement costs this test.
        if let Some(frame) = self.frame {
            self.step(frame, cell);
        }
    }

    /// Ends the current statement's region; then starts the closing brace's
    /// region, cell `end`, unless it is `u32::MAX` (no such row).
    #[inline]
    pub fn leave(&self, end: u32) {
        if let Some(frame) = self.frame {
            self.step(frame, end);
        }
    }

    /// Starts a block's tail expression (cell `cell`); when the returned
    /// guard drops, right after the tail, the cursor moves on to `end`.
    #[inline]
    pub fn tail(&self, cell: u32, end: u32) -> TailGuard<'_, 'a> {
        self.enter(cell);
        TailGuard { cursor: self, end }
    }

    /// Closes the current region and opens cell `next`'s, if it is one.
    ///
    /// PERF: the thread-scope step, the common case, is this one function
    /// with everything in it inlined and no closure or region object, so
    /// that it stays a few dozen instructions in unoptimized (`cargo test`)
    /// builds too.
    #[inline(never)]
    fn step(&self, frame: &Frame, next: u32) {
        if get(&frame.state().slow) {
            return self.step_slowly(frame, next);
        }
        let Some(t) = frame.counters() else {
            return;
        };
        if get(&frame.state().gpu) {
            return self.step_counted(frame, t, next);
        }
        let cell = get(&self.state().cell);
        if cell != NO_CELL {
            let stats = close_in(t, get(&self.state().start), get(&self.state().saved));
            frame.row(cell).closed(
                stats.increment,
                stats.peak,
                get(&frame.state().base) + stats.end,
            );
        }
        self.open_next(frame, t, next);
    }

    /// [`Cursor::step`] of a thread-scope call that counts device
    /// allocations: the same steps, and this thread's GPU counters beside.
    #[inline(never)]
    fn step_counted(&self, frame: &Frame, t: &alloc::ThreadCounters, next: u32) {
        let (gpu, next_gpu) =
            crate::gpu::step_counted_thread(get(&self.state().gpu), next != NO_CELL);
        let cell = get(&self.state().cell);
        if cell != NO_CELL {
            let stats = close_in(t, get(&self.state().start), get(&self.state().saved));
            frame.row(cell).closed_with(
                stats.increment,
                stats.peak,
                get(&frame.state().base) + stats.end,
                gpu.map(|g| (g.increment, g.usage, g.peak)),
            );
        }
        set(&self.state().gpu, next_gpu);
        self.open_next(frame, t, next);
    }

    /// Makes cell `next` the current one and, unless it is `NO_CELL`, opens
    /// its thread-scope region on `t`.
    #[inline(always)]
    fn open_next(&self, frame: &Frame, t: &alloc::ThreadCounters, next: u32) {
        set(&self.state().cell, next);
        if next != NO_CELL {
            frame.row(next).opened();
            let (start, saved) = open_in(t);
            set(&self.state().start, start);
            set(&self.state().saved, saved);
        }
    }

    /// [`Cursor::step`] with NVML sampling or a process-wide region: one GPU
    /// sample ends the current region and starts the next.
    #[cold]
    #[inline(never)]
    fn step_slowly(&self, frame: &Frame, next: u32) {
        let (gpu, next_gpu) = if !get(&frame.state().gpu) {
            (None, None)
        } else if next == NO_CELL {
            (get(&self.state().gpu).and_then(crate::gpu::end), None)
        } else {
            crate::gpu::step(get(&self.state().gpu), frame.meta.scope == Scope::Process)
        };
        let cell = get(&self.state().cell);
        if cell != NO_CELL {
            let mut region = self.region();
            let stats = region.close();
            frame.row(cell).closed_with(
                stats.increment,
                stats.peak,
                get(&frame.state().base) + stats.end,
                gpu.map(|g| (g.increment, g.usage, g.peak)),
            );
        }
        set(&self.state().cell, next);
        set(&self.state().gpu, next_gpu);
        if next != NO_CELL {
            frame.row(next).opened();
            let region = Region::open(frame.meta.scope);
            set(&self.state().start, region.start);
            set(&self.state().saved, region.saved);
            if let Some(watch) = region.watch {
                set(&self.state().watch, watch.into_parts());
            }
        }
    }

    /// The open region, rebuilt from the cursor's fields.
    fn region(&self) -> Region {
        let (index, start) = get(&self.state().watch);
        Region {
            start: get(&self.state().start),
            saved: get(&self.state().saved),
            watch: (index != u32::MAX).then(|| alloc::Watch::from_parts(index, start)),
        }
    }
}

impl Cursor<'_> {
    /// Where the cursor is. Only while `frame` is `Some`.
    #[inline(always)]
    fn state(&self) -> &CursorState {
        // SAFETY: written by `new` whenever `frame` is `Some`, and every
        // caller comes after a `frame` test.
        unsafe { &*(&self.state as *const MaybeUninit<CursorState>).cast::<CursorState>() }
    }
}

impl Drop for Cursor<'_> {
    #[inline]
    fn drop(&mut self) {
        if let Some(frame) = self.frame
            && get(&self.state().cell) != NO_CELL
        {
            self.step(frame, NO_CELL);
        }
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
