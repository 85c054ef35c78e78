//! The process's stdout and stderr, written without ever panicking.
//!
//! `print!` and `eprintln!` panic when a write fails (a closed pipe under
//! `prog | head`, a full disk, a closed file): a profiler's text must not
//! break the program, which may have `panic = "abort"`. Every byte memprof
//! writes to either stream goes through here, where a failure is an
//! `io::Result` for the caller to act on (`output` stops printing) or, for a
//! warning, is dropped.

use std::io::{self, Write};

/// Writes `text` to stdout and flushes it, so that a closed pipe shows now
/// and not in the standard library's flush at exit.
pub(crate) fn stdout(text: &str) -> io::Result<()> {
    let mut out = io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()
}

/// Writes `text` to stderr (unbuffered).
pub(crate) fn stderr(text: &str) -> io::Result<()> {
    io::stderr().lock().write_all(text.as_bytes())
}

/// Whether stdout is a pipe or socket whose reader is gone: a cheap check
/// before `print!`, which panics on such a write.
pub(crate) fn stdout_is_broken() -> bool {
    #[cfg(unix)]
    {
        let mut fd = libc::pollfd {
            fd: libc::STDOUT_FILENO,
            events: 0,
            revents: 0,
        };
        // SAFETY: one valid `pollfd`, no waiting.
        let ready = unsafe { libc::poll(&mut fd, 1, 0) };
        ready == 1 && fd.revents & (libc::POLLERR | libc::POLLHUP | libc::POLLNVAL) != 0
    }
    #[cfg(not(unix))]
    false
}

/// Writes one line of warning to stderr; if even that fails, there is no
/// one left to tell.
pub(crate) fn warn_line(line: std::fmt::Arguments<'_>) {
    let _ = writeln!(io::stderr().lock(), "{line}");
}

/// `eprintln!` that never panics: [`warn_line`].
macro_rules! warning {
    ($($arg:tt)*) => {
        $crate::stdio::warn_line(::core::format_args!($($arg)*))
    };
}
pub(crate) use warning;
