//! What generated code calls: regions, call frames and per-block statement cursors.
//!
//! A *region* is a stretch of execution whose heap figures we want: a
//! statement, a whole call, a `measure` or a `memit!`. Regions nest. Each one
//! saves the enclosing region's watermark when it opens and folds its own back
//! in when it closes, so every region sees the highest point reached while it
//! was open, however deeply its inner regions reset the thread's `peak`.
//!
//! Figures are read in *context* terms: a thread's real counters shifted by
//! `adjust_*`. Outside async code the shift is zero. While an [`Instrumented`]
//! future is polled the shift makes the counters read as that task's own, so a
//! task that moves between threads keeps one consistent count across `.await`.

use crate::alloc::{self, THREAD, ThreadCounters};
use crate::report::Measurement;
use std::cell::Cell;
use std::future::Future;
use std::mem::ManuallyDrop;
use std::pin::Pin;
use std::sync::atomic::{
    AtomicBool, AtomicI64, AtomicU8, AtomicU32, AtomicU64, AtomicUsize, Ordering::Relaxed,
};
use std::task::{Context, Poll};

/// Whose allocations a region counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// The thread, or async task, running the region.
    Thread,
    /// Every thread of the process.
    Process,
}

/// Figures for one closed region.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct RegionStats {
    /// Net bytes allocated while open.
    pub(crate) increment: i64,
    /// Highest rise above the start.
    pub(crate) peak: u64,
    /// The count when the region closed (context terms for thread scope, the
    /// process total for process scope).
    pub(crate) end: i64,
}

fn with_thread<R: Default>(f: impl FnOnce(&ThreadCounters) -> R) -> R {
    THREAD.try_with(f).unwrap_or_default()
}

/// Allocation and deallocation counts of the calling context.
fn context_counts() -> (u64, u64) {
    with_thread(|t| {
        (
            t.allocs.get().wrapping_add(t.adjust_allocs.get()),
            t.deallocs.get().wrapping_add(t.adjust_deallocs.get()),
        )
    })
}

/// An open region. Closing it is mandatory and done by its owner's `Drop`.
#[derive(Debug, Default)]
pub(crate) struct Region {
    /// The count when the region opened.
    start: i64,
    /// Thread scope: the enclosing region's watermark when this one opened.
    saved: i64,
    /// Process scope: the process-wide watermark.
    watch: Option<alloc::Watch>,
}

impl Region {
    #[inline]
    pub(crate) fn open(scope: Scope) -> Region {
        match scope {
            Scope::Thread => with_thread(|t| {
                let adjust = t.adjust_net.get();
                let peak = t.peak.get();
                let net = t.net();
                let saved = (peak + adjust).max(t.carry.get());
                t.hi.set(t.hi.get().max(peak));
                t.peak.set(net);
                t.carry.set(i64::MIN);
                Region {
                    start: net + adjust,
                    saved,
                    watch: None,
                }
            }),
            Scope::Process => Region::open_process(),
        }
    }

    #[cold]
    fn open_process() -> Region {
        let watch = alloc::watch_begin();
        Region {
            start: alloc::process_net(),
            saved: 0,
            watch: Some(watch),
        }
    }

    /// Closes the region. Each region is closed exactly once, by its owner:
    /// a second close would fold a stale watermark into the enclosing one.
    #[inline]
    pub(crate) fn close(&mut self) -> RegionStats {
        let (end, rise) = match self.watch.take() {
            None => with_thread(|t| {
                let adjust = t.adjust_net.get();
                let watermark = (t.peak.get() + adjust).max(t.carry.get());
                t.carry.set(self.saved.max(watermark));
                (t.net() + adjust, watermark - self.start)
            }),
            Some(watch) => (alloc::process_net(), alloc::watch_end(watch)),
        };
        let increment = end - self.start;
        RegionStats {
            increment,
            peak: rise.max(increment).max(0) as u64,
            end,
        }
    }
}

// ---- the run-time switch ------------------------------------------------------

const SWITCH_UNREAD: u8 = 0;
const SWITCH_ON: u8 = 1;
const SWITCH_OFF: u8 = 2;

/// `MEMPROF=on|off`, read at the first profiled call.
static SWITCH: AtomicU8 = AtomicU8::new(SWITCH_UNREAD);

/// Whether profiled code records anything. Statements only run inside a call,
/// which has read the switch, so this is one relaxed load.
#[inline]
fn recording() -> bool {
    SWITCH.load(Relaxed) != SWITCH_OFF
}

/// Reads the switch on a call's entry.
#[inline]
fn switch_on_entry() -> bool {
    match SWITCH.load(Relaxed) {
        SWITCH_ON => true,
        SWITCH_OFF => false,
        _ => read_switch(),
    }
}

#[cold]
fn read_switch() -> bool {
    let on = crate::env::config().enabled;
    SWITCH.store(if on { SWITCH_ON } else { SWITCH_OFF }, Relaxed);
    on
}

// ---- per-line cells --------------------------------------------------------

/// Accumulated figures of one table row.
///
/// Atomics so that frames are `Sync` (a `Send` future may hold references to
/// them); a frame is only written by the call that owns it, so relaxed loads
/// and stores suffice there, while the per-function aggregate takes atomic
/// read-modify-writes from concurrent calls.
#[derive(Debug)]
pub struct LineCell {
    pub(crate) occurrences: AtomicU64,
    pub(crate) increment: AtomicI64,
    pub(crate) peak: AtomicU64,
    pub(crate) mem_usage: AtomicI64,
    /// Sum of GPU bytes after minus before, over sampled executions.
    pub(crate) gpu_increment: AtomicI64,
    /// GPU bytes after the line, highest over sampled executions;
    /// `i64::MIN` when never sampled.
    pub(crate) gpu_usage: AtomicI64,
}

impl LineCell {
    /// An empty row.
    pub const fn new() -> Self {
        LineCell {
            occurrences: AtomicU64::new(0),
            increment: AtomicI64::new(0),
            peak: AtomicU64::new(0),
            mem_usage: AtomicI64::new(i64::MIN),
            gpu_increment: AtomicI64::new(0),
            gpu_usage: AtomicI64::new(i64::MIN),
        }
    }

    /// Adds one execution's GPU figures; only the owning call writes.
    #[inline]
    fn record_gpu(&self, increment: i64, usage: i64) {
        self.gpu_increment
            .store(self.gpu_increment.load(Relaxed) + increment, Relaxed);
        if usage > self.gpu_usage.load(Relaxed) {
            self.gpu_usage.store(usage, Relaxed);
        }
    }

    /// GPU increment and usage, if any execution was sampled.
    pub(crate) fn load_gpu(&self) -> Option<(i64, i64)> {
        let usage = self.gpu_usage.load(Relaxed);
        (usage != i64::MIN).then(|| (self.gpu_increment.load(Relaxed), usage))
    }

    /// Adds one execution; only the owning call writes, hence load + store.
    #[inline]
    fn record(&self, increment: i64, peak: u64, mem_usage: i64) {
        self.occurrences
            .store(self.occurrences.load(Relaxed) + 1, Relaxed);
        self.increment
            .store(self.increment.load(Relaxed) + increment, Relaxed);
        if peak > self.peak.load(Relaxed) {
            self.peak.store(peak, Relaxed);
        }
        if mem_usage > self.mem_usage.load(Relaxed) {
            self.mem_usage.store(mem_usage, Relaxed);
        }
    }

    /// Adds `other` into `self` when only this thread writes `self`.
    fn absorb_owned(&self, other: &LineCell) {
        let (n, inc, peak, mem) = other.load();
        if n == 0 {
            return;
        }
        self.occurrences
            .store(self.occurrences.load(Relaxed) + n, Relaxed);
        self.increment
            .store(self.increment.load(Relaxed) + inc, Relaxed);
        self.peak.store(self.peak.load(Relaxed).max(peak), Relaxed);
        self.mem_usage
            .store(self.mem_usage.load(Relaxed).max(mem), Relaxed);
        if let Some((increment, usage)) = other.load_gpu() {
            self.record_gpu(increment, usage);
        }
    }

    /// Adds `other` into `self` when other threads may be adding too.
    pub(crate) fn absorb_shared(&self, other: &LineCell) {
        let (n, inc, peak, mem) = other.load();
        if n == 0 {
            return;
        }
        self.occurrences.fetch_add(n, Relaxed);
        self.increment.fetch_add(inc, Relaxed);
        self.peak.fetch_max(peak, Relaxed);
        self.mem_usage.fetch_max(mem, Relaxed);
        if let Some((increment, usage)) = other.load_gpu() {
            self.gpu_increment.fetch_add(increment, Relaxed);
            self.gpu_usage.fetch_max(usage, Relaxed);
        }
    }

    pub(crate) fn load(&self) -> (u64, i64, u64, i64) {
        (
            self.occurrences.load(Relaxed),
            self.increment.load(Relaxed),
            self.peak.load(Relaxed),
            self.mem_usage.load(Relaxed),
        )
    }

    pub(crate) fn clear(&self) {
        self.occurrences.store(0, Relaxed);
        self.increment.store(0, Relaxed);
        self.peak.store(0, Relaxed);
        self.mem_usage.store(i64::MIN, Relaxed);
        self.gpu_increment.store(0, Relaxed);
        self.gpu_usage.store(i64::MIN, Relaxed);
    }
}

impl Default for LineCell {
    fn default() -> Self {
        Self::new()
    }
}

// ---- functions and calls ---------------------------------------------------

/// Static description of one `#[profile]` function, emitted by the macro.
#[derive(Debug)]
pub struct FnMeta {
    path: fn() -> &'static str,
    pub(crate) file: &'static str,
    /// Source line of the first table row (the attribute).
    pub(crate) first_line: u32,
    /// The table's rows: source text from the attribute to the closing brace.
    pub(crate) rows: &'static [&'static str],
    /// For each cell, the row it reports on. Cell 0 is the `fn` line.
    pub(crate) cell_rows: &'static [u32],
    /// Figures over all calls so far.
    pub(crate) aggregate: &'static [LineCell],
    pub(crate) scope: Scope,
    /// Highest rise a call may reach (`limit`); `u64::MAX` for none.
    pub(crate) peak_limit: u64,
    /// Net bytes a call may leave allocated (`max_retained`); `u64::MAX`
    /// for none.
    pub(crate) retained_limit: u64,
    /// Whether calls sample GPU memory (`#[profile(gpu = false)]` turns it
    /// off).
    pub(crate) gpu: bool,
    pub(crate) calls: AtomicU64,
    pub(crate) outer_calls: AtomicU64,
}

impl FnMeta {
    /// Describes a profiled function. Called in a `static` by generated code.
    #[allow(clippy::too_many_arguments)]
    pub const fn new(
        path: fn() -> &'static str,
        file: &'static str,
        first_line: u32,
        rows: &'static [&'static str],
        cell_rows: &'static [u32],
        aggregate: &'static [LineCell],
        scope: Scope,
    ) -> Self {
        FnMeta {
            path,
            file,
            first_line,
            rows,
            cell_rows,
            aggregate,
            scope,
            peak_limit: u64::MAX,
            retained_limit: u64::MAX,
            gpu: true,
            calls: AtomicU64::new(0),
            outer_calls: AtomicU64::new(0),
        }
    }

    /// Sets the memory budgets of each call: its peak, and the net bytes it
    /// leaves allocated. `u64::MAX` means none.
    pub const fn with_limits(mut self, peak: u64, retained: u64) -> Self {
        self.peak_limit = peak;
        self.retained_limit = retained;
        self
    }

    /// Turns GPU sampling off for this function: `#[profile(gpu = false)]`.
    pub const fn without_gpu(mut self) -> Self {
        self.gpu = false;
        self
    }

    /// The function's path, such as `quickstart::addition` or
    /// `app::Cache::insert`.
    pub fn name(&self) -> &'static str {
        let full = (self.path)();
        let mut name = full.strip_suffix("::__memprof_path").unwrap_or(full);
        // The body of an `async fn` is a closure-like item of its own.
        while let Some(outer) = name.strip_suffix("::{{closure}}") {
            name = outer;
        }
        name
    }
}

/// Registration of a profiled function, collected with `inventory`.
#[derive(Debug)]
pub struct Registration(pub &'static FnMeta);

inventory::collect!(Registration);

/// Sync calls open on this thread, innermost last: (meta, outermost frame's
/// cells). Lets a recursive call fold its figures into the outermost call of
/// the same function, so recursion prints one table.
const CALL_STACK_DEPTH: usize = 64;

struct CallStack {
    depth: Cell<usize>,
    entries: [Cell<(usize, usize)>; CALL_STACK_DEPTH],
}

thread_local! {
    static CALLS: CallStack = const {
        CallStack {
            depth: Cell::new(0),
            entries: [const { Cell::new((0, 0)) }; CALL_STACK_DEPTH],
        }
    };
}

/// One call's rows. Lives on the caller's stack (or in the future, for
/// `async fn`) for the duration of the call.
#[derive(Debug)]
pub struct CallFrame<const N: usize> {
    meta: &'static FnMeta,
    /// Thread scope: process heap at entry minus the context count at entry,
    /// so `base + context count` is the heap the call sees.
    base: AtomicI64,
    /// Address of the outermost same-function frame's cells; 0 if this is it.
    outer: AtomicUsize,
    /// Whether this call samples GPU memory.
    gpu: AtomicBool,
    cells: [LineCell; N],
}

impl<const N: usize> CallFrame<N> {
    /// An empty frame for `meta`.
    #[inline]
    pub fn new(meta: &'static FnMeta) -> Self {
        CallFrame {
            meta,
            base: AtomicI64::new(0),
            outer: AtomicUsize::new(0),
            gpu: AtomicBool::new(false),
            cells: [const { LineCell::new() }; N],
        }
    }

    /// Starts a synchronous call: it can be recursive, and prints once.
    #[inline]
    pub fn enter(&self) -> CallGuard<'_> {
        if !switch_on_entry() {
            return self.inactive();
        }
        let cells = self.cells.as_ptr() as usize;
        let meta = self.meta as *const FnMeta as usize;
        let (outer, pushed) = CALLS
            .try_with(|stack| {
                let depth = stack.depth.get();
                let outer = stack.entries[..depth.min(CALL_STACK_DEPTH)]
                    .iter()
                    .rev()
                    .map(Cell::get)
                    .find(|&(m, _)| m == meta)
                    .map_or(0, |(_, c)| c);
                if depth < CALL_STACK_DEPTH {
                    let root = if outer == 0 { cells } else { outer };
                    stack.entries[depth].set((meta, root));
                }
                stack.depth.set(depth + 1);
                (outer, true)
            })
            .unwrap_or((0, false));
        self.outer.store(outer, Relaxed);
        self.open(pushed)
    }

    /// Starts an `async fn` call: always printed as its own call.
    #[inline]
    pub fn enter_async(&self) -> CallGuard<'_> {
        if !switch_on_entry() {
            return self.inactive();
        }
        self.open(false)
    }

    /// A guard that records nothing: `MEMPROF=off`.
    #[cold]
    fn inactive(&self) -> CallGuard<'_> {
        CallGuard {
            frame: self.frame_ref(),
            region: Region::default(),
            pushed: false,
            active: false,
            gpu_start: None,
            mark: crate::timeline::CallMark::none(),
        }
    }

    fn frame_ref(&self) -> FrameRef<'_> {
        FrameRef {
            meta: self.meta,
            base: &self.base,
            outer: &self.outer,
            cells: &self.cells,
        }
    }

    fn open(&self, pushed: bool) -> CallGuard<'_> {
        let gpu = self.meta.gpu && crate::gpu::active();
        self.gpu.store(gpu, Relaxed);
        let gpu_start = if gpu { crate::gpu::sample() } else { None };
        let region = Region::open(self.meta.scope);
        if self.meta.scope == Scope::Thread {
            self.base
                .store(alloc::process_net() - region.start, Relaxed);
        }
        CallGuard {
            frame: self.frame_ref(),
            region,
            pushed,
            active: true,
            gpu_start,
            mark: crate::timeline::call_start(pushed),
        }
    }

    /// The statement cursor of one block: see [`Cursor`].
    #[inline]
    pub fn cursor(&self) -> Cursor<'_> {
        Cursor {
            cells: &self.cells,
            base: &self.base,
            scope: self.meta.scope,
            gpu: self.gpu.load(Relaxed),
            gpu_start: AtomicI64::new(NO_SAMPLE),
            cell: AtomicU32::new(NO_CELL),
            start: AtomicI64::new(0),
            saved: AtomicI64::new(0),
            watch_index: AtomicU32::new(u32::MAX),
            watch_start: AtomicI64::new(0),
        }
    }
}

/// No region open, or no scope-end row.
const NO_CELL: u32 = u32::MAX;

/// No GPU sample.
const NO_SAMPLE: i64 = i64::MIN;

/// Walks one block's statements: [`Cursor::enter`] before each statement
/// closes the previous statement's region and opens the next, so a statement
/// costs one call and no local of its own. [`Cursor::leave`] after the last
/// statement opens the region of the block's closing brace, where the
/// block's locals are freed; the cursor, declared first in the block and so
/// dropped last, closes it.
///
/// Left early (`return`, `?`, `break`, a panic), the block drops its cursor
/// as it unwinds, after its locals: the statement that was running is
/// charged with what leaving freed.
///
/// Its state is atomic, not `Cell`, so that a future holding it across
/// `.await` stays `Send`.
#[derive(Debug)]
pub struct Cursor<'a> {
    cells: &'a [LineCell],
    base: &'a AtomicI64,
    scope: Scope,
    /// Whether the call samples GPU memory.
    gpu: bool,
    /// GPU bytes when the current region opened, or `NO_SAMPLE`.
    gpu_start: AtomicI64,
    cell: AtomicU32,
    start: AtomicI64,
    saved: AtomicI64,
    watch_index: AtomicU32,
    watch_start: AtomicI64,
}

impl Cursor<'_> {
    /// Ends the current statement's region, if any, and starts cell `cell`'s.
    // PERF: always inlined in optimized builds only: in debug builds it
    // would add code at every statement, and compile time with it.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn enter(&self, cell: u32) {
        // PERF: the switch is tested where the statement is, so that under
        // `MEMPROF=off` a statement costs one load and a branch, not a call.
        if recording() {
            self.step(cell);
        }
    }

    /// Ends the current statement's region; then starts the closing brace's
    /// region, cell `end`, unless it is `u32::MAX` (no such row).
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn leave(&self, end: u32) {
        if recording() {
            self.step(end);
        }
    }

    /// Closes the current region and opens cell `next`'s, if it is one.
    /// (`enter` passes a cell constant, so the test folds away there.)
    #[inline]
    fn step(&self, next: u32) {
        if self.gpu {
            return self.step_sampled(next);
        }
        self.close();
        if next != NO_CELL {
            self.open(next);
        }
    }

    /// Starts a block's tail expression (cell `cell`); when the returned
    /// guard drops, right after the tail, the cursor moves on to `end`.
    #[inline]
    pub fn tail(&self, cell: u32, end: u32) -> TailGuard<'_, '_> {
        self.enter(cell);
        TailGuard { cursor: self, end }
    }

    /// [`Cursor::enter`] or [`Cursor::leave`] with GPU sampling: one sample
    /// ends the current region and starts cell `next`'s, if any.
    ///
    /// PERF: out of line, so that the heap-only path stays as small as it
    /// was; a sample costs an NVML call anyway.
    #[inline(never)]
    fn step_sampled(&self, next: u32) {
        let gpu = crate::gpu::sample().unwrap_or(NO_SAMPLE);
        let cell = self.cell.load(Relaxed);
        self.close();
        let start = self.gpu_start.load(Relaxed);
        if gpu != NO_SAMPLE
            && start != NO_SAMPLE
            && let Some(row) = self.cells.get(cell as usize)
        {
            row.record_gpu(gpu - start, gpu);
        }
        if next != NO_CELL {
            self.gpu_start.store(gpu, Relaxed);
            self.open(next);
        }
    }

    #[inline]
    fn open(&self, cell: u32) {
        let region = Region::open(self.scope);
        self.start.store(region.start, Relaxed);
        self.saved.store(region.saved, Relaxed);
        if let Some(watch) = region.watch {
            let (index, start) = watch.into_parts();
            self.watch_index.store(index, Relaxed);
            self.watch_start.store(start, Relaxed);
        }
        self.cell.store(cell, Relaxed);
    }

    #[inline]
    fn close(&self) {
        let cell = self.cell.load(Relaxed);
        if cell == NO_CELL {
            return;
        }
        self.cell.store(NO_CELL, Relaxed);
        let mut region = Region {
            start: self.start.load(Relaxed),
            saved: self.saved.load(Relaxed),
            watch: (self.scope == Scope::Process).then(|| {
                alloc::Watch::from_parts(
                    self.watch_index.load(Relaxed),
                    self.watch_start.load(Relaxed),
                )
            }),
        };
        let stats = region.close();
        if let Some(row) = self.cells.get(cell as usize) {
            row.record(stats.increment, stats.peak, mem_usage(self.base, &stats));
        }
    }
}

impl Drop for Cursor<'_> {
    #[inline]
    fn drop(&mut self) {
        if self.cell.load(Relaxed) == NO_CELL {
            return;
        }
        if self.gpu {
            self.step_sampled(NO_CELL);
        } else {
            self.close();
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

#[derive(Debug, Clone, Copy)]
struct FrameRef<'a> {
    meta: &'static FnMeta,
    base: &'a AtomicI64,
    outer: &'a AtomicUsize,
    cells: &'a [LineCell],
}

/// Heap in use after a region. Process scope ends on the process total and
/// leaves the base at 0; thread scope adds its context's count to the base.
#[inline]
fn mem_usage(base: &AtomicI64, stats: &RegionStats) -> i64 {
    base.load(Relaxed) + stats.end
}

/// Closes a call when dropped: records the `fn` row, then folds the call into
/// its outermost recursive caller, or into the aggregate and prints it.
#[derive(Debug)]
#[must_use]
pub struct CallGuard<'a> {
    frame: FrameRef<'a>,
    region: Region,
    pushed: bool,
    /// False under `MEMPROF=off`: nothing was opened, nothing is recorded.
    active: bool,
    /// GPU bytes at the call's entry, when it samples GPU memory.
    gpu_start: Option<i64>,
    /// The call's start, for its `FUNC` line under `mprof run`.
    mark: crate::timeline::CallMark,
}

impl Drop for CallGuard<'_> {
    fn drop(&mut self) {
        if !self.active {
            return;
        }
        crate::timeline::call_end(&self.mark, self.frame.meta);
        let stats = self.region.close();
        let frame = self.frame;
        let mem = mem_usage(frame.base, &stats);
        frame.cells[0].record(stats.increment, stats.peak, mem);
        if let Some(start) = self.gpu_start
            && let Some(end) = crate::gpu::sample()
        {
            frame.cells[0].record_gpu(end - start, end);
        }
        if self.pushed {
            let _ = CALLS.try_with(|stack| stack.depth.set(stack.depth.get().saturating_sub(1)));
        }
        frame.meta.calls.fetch_add(1, Relaxed);
        let over_budget = crate::budget::Budget::check(frame.meta, &stats);
        // The call's own table, for a budget message, before it is merged.
        let message = over_budget
            .filter(|_| !std::thread::panicking())
            .map(|budget| budget.message(frame.meta, frame.cells));
        let outer = frame.outer.load(Relaxed);
        if outer != 0 {
            // SAFETY: `outer` is the address of the cells of a frame of the
            // same function (hence the same length) further up this thread's
            // stack, which outlives this call.
            let outer =
                unsafe { std::slice::from_raw_parts(outer as *const LineCell, frame.cells.len()) };
            for (dst, src) in outer.iter().zip(frame.cells) {
                dst.absorb_owned(src);
            }
        } else {
            for (dst, src) in frame.meta.aggregate.iter().zip(frame.cells) {
                dst.absorb_shared(src);
            }
            let nth = frame.meta.outer_calls.fetch_add(1, Relaxed) + 1;
            crate::report::call_finished(frame.meta, frame.cells, nth);
        }
        if let Some(message) = message {
            // A budget is an assertion: the call fails after it returns, as
            // pytest-memray's `limit_memory` fails a test.
            panic!("{message}");
        }
    }
}

// ---- async -------------------------------------------------------------------

/// A task's own counters, carried between polls.
#[derive(Debug, Clone, Copy)]
struct TaskCounters {
    net: i64,
    allocs: u64,
    deallocs: u64,
    watermark: i64,
}

/// What a poll replaced in the thread's context, restored when it ends.
#[derive(Default)]
struct PollScope {
    adjust_net: i64,
    adjust_allocs: u64,
    adjust_deallocs: u64,
    outer_watermark: i64,
    outer_hi: i64,
}

fn poll_enter(task: &TaskCounters) -> PollScope {
    with_thread(|t| {
        let outer = PollScope {
            adjust_net: t.adjust_net.get(),
            adjust_allocs: t.adjust_allocs.get(),
            adjust_deallocs: t.adjust_deallocs.get(),
            outer_watermark: (t.peak.get() + t.adjust_net.get()).max(t.carry.get()),
            outer_hi: t.hi.get().max(t.peak.get()),
        };
        t.adjust_net.set(task.net - t.net());
        t.adjust_allocs
            .set(task.allocs.wrapping_sub(t.allocs.get()));
        t.adjust_deallocs
            .set(task.deallocs.wrapping_sub(t.deallocs.get()));
        t.peak.set(t.net());
        t.hi.set(t.net());
        t.carry.set(task.watermark);
        outer
    })
}

fn poll_exit(task: &mut TaskCounters, outer: PollScope) {
    let _ = THREAD.try_with(|t| {
        task.net = t.net() + t.adjust_net.get();
        task.allocs = t.allocs.get().wrapping_add(t.adjust_allocs.get());
        task.deallocs = t.deallocs.get().wrapping_add(t.adjust_deallocs.get());
        task.watermark = (t.peak.get() + t.adjust_net.get()).max(t.carry.get());
        // The highest the thread really went during this poll, which the
        // context we return to must see as part of its own watermark.
        let real = t.hi.get().max(t.peak.get());
        t.adjust_net.set(outer.adjust_net);
        t.adjust_allocs.set(outer.adjust_allocs);
        t.adjust_deallocs.set(outer.adjust_deallocs);
        t.carry
            .set(outer.outer_watermark.max(real + outer.adjust_net));
        t.hi.set(outer.outer_hi.max(real));
        t.peak.set(t.net());
    });
}

/// Wraps an `async fn` body so that each poll counts as the task's own,
/// whichever thread runs it.
#[derive(Debug)]
pub struct Instrumented<F> {
    inner: ManuallyDrop<F>,
    task: TaskCounters,
}

impl<F> Instrumented<F> {
    /// Wraps `inner`.
    pub fn new(inner: F) -> Self {
        Instrumented {
            inner: ManuallyDrop::new(inner),
            task: TaskCounters {
                net: 0,
                allocs: 0,
                deallocs: 0,
                watermark: i64::MIN,
            },
        }
    }
}

struct PollExit<'a> {
    task: &'a mut TaskCounters,
    outer: Option<PollScope>,
}

impl Drop for PollExit<'_> {
    fn drop(&mut self) {
        if let Some(outer) = self.outer.take() {
            poll_exit(self.task, outer);
        }
    }
}

impl<F: Future> Future for Instrumented<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        // SAFETY: `inner` is never moved out of the pinned `self`; `task` is
        // plain data that is not structurally pinned.
        let this = unsafe { self.get_unchecked_mut() };
        let outer = poll_enter(&this.task);
        let _exit = PollExit {
            task: &mut this.task,
            outer: Some(outer),
        };
        // SAFETY: projection of the pinning of `self` onto `inner`, which
        // stays in place until `Drop`.
        let inner = unsafe { Pin::new_unchecked(&mut *this.inner) };
        inner.poll(cx)
    }
}

impl<F> Drop for Instrumented<F> {
    fn drop(&mut self) {
        // A future dropped before completion closes its open regions here, so
        // do it in the task's own context, as a poll would.
        let outer = poll_enter(&self.task);
        let _exit = PollExit {
            task: &mut self.task,
            outer: Some(outer),
        };
        // SAFETY: `inner` is dropped exactly once, here, and never used again.
        unsafe { ManuallyDrop::drop(&mut self.inner) };
    }
}

// ---- measure and memit -------------------------------------------------------

/// An open measurement of the calling context; see [`crate::measure`].
#[derive(Debug)]
pub struct MeasureGuard {
    region: Region,
    counts: (u64, u64),
    heap_before: i64,
    open: bool,
    /// GPU bytes at the start and the enclosing watch's high, when sampling.
    gpu: Option<(i64, i64)>,
}

impl MeasureGuard {
    /// Starts measuring the calling thread or task.
    #[inline]
    pub fn start() -> Self {
        let gpu = crate::gpu::active()
            .then(crate::gpu::sample)
            .flatten()
            .map(|start| (start, crate::gpu::watch_begin(start)));
        let region = Region::open(Scope::Thread);
        MeasureGuard {
            counts: context_counts(),
            heap_before: alloc::process_net(),
            region,
            open: true,
            gpu,
        }
    }

    /// Ends the measurement: its figures, and the process heap at its start.
    pub(crate) fn finish(mut self) -> (Measurement, i64) {
        let (allocs, deallocs) = context_counts();
        self.open = false;
        let stats = self.region.close();
        let (gpu_increment, gpu_peak) = match self.gpu.take() {
            Some((start, saved)) => {
                let end = crate::gpu::sample();
                let high = crate::gpu::watch_end(saved);
                match end {
                    Some(end) => (
                        Some(end - start),
                        Some((high.max(end) - start).max(0) as u64),
                    ),
                    None => (None, None),
                }
            }
            None => (None, None),
        };
        let m = Measurement {
            increment: stats.increment,
            peak: stats.peak,
            allocations: allocs.wrapping_sub(self.counts.0),
            deallocations: deallocs.wrapping_sub(self.counts.1),
            gpu_increment,
            gpu_peak,
        };
        (m, self.heap_before)
    }

    /// Ends the measurement and returns its figures.
    pub fn measurement(self) -> Measurement {
        self.finish().0
    }

    /// Ends the measurement and prints `peak memory: X, increment: Y` as
    /// `%memit` does.
    pub fn finish_memit(self) {
        let (m, before) = self.finish();
        crate::report::print_memit(before, &m);
    }
}

impl Drop for MeasureGuard {
    fn drop(&mut self) {
        if self.open {
            self.region.close();
        }
        if let Some((_, saved)) = self.gpu.take() {
            crate::gpu::watch_end(saved);
        }
    }
}
