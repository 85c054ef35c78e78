//! Where memprof's text goes: stdout (through libtest's capture while a
//! test runs), stderr, or the `MEMPROF_OUTPUT` file, opened once, with
//! stderr as its fallback. A failed write stops the printing, never the
//! program.

use crate::alloc::untracked;
use crate::config::Output;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

/// Set when writing memprof's text failed: nothing more is printed.
static STOPPED: AtomicBool = AtomicBool::new(false);

/// Set while the exit hook runs: no test's output capture is active then.
static EXITING: AtomicBool = AtomicBool::new(false);

/// The exit hook has started: libtest captures nothing from here on.
pub(crate) fn exiting() {
    EXITING.store(true, Relaxed);
}

/// Whether the exit hook has started (read from `.fini_array`, Linux's).
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
pub(crate) fn is_exiting() -> bool {
    EXITING.load(Relaxed)
}

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

/// The `MEMPROF_OUTPUT` file, created at the first write; `None`, after one
/// warning, if it cannot be.
fn output_file(path: &std::path::Path) -> Option<&'static std::sync::Mutex<std::fs::File>> {
    OUTPUT_FILE
        .get_or_init(|| match crate::safe_file::open_output(path, true) {
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
#[cfg(unix)]
pub(crate) fn hold_file_for_fork() -> Option<std::sync::MutexGuard<'static, std::fs::File>> {
    let file = OUTPUT_FILE.get()?.as_ref()?;
    Some(file.lock().unwrap_or_else(|e| e.into_inner()))
}
