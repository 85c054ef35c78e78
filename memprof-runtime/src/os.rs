//! The few system calls whose form differs between Linux and macOS, one
//! helper each, so that the modules that use them hold no `cfg`.
//!
//! Linux has `accept4`, `pipe2` and `SOCK_CLOEXEC`, which set a new
//! descriptor's flags in the call that makes it; macOS makes the
//! descriptor, then sets its flags with `fcntl`. In between, another
//! thread's `fork` and `exec` could carry the descriptor into a program:
//! a leak of one descriptor, which that program never reads. Every helper
//! is async-signal-safe where its Linux call is.
//!
//! The first of each pair is the Linux one, and serves every target but
//! macOS, as the calls did before this module.

use std::ffi::CStr;

/// Where the calling thread's `errno` lives: read and restored around a
/// system call in a signal handler.
#[cfg(not(target_os = "macos"))]
pub(crate) fn errno_location() -> *mut libc::c_int {
    // SAFETY: a plain query of the calling thread's errno.
    unsafe { libc::__errno_location() }
}

#[cfg(target_os = "macos")]
pub(crate) fn errno_location() -> *mut libc::c_int {
    // SAFETY: a plain query of the calling thread's errno.
    unsafe { libc::__error() }
}

/// A pipe whose two ends are close-on-exec and non-blocking, into `fds`;
/// whether it was made.
#[cfg(not(target_os = "macos"))]
pub(crate) fn pipe_cloexec_nonblock(fds: &mut [libc::c_int; 2]) -> bool {
    // SAFETY: a two-descriptor array for `pipe2`.
    unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) == 0 }
}

#[cfg(target_os = "macos")]
pub(crate) fn pipe_cloexec_nonblock(fds: &mut [libc::c_int; 2]) -> bool {
    // SAFETY: a two-descriptor array for `pipe`.
    if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0 {
        return false;
    }
    if fds.iter().all(|&fd| set_flags(fd, true)) {
        return true;
    }
    for fd in fds.iter_mut() {
        // SAFETY: the pipe's end made above, used by no one else.
        unsafe { libc::close(*fd) };
        *fd = -1;
    }
    false
}

/// A close-on-exec Unix stream socket (blocking); negative on failure,
/// with errno set.
#[cfg(not(target_os = "macos"))]
pub(crate) fn unix_stream_socket() -> libc::c_int {
    // SAFETY: a plain `socket` call.
    unsafe { libc::socket(libc::AF_UNIX, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) }
}

#[cfg(target_os = "macos")]
pub(crate) fn unix_stream_socket() -> libc::c_int {
    // SAFETY: a plain `socket` call.
    let fd = unsafe { libc::socket(libc::AF_UNIX, libc::SOCK_STREAM, 0) };
    if fd >= 0 && !set_flags(fd, false) {
        let errno = std::io::Error::last_os_error().raw_os_error();
        // SAFETY: the socket made above, used by no one else; errno is put
        // back for the caller's `last_os_error`.
        unsafe {
            libc::close(fd);
            *errno_location() = errno.unwrap_or(libc::EINVAL);
        }
        return -1;
    }
    fd
}

/// Accepts a connection on `listening` as a close-on-exec, non-blocking
/// descriptor; negative when none is accepted.
#[cfg(not(target_os = "macos"))]
pub(crate) fn accept_cloexec_nonblock(listening: libc::c_int) -> libc::c_int {
    // SAFETY: accepting on a listening socket, without the peer's address.
    unsafe {
        libc::accept4(
            listening,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK,
        )
    }
}

#[cfg(target_os = "macos")]
pub(crate) fn accept_cloexec_nonblock(listening: libc::c_int) -> libc::c_int {
    // SAFETY: accepting on a listening socket, without the peer's address.
    let fd = unsafe { libc::accept(listening, std::ptr::null_mut(), std::ptr::null_mut()) };
    if fd < 0 {
        return fd;
    }
    // NOTE: each `send` passes `MSG_NOSIGNAL`; `SO_NOSIGPIPE` is macOS's
    // older word for it, set as well for releases that ignore the flag.
    let one: libc::c_int = 1;
    // SAFETY: an `int` option of the size given, on the new socket.
    let quiet = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_NOSIGPIPE,
            (&raw const one).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    } == 0;
    if quiet && set_flags(fd, true) {
        return fd;
    }
    // SAFETY: the connection accepted above, used by no one else.
    unsafe { libc::close(fd) };
    -1
}

/// Names a thread that `pthread_create` has just started, from the thread
/// that started it. macOS names only the calling thread: there this does
/// nothing, and the thread calls [`name_own_thread`].
///
/// # Safety
/// `thread` has neither ended nor been joined.
#[cfg(not(target_os = "macos"))]
pub(crate) unsafe fn name_started_thread(thread: libc::pthread_t, name: &CStr) {
    // SAFETY: a live thread, by the caller; a name over Linux's 16 bytes
    // fails the call, harmlessly.
    unsafe { libc::pthread_setname_np(thread, name.as_ptr()) };
}

#[cfg(target_os = "macos")]
pub(crate) unsafe fn name_started_thread(_thread: libc::pthread_t, _name: &CStr) {}

/// Names the calling thread where a thread can name only itself (macOS);
/// nothing elsewhere, where [`name_started_thread`] has named it.
#[cfg(not(target_os = "macos"))]
pub(crate) fn name_own_thread(_name: &CStr) {}

#[cfg(target_os = "macos")]
pub(crate) fn name_own_thread(name: &CStr) {
    // SAFETY: a NUL-terminated name for the calling thread.
    unsafe { libc::pthread_setname_np(name.as_ptr()) };
}

/// Sets close-on-exec on `fd`, and non-blocking if `nonblock`; whether
/// all took.
#[cfg(target_os = "macos")]
fn set_flags(fd: libc::c_int, nonblock: bool) -> bool {
    // SAFETY: `fcntl` reads and sets the flags of a descriptor of ours.
    unsafe {
        let fd_flags = libc::fcntl(fd, libc::F_GETFD);
        if fd_flags < 0 || libc::fcntl(fd, libc::F_SETFD, fd_flags | libc::FD_CLOEXEC) != 0 {
            return false;
        }
        if !nonblock {
            return true;
        }
        let status = libc::fcntl(fd, libc::F_GETFL);
        status >= 0 && libc::fcntl(fd, libc::F_SETFL, status | libc::O_NONBLOCK) == 0
    }
}

/// Runs `$run`, an `extern "C" fn()`, as the program loads, before `main`
/// and its threads: from `.init_array` on Linux, from `__mod_init_func` on
/// macOS (where each platform's C++ static constructors run); nowhere
/// else.
macro_rules! run_at_load {
    ($name:ident = $run:path) => {
        #[cfg(target_os = "linux")]
        #[used]
        #[unsafe(link_section = ".init_array")]
        static $name: extern "C" fn() = $run;
        #[cfg(target_os = "macos")]
        #[used]
        #[unsafe(link_section = "__DATA,__mod_init_func")]
        static $name: extern "C" fn() = $run;
    };
}
pub(crate) use run_at_load;
