//! `mprof snapshot PID [-o FILE] [--format pprof]`: a running program's
//! report as it stands, as JSON or as a heap profile in pprof's format, to
//! stdout or to a file written as `MEMPROF_JSON` is (by rename, never
//! through a link).

use crate::error::Error;
use std::io::Write;
use std::path::Path;

/// The snapshot's form.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// memprof's JSON report, with the time and the program's uptime
    Json,
    /// A heap profile in pprof's format (gzipped profile.proto)
    Pprof,
}

/// Takes process `pid`'s snapshot and writes it to `output`, or to stdout.
pub fn snapshot(pid: u32, output: Option<&Path>, format: Format) -> Result<i32, Error> {
    // SAFETY: a plain query of a descriptor.
    if format == Format::Pprof && output.is_none() && unsafe { libc::isatty(1) } == 1 {
        return Err(Error::Usage(
            "--format pprof writes a gzipped profile: name a file with -o, or redirect stdout"
                .to_owned(),
        ));
    }
    let mut document = super::client::snapshot(super::client::listening(pid))?;
    document.push('\n');
    let bytes = match format {
        Format::Json => document.into_bytes(),
        Format::Pprof => {
            let report = crate::report::parse(&document)
                .map_err(|_| {
                    Error::Live(format!(
                        "process {pid} sent a snapshot that is not a memprof report"
                    ))
                })?
                .report;
            let mut profile = memprof_runtime::HeapProfile::of_report(&report);
            profile.time_nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX));
            profile.to_pprof()
        }
    };
    match output {
        Some(path) => {
            memprof_runtime::safe_file::write(path, &bytes)
                .map_err(|e| Error::io("write", path, e))?;
            eprintln!("mprof: wrote {}", crate::printable::path(path));
        }
        None => {
            let mut out = std::io::stdout().lock();
            out.write_all(&bytes)
                .and_then(|()| out.flush())
                .map_err(|e| Error::io("write", Path::new("stdout"), e))?;
        }
    }
    Ok(0)
}
