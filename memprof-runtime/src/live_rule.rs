//! Where a program run with `MEMPROF_LIVE=1` listens, and the words of its
//! channel: one rule for the runtime, which listens, and for `mprof
//! snapshot` and `mprof top`, which connect. Not public API: `mprof`
//! depends on this crate (without its `gpu` feature) for it.
//!
//! The socket is `<dir>/<pid>.sock`, where `<dir>` is
//! `$XDG_RUNTIME_DIR/memprof` when `XDG_RUNTIME_DIR` names an absolute
//! path, else `memprof-<uid>` in the temporary directory (`$TMPDIR`, else
//! `/tmp`). The directory is the user's own, mode 0700: in a shared `/tmp`
//! another user could otherwise plant a file or a link at the name first.
//! The socket itself has mode 0600, and the program answers only
//! connections from its own user (`SO_PEERCRED`; `getpeereid` on macOS).
//! `mprof` keeps the same rules from its side ([`is_private_dir`],
//! [`same_user`]): a socket in a directory another user could have made,
//! or served by another user, is not the program's.
//!
//! A request is one line, at most [`MAX_REQUEST`] bytes, read within
//! [`REQUEST_DEADLINE`] all told; the answer is `ok` and a newline followed
//! by the document, or one line starting with `error: `, sent within
//! [`ANSWER_DEADLINE`]. The program closes the connection after its answer.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The request for a snapshot: the report as it stands, in the
/// `MEMPROF_JSON` schema, with the time and the process's uptime.
pub const SNAPSHOT: &str = "snapshot";

/// The first line of an answer that carries a document.
pub const OK: &str = "ok";

/// How a refusal starts.
pub const ERROR: &str = "error: ";

/// The longest request read; a longer one is refused unread.
pub const MAX_REQUEST: usize = 256;

/// How long the whole request may take to come, from the connection's
/// acceptance: one deadline, not one per `recv`, so that a client that
/// trickles bytes gets no longer than one that sends nothing.
pub const REQUEST_DEADLINE: Duration = Duration::from_secs(2);

/// How long the whole answer may take to leave, from when it is ready: a
/// client that reads slowly is given up on after it.
pub const ANSWER_DEADLINE: Duration = Duration::from_secs(10);

/// The directory that holds the sockets of `uid`'s programs, given their
/// environment `var`.
pub fn socket_dir(var: impl Fn(&str) -> Option<OsString>, uid: u32) -> PathBuf {
    if let Some(runtime) = var("XDG_RUNTIME_DIR").map(PathBuf::from)
        && runtime.is_absolute()
    {
        return runtime.join("memprof");
    }
    let temp = var("TMPDIR")
        .map(PathBuf::from)
        .filter(|dir| dir.is_absolute())
        .unwrap_or_else(|| PathBuf::from("/tmp"));
    temp.join(format!("memprof-{uid}"))
}

/// The socket of process `pid` in `dir`.
pub fn socket_path(dir: &Path, pid: u32) -> PathBuf {
    dir.join(format!("{pid}.sock"))
}

/// Whether `meta` describes a directory that only `uid` can enter: not a
/// link, owned by `uid`, no permission for the group or others.
pub fn is_private_dir(meta: &std::fs::Metadata, uid: u32) -> bool {
    use std::os::unix::fs::MetadataExt;
    meta.file_type().is_dir() && meta.uid() == uid && meta.mode() & 0o077 == 0
}

/// Whether a process running as `peer` (`None`: unknown) is `own`'s: the
/// program answers only its own user, and mprof trusts only a program of
/// its own user. Root is another user too: it can read a process by other
/// means, and a program of this user never runs as root.
pub fn same_user(peer: Option<u32>, own: u32) -> bool {
    peer == Some(own)
}

/// The user id of the process at the other end of the Unix socket `fd`
/// (`SO_PEERCRED`), `None` if it cannot be read.
#[cfg(not(target_os = "macos"))]
pub fn peer_uid(fd: std::os::fd::RawFd) -> Option<u32> {
    let mut credentials = libc::ucred {
        pid: 0,
        uid: u32::MAX,
        gid: u32::MAX,
    };
    let mut size = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: a `ucred` of the size given; a descriptor that is not a
    // socket is an error, not undefined behaviour.
    let got = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&raw mut credentials).cast(),
            &mut size,
        )
    };
    (got == 0).then_some(credentials.uid)
}

/// The effective user id of the process at the other end of the Unix
/// socket `fd` (`getpeereid`, macOS's counterpart of `SO_PEERCRED`),
/// `None` if it cannot be read.
#[cfg(target_os = "macos")]
pub fn peer_uid(fd: std::os::fd::RawFd) -> Option<u32> {
    let mut uid: libc::uid_t = u32::MAX;
    let mut gid: libc::gid_t = u32::MAX;
    // SAFETY: two locals for the ids; a descriptor that is not a socket is
    // an error, not undefined behaviour.
    let got = unsafe { libc::getpeereid(fd, &mut uid, &mut gid) };
    (got == 0).then_some(uid)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |name| {
            pairs
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| OsString::from(v))
        }
    }

    #[test]
    fn only_the_same_user_is_trusted() {
        assert!(same_user(Some(1000), 1000));
        assert!(!same_user(Some(1001), 1000));
        assert!(!same_user(Some(0), 1000));
        assert!(!same_user(None, 1000));
        assert!(same_user(Some(0), 0));
        assert!(!same_user(Some(1000), 0));
    }

    #[test]
    fn the_runtime_dir_comes_first_then_the_users_temporary_dir() {
        let both = vars(&[("XDG_RUNTIME_DIR", "/run/user/7"), ("TMPDIR", "/scratch")]);
        assert_eq!(socket_dir(both, 7), Path::new("/run/user/7/memprof"));
        let temp = vars(&[("TMPDIR", "/scratch")]);
        assert_eq!(socket_dir(temp, 7), Path::new("/scratch/memprof-7"));
        assert_eq!(socket_dir(vars(&[]), 7), Path::new("/tmp/memprof-7"));
        // Relative paths would depend on the working directory, which the
        // program and mprof need not share.
        let relative = vars(&[("XDG_RUNTIME_DIR", "run"), ("TMPDIR", "tmp")]);
        assert_eq!(socket_dir(relative, 7), Path::new("/tmp/memprof-7"));
        assert_eq!(
            socket_path(Path::new("/tmp/memprof-7"), 42),
            Path::new("/tmp/memprof-7/42.sock")
        );
    }
}
