//! Writing a file that may sit in a shared directory: a new file (made
//! with `O_EXCL`) renamed over the target, so that a reader never sees half
//! of it and a symbolic link planted at the name is refused, never written
//! through. Used for `MEMPROF_JSON` (`json_file`), the snapshots of
//! `MEMPROF_SNAPSHOT_EVERY` (`live`), and by `mprof snapshot -o`. Not
//! public API.

use std::fs::OpenOptions;
use std::io::{self, Write};
use std::path::Path;

/// Writes `bytes` to `path`, replacing what was there, by the rules above.
pub fn write(path: &Path, bytes: &[u8]) -> io::Result<()> {
    refuse_link(path)?;
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    replace(path, dir, bytes)
}

/// Writes `bytes` to a new file in `dir` and renames it over `path`.
pub(crate) fn replace(path: &Path, dir: &Path, bytes: &[u8]) -> io::Result<()> {
    let name = path
        .file_name()
        .unwrap_or(path.as_os_str())
        .to_string_lossy();
    let temporary = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let written = (|| {
        // `create_new`: never through a link planted at the temporary name.
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temporary)?;
        file.write_all(bytes)?;
        file.flush()?;
        // A rename replaces a link planted meanwhile, not its target.
        std::fs::rename(&temporary, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    written
}

/// An error if `path` is a symbolic link.
pub(crate) fn refuse_link(path: &Path) -> io::Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => Err(link_refused()),
        _ => Ok(()),
    }
}

fn link_refused() -> io::Error {
    io::Error::other("it is a symbolic link, which memprof does not write through")
}

/// `O_NOFOLLOW`'s error for a link, said plainly.
pub(crate) fn refused_if_link(err: io::Error) -> io::Error {
    match err.raw_os_error() {
        Some(libc::ELOOP) => link_refused(),
        _ => err,
    }
}
