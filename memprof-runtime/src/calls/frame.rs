//! One call of a profiled function: [`Frame`], where it records its rows,
//! and what its end hands back to the layer that prints.
//!
//! A synchronous call records straight into its thread's aggregate of the
//! function ([`ThreadFn`]), unless it wants a table of its own (the first
//! calls under `MEMPROF_REPORT=auto`, every call under `call`, functions with
//! a budget), in which case it records into rows it owns and folds them into
//! the aggregate when it ends. A call nested in an open call of the same
//! function on the same thread (recursion) records wherever the outermost one
//! does, so recursion prints one table; the rows' `open` counts keep nested
//! executions out of Increment and Peak (see `LineCell`).
//!
//! An `async fn` call may move between threads, so it always records into
//! rows of its own, folded into the aggregate of the thread it ends on. It
//! prints under the same rules as a synchronous call: its rows are its own
//! whether or not it was handed a table (`nth` 0 when not).

use super::beside::Beside;
use super::meta::{FnMeta, switch_on_entry, tables_per_thread};
use super::thread::{ThreadFn, set_published, thread_fn};
use crate::alloc::{self, ThreadCounters};
use crate::cells::LineCell;
use crate::kernel::layout::{
    CALL_DEVICE, CALL_OFF, CALL_RUNTIME, CALL_SLOW, CallHead, Counters, FAST_NONE,
};
use crate::owned::{get, set};
use crate::region::{Region, RegionStats, Scope, allocated_in, allocs_in, close_in, open_in};
use std::cell::{Cell, UnsafeCell};
use std::mem::MaybeUninit;
use std::sync::atomic::Ordering::Relaxed;

mod fast_entry;
mod own_table;

pub(crate) use own_table::OwnTable;

/// Under `MEMPROF_REPORT=auto`, this many calls of a function print their own
/// table; later ones only feed the table printed at exit.
pub const AUTO_CALL_TABLES: u64 = 3;

/// One call's state, on the caller's stack (or in the future, for `async fn`).
///
/// Starts with the [`CallHead`] that the kernel's statement step reads.
#[repr(C)]
pub(crate) struct Frame {
    pub(crate) head: CallHead,
    pub(crate) meta: &'static FnMeta,
    /// PERF: written only by the runtime's entry (`head.mode` is
    /// `CALL_RUNTIME`): under `MEMPROF=off` and in calls the kernel entered,
    /// nothing writes it.
    state: UnsafeCell<MaybeUninit<FrameState>>,
}

/// What a [`Frame`] keeps; only the thread running the call touches it.
pub(crate) struct FrameState {
    /// The calling thread's aggregate (synchronous calls); null if none.
    thread_fn: Cell<*const ThreadFn>,
    /// The rows this call owns, when it wants a table of its own.
    own: Cell<Option<Box<[LineCell]>>>,
    /// Which per-call table this is (1 for the first); 0 for none.
    nth: Cell<u64>,
    pub(crate) gpu: Cell<bool>,
    /// Statements read a framework's pool (`crate::pool`).
    pub(crate) pool: Cell<bool>,
    /// Statements take the slow step: NVML sampling, a framework's pool or
    /// process scope.
    pub(crate) slow: Cell<bool>,
    /// A synchronous call that no open call of the function encloses.
    outermost: Cell<bool>,
    /// Counted in its `ThreadFn`'s depth.
    nested_count: Cell<bool>,
    /// The call's own region, from entry to exit.
    entry: Cell<Option<Entry>>,
    /// Its sites' table (0: the thread's aggregate; else one per-call
    /// table's own number) and the function's reset generation at entry.
    pub(super) sites_serial: Cell<u64>,
    pub(super) sites_generation: Cell<u64>,
    /// An `async fn` call: its innermost cursor with a row open, and the
    /// slot of its future where it registered (see `calls::polling`).
    pub(super) is_async: Cell<bool>,
    pub(super) innermost_cursor: Cell<*const crate::kernel::layout::CursorHead>,
    poll_slot: Cell<*const super::polling::Slot>,
    /// An `async fn` call: the function and row open on the thread at its
    /// first poll, which it counts as its caller when it ends (see
    /// `calls::edges`).
    caller: Cell<Option<(&'static FnMeta, u32)>>,
}

impl FrameState {
    /// A call not entered yet.
    ///
    /// PERF: a constant, so that a frame starts as one copy even in
    /// unoptimized builds, where each `Cell::new` would be a call. Each use
    /// is a fresh value: no state is shared.
    #[allow(clippy::declare_interior_mutable_const)]
    const UNSET: FrameState = FrameState {
        thread_fn: Cell::new(std::ptr::null()),
        own: Cell::new(None),
        nth: Cell::new(0),
        gpu: Cell::new(false),
        pool: Cell::new(false),
        slow: Cell::new(false),
        outermost: Cell::new(false),
        nested_count: Cell::new(false),
        entry: Cell::new(None),
        sites_serial: Cell::new(0),
        sites_generation: Cell::new(0),
        is_async: Cell::new(false),
        innermost_cursor: Cell::new(std::ptr::null()),
        poll_slot: Cell::new(std::ptr::null()),
        caller: Cell::new(None),
    };
}

impl Drop for Frame {
    #[inline]
    fn drop(&mut self) {
        if get(&self.head.mode) == CALL_RUNTIME {
            self.drop_state();
        }
    }
}

impl Frame {
    /// Drops what the state owns: an own table is normally handed over at
    /// the call's exit; freed here, outside every figure, if it was not.
    #[inline]
    fn drop_state(&mut self) {
        // SAFETY: null or the slot of the future this call runs in, which
        // outlives it.
        if let Some(slot) = unsafe { get(&self.state().poll_slot).as_ref() } {
            slot.set(std::ptr::null());
        }
        if let Some(own) = self.state().own.take() {
            alloc::untracked(|| drop(own));
        }
    }
}

impl std::fmt::Debug for Frame {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Frame")
            .field("function", &self.meta.name())
            .field("outermost", &get(&self.state().outermost))
            .field("nth", &get(&self.state().nth))
            .finish_non_exhaustive()
    }
}

// SAFETY: a frame is reached only through the generated code of the call
// that declared it, which runs on one thread at a time (a future is polled
// by one thread at a time); holding `&Frame` across `.await` only needs it
// to be `Send`.
unsafe impl Sync for Frame {}

// SAFETY: the thread-specific pointers (`counters`, `thread_fn`) are set only
// by synchronous calls, whose frame never leaves the thread while the call
// runs; an `async fn` frame, which may move, records into rows it owns, and
// its head's `thread_fn` is set anew by each poll, and read only during it
// (see `polled_here`).
unsafe impl Send for Frame {}

/// A call opened by [`Frame::enter`], to be closed by [`Frame::exit`].
#[derive(Debug)]
pub(crate) struct Entry {
    region: Region,
    /// Its GPU region, driver view and pool at entry.
    beside: Beside,
    /// The thread was unwinding already when the call began (a call made by
    /// a destructor), so unwinding at its end is no panic of its own.
    unwinding_at_entry: bool,
}

/// What [`Frame::exit`] hands back.
#[derive(Debug)]
pub(crate) struct Exit {
    pub(crate) stats: RegionStats,
    /// The call's own table, when it wanted one, and which one it is.
    pub(crate) table: Option<(OwnTable, u64)>,
    /// What the call's own table says below its rows.
    pub(crate) facts: CallFacts,
}

/// What a finished call's table says beside its rows.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct CallFacts {
    /// The call ended by a panic of its own.
    pub(crate) panicked: bool,
    /// Thread scope, calls with a table of their own: net bytes that other
    /// threads or tasks left allocated during the call, which its figures
    /// do not count; 0 otherwise.
    pub(crate) others_kept: i64,
    /// The sites serial of the call's own table (see `Frame::site_key`).
    pub(crate) sites_serial: u64,
}

impl Frame {
    #[inline]
    pub(crate) fn new(meta: &'static FnMeta) -> Self {
        Frame {
            head: CallHead {
                counters: Cell::new(std::ptr::null()),
                cells: Cell::new(std::ptr::null()),
                base: Cell::new(0),
                flags: Cell::new(CALL_SLOW),
                mode: Cell::new(CALL_OFF),
                outermost: Cell::new(false),
                turns: Cell::new(0),
                thread_fn: Cell::new(std::ptr::null()),
                start: Cell::new(0),
                saved: Cell::new(0),
                start_allocs: Cell::new(0),
                start_allocated: Cell::new(0),
            },
            meta,
            state: UnsafeCell::new(MaybeUninit::uninit()),
        }
    }

    /// Starts a synchronous call that the kernel did not enter, with
    /// `MEMPROF` on: it can be recursive, and prints once. `timed`: the
    /// `mprof run` timeline times calls with rows (see `grant_fast_entry`).
    #[inline(never)]
    pub(crate) fn enter_recording(&self, timed: bool) {
        self.start_state();
        let meta = self.meta;
        set(
            &self.head.counters,
            alloc::thread_counters().cast::<Counters>(),
        );
        let thread_fn = thread_fn(meta);
        set(&self.state().thread_fn, thread_fn);
        // Names this call as a caller (see `edges`).
        set(&self.head.thread_fn, thread_fn.cast());
        // SAFETY: a non-null aggregate lives as long as this thread.
        match unsafe { thread_fn.as_ref() } {
            Some(t) => {
                let depth = t.depth.get();
                t.depth.set(depth + 1);
                set(&self.state().nested_count, true);
                if depth == 0 {
                    t.renew();
                    set(&self.state().outermost, true);
                    match self.wanted_table() {
                        0 => set(&self.head.cells, t.cells().as_ptr()),
                        nth => self.own_table(nth),
                    }
                    t.target.set(get(&self.head.cells));
                    t.target_serial.set(get(&self.state().sites_serial));
                    if t.tables.get() >= AUTO_CALL_TABLES && tables_per_thread() {
                        // This thread's tables are handed out: the kernel
                        // may enter its calls.
                        set_published(meta, true);
                    }
                } else {
                    set(&self.head.cells, t.target.get());
                    set(&self.state().sites_serial, t.target_serial.get());
                }
            }
            None => {
                set(&self.state().outermost, true);
                self.own_table(self.wanted_table());
            }
        }
        self.open();
        if get(&self.state().nth) == 0 && meta.head.fast.load(Relaxed) == FAST_NONE {
            self.grant_fast_entry(timed);
        }
    }

    /// Starts an `async fn` call: its own rows always, a table to print
    /// under the same rules as a synchronous call.
    #[inline]
    pub(crate) fn enter_async(&self) {
        if !switch_on_entry() {
            return;
        }
        self.start_state();
        self.own_table(self.wanted_table());
        self.open();
        set(&self.state().is_async, true);
        // Its future's slot: for allocation sites, and for its later polls,
        // which find it there (see `polled_here`).
        set(
            &self.state().poll_slot,
            super::polling::register(std::ptr::from_ref(self).cast()),
        );
        // A caller for the rest of this first poll; its cursors put
        // themselves in the thread's chain as they open rows.
        self.polled_here();
    }

    /// An `async fn` call's innermost cursor with a row open, or null.
    pub(super) fn innermost_cursor(&self) -> *const crate::kernel::layout::CursorHead {
        get(&self.state().innermost_cursor)
    }

    /// An `async fn` call polled on this thread: names it as a caller there
    /// by the thread's aggregate of its function (see `calls::edges`), for
    /// the time of the poll, and returns its innermost cursor with a row
    /// open, or null. Only for an entered `async fn` call.
    pub(super) fn polled_here(&self) -> *const crate::kernel::layout::CursorHead {
        // NOTE: an aggregate, not null: the kernel tells callers apart by it
        // and by the row's address, and an `async fn` call's rows are freed
        // at its end, where another function's may be made next.
        set(
            &self.head.thread_fn,
            super::thread::thread_fn(self.meta).cast(),
        );
        self.innermost_cursor()
    }

    /// Whether this `async fn` call's later polls find its frame (in its
    /// future's slot), and so hand its cursors their thread's counters
    /// (see `task::chain`).
    pub(super) fn polls_find_it(&self) -> bool {
        !get(&self.state().poll_slot).is_null()
    }

    /// Names an entered `async fn` call's caller: the row open on the
    /// thread at its first poll (see `calls::edges`).
    pub(crate) fn set_async_caller(&self, caller: Option<(&'static FnMeta, u32)>) {
        set(&self.state().caller, caller);
    }

    /// An `async fn` call's caller, named at its first poll: `Some(None)`
    /// where none was, `None` for a synchronous call.
    pub(super) fn async_caller(&self) -> Option<Option<(&'static FnMeta, u32)>> {
        get(&self.state().is_async).then(|| get(&self.state().caller))
    }

    /// Whether no open call of the function on this thread encloses this
    /// one (it is not a recursion's inner call); `async fn` calls, which
    /// no thread's depth counts, always are. Only once entered.
    pub(crate) fn is_outermost(&self) -> bool {
        get(&self.state().outermost) || !get(&self.state().nested_count)
    }

    fn open(&self) {
        let meta = self.meta;
        let gpu = meta.gpu && crate::gpu::active();
        // Statements have GPU figures where they are cheap (counted device
        // bytes) or asked for (NVML at each statement, microseconds each);
        // otherwise the call's row alone, from NVML at its entry and exit.
        let statements_gpu = gpu && crate::gpu::per_statement();
        set(&self.state().gpu, statements_gpu);
        // PERF: counted device bytes of a thread-scope call stay on the
        // kernel's step, which reads them from this thread's counters.
        let sampled = statements_gpu && !crate::gpu::counted();
        // A framework's pool is read at every statement, by the runtime.
        let pool = meta.gpu && crate::pool::watched();
        set(&self.state().pool, pool);
        let slow = sampled || pool || meta.scope == Scope::Process;
        set(&self.state().slow, slow);
        // The kernel's step takes the thread-scope calls of a known thread
        // that sample no NVML; the runtime's, the rest.
        let flags = if slow || get(&self.head.counters).is_null() {
            CALL_SLOW
        } else if statements_gpu {
            CALL_DEVICE
        } else {
            0
        };
        set(&self.head.flags, flags);
        let mut beside = Beside::open_gpu(gpu, meta.scope == Scope::Process);
        self.row(0).opened();
        let unwinding_at_entry = std::thread::panicking();
        let region = match (meta.scope, self.counters()) {
            (Scope::Thread, Some(t)) => {
                let (start, saved) = open_in(t);
                Region {
                    start,
                    saved,
                    start_allocs: allocs_in(t),
                    start_allocated: allocated_in(t),
                    watch: None,
                }
            }
            _ => Region::open(meta.scope),
        };
        let region_start_allocs = region.start_allocs;
        if meta.scope == Scope::Thread {
            set(&self.head.base, alloc::process_net() - region.start);
        }
        beside.read_after_open(gpu, pool);
        self.state().entry.set(Some(Entry {
            region,
            beside,
            unwinding_at_entry,
        }));
        // Allocation sites read the open rows from the side stack (see
        // `probe::open_rows`): the call's start, and where it records.
        set(&self.head.start_allocs, region_start_allocs);
        set(
            &self.state().sites_generation,
            meta.head.generation.load(Relaxed),
        );
        if crate::settings::get().sites != crate::config::SitesMode::Off {
            alloc::route_to_sites();
        }
    }
    /// Ends the call: records its `fn` row, and hands back its own table if
    /// it has one (see [`OwnTable`]).
    /// Only for a call entered with `MEMPROF` on.
    pub(crate) fn exit(&self) -> Exit {
        let Some(mut entry) = self.state().entry.take() else {
            return Exit {
                stats: RegionStats::default(),
                table: None,
                facts: CallFacts::default(),
            };
        };
        let process_at_entry = get(&self.head.base) + entry.region.start;
        let thread_scope = entry.region.watch.is_none();
        let stats = match (&entry.region.watch, self.counters()) {
            (None, Some(t)) => close_in(
                t,
                entry.region.start,
                entry.region.saved,
                entry.region.start_allocs,
                entry.region.start_allocated,
            ),
            _ => entry.region.close(),
        };
        let own = self.state().own.take();
        let others_kept = if thread_scope && own.is_some() {
            alloc::process_net() - process_at_entry - stats.increment
        } else {
            0
        };
        let facts = CallFacts {
            panicked: std::thread::panicking() && !entry.unwinding_at_entry,
            others_kept,
            sites_serial: get(&self.state().sites_serial),
        };
        if others_kept.unsigned_abs() >= crate::region::OTHERS_NOTED {
            self.meta.saw_others_move();
        }
        let fn_row = self.row(0);
        entry.beside.close(fn_row);
        fn_row.closed(&stats, get(&self.head.base) + stats.end);
        // SAFETY: a non-null aggregate lives as long as this thread.
        let thread_fn = unsafe { get(&self.state().thread_fn).as_ref() };
        if let Some(t) = thread_fn
            && get(&self.state().nested_count)
        {
            t.depth.set(t.depth.get() - 1);
        }
        let table = match own {
            Some(cells) => Some((
                OwnTable {
                    meta: self.meta,
                    cells,
                },
                get(&self.state().nth),
            )),
            None => {
                if let Some(t) = thread_fn
                    && get(&self.state().outermost)
                {
                    t.calls.store(t.calls.load(Relaxed) + 1, Relaxed);
                }
                None
            }
        };
        Exit {
            stats,
            table,
            facts,
        }
    }

    /// The calling thread's aggregate of a synchronous call; null for an
    /// `async fn` call, or none.
    pub(crate) fn thread_fn(&self) -> *const ThreadFn {
        get(&self.state().thread_fn)
    }

    /// Whether the runtime entered the call (a kernel-entered call has no
    /// timeline mark and no first-call work to do).
    #[inline(always)]
    pub(crate) fn is_runtime_entered(&self) -> bool {
        get(&self.head.mode) == CALL_RUNTIME
    }

    /// Whether the call records (it was entered with `MEMPROF` on).
    #[inline]
    pub(crate) fn is_recording(&self) -> bool {
        get(&self.head.mode) != CALL_OFF
    }

    fn start_state(&self) {
        // SAFETY: written once, before any read, by the call that owns the
        // frame; no reference into it exists yet.
        unsafe { (*self.state.get()).write(FrameState::UNSET) };
        set(&self.head.mode, CALL_RUNTIME);
    }

    /// The call's state. Only for a call entered with `MEMPROF` on.
    #[inline(always)]
    pub(crate) fn state(&self) -> &FrameState {
        // SAFETY: written by `start_state` when the call was entered, which
        // every caller of this comes after (statements run inside a call).
        unsafe { &*self.state.get().cast::<FrameState>() }
    }

    /// The rows being recorded into.
    pub(crate) fn cells(&self) -> &[LineCell] {
        // SAFETY: `cells` points at `cell_count` rows of the thread's
        // aggregate, of this call's own table or of the outermost call's,
        // each of which outlives this call.
        unsafe { std::slice::from_raw_parts(get(&self.head.cells), self.meta.cell_count()) }
    }

    /// Row `cell`. The macro numbers cells below `cell_count`.
    #[inline(always)]
    pub(crate) fn row(&self, cell: u32) -> &LineCell {
        self.head.row(cell)
    }

    /// The counters of the thread running the call.
    /// `None` only on a thread past its thread-locals' end.
    #[inline(always)]
    pub(crate) fn counters(&self) -> Option<&ThreadCounters> {
        let mut counters = get(&self.head.counters).cast::<ThreadCounters>();
        if counters as usize == 0 {
            counters = alloc::thread_counters();
            if counters as usize == 0 {
                return None;
            }
        }
        // SAFETY: from this thread's `THREAD`, which lives as long as the
        // thread: set at entry for a synchronous call (which ends on the
        // thread it started on), looked up now for an `async fn` call.
        Some(unsafe { &*counters })
    }
}
