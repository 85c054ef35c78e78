//! The one error type of `mprof`: every failure becomes one lowercase line on
//! stderr and a non-zero exit status, never a panic.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

#[derive(Debug)]
pub enum Error {
    /// A file or directory could not be read, written or removed.
    Io {
        action: &'static str,
        path: PathBuf,
        source: io::Error,
    },
    /// The program given to `mprof run` could not be started.
    Spawn { program: String, source: io::Error },
    /// No `mprofile_*.dat` file in the current directory.
    NoProfiles,
    /// An argument names neither a file nor the index of a recorded one.
    NotFound(String),
    /// A `.dat` file with no `MEM` sample in it.
    NoSamples(PathBuf),
    /// An output file whose extension is neither `.png` nor `.svg`.
    OutputFormat(PathBuf),
    /// The plotting library failed.
    Plot(String),
    /// A report given to `mprof diff` or `mprof html` that it cannot read:
    /// missing, not JSON, not memprof's, or of another schema version.
    Report { path: PathBuf, problem: String },
    /// A running program's channel (`mprof snapshot`, `mprof top`) could not
    /// be reached, or refused the request; the whole sentence.
    Live(String),
    /// Arguments that do not go together; the whole sentence.
    Usage(String),
}

impl Error {
    pub fn io(action: &'static str, path: &Path, source: io::Error) -> Self {
        Error::Io {
            action,
            path: path.to_path_buf(),
            source,
        }
    }

    /// The exit status for this error: 127 and 126 for a program that cannot
    /// be found or run, as shells use them; 2 for a report `mprof diff`
    /// cannot read, as 1 there means "grew past --fail-over"; 1 otherwise.
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Report { .. } | Error::Usage(_) => 2,
            Error::Spawn { source, .. } if source.kind() == io::ErrorKind::NotFound => 127,
            Error::Spawn { .. } => 126,
            _ => 1,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Io {
                action,
                path,
                source,
            } => write!(
                f,
                "cannot {action} {}: {}",
                crate::printable::path(path),
                describe(source)
            ),
            Error::Spawn { program, source } => {
                write!(f, "cannot run `{program}`: {}", describe(source))
            }
            Error::NoProfiles => f.write_str(
                "no mprofile_*.dat file in the current directory; record one with `mprof run`",
            ),
            Error::NotFound(arg) => write!(
                f,
                "`{arg}` is neither a file nor the index of a recorded profile (see `mprof list`)"
            ),
            Error::NoSamples(path) => write!(
                f,
                "{} holds no MEM samples: the file is empty or was cut short",
                crate::printable::path(path)
            ),
            Error::OutputFormat(path) => write!(
                f,
                "cannot tell the format of {}: the output must end in .png or .svg",
                crate::printable::path(path)
            ),
            Error::Plot(message) => write!(f, "cannot draw the plot: {message}"),
            Error::Report { path, problem } => {
                write!(f, "cannot read {}: {problem}", crate::printable::path(path))
            }
            Error::Live(message) | Error::Usage(message) => f.write_str(message),
        }
    }
}

/// An I/O error as a lowercase phrase: "permission denied", not
/// "Permission denied (os error 13)".
pub fn describe(error: &io::Error) -> String {
    let text = error.to_string();
    let text = match text.find(" (os error") {
        Some(end) => &text[..end],
        None => &text,
    };
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => String::new(),
    }
}
