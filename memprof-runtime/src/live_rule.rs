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
//! connections from its own user (`SO_PEERCRED`).
//!
//! A request is one line, at most [`MAX_REQUEST`] bytes; the answer is
//! `ok` and a newline followed by the document, or one line starting with
//! `error: `. The program closes the connection after its answer.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The request for a snapshot: the report as it stands, in the
/// `MEMPROF_JSON` schema, with the time and the process's uptime.
pub const SNAPSHOT: &str = "snapshot";

/// The first line of an answer that carries a document.
pub const OK: &str = "ok";

/// How a refusal starts.
pub const ERROR: &str = "error: ";

/// The longest request read; a longer one is refused unread.
pub const MAX_REQUEST: usize = 256;

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
