//! The state that the kernel's hot paths and the rest of the runtime share:
//! `repr(C)` types, defined once here, so that the optimized library and the
//! runtime that calls it agree on every field by construction (both compile
//! this file).
//!
//! Each type is owned by a module of the runtime, which keeps its
//! invariants; the kernel only runs the fast path over it.

use core::cell::{Cell, UnsafeCell};
use core::sync::atomic::{AtomicI64, AtomicIsize, AtomicU8, AtomicU32, AtomicU64, AtomicUsize};

/// No region open, or no scope-end row.
pub const NO_CELL: u32 = u32::MAX;

/// One thread's share of the process-wide heap count, and the only copy of
/// that thread's net count. Owned by `alloc::slots`. 128-byte aligned so
/// that neighbouring threads' slots never share a cache line, or a
/// prefetched pair.
#[repr(C, align(128))]
pub struct Slot {
    pub net: AtomicI64,
}

/// The part of a thread's counters that the allocator's fast path and the
/// statement probes touch. Owned by `alloc` (see `ThreadCounters` there,
/// which starts with it). Only the thread itself reads or writes it.
///
/// The net count (in the thread's slot), `peak`, `allocs`, `deallocs` and
/// `allocated` are real: moved by the allocator alone. The rest is owned by the probes:
/// `adjust_*` shift real values into the current context's terms (an async
/// task's own count while it is polled; zero otherwise), `carry` holds the
/// part of the innermost open region's watermark that `peak` no longer
/// shows, and `hi` the highest `peak` seen since the current poll began.
///
/// The `device_*` fields are the thread's device bytes as CUPTI counts
/// them, owned by `gpu::ledger` (which writes them from the driver's
/// callback, on this thread) and read by the statement probes as the heap's
/// are: `device_net` is what the thread allocated minus what it freed,
/// `device_peak` and `device_carry` its watermark (see `region`), and
/// `device_events` counts the thread's counted allocations and frees, for
/// the quiet test of a call that counts device bytes (see `step`). All stay
/// zero (`device_carry` `i64::MIN`) in a program that counts none.
///
/// `until_sample` is `alloc`'s too: with sampled sites, the bytes the
/// thread may still allocate before its next sampled allocation (see
/// `alloc::record`), which `sites` draws; the kernel never reads it.
///
/// PERF: what the allocator's fast path touches, `hook` to `until_sample`,
/// is in the first 48 bytes: one cache line, as `ThreadCounters` is
/// 128-byte aligned.
#[repr(C)]
pub struct Counters {
    /// The slot the allocator's fast path counts into, or null to send it
    /// to its slow path (see `alloc`).
    pub hook: Cell<*const Slot>,
    pub allocs: Cell<u64>,
    /// PERF: between the two counts, so that `realloc` increments them with
    /// two 8-byte stores: merged into one 16-byte access (as the compiler
    /// does for adjacent fields), the load could not take its data from the
    /// separate stores `alloc` and `dealloc` left in the store buffer.
    pub peak: Cell<i64>,
    pub deallocs: Cell<u64>,
    /// Bytes allocated so far: every allocation's size, a `realloc`'s new
    /// size (the churn, dhat's `total_bytes`).
    pub allocated: Cell<u64>,
    /// Sampled sites' countdown: at most 0 until `sites` draws the first
    /// distance (see `alloc::record`).
    pub until_sample: Cell<i64>,
    /// The thread's slot (see `alloc`): where its net count is.
    pub slot: Cell<*const Slot>,
    pub adjust_net: Cell<i64>,
    pub adjust_allocs: Cell<u64>,
    pub adjust_deallocs: Cell<u64>,
    pub adjust_allocated: Cell<u64>,
    pub carry: Cell<i64>,
    pub hi: Cell<i64>,
    /// Owned by `calls::thread`, which keeps them in step with its table of
    /// this thread's per-function aggregates (indexed by `FnHead::id - 1`),
    /// so that the kernel's call entry finds them from the thread pointer.
    /// The allocator never touches them.
    pub fns: Cell<*const *const ThreadFnHead>,
    pub fns_len: Cell<usize>,
    /// Owned by `calls::stack`: the free part of this thread's side stack,
    /// where synchronous calls keep their frames and cursors. Both null
    /// before the thread's first profiled call.
    pub stack_top: Cell<*mut u8>,
    pub stack_end: Cell<*mut u8>,
    pub device_net: Cell<i64>,
    pub device_peak: Cell<i64>,
    pub device_carry: Cell<i64>,
    pub device_events: Cell<u64>,
    /// Owned by `calls::edges`: the innermost statement cursor of this
    /// thread's open synchronous calls (a block's, or a call's body) and of
    /// the `async fn` calls it is polling, whose open row is the one a
    /// profiled call beginning now is made from; null outside them. Each
    /// synchronous cursor keeps the one before it (`CursorHead::outer`) and
    /// puts it back as it ends; a poll puts back the poller's.
    pub open_cursor: Cell<*const CursorHead>,
    /// Owned by `kernel::quiet`: the innermost quiet call of this thread
    /// whose allocations and frees are placed on its rows (one with an
    /// anchor, see `QuietHead`), each keeping the one before it
    /// (`QuietHead::outer`); null outside them. While it is not null the
    /// thread's `hook` carries [`QUIET_MARK`], so that the allocator's fast
    /// path sends each event to `quiet_events`.
    pub quiet_top: Cell<*const QuietHead>,
}

/// Marks a `hook` (see `Counters`) while a quiet call whose events are
/// placed is open on the thread: the allocator's fast path counts, then
/// hands the event to `quiet_events`. `Slot`s are 128-byte aligned, so the
/// pointer's low bits are free; `alloc` uses bit 0 for sampled sites.
pub const QUIET_MARK: usize = 2;

/// Accumulated figures of one table row. Owned by `cells`.
///
/// A cell is written by one thread at a time: the thread whose aggregate it
/// belongs to, or the call that owns it. Other threads only read it, for
/// `report()`. Each write is bracketed by `seq`, so a reader never sees a
/// row with half an execution in it.
#[derive(Debug)]
#[repr(C)]
pub struct LineCell {
    /// Odd while the owner writes: readers retry.
    pub(crate) seq: AtomicU32,
    /// Executions of this row open on the owning thread. An execution that
    /// closes while another is open is nested in it (recursion): it counts
    /// in Occurrences and Mem usage, not in Increment or Peak, which the
    /// outer execution already holds. Only the owner reads or writes it.
    pub(crate) open: UnsafeCell<u32>,
    pub(crate) occurrences: AtomicU64,
    pub(crate) increment: AtomicI64,
    pub(crate) peak: AtomicU64,
    /// Allocations made while the row ran (a `realloc` counts as one),
    /// summed over executions, under the same recursion rule as `increment`.
    pub(crate) allocations: AtomicU64,
    /// Bytes those allocations asked for (a `realloc`'s new size), under the
    /// same rule.
    pub(crate) allocated: AtomicU64,
    /// Highest heap after the row; `i64::MIN` before any execution.
    pub(crate) mem_usage: AtomicI64,
    /// Sum of GPU bytes after minus before, over sampled executions.
    pub(crate) gpu_increment: AtomicI64,
    /// GPU bytes after the row, highest over sampled executions;
    /// `NO_SAMPLE` when never sampled.
    pub(crate) gpu_usage: AtomicI64,
    /// Highest GPU rise within one execution.
    pub(crate) gpu_peak: AtomicU64,
    /// `fn` rows while counting: the driver's view (NVML) at call exit minus
    /// entry, summed, and at exit, highest; `NO_SAMPLE` when never read.
    pub(crate) driver_increment: AtomicI64,
    pub(crate) driver_usage: AtomicI64,
    /// A framework's pool (`pool`), read at the row's ends: allocated after
    /// minus before, summed; allocated and reserved after, highest over
    /// executions (`NO_SAMPLE` when never read). Only the runtime's step
    /// writes them.
    pub(crate) pool_increment: AtomicI64,
    pub(crate) pool_allocated: AtomicI64,
    pub(crate) pool_reserved: AtomicI64,
}

/// No GPU sample.
pub const NO_SAMPLE: i64 = i64::MIN;

impl LineCell {
    /// An empty row.
    pub const fn new() -> Self {
        LineCell {
            seq: AtomicU32::new(0),
            open: UnsafeCell::new(0),
            occurrences: AtomicU64::new(0),
            increment: AtomicI64::new(0),
            peak: AtomicU64::new(0),
            allocations: AtomicU64::new(0),
            allocated: AtomicU64::new(0),
            mem_usage: AtomicI64::new(i64::MIN),
            gpu_increment: AtomicI64::new(0),
            gpu_usage: AtomicI64::new(NO_SAMPLE),
            gpu_peak: AtomicU64::new(0),
            driver_increment: AtomicI64::new(0),
            driver_usage: AtomicI64::new(NO_SAMPLE),
            pool_increment: AtomicI64::new(0),
            pool_allocated: AtomicI64::new(NO_SAMPLE),
            pool_reserved: AtomicI64::new(NO_SAMPLE),
        }
    }
}

impl Default for LineCell {
    fn default() -> Self {
        Self::new()
    }
}

// SAFETY: other threads only read the atomics; `open` is touched by the
// owning thread alone.
unsafe impl Sync for LineCell {}

/// The head of a function's `FnMeta` (owned by `calls::meta`): what the
/// kernel's call entry reads.
#[derive(Debug)]
#[repr(C)]
pub struct FnHead {
    /// Which calls the kernel may enter: [`FAST_NONE`], then, once every
    /// condition of a fast entry holds for the function and cannot change
    /// but through `memprof::reset` (which withdraws it): the switch is on,
    /// per-call tables are all handed out, no budget, thread scope, no GPU
    /// sampling, [`FAST_ALL`]; or [`FAST_QUIET`] where only the `mprof
    /// run` timeline, which times every call with rows, stands in the way.
    pub fast: AtomicU8,
    /// This function's index in each thread's table, plus one; 0 until the
    /// first call.
    pub id: AtomicU32,
    /// Bumped by `memprof::reset`: a thread's aggregate of an older
    /// generation counts as empty, and its owner clears it at its next call.
    pub generation: AtomicU64,
    /// How the kernel enters the function's calls: [`WITH_ROWS`] until
    /// [`QUIET_AFTER`] calls in a row on one thread moved nothing, then
    /// [`QUIET`] until quiet calls move the heap (see [`WITH_ROWS_AGAIN`]),
    /// then [`WITH_ROWS_AGAIN`] for good (and from the start under `MEMPROF_QUIET=off`).
    pub quiet: AtomicU8,
}

/// The head of one thread's aggregate of one function (`ThreadFn`, owned by
/// `calls::thread`).
#[derive(Debug)]
#[repr(C)]
pub struct ThreadFnHead {
    /// Outermost calls finished on this thread. Written by the owner only.
    pub calls: AtomicU64,
    /// The `FnHead::generation` these figures belong to. Written by the
    /// owner only.
    pub generation: AtomicU64,
    /// Synchronous calls of the function open on the owner's stack.
    pub depth: Cell<u32>,
    /// The owner's latest calls in a row, entered by the kernel with rows,
    /// during which nothing was allocated or freed (see `FnHead::quiet`).
    pub streak: Cell<u32>,
    /// The owner's calls with rows during which the heap moved, up to
    /// [`HOT_AFTER`], or [`NEVER_HOT`] (see `FnHead::quiet`).
    pub hot: Cell<u32>,
    /// Of `calls`, those that ran quiet (see `quiet`). Written by the
    /// owner only.
    pub quiet_calls: AtomicU64,
    /// Quiet calls on this thread during which the heap moved, a
    /// recursion's nested ones too: past one in [`QUIET_AFTER`] of its
    /// calls (its `fn` row's Occurrences) the function takes its rows again.
    pub quiet_moved: Cell<u64>,
    /// The function's head.
    pub head: *const FnHead,
    /// Where the outermost open call records its rows, for the calls nested
    /// in it: this aggregate's cells, or that call's own table.
    pub target: Cell<*const LineCell>,
    /// This aggregate's rows.
    pub cells: *const LineCell,
    /// Owned by `calls::edges`: the latest two call edges this thread
    /// recorded for the function, latest first, each the caller's row (a
    /// cell of the caller's table), the caller's aggregate and the edge's
    /// counts: a call made from either row counts there with no lookup (a
    /// function called from two rows by turns, `let a = parse(x); let b =
    /// parse(y);` in a loop, too). Null: none.
    pub edges: [EdgeSlot; 2],
    /// Owned by `quiet_events`: the events of this thread's quiet calls of
    /// the function, by the return address into its frame at which they
    /// happened, where the function was open once on the thread; the
    /// others, and those past these slots, go to `quiet_events`' map.
    pub events: [EventSlot; EVENT_SLOTS],
    /// Owned by `kernel::quiet`: the head by which the open call of
    /// the function on this thread whose rows take its events (see
    /// [`EVENTS_AFTER_TURNS`]) is in `Counters::quiet_top`, as a quiet
    /// call's; `thread_fn` null while there is none.
    pub rows_events: Cell<QuietHead>,
    /// Of `calls`, those whose rows took their events part way (see
    /// [`EVENTS_AFTER_TURNS`]). Written by the owner only.
    pub events_calls: AtomicU64,
}

/// Return addresses a thread's aggregate keeps quiet events under itself
/// (see `ThreadFnHead::events`): a function's statements that allocate.
pub const EVENT_SLOTS: usize = 6;

/// The allocations and frees one thread's quiet calls of a function made
/// at one return address into its frame. Owned by `quiet_events`: written
/// by the thread it belongs to only (plain loads and stores), read by
/// `report()`.
#[derive(Debug, Default)]
#[repr(C)]
pub struct EventSlot {
    /// The return address, or 0: the slot is free.
    pub ret: AtomicUsize,
    pub allocations: AtomicU64,
    pub frees: AtomicU64,
    pub allocated: AtomicU64,
    pub net: AtomicI64,
}

/// One of the call edges a thread's aggregate remembers (see
/// `ThreadFnHead::edges`).
#[derive(Debug)]
#[repr(C)]
pub struct EdgeSlot {
    pub row: Cell<*const LineCell>,
    pub caller: Cell<*const ThreadFnHead>,
    pub counts: Cell<*const EdgeCounts>,
}

impl EdgeSlot {
    /// No edge. A constant, as `LineCell::new` is: each use is a fresh
    /// value.
    #[allow(clippy::declare_interior_mutable_const)]
    pub const NONE: EdgeSlot = EdgeSlot {
        row: Cell::new(core::ptr::null()),
        caller: Cell::new(core::ptr::null()),
        counts: Cell::new(core::ptr::null()),
    };
}

/// One call edge's figures on one thread: calls of a function made while
/// one row of a caller was open, and the bytes those calls allocated. Owned
/// by `calls::edges`; written by the thread they belong to only (plain
/// loads and stores), read by `report()`.
#[derive(Debug, Default)]
#[repr(C)]
pub struct EdgeCounts {
    pub calls: AtomicU64,
    pub allocated: AtomicU64,
}

/// `FnHead::fast`: the runtime enters every call.
pub const FAST_NONE: u8 = 0;
/// `FnHead::fast`: the kernel may enter quiet calls only (see `quiet`);
/// calls with rows take the runtime's entry, which times them for `mprof
/// run`.
pub const FAST_QUIET: u8 = 1;
/// `FnHead::fast`: the kernel may enter every call.
pub const FAST_ALL: u8 = 2;

/// `FnHead::quiet`: calls record their statements' rows.
pub const WITH_ROWS: u8 = 0;
/// `FnHead::quiet`: calls of a function whose declaration allows it
/// (generated code asks, see `quiet`) run as written, counted in the `fn`
/// row only.
pub const QUIET: u8 = 1;
/// `FnHead::quiet`: quiet calls moved the heap (the first that did, where
/// events are not placed; more than one in [`QUIET_AFTER`] of the calls on
/// a thread, where they are); calls record their rows from then on.
pub const WITH_ROWS_AGAIN: u8 = 2;
/// Calls in a row on one thread that moved nothing after which a
/// function's calls go quiet.
pub const QUIET_AFTER: u32 = 64;

/// Calls with rows on one thread during which the heap moved, none of them
/// nested in another call of the function, after which the function's
/// calls go quiet too (see `ThreadFnHead::hot`): a hot function's rows
/// then take its allocations and frees from its events, and no longer pay
/// on each statement.
pub const HOT_AFTER: u32 = 1024;

/// Blocks one call entered (a loop's turns) after which, with frame
/// pointers, the call's rows stop stepping if it allocated at most once in
/// [`TURNS_PER_ALLOCATION`] of them: its allocations and frees are placed
/// on its rows from their return addresses, as a quiet call's are (a long
/// loop that seldom allocates). See `calls::rows_events`.
pub const EVENTS_AFTER_TURNS: u32 = 1 << 16;

/// See [`EVENTS_AFTER_TURNS`]: an event costs about as much as a few
/// statement steps.
pub const TURNS_PER_ALLOCATION: u64 = 8;

/// `CallHead::turns` of a call whose rows take its events.
pub const EVENTS: u32 = u32::MAX;

/// `CursorHead::pending` of a cursor whose call's rows take its events:
/// its steps do nothing, and the call's blocks get no cursor.
pub const STOPPED: u32 = u32::MAX - 1;

/// `CallHead::turns` of a call that keeps stepping its rows: the runtime
/// would not let them take its events.
pub const ROWS_KEPT: u32 = u32::MAX - 1;

/// `ThreadFnHead::hot` once a call ran nested in another of its function,
/// or from the start in a build without frame pointers (no events placed):
/// the function's calls do not go quiet for moving the heap often.
pub const NEVER_HOT: u32 = u32::MAX;

/// A quiet call (see `quiet`), on the thread's side stack: its thread's
/// counters and aggregate, and its region's start.
///
/// `anchor` is the frame pointer of the function that runs the call's body
/// (the function itself, or the one it was inlined into), or 0 where the
/// build has no frame pointers: then the call's events are not placed on
/// its rows, and `outer` is null. Otherwise `outer` is the quiet call with
/// an anchor that was innermost when this one began (`Counters::quiet_top`).
#[derive(Debug, Clone, Copy)]
#[repr(C)]
pub struct QuietHead {
    pub counters: *const Counters,
    pub thread_fn: *const ThreadFnHead,
    pub start: i64,
    /// 0, where `CallHead::flags` is.
    pub flags: u8,
    /// [`CALL_QUIET`], where `CallHead::mode` is: a walk of the side stack
    /// (`probe::open_rows`) tells a quiet call from the others by it, as
    /// both start with the thread's counters.
    pub mode: u8,
    pub saved: i64,
    pub start_allocs: u64,
    pub start_allocated: u64,
    pub anchor: usize,
    pub outer: *const QuietHead,
}

impl QuietHead {
    /// No call (`ThreadFnHead::rows_events` while none is open).
    pub const NONE: QuietHead = QuietHead {
        counters: core::ptr::null(),
        thread_fn: core::ptr::null(),
        start: 0,
        flags: 0,
        mode: CALL_QUIET,
        saved: 0,
        start_allocs: 0,
        start_allocated: 0,
        anchor: 0,
        outer: core::ptr::null(),
    };
}

/// The process-wide state the kernel's call entry reads, each owned by its
/// module of the runtime: one static of the runtime points at them all.
#[derive(Debug)]
#[repr(C)]
pub struct Globals {
    /// `tls`'s published distance from the thread pointer to the thread's
    /// counters, or 0.
    pub tls_offset: *const AtomicIsize,
    /// `alloc::slots`: the slots, which of them are claimed (bit `i` for
    /// slot `i`), and the overflow.
    pub slots: *const Slot,
    pub claimed: *const AtomicU64,
    pub overflow: *const Slot,
}

// SAFETY: the pointers lead to statics that are shared through atomics.
unsafe impl Sync for Globals {}

/// `CallHead::mode`: the call records nothing (`MEMPROF=off`, or not yet
/// entered).
pub const CALL_OFF: u8 = 0;
/// `CallHead::mode`: entered by the kernel; only the head is written.
pub const CALL_KERNEL: u8 = 1;
/// `CallHead::mode`: entered by the runtime, which owns the rest of the
/// frame's state.
pub const CALL_RUNTIME: u8 = 2;
/// `QuietHead::mode`, never a `CallHead`'s: a quiet call (see `quiet`).
pub const CALL_QUIET: u8 = 3;

const _: () =
    assert!(core::mem::offset_of!(QuietHead, mode) == core::mem::offset_of!(CallHead, mode));

/// `CallHead::flags`: the call takes the runtime's slow statement step
/// (NVML sampling, process scope, or an `async fn` call, whose thread
/// changes: its cursors with a row open are stepped by the kernel, see
/// `CursorHead::counters`).
pub const CALL_SLOW: u8 = 1;
/// `CallHead::flags`: the call's rows count this thread's device bytes
/// (`Counters::device_*`) beside its heap's.
pub const CALL_DEVICE: u8 = 2;

/// The part of one call's state that statements read: the head of the
/// runtime's `Frame`. Written at the call's entry, by the thread running it.
#[derive(Debug)]
#[repr(C)]
pub struct CallHead {
    /// The thread's counters, for a synchronous call (which never changes
    /// threads); null for a call whose statements take the slow step.
    pub counters: Cell<*const Counters>,
    /// Where the rows are recorded.
    pub cells: Cell<*const LineCell>,
    /// Thread scope: process heap at entry minus the context count at entry,
    /// so `base + context count` is the heap the call sees.
    pub base: Cell<i64>,
    /// `CALL_SLOW`, `CALL_DEVICE` or 0.
    pub flags: Cell<u8>,
    /// `CALL_OFF`, `CALL_KERNEL` or `CALL_RUNTIME`.
    pub mode: Cell<u8>,
    /// A kernel-entered call: no open call of the function enclosed it.
    pub outermost: Cell<bool>,
    /// Blocks this call's statements entered through the kernel's cursor
    /// (a loop's turns), up to [`EVENTS_AFTER_TURNS`] (see `call::cursor`);
    /// then [`EVENTS`] once its rows take its events (see
    /// `ThreadFnHead::rows_events`), or [`ROWS_KEPT`].
    pub turns: Cell<u32>,
    /// A synchronous call: the thread's aggregate of the function (null
    /// if none); an `async fn` call: the polling thread's, set by each poll.
    /// The kernel's exit reads it for the calls it entered; call edges, to
    /// name the caller (see `calls::edges`).
    pub thread_fn: Cell<*const ThreadFnHead>,
    /// A kernel-entered call: its own region's start and the enclosing
    /// region's watermark, and the context's allocation count and bytes
    /// allocated at its start. The runtime's entry writes `start_allocs`
    /// too, for allocation sites (see `probe::open_rows`).
    pub start: Cell<i64>,
    pub saved: Cell<i64>,
    pub start_allocs: Cell<u64>,
    pub start_allocated: Cell<u64>,
}

/// Where one block's statement cursor is: the head of the runtime's
/// `Cursor`.
#[derive(Debug)]
#[repr(C)]
pub struct CursorHead {
    /// The call, or null when it records nothing (`MEMPROF=off`).
    pub call: *const CallHead,
    /// The open row, or `NO_CELL`.
    pub cell: Cell<u32>,
    /// The row a step that the kernel left to the runtime was to open (see
    /// `step::step`), for the runtime's slow step to read; [`STOPPED`] once
    /// the call's rows take its events (`CallHead::turns`): its steps do
    /// nothing, and generated code gives the call's blocks no cursor.
    pub pending: Cell<u32>,
    /// The row this cursor had open when its call's rows began to take its
    /// events, or `NO_CELL`: closed with its figures then, but held open
    /// for the recursion rule (`LineCell::open`) until the block ends.
    pub held: Cell<u32>,
    /// The thread's counters when the kernel steps this cursor (its call is
    /// synchronous and in thread scope, and samples no NVML: the call's
    /// flags have no `CALL_SLOW`); null when the runtime does. Fixed when
    /// the cursor is made, as the call's flags are at its entry; for an
    /// `async fn` call's cursor (`CALL_SLOW`, and no other reason for it),
    /// the polling thread's while it has a row open, renewed by each poll,
    /// and the kernel leaves its step to `NO_CELL` to the runtime (see
    /// `Cursor::to_kernel` in the runtime).
    pub counters: Cell<*const Counters>,
    /// The open region's start and the enclosing region's watermark, and
    /// the context's allocation count and bytes allocated at its start.
    pub start: Cell<i64>,
    pub saved: Cell<i64>,
    pub start_allocs: Cell<u64>,
    pub start_allocated: Cell<u64>,
    /// The thread's allocations plus frees when the open region started
    /// (`Counters::events`), for the kernel's test of a quiet region; in a
    /// `CALL_DEVICE` call, the complement of those and the device's events
    /// together (see `step`). Only the kernel reads it; the kernel's opens
    /// write it, and the runtime's for an `async fn` call's cursor that it
    /// hands to the kernel (the thread's events, or at each poll a value
    /// the next step cannot match).
    pub events: Cell<u64>,
    /// A `CALL_DEVICE` call's open region: the thread's device bytes at its
    /// start and the enclosing device watermark (unused in other calls).
    pub device_start: Cell<i64>,
    pub device_saved: Cell<i64>,
    /// The thread's innermost cursor when this one was made
    /// (`Counters::open_cursor`), put back when it ends; for a call's body
    /// cursor, its caller's. Null for an `async fn`'s cursor, which is in
    /// the chain only while its call is polled, and the poll puts back
    /// what was before it.
    pub outer: Cell<*const CursorHead>,
}
