//! What the macro emits for each profiled function ([`FnMeta`]), and the
//! `MEMPROF=on|off` switch read at a call's entry.

use crate::cells::{LineCell, RowFigures};
use crate::config::ReportMode;
use crate::kernel::layout::{FAST_NONE, FnHead, ThreadFnHead, WITH_ROWS, WITH_ROWS_AGAIN};
use crate::region::Scope;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU32, AtomicU64, Ordering::Relaxed};

/// Static description of one `#[profile]` function, emitted by the macro.
///
/// Written only on slow paths: a call's fast path reads it and writes
/// nothing here, so threads calling one function never share a written
/// cache line.
#[derive(Debug)]
#[repr(C)]
pub struct FnMeta {
    /// What the kernel's call entry reads: the fast-entry permit, the id and
    /// the generation.
    pub(crate) head: FnHead,
    path: fn() -> &'static str,
    pub(crate) file: &'static str,
    /// Source line of the first table row (the attribute).
    pub(crate) first_line: u32,
    /// The table's rows: source text from the attribute to the closing brace.
    pub(crate) rows: &'static [&'static str],
    /// For each cell, the row it reports on. Cell 0 is the `fn` line.
    pub(crate) cell_rows: &'static [u32],
    /// For each cell, the row of the statement whose block holds it, whose
    /// figures include its own (`u32::MAX` for none); empty where not
    /// given.
    pub(crate) cell_parents: &'static [u32],
    /// Figures of the threads that have ended, folded in as each ends.
    pub(crate) retired: &'static [LineCell],
    pub(crate) scope: Scope,
    /// Highest rise a call may reach (`limit`); `u64::MAX` for none.
    pub(crate) peak_limit: u64,
    /// Net bytes a call may leave allocated (`max_retained`); `u64::MAX`
    /// for none.
    pub(crate) retained_limit: u64,
    /// Whether calls sample GPU memory (`#[profile(gpu = false)]` turns it
    /// off).
    pub(crate) gpu: bool,
    /// Per-call tables handed out so far (`MEMPROF_REPORT=auto`).
    pub(crate) tables: AtomicU64,
    /// Outermost calls made by threads that have ended.
    pub(crate) retired_calls: AtomicU64,
    /// Of those, the calls that ran quiet (see `kernel::quiet`).
    pub(crate) retired_quiet_calls: AtomicU64,
    /// And those whose rows took their events part way (see
    /// `calls::rows_events`).
    pub(crate) retired_events_calls: AtomicU64,
    /// Calls still running when their thread ended: the process exited
    /// from inside them (`std::process::exit` runs the calling thread's
    /// destructors). Their rows so far are in `retired`.
    pub(crate) retired_running: AtomicU64,
    /// Some call with a table of its own saw other threads or tasks change
    /// the process's heap while it ran, by 1 KiB or more.
    others_moved: AtomicBool,
    /// The live threads' aggregates; also serializes folding an ending
    /// thread's figures into `retired`.
    pub(crate) threads: Mutex<Vec<ThreadFnPtr>>,
}

/// A live thread's aggregate of one function, as listed in its [`FnMeta`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ThreadFnPtr(pub(crate) *const ThreadFnHead);

// SAFETY: the pointee is shared only through its atomics (see `ThreadFn`),
// and is freed only after being removed from the list under its lock.
unsafe impl Send for ThreadFnPtr {}

impl FnMeta {
    /// Describes a profiled function. Called in a `static` by generated code;
    /// `cells` holds one row per cell, for the figures of ended threads.
    #[allow(clippy::too_many_arguments)]
    pub const fn new(
        path: fn() -> &'static str,
        file: &'static str,
        first_line: u32,
        rows: &'static [&'static str],
        cell_rows: &'static [u32],
        cells: &'static [LineCell],
        scope: Scope,
    ) -> Self {
        FnMeta {
            head: FnHead {
                fast: AtomicU8::new(FAST_NONE),
                id: AtomicU32::new(0),
                generation: AtomicU64::new(0),
                quiet: AtomicU8::new(WITH_ROWS),
            },
            path,
            file,
            first_line,
            rows,
            cell_rows,
            cell_parents: &[],
            retired: cells,
            scope,
            peak_limit: u64::MAX,
            retained_limit: u64::MAX,
            gpu: true,
            tables: AtomicU64::new(0),
            retired_calls: AtomicU64::new(0),
            retired_quiet_calls: AtomicU64::new(0),
            retired_events_calls: AtomicU64::new(0),
            retired_running: AtomicU64::new(0),
            others_moved: AtomicBool::new(false),
            threads: Mutex::new(Vec::new()),
        }
    }

    /// Sets the memory budgets of each call: its peak, and the net bytes it
    /// leaves allocated. `u64::MAX` means none.
    pub const fn with_limits(mut self, peak: u64, retained: u64) -> Self {
        self.peak_limit = peak;
        self.retained_limit = retained;
        self
    }

    /// Names, for each cell, the row of the statement whose block holds it
    /// (`u32::MAX` for none): what the summary's `[in line N]` reads.
    pub const fn with_parents(mut self, parents: &'static [u32]) -> Self {
        self.cell_parents = parents;
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

    /// The line of the `fn` keyword: the `fn` row's.
    pub(crate) fn fn_line(&self) -> u32 {
        self.first_line + self.cell_rows[0]
    }

    /// Number of cells: the `fn` row and each probed statement and scope end.
    pub(crate) fn cell_count(&self) -> usize {
        self.cell_rows.len()
    }

    /// Notes that a call saw other threads or tasks change the process's
    /// heap while it ran.
    pub(crate) fn saw_others_move(&self) {
        if !self.others_moved.load(Relaxed) {
            self.others_moved.store(true, Relaxed);
        }
    }

    /// Whether other threads or tasks may have changed the process's heap
    /// during some call since the last `reset`: a call with a table of its
    /// own saw them, or the process has run other allocating threads, which
    /// a call recorded straight into the aggregate cannot rule out.
    pub(crate) fn others_may_have_moved(&self) -> bool {
        self.others_moved.load(Relaxed) || crate::alloc::slots_in_use() > 1
    }

    pub(crate) fn has_budget(&self) -> bool {
        self.peak_limit != u64::MAX || self.retained_limit != u64::MAX
    }

    /// Every thread's figures together, and the outermost calls: what
    /// `report()` shows. Consistent row by row while calls run.
    pub(crate) fn totals(&self) -> (Vec<RowFigures>, u64) {
        let threads = self.threads.lock().unwrap_or_else(|e| e.into_inner());
        let mut rows: Vec<RowFigures> = self.retired.iter().map(LineCell::read).collect();
        let mut calls = self.retired_calls.load(Relaxed);
        let generation = self.head.generation.load(Relaxed);
        for thread in threads.iter() {
            // SAFETY: listed aggregates are alive while the lock is held.
            let thread = unsafe { &*thread.0 };
            if thread.generation.load(Relaxed) != generation {
                continue;
            }
            calls += thread.calls.load(Relaxed);
            // SAFETY: an aggregate's head leads to its rows, one per cell.
            let cells = unsafe { std::slice::from_raw_parts(thread.cells, self.cell_count()) };
            for (sum, cell) in rows.iter_mut().zip(cells) {
                sum.add(&cell.read());
            }
        }
        (rows, calls)
    }

    /// Of the outermost calls [`Self::totals`] counts, those that ran
    /// quiet (see `kernel::quiet`), and those whose rows took their events
    /// part way (see `calls::rows_events`).
    pub(crate) fn quiet_calls(&self) -> (u64, u64) {
        let threads = self.threads.lock().unwrap_or_else(|e| e.into_inner());
        let generation = self.head.generation.load(Relaxed);
        let mut quiet = self.retired_quiet_calls.load(Relaxed);
        let mut events = self.retired_events_calls.load(Relaxed);
        for thread in threads.iter() {
            // SAFETY: listed aggregates are alive while the lock is held.
            let thread = unsafe { &*thread.0 };
            if thread.generation.load(Relaxed) == generation {
                quiet += thread.quiet_calls.load(Relaxed);
                events += thread.events_calls.load(Relaxed);
            }
        }
        (quiet, events)
    }

    /// The allocations and frees of this function's quiet calls (see
    /// `quiet_events`): those its live aggregates of this generation keep,
    /// and the rest.
    pub(crate) fn quiet_events(&self) -> Vec<(Box<[usize]>, crate::quiet_events::Tally)> {
        let threads = self.threads.lock().unwrap_or_else(|e| e.into_inner());
        let generation = self.head.generation.load(Relaxed);
        let mut events = crate::quiet_events::of(&self.head);
        for thread in threads.iter() {
            // SAFETY: listed aggregates are alive while the lock is held.
            let thread = unsafe { &*thread.0 };
            if thread.generation.load(Relaxed) == generation {
                events.extend(crate::quiet_events::in_slots_of(thread));
            }
        }
        events
    }

    /// Calls that were still running when their thread ended (see
    /// `retired_running`).
    pub(crate) fn running_at_thread_end(&self) -> u64 {
        self.retired_running.load(Relaxed)
    }

    /// Sends later calls through the runtime's entry, which decides again
    /// whether the kernel may enter them (`memprof::watch_pool`).
    pub(crate) fn withdraw_fast_entry(&self) {
        self.head.fast.store(FAST_NONE, Relaxed);
    }

    /// Clears every figure and call count (`memprof::reset`). Live threads'
    /// aggregates are left to their owners (see `generation`), so that only
    /// a cell's owner ever writes it.
    pub(crate) fn clear(&self) {
        let _threads = self.threads.lock().unwrap_or_else(|e| e.into_inner());
        self.retired.iter().for_each(LineCell::clear);
        self.retired_calls.store(0, Relaxed);
        self.retired_quiet_calls.store(0, Relaxed);
        self.retired_events_calls.store(0, Relaxed);
        crate::quiet_events::forget(&self.head);
        self.retired_running.store(0, Relaxed);
        self.others_moved.store(false, Relaxed);
        self.tables.store(0, Relaxed);
        // Tables are to be handed out again: calls take the runtime's entry.
        self.head.fast.store(FAST_NONE, Relaxed);
        self.head.quiet.store(first_quiet_state(), Relaxed);
        self.head.generation.fetch_add(1, Relaxed);
    }
}

/// Every profiled function's list of live aggregates, locked, so that no
/// thread is inside one (adding, removing or summing aggregates) while the
/// process forks: taken before `fork`, dropped after it, in the parent and
/// in the child alike (see `crate::fork`).
#[cfg(unix)]
pub(crate) struct ListsHeldForFork(
    Vec<(
        &'static FnMeta,
        std::sync::MutexGuard<'static, Vec<ThreadFnPtr>>,
    )>,
);

#[cfg(unix)]
impl ListsHeldForFork {
    /// Locks every list, in registration order. No thread holds one list
    /// while it waits for another, so this cannot deadlock.
    pub(crate) fn lock() -> Self {
        ListsHeldForFork(
            inventory::iter::<Registration>
                .into_iter()
                .map(|r| {
                    let guard = r.0.threads.lock().unwrap_or_else(|e| e.into_inner());
                    (r.0, guard)
                })
                .collect(),
        )
    }

    /// In the child: the threads that own the listed aggregates other than
    /// the calling thread's are gone, and a row one was writing as the
    /// process forked would make every later sum wait for it forever. Ends
    /// those writes (the calling thread was making none: it was forking).
    pub(crate) fn end_lost_writes(&self) {
        for (meta, threads) in &self.0 {
            for thread in threads.iter() {
                // SAFETY: listed aggregates are alive while the lock is held,
                // and an aggregate's head leads to its rows, one per cell.
                let cells =
                    unsafe { std::slice::from_raw_parts((*thread.0).cells, meta.cell_count()) };
                cells.iter().for_each(LineCell::end_lost_write);
            }
        }
    }
}

/// Registration of a profiled function, collected with `inventory`.
#[derive(Debug)]
pub struct Registration(pub &'static FnMeta);

inventory::collect!(Registration);

// ---- the run-time switch ------------------------------------------------------

const SWITCH_UNREAD: u8 = 0;
const SWITCH_ON: u8 = 1;
const SWITCH_OFF: u8 = 2;

/// `MEMPROF=on|off`, read at the first profiled call.
static SWITCH: AtomicU8 = AtomicU8::new(SWITCH_UNREAD);

/// Whether `MEMPROF=off` was read: the call runs the function's body as
/// written, which the macro keeps beside the instrumented one.
///
/// PERF: one load and a test, in unoptimized builds too. Before the first
/// call has read the switch this says no, and that call reads it.
#[inline(always)]
pub fn is_off() -> bool {
    crate::kernel::thread::load_relaxed(&SWITCH) == SWITCH_OFF
}

/// Where the process's report at exit stands: [`RUNNING`] until the exit
/// hook takes it ([`TAKEN`]); [`STALE`] if a call ends after that (an
/// `atexit` handler of the program's that runs later), so that
/// `MEMPROF_JSON`'s write builds it anew; [`WRITTEN`] once `MEMPROF_JSON`
/// is written, after which a call that ends writes it again. From
/// [`TAKEN`] on, every call takes the runtime's way in and out, which
/// reports its end here.
static EXIT_REPORT: AtomicU8 = AtomicU8::new(RUNNING);
const RUNNING: u8 = 0;
const TAKEN: u8 = 1;
const STALE: u8 = 2;
const WRITTEN: u8 = 3;

/// The exit hook took the report of `metas`' functions: every later call
/// goes through the runtime (see [`EXIT_REPORT`]), withdrawing each
/// function's fast entry.
pub(crate) fn exit_report_taken(metas: &[&'static FnMeta]) {
    EXIT_REPORT.store(TAKEN, Relaxed);
    for meta in metas {
        meta.head.fast.store(FAST_NONE, Relaxed);
    }
}

/// A profiled call ended: after the exit hook took the report, that report
/// is stale. Returns whether `MEMPROF_JSON` was written already, and so is
/// to be written again.
pub(crate) fn call_ended_at_exit() -> bool {
    match EXIT_REPORT.load(Relaxed) {
        RUNNING | STALE => false,
        TAKEN => {
            let _ = EXIT_REPORT.compare_exchange(TAKEN, STALE, Relaxed, Relaxed);
            false
        }
        _ => true,
    }
}

/// Whether a call ended since the exit hook took the report.
pub(crate) fn exit_report_stale() -> bool {
    EXIT_REPORT.load(Relaxed) == STALE
}

/// `MEMPROF_JSON` is written at exit (see [`EXIT_REPORT`]).
pub(crate) fn exit_report_written() {
    EXIT_REPORT.store(WRITTEN, Relaxed);
}

/// Whether the exit hook took the report already.
pub(crate) fn exit_report_taken_already() -> bool {
    EXIT_REPORT.load(Relaxed) != RUNNING
}

/// Reads the switch on a call's entry.
#[inline]
pub(crate) fn switch_on_entry() -> bool {
    match SWITCH.load(Relaxed) {
        SWITCH_ON => true,
        SWITCH_OFF => false,
        _ => read_switch(),
    }
}

/// `MEMPROF_REPORT=call`: every outermost call wants a table of its own.
/// Read with the switch, so a call's entry need not ask the settings.
static EVERY_CALL: AtomicBool = AtomicBool::new(false);

#[cold]
fn read_switch() -> bool {
    let settings = crate::settings::get();
    EVERY_CALL.store(settings.report == ReportMode::Call, Relaxed);
    let on = settings.enabled;
    SWITCH.store(if on { SWITCH_ON } else { SWITCH_OFF }, Relaxed);
    on
}

/// Whether every outermost call prints its own table; valid once a call has
/// read the switch.
#[inline]
pub(crate) fn table_every_call() -> bool {
    EVERY_CALL.load(Relaxed)
}

/// Whether a function's per-call tables (the first calls under `auto`) are
/// counted per thread rather than per process: in a test binary, where
/// libtest runs each test on a thread of its own, so that the tables a
/// test shows do not depend on which tests ran before it.
pub(crate) fn tables_per_thread() -> bool {
    let settings = crate::settings::get();
    settings.test_binary && settings.report == ReportMode::Auto
}

/// Where a function's calls start: with rows, going quiet once they move
/// nothing, unless `MEMPROF_QUIET=off` keeps every call's rows.
pub(crate) fn first_quiet_state() -> u8 {
    if crate::settings::get().quiet {
        WITH_ROWS
    } else {
        WITH_ROWS_AGAIN
    }
}
