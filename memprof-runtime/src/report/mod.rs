//! Report data: each profiled function's rows, summed over its calls on
//! every thread, and their JSON. Printing them is `output`'s.

mod add;
mod build;
mod callees;
mod quiet;
mod shape;

use crate::alloc::untracked;
use crate::cells::{DriverFigures, RowFigures};
use crate::gpu::GpuFigures;
use crate::pool::PoolFigures;
use crate::sites::{Site, SitesLeftOut};
#[cfg(unix)]
pub(crate) use build::report_so_far;
pub(crate) use build::{call_report, functions_of, registered};
pub use build::{report, reports_built, reset};
pub use callees::LineCall;

/// Every profiled function, aggregated over all its calls so far.
///
/// Returned by [`report()`]; look a function up with [`Report::function`]
/// and a row with [`FunctionReport::line`] or
/// [`FunctionReport::line_containing`].
///
/// ```
/// #[memprof::profile]
/// fn build() -> Vec<u64> {
///     let v = vec![0u64; 1024];
///     v
/// }
///
/// let v = build();
/// let report = memprof::report();
/// let build = report.function("build").unwrap();
/// assert_eq!(build.calls, 1);
/// let row = build.line_containing("vec![0u64; 1024]").unwrap();
/// assert_eq!((row.increment, row.occurrences), (Some(8192), 1));
/// # drop(v);
/// ```
// NOTE: `to_json` goes through miniserde, not serde_json: serde_json's
// `PartialEq<Value>` impls for integers would be visible to every crate that
// depends on memprof and break type inference in code such as
// `assert_eq!(&*v, &[])` (found by the corpus check).
///
/// A report's memory is outside every figure, as memprof's own bookkeeping
/// is: [`report()`] builds it with counting paused on its thread, and
/// dropping it frees it so too (a clone likewise), so that taking one adds
/// nothing to the line that takes it. What you take out of it (say with
/// `std::mem::take(&mut report.functions)`) is freed counted, as yours;
/// a `FunctionReport` cloned out of it is yours throughout.
#[derive(Debug, Default, PartialEq, Eq, serde::Serialize, miniserde::Serialize)]
pub struct Report {
    /// One entry per `#[profile]` function that has been called (or is
    /// running on the thread that took the report), in source order.
    pub functions: Vec<FunctionReport>,
}

impl Clone for Report {
    fn clone(&self) -> Self {
        untracked(|| Report {
            functions: self.functions.clone(),
        })
    }
}

impl Drop for Report {
    fn drop(&mut self) {
        let functions = std::mem::take(&mut self.functions);
        untracked(|| drop(functions));
    }
}

/// One profiled function's table.
// NOTE: `serde(default)` is the container's because miniserde's derives
// refuse any field attribute but `rename`: a field missing from the JSON
// (`running`, added after schema 1) reads as `Default`'s.
#[derive(
    Debug,
    Clone,
    Default,
    PartialEq,
    Eq,
    serde::Serialize,
    serde::Deserialize,
    miniserde::Serialize,
    miniserde::Deserialize,
)]
#[serde(default)]
pub struct FunctionReport {
    /// The function's path, e.g. `quickstart::addition`.
    pub name: String,
    /// The source file, as `file!()` gives it.
    pub file: String,
    /// Number of finished calls not nested in a call of the same function
    /// on the same thread (recursion counts once).
    pub calls: u64,
    /// Calls still running on the thread that took the report (0 or 1): a
    /// report taken inside a profiled function shows it, with the rows it
    /// has run so far; its `fn` row gets its figures when it ends. Calls
    /// running on other threads, or in an `async fn`, show once they end.
    pub running: u64,
    /// What the GPU columns show, e.g. `GPU: this process's memory on device
    /// 0 (NVIDIA H100)`; `None` when the table has no GPU columns.
    pub gpu: Option<String>,
    /// While device allocations are counted: what the `fn` row's driver
    /// view shows (NVML, read at call entry and exit), e.g. `GPU driver
    /// view: this process's memory on device 0 (NVIDIA H100)`.
    pub gpu_driver: Option<String>,
    /// While a framework's pool is read (`memprof::watch_pool`): what the
    /// `Pool` columns show, e.g. `Pool: cubecl's own figures: ...`.
    pub pool: Option<String>,
    /// One row per source line, from the attribute to the closing brace.
    pub lines: Vec<LineReport>,
    /// With sites recorded: what its sites and Live leave out, where
    /// memprof's tables had no room; `None` when they leave out nothing.
    pub sites_left_out: Option<SitesLeftOut>,
    /// Of `calls`, those that ran as written, quiet (see the reference's
    /// "Calls that move nothing go quiet"): its statements' Occurrences,
    /// Mem usage and Peak leave them out; where their allocations and frees
    /// are placed on the statements (builds with frame pointers), Increment,
    /// Allocs and Allocated hold them.
    pub quiet_calls: u64,
    /// Of `calls`, those that ran long with rows and whose rows then took
    /// their events, as quiet calls' are (see the reference's "Calls that
    /// move nothing go quiet"): its statements' Occurrences, Mem usage and
    /// Peak leave out what they ran after that.
    pub events_calls: u64,
    /// Allocations and frees of quiet calls that no statement's row holds
    /// (a frame the walk did not reach, no debug information); the `fn`
    /// row holds them, as every quiet call whole.
    pub quiet_unplaced: u64,
}

/// One row of a table.
///
/// The figures are `None` on lines that hold no statement, or whose
/// statements never ran.
// NOTE: `serde(default)` as on `FunctionReport`: a JSON row may leave out
// `occurrences` (mprof's tests and hand-written reports do, and mprof
// always read it so).
#[derive(
    Debug,
    Clone,
    Default,
    PartialEq,
    Eq,
    serde::Serialize,
    serde::Deserialize,
    miniserde::Serialize,
    miniserde::Deserialize,
)]
#[serde(default)]
pub struct LineReport {
    /// Source line number.
    pub line: u32,
    /// Heap in use by the process after the line, highest over executions.
    /// In thread scope, the heap when the call began plus what the thread
    /// allocated since, less what it freed: below zero when the thread frees
    /// more memory that other threads allocated during the call than the
    /// heap held when it began (see `README.md`).
    pub mem_usage: Option<i64>,
    /// Sum over executions of bytes allocated minus bytes freed.
    pub increment: Option<i64>,
    /// Highest rise of the heap above its value when the line started.
    pub peak: Option<u64>,
    /// Number of executions.
    pub occurrences: u64,
    /// Allocations made while the line ran, summed over executions (a
    /// `realloc` counts as one); recursion counts once, as for `increment`.
    /// Those of the calling thread (or task), in either scope.
    pub allocations: Option<u64>,
    /// Bytes those allocations asked for, freed or not (a `realloc`'s new
    /// size): the line's churn, dhat's `total_bytes`; same rules as
    /// `allocations`.
    pub allocated_bytes: Option<u64>,
    /// GPU memory after the line, highest over executions.
    pub gpu_usage: Option<u64>,
    /// Sum over executions of GPU memory after the line minus before.
    pub gpu_increment: Option<i64>,
    /// Highest rise of counted device allocations within one execution of
    /// the line; `None` unless device allocations are counted (CUPTI).
    pub gpu_peak: Option<u64>,
    /// `fn` row, while counting: the driver's view (NVML) at call exit,
    /// highest over calls.
    pub gpu_driver_usage: Option<u64>,
    /// `fn` row, while counting: the driver's view at call exit minus entry,
    /// summed over calls.
    pub gpu_driver_increment: Option<i64>,
    /// A framework's pool (`memprof::watch_pool`): bytes its live tensors
    /// held after the line, highest over executions.
    pub pool_allocated: Option<u64>,
    /// Sum over executions of the pool's allocated bytes after the line
    /// minus before.
    pub pool_increment: Option<i64>,
    /// Bytes the framework's pools held from the driver after the line,
    /// highest over executions.
    pub pool_reserved: Option<u64>,
    /// Allocations made while the line ran that are still allocated when
    /// the report is taken, by whichever thread frees the rest (heap
    /// profilers' "in use", the `Live` figure): recorded while sites are
    /// (`MEMPROF_SITES`), exact or scaled from a sample as sites' figures
    /// are; `None` otherwise, and in a report of one call.
    pub in_use_allocations: Option<u64>,
    /// Their bytes.
    pub in_use_bytes: Option<u64>,
    /// The source text of the line.
    pub contents: String,
    /// Where the line's allocations came from, most bytes allocated first
    /// (`MEMPROF_SITES`); `None` when sites are not recorded or the line
    /// never ran.
    pub sites: Option<Vec<Site>>,
    /// The profiled functions called while the line ran, from the call
    /// edges the runtime records (see [`LineCall`]), most bytes allocated
    /// first; empty where it called none. `None` where the line never ran,
    /// and in a call's own table (edges are counted over every call).
    pub calls: Option<Vec<LineCall>>,
    /// The line of the statement whose block holds this one (a `for`, an
    /// `if`, a block; the `fn` line for the body's own statements), whose
    /// figures include this line's; `None` on rows without a statement.
    pub within: Option<u32>,
}

impl LineReport {
    /// Line `line`, holding `contents`, before any execution.
    pub(crate) fn empty(line: u32, contents: String) -> LineReport {
        LineReport {
            line,
            mem_usage: None,
            increment: None,
            peak: None,
            occurrences: 0,
            allocations: None,
            allocated_bytes: None,
            gpu_usage: None,
            gpu_increment: None,
            gpu_peak: None,
            gpu_driver_usage: None,
            gpu_driver_increment: None,
            pool_allocated: None,
            pool_increment: None,
            pool_reserved: None,
            in_use_allocations: None,
            in_use_bytes: None,
            contents,
            sites: None,
            calls: None,
            within: None,
        }
    }

    /// The row's figures as the runtime keeps them.
    fn figures(&self) -> RowFigures {
        let signed = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
        RowFigures {
            occurrences: self.occurrences,
            increment: self.increment.unwrap_or(0),
            peak: self.peak.unwrap_or(0),
            allocations: self.allocations.unwrap_or(0),
            allocated: self.allocated_bytes.unwrap_or(0),
            mem_usage: self.mem_usage.unwrap_or(i64::MIN),
            gpu: self.gpu_usage.map(|usage| GpuFigures {
                increment: self.gpu_increment.unwrap_or(0),
                usage: signed(usage),
                peak: self.gpu_peak.unwrap_or(0),
            }),
            driver: self.gpu_driver_usage.map(|usage| DriverFigures {
                increment: self.gpu_driver_increment.unwrap_or(0),
                usage: signed(usage),
            }),
            pool: self.pool_allocated.map(|allocated| PoolFigures {
                increment: self.pool_increment.unwrap_or(0),
                allocated: signed(allocated),
                reserved: signed(self.pool_reserved.unwrap_or(0)),
            }),
        }
    }

    /// Shows `f`: no figure for a row that never ran; a GPU peak only where
    /// device allocations were `counted`.
    fn set_figures(&mut self, f: &RowFigures, counted: bool) {
        let ran = f.occurrences > 0;
        // A row whose only executions were in quiet calls has the figures
        // their events give.
        let placed = ran || f.allocations > 0 || f.increment != 0;
        let unsigned = |v: i64| v.max(0) as u64;
        self.occurrences = f.occurrences;
        self.increment = placed.then_some(f.increment);
        self.peak = ran.then_some(f.peak);
        self.allocations = placed.then_some(f.allocations);
        self.allocated_bytes = placed.then_some(f.allocated);
        self.mem_usage = ran.then_some(f.mem_usage);
        let gpu = f.gpu.filter(|_| ran);
        self.gpu_increment = gpu.map(|g| g.increment);
        self.gpu_usage = gpu.map(|g| unsigned(g.usage));
        self.gpu_peak = gpu.filter(|_| counted).map(|g| g.peak);
        let driver = f.driver.filter(|_| ran);
        self.gpu_driver_increment = driver.map(|d| d.increment);
        self.gpu_driver_usage = driver.map(|d| unsigned(d.usage));
        let pool = f.pool.filter(|_| ran);
        self.pool_increment = pool.map(|p| p.increment);
        self.pool_allocated = pool.map(|p| unsigned(p.allocated));
        self.pool_reserved = pool.map(|p| unsigned(p.reserved));
    }
}

impl Report {
    /// The highest Mem usage of any row (a snapshot's, see `live`).
    #[cfg(unix)]
    pub(crate) fn highest_mem_usage(&self) -> i64 {
        self.functions
            .iter()
            .flat_map(|f| &f.lines)
            .filter_map(|l| l.mem_usage)
            .max()
            .unwrap_or(0)
    }

    /// The function whose path is `name`, or ends with `::name`.
    pub fn function(&self, name: &str) -> Option<&FunctionReport> {
        self.functions
            .iter()
            .find(|f| f.name == name || f.name.ends_with(&format!("::{name}")))
    }
}

impl FunctionReport {
    /// One call's table of `lines`, with no GPU, pool or sites left out:
    /// the report unit tests build.
    #[cfg(test)]
    pub(crate) fn of_lines(name: &str, file: &str, lines: Vec<LineReport>) -> FunctionReport {
        FunctionReport {
            name: name.to_owned(),
            file: file.to_owned(),
            calls: 1,
            running: 0,
            gpu: None,
            gpu_driver: None,
            pool: None,
            lines,
            sites_left_out: None,
            quiet_calls: 0,
            events_calls: 0,
            quiet_unplaced: 0,
        }
    }
}

#[cfg(test)]
mod tests;
