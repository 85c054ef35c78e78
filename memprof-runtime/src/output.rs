//! Printing: where text goes (`MEMPROF_OUTPUT`, one sink with its stderr
//! fallback), and when tables are printed: a finished call's own table, the
//! aggregated tables and `MEMPROF_JSON` at exit, and `memit!`'s line.

use crate::alloc::{self, untracked};
use crate::calls::{AUTO_CALL_TABLES, CallFacts, FnMeta};
use crate::cells::LineCell;
use crate::config::{Output, RenderSettings, ReportMode};
use crate::measure::{MeasureGuard, Measurement};
use crate::region::Scope;
use crate::report::{FunctionReport, call_report, function_report, registered, report};
use std::sync::Once;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

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
        let report = call_report(meta, cells);
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
                    report.name
                )
            } else {
                // NOTE: conditional, as it is not known yet whether more
                // calls come: the exit table is printed only if they do.
                format!(
                    "(memprof: no more tables of {} per call: any further calls are \
                     aggregated into one table at exit; MEMPROF_REPORT=call prints every call)\n",
                    report.name
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
            EXITING.store(true, Relaxed);
            untracked(|| {
                crate::live::at_exit();
                print_exit_tables();
                if !JSON_AFTER_EXIT_HANDLERS {
                    write_json();
                }
            });
        }
        // SAFETY: `at_exit` is a plain `extern "C" fn` that never unwinds
        // (everything it calls catches panics), as `atexit` requires.
        unsafe {
            libc::atexit(at_exit);
        }
        crate::fork::register();
        crate::live::start();
    });
}

fn print_exit_tables() {
    let config = crate::settings::get();
    let mut text = String::new();
    // NOTE: libtest captures a test's output to show it if the test fails;
    // text printed at exit, after its summary, it cannot capture. So under
    // `auto`, a test binary prints no exit tables.
    let auto_in_test = config.report == ReportMode::Auto && config.test_binary;
    if matches!(config.report, ReportMode::Call | ReportMode::Off) || auto_in_test {
        return;
    }
    for meta in registered() {
        let (rows, calls) = meta.totals();
        // A call the process exited from has no table of its own.
        let running = meta.running_at_thread_end();
        let wanted = running > 0
            || match config.report {
                ReportMode::Exit => calls > 0,
                _ => calls > AUTO_CALL_TABLES,
            };
        if wanted {
            let mut function = function_report(meta, &rows, calls);
            function.running = running;
            text.push_str(&crate::render::table(&function, true, &config.render));
            text.push_str(&freed_more_note(meta, &function, &config.render));
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
        let summary = report().summary();
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
    if EXITING.load(Relaxed) {
        // A panic must not unwind out of an `extern "C" fn`.
        let _ = std::panic::catch_unwind(|| {
            untracked(write_json);
            crate::calls::reported_at_exit(&registered());
        });
    }
}

/// A profiled call ended after `MEMPROF_JSON` was written at exit (from a
/// finalizer that ran after memprof's): the report is written again, with
/// it.
pub(crate) fn call_ended_after_report() {
    if JSON_AFTER_EXIT_HANDLERS && crate::calls::reported() {
        untracked(write_json);
    }
}

// NOTE: the standard library makes stdout's buffer (1 KiB) at the first
// `io::stdout()` and frees it as `main` returns. Made by memprof's first
// table, inside its own bookkeeping, the buffer's free would count as the
// program's, and the heap would read below zero for the calls after `main`
// (an `atexit` handler, a thread-local's destructor). So it is made before
// `main`, and counted as the program's, as the runtime's other allocations
// before `main` are.
#[cfg(target_os = "linux")]
#[used]
#[unsafe(link_section = ".init_array")]
static STDOUT_BEFORE_MAIN: extern "C" fn() = stdout_before_main;

#[cfg(target_os = "linux")]
extern "C" fn stdout_before_main() {
    // A panic must not unwind out of an `extern "C" fn`.
    let _ = std::panic::catch_unwind(std::io::stdout);
}

/// `MEMPROF_JSON`: the aggregated report, written at exit, with those of
/// the run's earlier processes (see `json_file`).
fn write_json() {
    let Some(path) = &crate::settings::get().json else {
        return;
    };
    if let Err(err) = crate::json_file::write(path, &report()) {
        crate::stdio::warning!(
            "memprof: cannot write MEMPROF_JSON={}: {err}",
            path.display()
        );
    }
}

/// Set when writing memprof's text failed: nothing more is printed.
static STOPPED: AtomicBool = AtomicBool::new(false);

/// Set while the exit hook runs: no test's output capture is active then.
static EXITING: AtomicBool = AtomicBool::new(false);

/// Writes `text` where `MEMPROF_OUTPUT` says: stdout, stderr, or a file
/// (stderr if it cannot be opened). When a write fails (a closed pipe, a
/// full disk), memprof stops printing and says so once on stderr; nothing
/// here panics, so the program goes on as it would unprofiled.
pub(crate) fn emit(text: &str) {
    if STOPPED.load(Relaxed) {
        return;
    }
    untracked(|| {
        let (written, sink) = match &crate::settings::get().output {
            Output::Stdout => (to_stdout(text), "stdout"),
            Output::Stderr => (crate::stdio::stderr(text), "stderr"),
            Output::File(path) => match output_file(path) {
                Some(file) => {
                    use std::io::Write;
                    let mut file = file.lock().unwrap_or_else(|e| e.into_inner());
                    (file.write_all(text.as_bytes()), "MEMPROF_OUTPUT")
                }
                None => (crate::stdio::stderr(text), "stderr"),
            },
        };
        if let Err(err) = written
            && !STOPPED.swap(true, Relaxed)
        {
            crate::stdio::warning!(
                "memprof: cannot write to {sink} ({err}); printing nothing more"
            );
        }
    });
}

/// Writes `text` to stdout. In a test binary, through `print!` while a test
/// may be running, so that libtest's capture sees it; `print!` panics on a
/// failed write, so a broken pipe is looked for first, and a panic caught.
fn to_stdout(text: &str) -> std::io::Result<()> {
    if !crate::settings::get().test_binary || EXITING.load(Relaxed) {
        return crate::stdio::stdout(text);
    }
    let broken = || std::io::Error::from(std::io::ErrorKind::BrokenPipe);
    if crate::stdio::stdout_is_broken() {
        return Err(broken());
    }
    std::panic::catch_unwind(|| print!("{text}")).map_err(|_| broken())
}

static OUTPUT_FILE: std::sync::OnceLock<Option<std::sync::Mutex<std::fs::File>>> =
    std::sync::OnceLock::new();

/// Creates (or empties) the `MEMPROF_OUTPUT` file; refuses a path that is
/// a symbolic link, which a link planted in a shared directory could point
/// at any file the program may write.
fn create_output(path: &std::path::Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .map_err(crate::safe_file::refused_if_link)
}

/// The `MEMPROF_OUTPUT` file, created at the first write; `None`, after one
/// warning, if it cannot be.
fn output_file(path: &std::path::Path) -> Option<&'static std::sync::Mutex<std::fs::File>> {
    OUTPUT_FILE
        .get_or_init(|| match create_output(path) {
            Ok(file) => Some(std::sync::Mutex::new(file)),
            Err(err) => {
                crate::stdio::warning!(
                    "memprof: cannot open MEMPROF_OUTPUT={}: {err}; writing to stderr instead",
                    path.display()
                );
                None
            }
        })
        .as_ref()
}

/// The `MEMPROF_OUTPUT` file locked, if it is open, for `fork` to hold
/// across a fork (see `crate::fork`).
pub(crate) fn hold_file_for_fork() -> Option<std::sync::MutexGuard<'static, std::fs::File>> {
    let file = OUTPUT_FILE.get()?.as_ref()?;
    Some(file.lock().unwrap_or_else(|e| e.into_inner()))
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

/// What other threads must have changed, in the process's peak or net
/// change, for a thread-scope `memit!` to say so: less is a busy program's
/// noise.
const OTHERS_NOTED: u64 = 1024;

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
