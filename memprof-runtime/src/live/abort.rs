//! SIGABRT (`std::process::abort`, a `panic = "abort"` build's panic, a
//! failed assertion in C code): the socket is removed as the program dies,
//! which writes no report. Without this the socket stayed behind, as after
//! SIGKILL. Only the process that made the socket removes it (a child of
//! `fork` inherits the handler, not the socket).

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::OnceLock;

/// The socket's path and the pid that made it, set before the handler is.
static SOCKET: OnceLock<(CString, u32)> = OnceLock::new();
/// The disposition memprof replaced, to put back before the signal is
/// raised again.
static PREVIOUS: OnceLock<libc::sigaction> = OnceLock::new();

extern "C" fn on_abort(_: libc::c_int) {
    // SAFETY: `getpid`, `unlink`, `sigaction` and `raise` are
    // async-signal-safe; the statics were set before the handler was.
    unsafe {
        if let Some((path, owner)) = SOCKET.get()
            && libc::getpid() as u32 == *owner
        {
            libc::unlink(path.as_ptr());
        }
        // The disposition the program had: SIGABRT, blocked while this
        // runs, is delivered to it as this returns (the default ends the
        // program, as `abort` would have).
        if let Some(previous) = PREVIOUS.get() {
            libc::sigaction(libc::SIGABRT, previous, std::ptr::null_mut());
        }
        libc::raise(libc::SIGABRT);
    }
}

/// Removes the socket at `path` if SIGABRT ends the program, unless the
/// program ignores SIGABRT.
pub(super) fn remove_on_abort(path: &Path) {
    let Ok(path) = CString::new(path.as_os_str().as_bytes()) else {
        return;
    };
    if SOCKET.set((path, std::process::id())).is_err() {
        return;
    }
    // SAFETY: plain `sigaction` calls on zeroed (valid) structures.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        if libc::sigaction(libc::SIGABRT, std::ptr::null(), &mut old) != 0
            || old.sa_sigaction == libc::SIG_IGN
            || PREVIOUS.set(old).is_err()
        {
            return;
        }
        let mut ours: libc::sigaction = std::mem::zeroed();
        ours.sa_sigaction = on_abort as extern "C" fn(libc::c_int) as libc::sighandler_t;
        libc::sigemptyset(&mut ours.sa_mask);
        libc::sigaction(libc::SIGABRT, &ours, std::ptr::null_mut());
    }
}
