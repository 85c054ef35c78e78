//! Report data: each profiled function's rows, summed over its calls on
//! every thread, and their JSON. Printing them is `output`'s.

use crate::alloc::untracked;
use crate::calls::{FnMeta, Registration};
use crate::cells::{LineCell, RowFigures};

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
#[derive(
    Debug, Clone, PartialEq, Eq, serde::Serialize, miniserde::Serialize, miniserde::Deserialize,
)]
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
    /// One row per source line, from the attribute to the closing brace.
    pub lines: Vec<LineReport>,
}

/// One row of a table.
///
/// The figures are `None` on lines that hold no statement, or whose
/// statements never ran.
#[derive(
    Debug, Clone, PartialEq, Eq, serde::Serialize, miniserde::Serialize, miniserde::Deserialize,
)]
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
    /// The source text of the line.
    pub contents: String,
}

impl LineReport {
    /// Another process's executions of this line: sums add, highs take the
    /// higher.
    fn add(&mut self, other: &LineReport) {
        fn sum(a: Option<i64>, b: Option<i64>) -> Option<i64> {
            if a.is_none() && b.is_none() {
                return None;
            }
            Some(a.unwrap_or(0).saturating_add(b.unwrap_or(0)))
        }
        self.mem_usage = self.mem_usage.max(other.mem_usage);
        self.increment = sum(self.increment, other.increment);
        self.peak = self.peak.max(other.peak);
        self.occurrences += other.occurrences;
        fn count(a: Option<u64>, b: Option<u64>) -> Option<u64> {
            match (a, b) {
                (Some(a), Some(b)) => Some(a.saturating_add(b)),
                (a, b) => a.or(b),
            }
        }
        self.allocations = count(self.allocations, other.allocations);
        self.allocated_bytes = count(self.allocated_bytes, other.allocated_bytes);
        self.gpu_usage = self.gpu_usage.max(other.gpu_usage);
        self.gpu_increment = sum(self.gpu_increment, other.gpu_increment);
        self.gpu_peak = self.gpu_peak.max(other.gpu_peak);
        self.gpu_driver_usage = self.gpu_driver_usage.max(other.gpu_driver_usage);
        self.gpu_driver_increment = sum(self.gpu_driver_increment, other.gpu_driver_increment);
    }
}

/// `MEMPROF_JSON`'s document: `to_json`'s, and the run that wrote it.
#[derive(miniserde::Serialize)]
struct RunDocument<'a> {
    schema: u64,
    functions: &'a Vec<FunctionReport>,
    summary: crate::summary::Summary,
    run: &'a str,
}

/// What a run's earlier processes wrote to `MEMPROF_JSON`'s file; the
/// summary is made anew from the sum.
#[derive(miniserde::Deserialize)]
struct EarlierRun {
    schema: u64,
    functions: Vec<FunctionReport>,
    run: String,
}

/// What `to_json` writes: the report's fields after a schema version, so that
/// readers such as `mprof diff` can tell a document they do not understand.
#[derive(miniserde::Serialize)]
struct JsonDocument<'a> {
    schema: u64,
    functions: &'a Vec<FunctionReport>,
    summary: crate::summary::Summary,
}

/// What a snapshot adds to `to_json`'s document (see `live`): when it was
/// taken and of which process.
#[derive(Debug, Clone, Copy, miniserde::Serialize)]
pub(crate) struct SnapshotFacts {
    /// Seconds since the Unix epoch.
    pub(crate) time: f64,
    /// Seconds since the process started.
    pub(crate) uptime: f64,
    pub(crate) pid: u32,
    /// The process's heap now, as `process_heap()` reads it.
    pub(crate) heap: u64,
    /// The highest heap memprof has seen: at a snapshot, or after a
    /// profiled line (the rows' Mem usage). Not the true peak, which no
    /// counter keeps between lines.
    pub(crate) heap_high: u64,
}

/// A snapshot's document: `to_json`'s, then [`SnapshotFacts`]'s fields.
#[derive(miniserde::Serialize)]
struct SnapshotDocument<'a> {
    schema: u64,
    functions: &'a Vec<FunctionReport>,
    summary: crate::summary::Summary,
    time: f64,
    uptime: f64,
    pid: u32,
    heap: u64,
    heap_high: u64,
}

impl Report {
    /// The version of the JSON that `to_json` writes, its `schema` field.
    /// It grows when a field changes meaning or goes away; added fields do
    /// not change it.
    pub const JSON_SCHEMA: u64 = 1;

    /// The report as a JSON document: `schema` ([`Report::JSON_SCHEMA`]),
    /// then the same fields as these structs; figures that are `None` are
    /// `null`.
    ///
    /// This is what `MEMPROF_JSON=path` writes at exit, and what
    /// `mprof diff` compares.
    ///
    /// ```
    /// #[memprof::profile]
    /// fn build() -> Vec<u8> {
    ///     vec![0u8; 100]
    /// }
    ///
    /// let v = build();
    /// let json = memprof::report().to_json();
    /// assert!(json.starts_with(r#"{"schema":1,"functions":[{"name":""#));
    /// assert!(json.contains(r#""calls":1"#));
    /// # drop(v);
    /// ```
    pub fn to_json(&self) -> String {
        miniserde::json::to_string(&JsonDocument {
            schema: Self::JSON_SCHEMA,
            functions: &self.functions,
            summary: self.summary(),
        })
    }

    /// The report in the JSON that `MEMPROF_JSON`'s file holds: `to_json`'s
    /// document with the run that wrote it (see `json_file`).
    pub(crate) fn to_json_of_run(&self, run: &str) -> String {
        miniserde::json::to_string(&RunDocument {
            schema: Self::JSON_SCHEMA,
            functions: &self.functions,
            summary: self.summary(),
            run,
        })
    }

    /// The report as a snapshot of a running process (see `live`).
    pub(crate) fn to_json_snapshot(&self, facts: &SnapshotFacts) -> String {
        miniserde::json::to_string(&SnapshotDocument {
            schema: Self::JSON_SCHEMA,
            functions: &self.functions,
            summary: self.summary(),
            time: facts.time,
            uptime: facts.uptime,
            pid: facts.pid,
            heap: facts.heap,
            heap_high: facts.heap_high,
        })
    }

    /// The highest Mem usage of any row.
    pub(crate) fn highest_mem_usage(&self) -> i64 {
        self.functions
            .iter()
            .flat_map(|f| &f.lines)
            .filter_map(|l| l.mem_usage)
            .max()
            .unwrap_or(0)
    }

    /// The report that `text` holds, if `to_json_of_run` wrote it for `run`.
    pub(crate) fn from_json_of_run(text: &str, run: &str) -> Option<Report> {
        let document: EarlierRun = miniserde::json::from_str(text).ok()?;
        (document.schema == Self::JSON_SCHEMA && document.run == run).then_some(Report {
            functions: document.functions,
        })
    }

    /// Adds another process's report of the same program to this one: a
    /// function in both (same path and file) sums its calls and rows as one
    /// process's calls would; the others are appended.
    pub(crate) fn add(&mut self, other: &Report) {
        for function in &other.functions {
            match self
                .functions
                .iter_mut()
                .find(|f| f.name == function.name && f.file == function.file)
            {
                Some(mine) => mine.add(function),
                None => self.functions.push(function.clone()),
            }
        }
    }

    /// The function whose path is `name`, or ends with `::name`.
    pub fn function(&self, name: &str) -> Option<&FunctionReport> {
        self.functions
            .iter()
            .find(|f| f.name == name || f.name.ends_with(&format!("::{name}")))
    }
}

impl FunctionReport {
    fn add(&mut self, other: &FunctionReport) {
        self.calls += other.calls;
        self.gpu = self.gpu.take().or_else(|| other.gpu.clone());
        self.gpu_driver = self.gpu_driver.take().or_else(|| other.gpu_driver.clone());
        for line in &other.lines {
            match self.lines.iter_mut().find(|l| l.line == line.line) {
                Some(mine) => mine.add(line),
                None => self.lines.push(line.clone()),
            }
        }
    }

    /// The row of source line `line`.
    pub fn line(&self, line: u32) -> Option<&LineReport> {
        self.lines.iter().find(|l| l.line == line)
    }

    /// The first row whose text contains `needle`.
    pub fn line_containing(&self, needle: &str) -> Option<&LineReport> {
        self.lines.iter().find(|l| l.contents.contains(needle))
    }
}

/// One call's table, from the rows it recorded.
pub(crate) fn call_report(meta: &FnMeta, cells: &[LineCell]) -> FunctionReport {
    let rows: Vec<RowFigures> = cells.iter().map(LineCell::read).collect();
    function_report(meta, &rows, 1)
}

/// `meta`'s rows and calls as `report()` shows them: every thread's, and
/// a call running on this thread, if any, with its rows so far.
fn report_of(meta: &'static FnMeta) -> FunctionReport {
    let (mut rows, calls) = meta.totals();
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
    let mut function = function_report(meta, &rows, calls);
    function.running = running;
    function
}

pub(crate) fn function_report(meta: &FnMeta, cells: &[RowFigures], calls: u64) -> FunctionReport {
    let mut lines: Vec<LineReport> = meta
        .rows
        .iter()
        .enumerate()
        .map(|(i, text)| LineReport {
            line: meta.first_line + i as u32,
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
            contents: (*text).to_owned(),
        })
        .collect();
    // Columns go with sampling: a device lost mid-run drops them.
    let gpu = crate::gpu::description();
    let counted = crate::gpu::counted();
    let driver_description = crate::gpu::driver_description();
    for (cell, &row) in cells.iter().zip(meta.cell_rows) {
        let RowFigures {
            occurrences: n,
            increment,
            peak,
            allocations,
            allocated,
            mem_usage: mem,
            gpu: gpu_figures,
            driver,
        } = *cell;
        let Some(line) = lines.get_mut(row as usize) else {
            continue;
        };
        if n == 0 {
            continue;
        }
        line.occurrences += n;
        line.increment = Some(line.increment.unwrap_or(0) + increment);
        line.peak = Some(line.peak.unwrap_or(0).max(peak));
        line.allocations = Some(line.allocations.unwrap_or(0) + allocations);
        line.allocated_bytes = Some(line.allocated_bytes.unwrap_or(0) + allocated);
        line.mem_usage = Some(line.mem_usage.map_or(mem, |m| m.max(mem)));
        if gpu.is_some()
            && let Some((increment, usage, peak)) = gpu_figures
        {
            if counted {
                line.gpu_peak = Some(line.gpu_peak.unwrap_or(0).max(peak));
            }
            line.gpu_increment = Some(line.gpu_increment.unwrap_or(0) + increment);
            line.gpu_usage = Some(line.gpu_usage.unwrap_or(0).max(usage.max(0) as u64));
        }
        if driver_description.is_some()
            && let Some((increment, usage)) = driver
        {
            line.gpu_driver_increment = Some(line.gpu_driver_increment.unwrap_or(0) + increment);
            line.gpu_driver_usage =
                Some(line.gpu_driver_usage.unwrap_or(0).max(usage.max(0) as u64));
        }
    }
    let sampled = lines.iter().any(|l| l.gpu_usage.is_some());
    let driven = lines.iter().any(|l| l.gpu_driver_usage.is_some());
    FunctionReport {
        name: meta.name().to_owned(),
        file: meta.file.to_owned(),
        calls,
        running: 0,
        gpu: gpu.filter(|_| sampled).map(str::to_owned),
        gpu_driver: driver_description.filter(|_| driven).map(str::to_owned),
        lines,
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
        functions: registered()
            .into_iter()
            .map(report_of)
            .filter(|f| f.calls > 0 || f.running > 0)
            .collect(),
    })
}

/// [`report()`] as another thread sees it, for a snapshot: also the
/// functions whose only calls are still running on other threads, with the
/// rows those calls recorded into their thread's figures so far (not yet
/// their `fn` rows, nor their calls, which count when they end).
pub(crate) fn report_so_far() -> Report {
    untracked(|| Report {
        functions: registered()
            .into_iter()
            .map(report_of)
            .filter(|f| f.calls > 0 || f.running > 0 || f.lines.iter().any(|l| l.occurrences > 0))
            .collect(),
    })
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_starts_with_the_schema_version() {
        assert_eq!(
            Report::default().to_json(),
            r#"{"schema":1,"functions":[],"summary":{"functions":[],"top_increment":[],"top_peak":[]}}"#
        );
    }
}
