//! Report data: what a call or a whole run measured, and when it is printed.
//!
//! Per-call tables are printed as each outermost call returns, aggregated
//! tables at process exit; [`crate::env`] picks which (`MEMPROF_REPORT`).

use crate::alloc::{self, untracked};
use crate::env::{self, Output, ReportMode};
use crate::probe::{FnMeta, LineCell, Registration};
use std::fmt;
use std::sync::Once;
use std::sync::atomic::Ordering::Relaxed;

/// Figures of one measured expression, in bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct Measurement {
    /// Net change: bytes allocated minus bytes freed.
    pub increment: i64,
    /// Highest rise of the heap above its value at the start.
    pub peak: u64,
    /// Number of allocations (a `realloc` counts as one).
    pub allocations: u64,
    /// Number of deallocations (a `realloc` counts as one).
    pub deallocations: u64,
    /// Net change of GPU memory (see the README's GPU section for what is
    /// counted); `None` without a usable GPU.
    pub gpu_increment: Option<i64>,
    /// Highest GPU memory sampled during the measurement (at its ends and at
    /// the statement boundaries of profiled functions it ran on this thread)
    /// above the start; `None` without a usable GPU.
    pub gpu_peak: Option<u64>,
}

/// Every profiled function, aggregated over all its calls so far.
// NOTE: `to_json` goes through miniserde, not serde_json: serde_json's
// `PartialEq<Value>` impls for integers would be visible to every crate that
// depends on memprof and break type inference in code such as
// `assert_eq!(&*v, &[])` (found by the corpus check).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, miniserde::Serialize)]
pub struct Report {
    /// One entry per `#[profile]` function in the program, in source order.
    pub functions: Vec<FunctionReport>,
}

/// One profiled function's table.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, miniserde::Serialize)]
pub struct FunctionReport {
    /// The function's path, e.g. `quickstart::addition`.
    pub name: String,
    /// The source file, as `file!()` gives it.
    pub file: String,
    /// Number of calls, recursive ones included.
    pub calls: u64,
    /// What the GPU columns show, e.g. `GPU: this process's memory on device
    /// 0 (NVIDIA H100)`; `None` when the table has no GPU columns.
    pub gpu: Option<String>,
    /// One row per source line, from the attribute to the closing brace.
    pub lines: Vec<LineReport>,
}

/// One row of a table.
///
/// The figures are `None` on lines that hold no statement, or whose
/// statements never ran.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, miniserde::Serialize)]
pub struct LineReport {
    /// Source line number.
    pub line: u32,
    /// Heap in use by the process after the line, highest over executions.
    pub mem_usage: Option<u64>,
    /// Sum over executions of bytes allocated minus bytes freed.
    pub increment: Option<i64>,
    /// Highest rise of the heap above its value when the line started.
    pub peak: Option<u64>,
    /// Number of executions.
    pub occurrences: u64,
    /// GPU memory after the line, highest over executions.
    pub gpu_usage: Option<u64>,
    /// Sum over executions of GPU memory after the line minus before.
    pub gpu_increment: Option<i64>,
    /// The source text of the line.
    pub contents: String,
}

impl Report {
    /// The report as a JSON document with the same fields as these structs;
    /// figures that are `None` are `null`.
    pub fn to_json(&self) -> String {
        miniserde::json::to_string(self)
    }

    /// The function whose path is `name`, or ends with `::name`.
    pub fn function(&self, name: &str) -> Option<&FunctionReport> {
        self.functions
            .iter()
            .find(|f| f.name == name || f.name.ends_with(&format!("::{name}")))
    }
}

impl FunctionReport {
    /// The row of source line `line`.
    pub fn line(&self, line: u32) -> Option<&LineReport> {
        self.lines.iter().find(|l| l.line == line)
    }

    /// The first row whose text contains `needle`.
    pub fn line_containing(&self, needle: &str) -> Option<&LineReport> {
        self.lines.iter().find(|l| l.contents.contains(needle))
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let settings = env::config().render;
        for (i, function) in self.functions.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            f.write_str(&crate::render::table(function, true, &settings))?;
        }
        Ok(())
    }
}

impl fmt::Display for FunctionReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&crate::render::table(self, true, &env::config().render))
    }
}

pub(crate) fn function_report(meta: &FnMeta, cells: &[LineCell], calls: u64) -> FunctionReport {
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
            gpu_usage: None,
            gpu_increment: None,
            contents: (*text).to_owned(),
        })
        .collect();
    // Columns go with sampling: a device lost mid-run drops them.
    let gpu = crate::gpu::description();
    for (cell, &row) in cells.iter().zip(meta.cell_rows) {
        let (n, increment, peak, mem) = cell.load();
        let Some(line) = lines.get_mut(row as usize) else {
            continue;
        };
        if n == 0 {
            continue;
        }
        line.occurrences += n;
        line.increment = Some(line.increment.unwrap_or(0) + increment);
        line.peak = Some(line.peak.unwrap_or(0).max(peak));
        line.mem_usage = Some(line.mem_usage.unwrap_or(0).max(mem.max(0) as u64));
        if gpu.is_some()
            && let Some((increment, usage)) = cell.load_gpu()
        {
            line.gpu_increment = Some(line.gpu_increment.unwrap_or(0) + increment);
            line.gpu_usage = Some(line.gpu_usage.unwrap_or(0).max(usage.max(0) as u64));
        }
    }
    let sampled = lines.iter().any(|l| l.gpu_usage.is_some());
    FunctionReport {
        name: meta.name().to_owned(),
        file: meta.file.to_owned(),
        calls,
        gpu: gpu.filter(|_| sampled).map(str::to_owned),
        lines,
    }
}

fn registered() -> Vec<&'static FnMeta> {
    let mut metas: Vec<&'static FnMeta> = inventory::iter::<Registration>
        .into_iter()
        .map(|r| r.0)
        .collect();
    metas.sort_by_key(|m| (m.file, m.first_line, m.name()));
    metas
}

/// Every registered `#[profile]` function, aggregated over all calls so far.
///
/// The `Report` itself is ordinary memory of the caller's; building it leaves
/// no trace in any figure.
pub fn report() -> Report {
    let functions = untracked(|| {
        registered()
            .into_iter()
            .map(|m| (m, m.calls.load(Relaxed)))
            .collect::<Vec<_>>()
    });
    // The result is built counted: it is the caller's to keep and free.
    Report {
        functions: functions
            .into_iter()
            .map(|(m, calls)| function_report(m, m.aggregate, calls))
            .collect(),
    }
}

/// Clears all aggregated figures and call counts.
pub fn reset() {
    untracked(|| {
        for meta in registered() {
            for cell in meta.aggregate {
                cell.clear();
            }
            meta.calls.store(0, Relaxed);
            meta.outer_calls.store(0, Relaxed);
        }
    });
}

/// Under `MEMPROF_REPORT=auto`, this many calls of a function print their own
/// table; later ones only feed the table printed at exit.
pub const AUTO_CALL_TABLES: u64 = 3;

pub(crate) fn call_finished(meta: &'static FnMeta, cells: &[LineCell], nth: u64) {
    if std::thread::panicking() {
        // NOTE: the figures are kept, but printing while unwinding risks a
        // second panic, which would abort the user's program.
        return;
    }
    untracked(|| {
        let config = env::config();
        let print_now = match config.report {
            ReportMode::Call => true,
            ReportMode::Auto => nth <= AUTO_CALL_TABLES,
            ReportMode::Exit | ReportMode::Off => false,
        };
        if matches!(config.report, ReportMode::Auto | ReportMode::Exit) || config.json.is_some() {
            register_exit_hook();
        }
        if !print_now {
            return;
        }
        if !alloc::is_installed() {
            warn_not_installed();
            return;
        }
        let report = function_report(meta, cells, 1);
        let mut text = crate::render::table(&report, false, &config.render);
        if config.report == ReportMode::Auto && nth == AUTO_CALL_TABLES {
            text.push_str(&format!(
                "(memprof: further calls of {} are aggregated into one table at exit; \
                 MEMPROF_REPORT=call prints every call)\n",
                report.name
            ));
        }
        text.push('\n');
        emit(&text);
    });
}

fn register_exit_hook() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        extern "C" fn at_exit() {
            untracked(|| {
                print_exit_tables();
                write_json();
            });
        }
        // SAFETY: `at_exit` is a plain `extern "C" fn` that never unwinds
        // (everything it calls catches panics), as `atexit` requires.
        unsafe {
            libc::atexit(at_exit);
        }
    });
}

fn print_exit_tables() {
    let config = env::config();
    let mut text = String::new();
    for meta in registered() {
        let calls = meta.calls.load(Relaxed);
        let wanted = match config.report {
            ReportMode::Exit => calls > 0,
            ReportMode::Auto => meta.outer_calls.load(Relaxed) > AUTO_CALL_TABLES,
            ReportMode::Call | ReportMode::Off => false,
        };
        if wanted {
            let function = function_report(meta, meta.aggregate, calls);
            text.push_str(&crate::render::table(&function, true, &config.render));
            text.push('\n');
        }
    }
    if !text.is_empty() {
        if !alloc::is_installed() {
            warn_not_installed();
            return;
        }
        emit(&text);
    }
}

/// `MEMPROF_JSON`: the aggregated report, written at exit.
fn write_json() {
    let Some(path) = &env::config().json else {
        return;
    };
    if let Err(err) = std::fs::write(path, report().to_json()) {
        eprintln!(
            "memprof: cannot write MEMPROF_JSON={}: {err}",
            path.display()
        );
    }
}

/// Writes `text` where `MEMPROF_OUTPUT` says: stdout through `print!` (so
/// that libtest's capture sees it), stderr, or a file. Anything that fails
/// falls back to stderr; nothing here panics.
pub(crate) fn emit(text: &str) {
    untracked(|| match &env::config().output {
        Output::Stdout => {
            if std::panic::catch_unwind(|| print!("{text}")).is_err() {
                to_stderr(text);
            }
        }
        Output::Stderr => to_stderr(text),
        Output::File(path) => match output_file(path) {
            Some(file) => {
                use std::io::Write;
                let mut file = file.lock().unwrap_or_else(|e| e.into_inner());
                if file.write_all(text.as_bytes()).is_err() {
                    to_stderr(text);
                }
            }
            None => to_stderr(text),
        },
    });
}

fn to_stderr(text: &str) {
    use std::io::Write;
    let _ = std::io::stderr().write_all(text.as_bytes());
}

/// The `MEMPROF_OUTPUT` file, created at the first write; `None`, after one
/// warning, if it cannot be.
fn output_file(path: &std::path::Path) -> Option<&'static std::sync::Mutex<std::fs::File>> {
    static FILE: std::sync::OnceLock<Option<std::sync::Mutex<std::fs::File>>> =
        std::sync::OnceLock::new();
    FILE.get_or_init(|| match std::fs::File::create(path) {
        Ok(file) => Some(std::sync::Mutex::new(file)),
        Err(err) => {
            eprintln!(
                "memprof: cannot open MEMPROF_OUTPUT={}: {err}; writing to stderr instead",
                path.display()
            );
            None
        }
    })
    .as_ref()
}

pub(crate) fn warn_not_installed() {
    static WARNED: Once = Once::new();
    WARNED.call_once(|| {
        eprintln!(
            "memprof: no memprof allocator is installed, so there are no figures to show. \
             Enable the `global-allocator` feature of `memprof` (on by default), or declare \
             `#[global_allocator] static ALLOC: memprof::Allocator = memprof::Allocator::system();`"
        );
    });
}

pub(crate) fn print_memit(heap_before: i64, stats: &Measurement) {
    untracked(|| {
        if !alloc::is_installed() {
            warn_not_installed();
            return;
        }
        let settings = env::config().render;
        let peak = heap_before.max(0) as u64 + stats.peak;
        // NOTE: "increment" keeps %memit's meaning (peak minus start); the
        // net change, which tables and `measure` call increment, is named.
        let (net, kept) = match stats.increment {
            n if n < 0 => (n.saturating_neg(), "freed"),
            n => (n, "kept"),
        };
        let mut line = format!(
            "peak memory: {}, increment: {} (net {} {kept})",
            crate::render::bytes(peak as i64, &settings),
            crate::render::bytes(stats.peak as i64, &settings),
            crate::render::bytes(net, &settings),
        );
        if let (Some(peak), Some(increment)) = (stats.gpu_peak, stats.gpu_increment) {
            line.push_str(&format!(
                "; GPU peak: +{}, GPU increment: {}",
                crate::render::bytes(peak as i64, &settings),
                crate::render::bytes(increment, &settings),
            ));
        }
        // A blank line after, as after a table, so that a table printed next
        // does not run into it.
        line.push_str("\n\n");
        emit(&line);
    });
}
