//! Writing a file that may sit in a shared directory: a new file (made
//! with `O_EXCL`) renamed over the target, so that a reader never sees half
//! of it and a symbolic link planted at the name is refused, never written
//! through. Used for `MEMPROF_JSON` (`json_file`), the snapshots of
//! `MEMPROF_SNAPSHOT_EVERY` (`live`), and by `mprof snapshot -o`; and
//! [`open_output`], for outputs written as a stream. Not public API.
//!
//! Windows keeps the same rules with its own calls: `create_new` never
//! opens a name that is there, a link included, and a link at the target
//! is refused by its metadata. NOTE: a read-only report may not be
//! replaced there (Windows can refuse a rename over a read-only file): the
//! write then fails with its warning, and the old report stays.

use std::fs::OpenOptions;
use std::io::{self, Write};
use std::path::Path;

/// Writes `bytes` to `path`, replacing what was there, by the rules above.
pub fn write(path: &Path, bytes: &[u8]) -> io::Result<()> {
    refuse_link(path)?;
    refuse_special(path)?;
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    replace(path, dir, bytes)
}

/// Writes `bytes` to a new file in `dir` and renames it over `path`.
///
/// The new file is `.NAME.PID.tmp`, or `.NAME.PID.N.tmp` where a file of
/// that name is there already (a stale one of an earlier process with this
/// pid): memprof never writes into, nor deletes, a file it did not create.
pub(crate) fn replace(path: &Path, dir: &Path, bytes: &[u8]) -> io::Result<()> {
    let name = path
        .file_name()
        .unwrap_or(path.as_os_str())
        .to_string_lossy();
    let pid = std::process::id();
    let mut created = None;
    for attempt in 0..16 {
        let temporary = match attempt {
            0 => dir.join(format!(".{name}.{pid}.tmp")),
            n => dir.join(format!(".{name}.{pid}.{n}.tmp")),
        };
        // `create_new`: never through a link planted at the temporary name.
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temporary)
        {
            Ok(file) => {
                created = Some((temporary, file));
                break;
            }
            Err(err) if err.kind() == io::ErrorKind::AlreadyExists => {}
            Err(err) => return Err(err),
        }
    }
    let Some((temporary, mut file)) = created else {
        return Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            "16 temporary files of this process's id are in the way",
        ));
    };
    let written = (|| {
        // The file it replaces keeps its permissions (a read-only report
        // stays read-only).
        if let Ok(meta) = std::fs::metadata(path) {
            file.set_permissions(meta.permissions())?;
        }
        file.write_all(bytes)?;
        file.flush()?;
        // A rename replaces a link planted meanwhile, not its target.
        std::fs::rename(&temporary, path)
    })();
    if written.is_err() {
        // Ours: `create_new` made it.
        let _ = std::fs::remove_file(&temporary);
    }
    written
}

/// Opens `path` for writing, made if missing, emptied (`truncate`) or added
/// to: the stream kind of output (`MEMPROF_OUTPUT`, and `cargo memprof`'s
/// report there), which may be a terminal or a pipe. Refuses a symbolic
/// link, as [`write`] does, and a FIFO that no process reads, whose open
/// would wait for a reader; writes then wait as they would.
#[cfg(unix)]
pub fn open_output(path: &Path, truncate: bool) -> io::Result<std::fs::File> {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::OpenOptionsExt;
    let file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(truncate)
        .append(!truncate)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(|err| match err.raw_os_error() {
            Some(libc::ENXIO) => io::Error::other("it is a FIFO that no process reads"),
            _ => refused_if_link(err),
        })?;
    // SAFETY: `fcntl` on a descriptor this function owns.
    unsafe {
        let flags = libc::fcntl(file.as_raw_fd(), libc::F_GETFL);
        if flags >= 0 {
            libc::fcntl(file.as_raw_fd(), libc::F_SETFL, flags & !libc::O_NONBLOCK);
        }
    }
    Ok(file)
}

/// Opens `path` for writing, made if missing, emptied (`truncate`) or added
/// to: the stream kind of output (`MEMPROF_OUTPUT`, and `cargo memprof`'s
/// report there). Refuses a symbolic link or a junction, as [`write`] does.
///
/// NOTE: Windows opens a link itself before it can tell it is one (see
/// `os::open_no_follow`), and emptying it could empty the link: the path is
/// checked first, and the handle after. A link planted between the two is
/// still refused, after an open that was not through it. Windows has no
/// FIFO whose open waits: a named pipe is no path of the file system.
#[cfg(windows)]
pub fn open_output(path: &Path, truncate: bool) -> io::Result<std::fs::File> {
    refuse_link(path)?;
    crate::os::open_no_follow(
        OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(truncate)
            .append(!truncate),
        path,
    )
    .map_err(refused_if_link)
}

/// An error if `path` is there and not a regular file: a device (`/dev/null`
/// replaced by a file, were memprof run as root), a FIFO (whose open waits
/// for a writer, and the exit with it), a socket or a directory.
pub(crate) fn refuse_special(path: &Path) -> io::Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if !meta.file_type().is_file() && !meta.file_type().is_symlink() => Err(
            io::Error::other("it is not a regular file, which memprof does not replace"),
        ),
        _ => Ok(()),
    }
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

/// `O_NOFOLLOW`'s error for a link (`os::open_no_follow`'s), said plainly.
pub(crate) fn refused_if_link(err: io::Error) -> io::Error {
    match err.raw_os_error() {
        Some(crate::os::LINK_REFUSED) => link_refused(),
        _ => err,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stale_temporary_file_is_left_alone_and_the_report_still_written() {
        let dir = std::env::temp_dir().join(format!("memprof-safe-file-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let report = dir.join("r.json");
        let stale = dir.join(format!(".r.json.{}.tmp", std::process::id()));
        std::fs::write(&stale, "not memprof's").unwrap();
        write(&report, b"{}").unwrap();
        assert_eq!(std::fs::read_to_string(&report).unwrap(), "{}");
        assert_eq!(std::fs::read_to_string(&stale).unwrap(), "not memprof's");
        // Nothing of memprof's is left beside them.
        let mut names: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        assert_eq!(names.len(), 2, "{names:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    #[cfg(unix)]
    fn a_fifo_is_refused_and_a_read_only_report_stays_read_only() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("memprof-special-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let fifo = dir.join("r.json");
        let name = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
        let err = write(&fifo, b"{}").unwrap_err();
        assert!(err.to_string().contains("not a regular file"), "{err}");
        let meta = std::fs::symlink_metadata(&fifo).unwrap();
        assert!(!meta.file_type().is_file(), "the FIFO is still there");
        std::fs::remove_file(&fifo).unwrap();
        let report = dir.join("kept.json");
        std::fs::write(&report, "old").unwrap();
        std::fs::set_permissions(&report, std::fs::Permissions::from_mode(0o444)).unwrap();
        write(&report, b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&report).unwrap(), "new");
        let mode = std::fs::metadata(&report).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o444);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
