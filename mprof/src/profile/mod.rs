//! Heap profiles out of memprof's reports: `mprof pprof` (a report as a
//! pprof profile), `mprof flamegraph` (a report or a profile as an SVG flame
//! graph, [`flamegraph`]), and the profiles that `mprof diff --format pprof`
//! and `mprof snapshot --format pprof` write.
//!
//! Every one of them reads its input into the runtime's `HeapProfile`
//! ([`read`]): a JSON report (`MEMPROF_JSON`, a snapshot) through its
//! lines and sites, or a pprof file as it is.

pub mod flamegraph;

use crate::diff::input::{LineRun, RunReport, SiteRun};
use crate::error::Error;
use memprof_runtime::{FunctionReport, HeapProfile, LineReport, Report, Site, SiteFrame};
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
        let report = crate::diff::input::read(path)?;
        return Ok(HeapProfile::of_report(&report_of(&report)));
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

/// The runtime's report of what `mprof diff` reads of one: the figures a
/// profile takes, from reports of every memprof version that `mprof diff`
/// reads, names and files [`printable`](crate::printable).
fn report_of(run: &RunReport) -> Report {
    let functions = run
        .functions
        .iter()
        .map(|f| FunctionReport {
            name: f.name.clone(),
            file: f.file.clone(),
            calls: f.calls,
            running: 0,
            gpu: None,
            gpu_driver: None,
            pool: None,
            lines: f.lines.iter().map(line_of).collect(),
            sites_left_out: None,
        })
        .collect();
    Report { functions }
}

fn line_of(line: &LineRun) -> LineReport {
    LineReport {
        line: line.line,
        mem_usage: line.mem_usage,
        increment: line.increment,
        peak: line.peak,
        occurrences: line.occurrences,
        allocations: line.allocations,
        allocated_bytes: line.allocated_bytes,
        gpu_usage: None,
        gpu_increment: None,
        gpu_peak: line.gpu_peak,
        gpu_driver_usage: None,
        gpu_driver_increment: None,
        pool_allocated: line.pool_allocated,
        pool_increment: line.pool_increment,
        pool_reserved: line.pool_reserved,
        in_use_allocations: line.in_use_allocations,
        in_use_bytes: line.in_use_bytes,
        // What pprof's stacks are made of needs no call edges.
        calls: None,
        within: None,
        contents: line.contents.clone(),
        sites: line
            .sites
            .as_ref()
            .map(|sites| sites.iter().map(site_of).collect()),
    }
}

fn site_of(site: &SiteRun) -> Site {
    Site {
        allocations: site.allocations,
        allocated_bytes: site.allocated_bytes,
        live_bytes: site.live_bytes,
        in_use_allocations: site.in_use_allocations,
        in_use_bytes: site.in_use_bytes,
        estimated: site.estimated,
        frames: site
            .frames
            .iter()
            .map(|f| SiteFrame {
                function: f.function.clone(),
                file: f.file.clone(),
                line: f.line,
            })
            .collect(),
    }
}
