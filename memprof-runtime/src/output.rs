//! When tables are printed (where the text goes is `sink`'s): a finished call's own table, the
//! aggregated tables and `MEMPROF_JSON` at exit, and `memit!`'s line.

use crate::alloc::{self, untracked};
use crate::calls::{AUTO_CALL_TABLES, CallFacts, FnMeta};
use crate::cells::LineCell;
use crate::config::{RenderSettings, ReportMode};
use crate::measure::{MeasureGuard, Measurement};
use crate::region::{OTHERS_NOTED, Scope};
use crate::report::{FunctionReport, Report, call_report, functions_of, registered, report};
use crate::sink::emit;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Mutex, Once};

/// Prints a finished call's own table, if the report mode wants it, with
/// the note under it and its title marked if the call panicked.
pub(crate) fn call_finished(
    meta: &'static FnMeta,
    cells: &[LineCell],
    nth: u64,
    facts: &CallFacts,
) {
    let print = || print_call(meta, cells, nth, facts);
    if std::thread::panicking() {
        // NOTE: a panic escaping a destructor while unwinding would abort
        // the user's program: whatever goes wrong here is dropped.
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(print));
    } else {
        print();
    }
}

fn print_call(meta: &'static FnMeta, cells: &[LineCell], nth: u64, facts: &CallFacts) {
    untracked(|| {
        let config = crate::settings::get();
        let print_now = match config.report {
            ReportMode::Call => true,
            // NOTE: 0 is no table: an `async fn` call records into rows of
            // its own even when it prints none (see `Frame::enter_async`).
            ReportMode::Auto => (1..=AUTO_CALL_TABLES).contains(&nth),
            ReportMode::Exit | ReportMode::Off => false,
        };
        if !print_now {
            return;
        }
        if !alloc::is_installed() {
            warn_not_installed();
            return;
        }
        let report = call_report(meta, cells, facts.sites_serial);
        let mut text = crate::render::table(&report, false, &config.render);
        if facts.panicked {
            crate::render::mark_panicked(&mut text);
        }
        text.push_str(&crate::render::call_note(
            meta.scope,
            &report,
            facts,
            &config.render,
        ));
        if config.report == ReportMode::Auto && nth == AUTO_CALL_TABLES {
            text.push_str(&if config.test_binary {
                format!(
                    "(memprof: further calls of {} on this test's thread are not printed in a \
                     test binary; MEMPROF_REPORT=exit prints them aggregated at exit, \
                     MEMPROF_REPORT=call each)\n",
                    crate::text::printable(&report.name)
                )
            } else {
                // NOTE: conditional, as it is not known yet whether more
                // calls come: the exit table is printed only if they do.
                format!(
                    "(memprof: no more tables of {} per call: any further calls are \
                     aggregated into one table at exit; MEMPROF_REPORT=call prints every call)\n",
                    crate::text::printable(&report.name)
                )
            });
        }
        text.push('\n');
        if !hold(&text) {
            emit(&text);
        }
    });
}

// ---- tables held back while a call with a budget runs (test binaries) ---------

/// In a test binary, the tables of calls made during a call with a budget
/// are held back until it ends, so that a failed budget's message (with the
/// failing call's table) comes first in the test's output, and the tables of
/// the calls it made after it.
struct Held {
    /// Calls with a budget open on this thread.
    open: std::cell::Cell<u32>,
    /// The tables held back so far.
    text: std::cell::RefCell<String>,
}

thread_local! {
    static HELD: Held = const {
        Held {
            open: std::cell::Cell::new(0),
            text: std::cell::RefCell::new(String::new()),
        }
    };
}

/// A synchronous call with a budget starts: in a test binary, tables
/// printed until it ends are held back. Returns whether they are, for
/// [`budgeted_call_ended`].
pub(crate) fn budgeted_call_started() -> bool {
    if !crate::settings::get().test_binary {
        return false;
    }
    HELD.try_with(|held| held.open.set(held.open.get() + 1))
        .is_ok()
}

/// The call [`budgeted_call_started`] held tables for ends: the tables held
/// back, once no call with a budget is open on this thread any more (or
/// when the call failed, `failed`), for its message or to print.
pub(crate) fn budgeted_call_ended(failed: bool) -> String {
    untracked(|| {
        HELD.try_with(|held| {
            let open = held.open.get().saturating_sub(1);
            held.open.set(open);
            if open == 0 || failed {
                std::mem::take(&mut *held.text.borrow_mut())
            } else {
                String::new()
            }
        })
        .unwrap_or_default()
    })
}

/// Holds `text` back if a call with a budget is open on this thread.
fn hold(text: &str) -> bool {
    HELD.try_with(|held| {
        if held.open.get() == 0 {
            return false;
        }
        held.text.borrow_mut().push_str(text);
        true
    })
    .unwrap_or(false)
}

/// A failed budget's message, followed by the tables held back during the
/// call (see [`Held`]).
pub(crate) fn with_held(message: String, held: &str) -> String {
    if held.is_empty() {
        return message;
    }
    untracked(|| {
        format!(
            "{message}\n(memprof: the tables of calls made during it, held back so that \
             this one comes first:)\n\n{held}"
        )
    })
}

/// Arranges for the exit tables and `MEMPROF_JSON` at the first profiled
/// call; later calls pay one load.
#[inline]
pub(crate) fn at_first_call() {
    static REGISTERED: AtomicBool = AtomicBool::new(false);
    if !REGISTERED.load(Relaxed) {
        REGISTERED.store(true, Relaxed);
        register_exit_hook();
    }
}

fn register_exit_hook() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        extern "C" fn at_exit() {
            crate::sink::exiting();
            untracked(|| {
                crate::live::at_exit();
                report_at_exit();
            });
        }
        // SAFETY: `at_exit` is a plain `extern "C" fn` that never unwinds
        // (everything it calls catches panics), as `atexit` requires.
        unsafe {
            libc::atexit(at_exit);
        }
        #[cfg(unix)]
        crate::fork::register();
        crate::live::start();
    });
}

/// The report at exit, taken once by the exit hook for its tables, its
/// summary and `MEMPROF_JSON`, which is written later where it waits for
/// the program's own exit handlers (see [`JSON_AFTER_EXIT_HANDLERS`]).
static EXIT_REPORT: Mutex<Option<Report>> = Mutex::new(None);

/// The exit hook's work: the exit tables and summary, and `MEMPROF_JSON`,
/// from one report.
fn report_at_exit() {
    let config = crate::settings::get();
    // NOTE: libtest captures a test's output to show it if the test fails;
    // text printed at exit, after its summary, it cannot capture. So under
    // `auto`, a test binary prints no exit tables.
    let auto_in_test = config.report == ReportMode::Auto && config.test_binary;
    let tables = !matches!(config.report, ReportMode::Call | ReportMode::Off) && !auto_in_test;
    if !tables && config.json.is_none() && config.pprof.is_none() {
        return;
    }
    let metas = registered();
    let (ran, functions): (Vec<_>, Vec<_>) = functions_of(&metas).into_iter().unzip();
    crate::calls::exit_report_taken(&metas);
    let report = Report { functions };
    if tables {
        print_exit_tables(&ran, &report);
    }
    if JSON_AFTER_EXIT_HANDLERS {
        *EXIT_REPORT.lock().unwrap_or_else(|e| e.into_inner()) = Some(report);
    } else {
        write_json(&report);
    }
}

/// The tables of `report`'s functions (`metas`, in the same order) that
/// the report mode wants at exit, then the summary.
fn print_exit_tables(metas: &[&'static FnMeta], report: &Report) {
    let config = crate::settings::get();
    let mut text = String::new();
    for (meta, function) in metas.iter().zip(&report.functions) {
        // A call the process exited from has no table of its own.
        let wanted = function.running > 0
            || match config.report {
                ReportMode::Exit => function.calls > 0,
                _ => function.calls > AUTO_CALL_TABLES,
            };
        if wanted {
            text.push_str(&crate::render::table(function, true, &config.render));
            text.push_str(&freed_more_note(meta, function, &config.render));
            text.push('\n');
        }
    }
    if !text.is_empty() {
        if !alloc::is_installed() {
            warn_not_installed();
            return;
        }
        // The heavy lines at a glance, after the tables they come from: every
        // function that ran, those printed per call included (none when the
        // process exited from inside its only calls).
        let summary = report.summary();
        if !summary.functions.is_empty() {
            text.push_str(&crate::render::summary(&summary, &config.render));
        }
        emit(&text);
    }
}

/// The line under a thread-scope table whose calls freed more than their
/// thread allocated in them, while other threads or tasks may have changed
/// the heap; empty otherwise.
fn freed_more_note(meta: &FnMeta, function: &FunctionReport, settings: &RenderSettings) -> String {
    match meta.scope {
        Scope::Thread => {
            crate::render::freed_more_note(function, meta.others_may_have_moved(), settings)
                .unwrap_or_default()
        }
        Scope::Process => String::new(),
    }
}

/// Whether `MEMPROF_JSON` is written after every `atexit` handler, from
/// `.fini_array`, rather than from memprof's own handler.
const JSON_AFTER_EXIT_HANDLERS: bool = cfg!(target_os = "linux");

// NOTE: `atexit` handlers run last registered first, and memprof registers
// its own at the first profiled call: a handler the program registered
// earlier runs after it, and its profiled calls would miss the report.
// `.fini_array` runs after every handler registered once the program
// started (glibc and musl run the loader's finalizers, which run it, last).
#[cfg(target_os = "linux")]
#[used]
#[unsafe(link_section = ".fini_array")]
static JSON_AT_FINI: extern "C" fn() = json_at_fini;

#[cfg(target_os = "linux")]
extern "C" fn json_at_fini() {
    // Only where profiled calls registered the exit hook, as before.
    if crate::sink::is_exiting() {
        // A panic must not unwind out of an `extern "C" fn`.
        let _ = std::panic::catch_unwind(|| untracked(json_at_exit));
    }
}

/// `MEMPROF_JSON` at exit, from the report the exit hook took, built anew
/// only where a call ended since.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
fn json_at_exit() {
    let taken = EXIT_REPORT.lock().unwrap_or_else(|e| e.into_inner()).take();
    let report = match taken {
        Some(report) if !crate::calls::exit_report_stale() => report,
        _ => report(),
    };
    write_json(&report);
    crate::calls::exit_report_written();
}

/// A profiled call ended after `MEMPROF_JSON` was written at exit (from a
/// finalizer that ran after memprof's): the report is written again, with
/// it.
pub(crate) fn call_ended_after_report() {
    if crate::calls::call_ended_at_exit() && JSON_AFTER_EXIT_HANDLERS {
        untracked(|| write_json(&report()));
    }
}

// NOTE: the standard library makes stdout's buffer (1 KiB) at the first
// `io::stdout()` and frees it as `main` returns. Made by memprof's first
// table, inside its own bookkeeping, the buffer's free would count as the
// program's, and the heap would read below zero for the calls after `main`
// (an `atexit` handler, a thread-local's destructor). So it is made before
// `main`, and counted as the program's, as the runtime's other allocations
// before `main` are.
crate::os::run_at_load!(STDOUT_BEFORE_MAIN = stdout_before_main);

#[cfg(any(target_os = "linux", target_os = "macos", windows))]
extern "C" fn stdout_before_main() {
    // A panic must not unwind out of an `extern "C" fn`.
    let _ = std::panic::catch_unwind(std::io::stdout);
}

/// `MEMPROF_JSON`: the aggregated report, written at exit, with those of
/// the run's earlier processes (see `json_file`).
fn write_json(report: &Report) {
    write_pprof(report);
    let Some(path) = &crate::settings::get().json else {
        return;
    };
    if let Err(err) = crate::json_file::write(path, report, crate::json_file::AT_EXIT) {
        crate::stdio::warning!(
            "memprof: cannot write MEMPROF_JSON={}: {err}",
            path.display()
        );
    }
}

/// `MEMPROF_PPROF`: the heap profile of this process's report, in
/// pprof's format (see `pprof`), written at exit beside `MEMPROF_JSON`, by
/// the same rules (a new file renamed over the old, never through a link).
fn write_pprof(report: &Report) {
    let Some(path) = &crate::settings::get().pprof else {
        return;
    };
    let mut profile = crate::pprof::HeapProfile::of_report(report);
    profile.sample_mean = crate::sites::sample_mean();
    let path = &*crate::json_file::of_this_process(path);
    if let Err(err) = crate::safe_file::write(path, &profile.to_pprof()) {
        crate::stdio::warning!(
            "memprof: cannot write MEMPROF_PPROF={}: {err}",
            path.display()
        );
    }
}

pub(crate) fn warn_not_installed() {
    static WARNED: Once = Once::new();
    WARNED.call_once(|| {
        crate::stdio::warning!(
            "memprof: no memprof allocator is installed, so there are no figures to show. \
             Enable the `global-allocator` feature of `memprof` (on by default), or declare \
             `#[global_allocator] static ALLOC: memprof::Allocator = memprof::Allocator::system();`"
        );
    });
}

impl MeasureGuard {
    /// Ends the measurement and prints `peak memory: X, increment: Y` as
    /// `%memit` does.
    pub fn finish_memit(self) {
        let (m, before, beside) = self.finish();
        print_memit(before, &m, beside);
    }
}

/// "increment: Y (net Z kept)", `memit!`'s figures of a peak and a net change.
fn memit_figures(peak: u64, increment: i64, settings: &RenderSettings) -> String {
    // NOTE: "increment" keeps %memit's meaning (peak minus start); the net
    // change, which tables and `measure` call increment, is named.
    let (net, kept) = match increment {
        n if n < 0 => (n.saturating_neg(), "freed"),
        n => (n, "kept"),
    };
    format!(
        "increment: {} (net {} {kept})",
        crate::render::bytes(peak as i64, settings),
        crate::render::bytes(net, settings),
    )
}

fn print_memit(heap_before: i64, stats: &Measurement, beside: crate::measure::Beside) {
    untracked(|| {
        if !alloc::is_installed() {
            warn_not_installed();
            return;
        }
        let settings = crate::settings::get().render;
        let peak = heap_before.max(0) as u64 + stats.peak;
        let mut line = format!(
            "peak memory: {}, {}",
            crate::render::bytes(peak as i64, &settings),
            memit_figures(stats.peak, stats.increment, &settings),
        );
        if let (Some(peak), Some(increment)) = (stats.gpu_peak, stats.gpu_increment) {
            line.push_str(&format!(
                "; GPU peak: +{}, GPU increment: {}",
                crate::render::bytes(peak as i64, &settings),
                crate::render::bytes(increment, &settings),
            ));
            if let Some(driver) = stats.gpu_driver_increment {
                let sign = if driver >= 0 { "+" } else { "" };
                line.push_str(&format!(
                    ", GPU driver view: {sign}{}",
                    crate::render::bytes(driver, &settings)
                ));
            }
        }
        if let Some((increment, process_peak)) = beside
            && (process_peak.abs_diff(stats.peak) >= OTHERS_NOTED
                || increment.abs_diff(stats.increment) >= OTHERS_NOTED)
        {
            line.push_str(&format!(
                "\nnote: other threads allocated meanwhile, which thread scope does not \
                 count: process-wide, {}; memit!(.., scope = \"process\") counts them",
                memit_figures(process_peak, increment, &settings),
            ));
        }
        // A blank line after, as after a table, so that a table printed next
        // does not run into it.
        line.push_str("\n\n");
        emit(&line);
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::reports_built;

    #[test]
    fn json_at_exit_reuses_the_report_the_hook_took_unless_a_call_ended_since() {
        let taken = || {
            *EXIT_REPORT.lock().unwrap() = Some(Report { functions: vec![] });
            crate::calls::exit_report_taken(&[]);
        };
        taken();
        let before = reports_built();
        json_at_exit();
        assert_eq!(reports_built(), before);
        taken();
        // A call ends after the hook took the report (a later exit handler's).
        assert!(!crate::calls::call_ended_at_exit());
        json_at_exit();
        assert_eq!(reports_built(), before + 1);
        // Written: a call that ends now writes it again.
        assert!(crate::calls::call_ended_at_exit());
    }
}
