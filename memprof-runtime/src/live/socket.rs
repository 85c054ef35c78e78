//! `MEMPROF_LIVE`'s Unix socket: made in a directory of the user's own
//! (see `live_rule`), mode 0600, and answering only its own user. One
//! connection at a time: a request line, one answer, then closed, each
//! within its deadline (`connection`). A malformed or hostile request gets
//! one `error:` line and changes nothing.

use super::connection::{self, Cut};
use crate::live_rule::{
    ANSWER_DEADLINE, ERROR, OK, REQUEST_DEADLINE, SNAPSHOT, peer_uid, same_user,
};
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicI32, Ordering::Relaxed};
use std::time::Instant;

/// The listening socket; -1 when not listening.
pub(super) static LISTENING: AtomicI32 = AtomicI32::new(-1);

/// Its path, to remove at exit.
static PATH: Mutex<Option<PathBuf>> = Mutex::new(None);

/// Makes the socket; `false`, after one warning, if it cannot be.
pub(super) fn listen() -> bool {
    match bind() {
        Ok((fd, path)) => {
            LISTENING.store(fd, Relaxed);
            super::abort::remove_on_abort(&path);
            *PATH.lock().unwrap_or_else(|e| e.into_inner()) = Some(path);
            true
        }
        Err(err) => {
            crate::stdio::warning!("memprof: MEMPROF_LIVE: not listening: {err}");
            false
        }
    }
}

fn uid() -> u32 {
    // SAFETY: a plain query.
    unsafe { libc::geteuid() }
}

fn bind() -> std::io::Result<(i32, PathBuf)> {
    use std::io::{Error, ErrorKind};
    let dir = crate::live_rule::socket_dir(|name| std::env::var_os(name), uid());
    private_dir(&dir)?;
    let path = crate::live_rule::socket_path(&dir, std::process::id());
    // A socket left by an earlier process of this pid (killed with
    // SIGKILL): in a directory only this user can write, it is ours.
    let _ = std::fs::remove_file(&path);
    let name = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| Error::new(ErrorKind::InvalidInput, "the socket's path holds a NUL"))?;
    // SAFETY: a zeroed `sockaddr_un` is valid; the path is copied into it
    // only if it fits with its NUL.
    let mut address: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    address.sun_family = libc::AF_UNIX as libc::sa_family_t;
    let bytes = name.as_bytes_with_nul();
    if bytes.len() > address.sun_path.len() {
        return Err(Error::new(
            ErrorKind::InvalidInput,
            format!("{} is too long for a socket's path", path.display()),
        ));
    }
    for (to, &from) in address.sun_path.iter_mut().zip(bytes) {
        *to = from as libc::c_char;
    }
    // SAFETY: plain socket calls on a fresh descriptor and a filled address.
    unsafe {
        let fd = crate::os::unix_stream_socket();
        if fd < 0 {
            return Err(Error::last_os_error());
        }
        let size = std::mem::size_of::<libc::sockaddr_un>() as libc::socklen_t;
        let bound = libc::bind(fd, (&raw const address).cast(), size) == 0
            && libc::chmod(name.as_ptr(), 0o600) == 0
            && libc::listen(fd, 16) == 0;
        if !bound {
            let err = Error::last_os_error();
            libc::close(fd);
            let _ = std::fs::remove_file(&path);
            return Err(err);
        }
        Ok((fd, path))
    }
}

/// Makes `dir` (mode 0700) or checks that it is the user's own and
/// private: in a shared temporary directory, another user could have made
/// it first.
fn private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => {}
        Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(err) => return Err(err),
    }
    let meta = std::fs::symlink_metadata(dir)?;
    if crate::live_rule::is_private_dir(&meta, uid()) {
        Ok(())
    } else {
        Err(std::io::Error::other(format!(
            "{} is not a directory of this user's alone (it must be owned by uid {} with \
             mode 0700)",
            dir.display(),
            uid()
        )))
    }
}

/// Stops listening and removes the socket.
pub(super) fn close_and_remove() {
    let fd = LISTENING.swap(-1, Relaxed);
    if fd >= 0 {
        // SAFETY: our listening socket, which nothing uses after the swap
        // (the thread's next `poll` skips -1).
        unsafe { libc::close(fd) };
    }
    let path = PATH.lock().unwrap_or_else(|e| e.into_inner()).take();
    if let Some(path) = path {
        let _ = std::fs::remove_file(path);
    }
}

/// Accepts one connection and answers it, within the channel's deadlines
/// (see `connection`); `wake` readable (a pending signal) ends the exchange
/// unanswered, for the signal to be served next.
pub(super) fn serve_one(wake: i32) {
    let listening = LISTENING.load(Relaxed);
    if listening < 0 {
        return;
    }
    // The new descriptor is closed below.
    let fd = crate::os::accept_cloexec_nonblock(listening);
    if fd < 0 {
        return;
    }
    if let Some(answer) = answer(fd, wake) {
        let _ = connection::send_all(
            fd,
            answer.as_bytes(),
            wake,
            Instant::now() + ANSWER_DEADLINE,
        );
    }
    // SAFETY: the connection accepted above.
    unsafe { libc::close(fd) };
}

/// The answer to the request on `fd`; `None` when there is none to send.
fn answer(fd: i32, wake: i32) -> Option<String> {
    if !same_user(peer_uid(fd), uid()) {
        return Some(format!(
            "{ERROR}refused: this program answers its own user only\n"
        ));
    }
    match connection::read_request(fd, wake, Instant::now() + REQUEST_DEADLINE) {
        Ok(request) => Some(answer_request(&request)),
        Err(Cut::Late) => Some(format!("{ERROR}no request came in time\n")),
        Err(Cut::TooLong) => Some(format!("{ERROR}request too long\n")),
        Err(Cut::Signal | Cut::Gone) => None,
    }
}

/// The answer to `request`, as its client reads it.
pub(super) fn answer_request(request: &[u8]) -> String {
    let text = String::from_utf8_lossy(request);
    match text.trim() {
        SNAPSHOT => {
            let mut answer = format!("{OK}\n");
            answer.push_str(&super::snapshot::json());
            answer
        }
        other => {
            let shown: String = other.chars().take(40).collect();
            format!("{ERROR}unknown request {shown:?}; expected {SNAPSHOT:?}\n")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn garbage_gets_one_error_line() {
        for request in [
            &b"\xff\xfe\x00rm -rf /"[..],
            b"",
            b"SNAPSHOT",
            b"snapshot please",
        ] {
            let answer = answer_request(request);
            assert!(answer.starts_with("error: unknown request "), "{answer}");
            assert_eq!(answer.matches('\n').count(), 1, "{answer}");
        }
    }
}
