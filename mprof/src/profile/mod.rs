//! Heap profiles out of memprof's reports: `mprof pprof` (a report as a
//! pprof profile), `mprof flamegraph` (a report or a profile as an SVG flame
//! graph, [`flamegraph`]), and the profiles that `mprof diff --format pprof`
//! and `mprof snapshot --format pprof` write.
//!
//! Every one of them reads its input into the runtime's `HeapProfile`
//! ([`read`]): a JSON report (`MEMPROF_JSON`, a snapshot) through its
//! lines and sites, or a pprof file as it is.

pub mod flamegraph;

use crate::error::Error;
use memprof_runtime::HeapProfile;
use std::path::Path;

/// The heap profile of the file at `path`: a pprof profile (gzipped or
/// not), or a memprof JSON report made into one.
pub fn read(path: &Path) -> Result<HeapProfile, Error> {
    let bytes = std::fs::read(path).map_err(|e| Error::io("read", path, e))?;
    let json = bytes
        .iter()
        .find(|b| !b.is_ascii_whitespace())
        .is_some_and(|&b| b == b'{');
    if json {
        return Ok(HeapProfile::of_report(&crate::report::read(path)?));
    }
    HeapProfile::from_pprof(&bytes).map_err(|e| Error::Report {
        path: path.to_path_buf(),
        problem: format!("neither a memprof report nor a heap profile: {e}"),
    })
}

/// Writes `profile` in pprof's format to `path`, as `MEMPROF_JSON` is
/// written (a new file renamed over the old, never through a link).
pub fn write(path: &Path, profile: &HeapProfile) -> Result<(), Error> {
    memprof_runtime::safe_file::write(path, &profile.to_pprof())
        .map_err(|e| Error::io("write", path, e))?;
    eprintln!("mprof: wrote {}", crate::printable::path(path));
    Ok(())
}

/// `mprof pprof REPORT -o FILE`.
pub fn pprof(report: &Path, output: &Path) -> Result<i32, Error> {
    write(output, &read(report)?)?;
    Ok(0)
}

/// `mprof diff BASE HEAD --format pprof -o FILE`: per stack, HEAD's values
/// minus BASE's, so that what grew shows as the stacks that grew.
pub fn diff(base: &Path, head: &Path, output: &Path) -> Result<i32, Error> {
    let grown = read(head)?.minus(&read(base)?);
    write(output, &grown)?;
    Ok(0)
}
