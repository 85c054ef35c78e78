//! Building reports: each registered function's table from its rows'
//! figures, its calls, its blocks in use and its call edges.

use super::{FunctionReport, LineReport, Report, callees, quiet};
use crate::alloc::untracked;
use crate::calls::{FnMeta, Registration};
use crate::cells::{LineCell, RowFigures};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// One call's table, from the rows it recorded.
/// `sites_serial`: the table's, for its sites (see `CallFacts`).
pub(crate) fn call_report(meta: &FnMeta, cells: &[LineCell], sites_serial: u64) -> FunctionReport {
    let rows: Vec<RowFigures> = cells.iter().map(LineCell::read).collect();
    // One call's table shows no blocks in use (see `sites::for_rows`).
    let in_use = crate::sites::InUse::default();
    function_report(meta, &rows, 1, Some(sites_serial), &in_use)
}

/// What a whole report reads once for all its functions: the blocks in use
/// and the call edges.
struct Shared {
    in_use: crate::sites::InUse,
    edges: crate::calls::edges::EdgeSums,
}

impl Shared {
    fn read() -> Shared {
        Shared {
            in_use: crate::sites::read_in_use(),
            edges: crate::calls::edges::sums(),
        }
    }
}

/// `meta`'s rows and calls as `report()` shows them: every thread's, and
/// a call running on this thread, if any, with its rows so far; its blocks
/// in use and its call edges from `shared`, the report's.
fn report_of(meta: &'static FnMeta, shared: &Shared) -> FunctionReport {
    let (mut rows, calls) = meta.totals();
    let quiet_unplaced = quiet::place(meta, &mut rows);
    let ended = meta.running_at_thread_end();
    let running = ended
        + match crate::calls::open_here(meta) {
            None => 0,
            Some(own) => {
                for (sum, row) in rows.iter_mut().zip(own.iter().flatten()) {
                    sum.add(row);
                }
                1
            }
        };
    let mut function = function_report(meta, &rows, calls, None, &shared.in_use);
    function.running = running;
    (function.quiet_calls, function.events_calls) = meta.quiet_calls();
    function.quiet_unplaced = quiet_unplaced;
    callees::fill(meta, &shared.edges, &mut function.lines);
    function
}

/// `meta`'s table from its rows' figures, and its sites: those of one
/// per-call table (`sites_serial`) or of every call (`None`, with the
/// blocks in use of `in_use`).
fn function_report(
    meta: &FnMeta,
    cells: &[RowFigures],
    calls: u64,
    sites_serial: Option<u64>,
    in_use: &crate::sites::InUse,
) -> FunctionReport {
    let mut lines: Vec<LineReport> = meta
        .rows
        .iter()
        .enumerate()
        .map(|(i, text)| LineReport::empty(meta.first_line + i as u32, (*text).to_owned()))
        .collect();
    // Columns go with sampling: a device lost mid-run drops them.
    let gpu = crate::gpu::description();
    let counted = crate::gpu::counted();
    let driver_description = crate::gpu::driver_description();
    // A line's cells (a statement and the rows that share its line) merge
    // as executions do.
    let mut sums = vec![RowFigures::default(); lines.len()];
    for (cell, &row) in cells.iter().zip(meta.cell_rows) {
        if let Some(sum) = sums.get_mut(row as usize) {
            sum.add(cell);
        }
    }
    for (line, mut sum) in lines.iter_mut().zip(sums) {
        if gpu.is_none() {
            sum.gpu = None;
        }
        if driver_description.is_none() {
            sum.driver = None;
        }
        line.set_figures(&sum, counted);
    }
    let span = crate::sites::Span {
        name: meta.name(),
        file: meta.file,
        first_line: meta.first_line,
        last_line: meta.first_line + meta.rows.len().saturating_sub(1) as u32,
    };
    // Blocks in use from quiet calls, whose origins hold no row of theirs:
    // placed by their stacks, as their events are.
    let went_quiet = sites_serial.is_none() && {
        let (quiet, events) = meta.quiet_calls();
        quiet + events > 0
    };
    let mut quiet_rows = quiet::in_use_rows(meta, &span);
    let sites = crate::sites::for_rows(
        std::ptr::from_ref(meta) as usize,
        meta.head.generation.load(Relaxed),
        sites_serial,
        meta.cell_rows,
        lines.len(),
        &span,
        in_use,
        went_quiet.then_some(&mut quiet_rows),
    );
    for (&row, &parent) in meta.cell_rows.iter().zip(meta.cell_parents) {
        if let Some(line) = lines.get_mut(row as usize)
            && parent != crate::kernel::layout::NO_CELL
        {
            line.within = Some(meta.first_line + parent);
        }
    }
    for (line, sites) in lines.iter_mut().zip(sites.into_iter().flatten()) {
        // A row that ran, loud or quiet (see `set_figures`).
        if line.increment.is_none() {
            continue;
        }
        // A line's in-use figures are its sites': every recorded block
        // has a stack.
        if sites_serial.is_none() {
            line.in_use_allocations = Some(sites.iter().filter_map(|s| s.in_use_allocations).sum());
            line.in_use_bytes = Some(sites.iter().filter_map(|s| s.in_use_bytes).sum());
        }
        line.sites = Some(sites);
    }
    let sampled = lines.iter().any(|l| l.gpu_usage.is_some());
    let driven = lines.iter().any(|l| l.gpu_driver_usage.is_some());
    let pooled = lines.iter().any(|l| l.pool_allocated.is_some());
    FunctionReport {
        name: meta.name().to_owned(),
        file: meta.file.to_owned(),
        calls,
        running: 0,
        gpu: gpu.filter(|_| sampled).map(str::to_owned),
        gpu_driver: driver_description.filter(|_| driven).map(str::to_owned),
        pool: pooled.then(crate::pool::description).flatten(),
        lines,
        sites_left_out: crate::sites::left_out_of(std::ptr::from_ref(meta) as usize),
        quiet_calls: 0,
        events_calls: 0,
        quiet_unplaced: 0,
    }
}

pub(crate) fn registered() -> Vec<&'static FnMeta> {
    let mut metas: Vec<&'static FnMeta> = inventory::iter::<Registration>
        .into_iter()
        .map(|r| r.0)
        .collect();
    metas.sort_by_key(|m| (m.file, m.first_line, m.name()));
    metas
}

/// Every `#[profile]` function called so far, aggregated over its calls;
/// functions never called are left out.
///
/// The `Report` is the caller's to keep, and its memory counts in no figure,
/// nor does the work of building it: taking one leaves the line that takes
/// it, and the function around it, as they were (see [`Report`]). A call
/// still running on this thread (the one that takes the report, say) is in
/// it as [`FunctionReport::running`], with the rows it has run so far. With
/// `MEMPROF_REPORT=off` nothing is printed and this is the only way to the
/// figures.
///
/// ```
/// #[memprof::profile]
/// fn grow(n: usize) -> usize {
///     let v = vec![0u8; n];
///     v.len()
/// }
///
/// grow(1000);
/// grow(3000);
/// let report = memprof::report();
/// let grow = report.function("grow").unwrap();
/// assert_eq!(grow.calls, 2);
/// // The row of `let v`, over both calls: 4,000 bytes allocated, and freed
/// // at the end of the call, not on that line.
/// let row = grow.line_containing("let v").unwrap();
/// assert_eq!((row.increment, row.peak, row.occurrences), (Some(4000), Some(3000), 2));
/// ```
pub fn report() -> Report {
    untracked(|| Report {
        functions: functions_of(&registered())
            .into_iter()
            .map(|(_, f)| f)
            .collect(),
    })
}

/// [`report()`] as another thread sees it, for a snapshot: also the
/// functions whose only calls are still running on other threads, with the
/// rows those calls recorded into their thread's figures so far (not yet
/// their `fn` rows, nor their calls, which count when they end).
#[cfg(unix)]
pub(crate) fn report_so_far() -> Report {
    untracked(|| {
        let shared = Shared::read();
        Report {
            functions: registered()
                .into_iter()
                .map(|meta| report_of(meta, &shared))
                .filter(|f| {
                    f.calls > 0 || f.running > 0 || f.lines.iter().any(|l| l.occurrences > 0)
                })
                .collect(),
        }
    })
}

/// Whole reports built so far in this process (see [`reports_built`]).
static BUILT: AtomicU64 = AtomicU64::new(0);

/// The report of `metas`' functions that ran, each with its function: what
/// [`report`] holds.
pub(crate) fn functions_of(metas: &[&'static FnMeta]) -> Vec<(&'static FnMeta, FunctionReport)> {
    BUILT.fetch_add(1, Relaxed);
    let shared = Shared::read();
    metas
        .iter()
        .map(|&meta| (meta, report_of(meta, &shared)))
        .filter(|(_, f)| f.calls > 0 || f.running > 0)
        .collect()
}

/// How many whole reports this process has built: the exit hook builds one
/// for its tables, its summary and `MEMPROF_JSON` (for a test to count).
pub fn reports_built() -> u64 {
    BUILT.load(Relaxed)
}

/// Clears all aggregated figures and call counts, for example between the
/// phases of a program that are reported apart.
///
/// ```
/// #[memprof::profile]
/// fn work() -> usize {
///     let v = vec![0u8; 64];
///     v.len()
/// }
///
/// work();
/// assert_eq!(memprof::report().function("work").unwrap().calls, 1);
/// memprof::reset();
/// // No calls since: left out of the report.
/// assert!(memprof::report().function("work").is_none());
/// ```
pub fn reset() {
    untracked(|| {
        for meta in registered() {
            meta.clear();
        }
    });
}
