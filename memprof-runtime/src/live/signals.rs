//! SIGTERM and SIGINT: the report is written, then the program dies of the
//! signal as it would unprofiled.
//!
//! Writing a report is not async-signal-safe (it allocates and takes
//! locks), so the handler only writes the signal's number to a pipe (a
//! self-pipe; `write` is async-signal-safe, and errno is kept). The
//! `memprof-live` thread reads it, writes `MEMPROF_JSON` and removes the
//! socket, puts back the disposition memprof found (the default, or the
//! program's own handler) and raises the signal again: the default ends
//! the process with the signal's status, a handler of the program's runs
//! as it would have. memprof then steps aside for that signal.
//!
//! A signal the program ignored (SIG_IGN: a background job's SIGINT,
//! `nohup`) is left ignored. If the program installed a handler of its own
//! after memprof's (one that calls the previous handler, as
//! signal-hook's and tokio's do), memprof writes the report and leaves the
//! rest to that handler, which keeps the program's choice of whether to
//! end.
//!
//! Other signals are left alone: SIGKILL and SIGSTOP cannot be caught;
//! SIGSEGV, SIGBUS, SIGILL, SIGFPE and SIGABRT mean the program is broken
//! or chose to abort (its memory may be corrupt, and the core dump should
//! show the moment it happened); SIGQUIT asks for a core dump of the state
//! now; SIGHUP, SIGUSR1 and SIGUSR2 are often the program's own (reload,
//! rotate logs) and do not end it.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicI32, Ordering::Relaxed};

/// The signals that write the report.
const HANDLED: [libc::c_int; 2] = [libc::SIGTERM, libc::SIGINT];

/// The pipe's ends; -1 when none.
pub(super) static PIPE_READ: AtomicI32 = AtomicI32::new(-1);
static PIPE_WRITE: AtomicI32 = AtomicI32::new(-1);

/// The dispositions memprof replaced, by signal, to put back. Set once,
/// before the thread starts; read without a lock, also in a child of
/// `fork`.
static PREVIOUS: OnceLock<Vec<(libc::c_int, libc::sigaction)>> = OnceLock::new();

extern "C" fn on_signal(signal: libc::c_int) {
    // SAFETY: errno is read and restored around one `write`, all of it
    // async-signal-safe.
    unsafe {
        let errno = *crate::os::errno_location();
        let fd = PIPE_WRITE.load(Relaxed);
        if fd >= 0 {
            let byte = signal as u8;
            libc::write(fd, (&raw const byte).cast(), 1);
        }
        *crate::os::errno_location() = errno;
    }
}

/// Installs the handler for each handled signal that is not ignored;
/// whether any is.
pub(super) fn install() -> bool {
    let mut fds = [-1; 2];
    if !crate::os::pipe_cloexec_nonblock(&mut fds) {
        return false;
    }
    PIPE_READ.store(fds[0], Relaxed);
    PIPE_WRITE.store(fds[1], Relaxed);
    let mut previous = Vec::new();
    for signal in HANDLED {
        // SAFETY: plain `sigaction` calls on zeroed (valid) structures.
        unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(signal, std::ptr::null(), &mut old) != 0
                || old.sa_sigaction == libc::SIG_IGN
            {
                continue;
            }
            let mut ours: libc::sigaction = std::mem::zeroed();
            ours.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
            ours.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut ours.sa_mask);
            if libc::sigaction(signal, &ours, std::ptr::null_mut()) == 0 {
                previous.push((signal, old));
            }
        }
    }
    let installed = !previous.is_empty();
    let _ = PREVIOUS.set(previous);
    if !installed {
        close_pipe();
    }
    installed
}

fn close_pipe() {
    for end in [&PIPE_READ, &PIPE_WRITE] {
        let fd = end.swap(-1, Relaxed);
        if fd >= 0 {
            // SAFETY: our pipe's end, no longer reachable.
            unsafe { libc::close(fd) };
        }
    }
}

/// Puts back every disposition memprof replaced that is still memprof's,
/// and closes the pipe (async-signal-safe: a child of `fork` calls it, and
/// its copy of the pipe must not wake the parent's thread).
pub(super) fn uninstall() {
    for (signal, old) in PREVIOUS.get().map(Vec::as_slice).unwrap_or_default() {
        if is_ours(*signal) {
            // SAFETY: a disposition `sigaction` gave us.
            unsafe { libc::sigaction(*signal, old, std::ptr::null_mut()) };
        }
    }
    // After: a signal between the two would otherwise be lost.
    close_pipe();
}

/// Whether memprof's handler is `signal`'s disposition now.
fn is_ours(signal: libc::c_int) -> bool {
    // SAFETY: a query into a zeroed (valid) structure.
    unsafe {
        let mut now: libc::sigaction = std::mem::zeroed();
        libc::sigaction(signal, std::ptr::null(), &mut now) == 0
            && now.sa_sigaction == on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t
    }
}

/// Serves the signals the handler wrote to the pipe.
pub(super) fn deliver_pending() {
    let fd = PIPE_READ.load(Relaxed);
    let mut byte = 0u8;
    // SAFETY: reading one byte into a local from our non-blocking pipe.
    while unsafe { libc::read(fd, (&raw mut byte).cast(), 1) } == 1 {
        deliver(libc::c_int::from(byte));
    }
}

/// `MEMPROF_JSON` now, as at exit (with the run's earlier processes), but
/// as a snapshot sees the calls: this thread has none of its own, and the
/// functions whose only calls are still running on other threads are in
/// it with their rows so far.
fn write_json() {
    let Some(path) = &crate::settings::get().json else {
        return;
    };
    if let Err(err) = crate::json_file::write(
        path,
        &crate::report::report_so_far(),
        crate::json_file::AT_SIGNAL,
    ) {
        crate::stdio::warning!(
            "memprof: cannot write MEMPROF_JSON={}: {err}",
            path.display()
        );
    }
}

/// Writes the report, then passes `signal` on to the disposition memprof
/// found.
fn deliver(signal: libc::c_int) {
    let previous = PREVIOUS.get().map(Vec::as_slice).unwrap_or_default();
    let Some(&(_, old)) = previous.iter().find(|(s, _)| *s == signal) else {
        return;
    };
    write_json();
    if !is_ours(signal) {
        // The program's handler came after ours and called it: the program
        // decides what the signal does.
        return;
    }
    if old.sa_sigaction == libc::SIG_DFL {
        // The process ends now, without exit handlers: no file of ours
        // may outlive it.
        super::socket::close_and_remove();
    }
    // SAFETY: a disposition `sigaction` gave us; the signal is unblocked on
    // this thread only for it to arrive here, and blocked again after.
    unsafe {
        libc::sigaction(signal, &old, std::ptr::null_mut());
        let mut one: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut one);
        libc::sigaddset(&mut one, signal);
        libc::pthread_sigmask(libc::SIG_UNBLOCK, &one, std::ptr::null_mut());
        libc::raise(signal);
        libc::pthread_sigmask(libc::SIG_BLOCK, &one, std::ptr::null_mut());
    }
}
