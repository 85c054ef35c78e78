//! `mprof diff`: two runs' `MEMPROF_JSON` reports compared function by
//! function (`compare`) and, with `--lines`, line by line (`lines`), as a
//! text report (`table`) or a Markdown one (`markdown`).

mod callees;
pub mod compare;
pub mod figures;
pub mod format;
pub mod lines;
mod markdown;
mod table;

pub use compare::{Limit, Threshold, parse_limit};

use crate::error::Error;
use crate::printable::printable;
use std::path::PathBuf;

/// The report's form.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Tables in the style of memprof's own
    Text,
    /// One compact table to paste into a pull request
    Markdown,
    /// A heap profile in pprof's format, to -o: per stack, HEAD's values minus BASE's
    /// (reports or heap profiles)
    Pprof,
}

#[derive(Debug)]
pub struct DiffOptions {
    pub base: PathBuf,
    pub head: PathBuf,
    pub lines: bool,
    pub fail_over: Option<Threshold>,
    pub allow_empty_base: bool,
    pub format: Format,
    /// Where `--format pprof` writes its profile.
    pub output: Option<PathBuf>,
    /// Also show the functions whose figures did not change.
    pub all: bool,
}

/// Prints the comparison; the exit status is 1 when a figure grew past
/// `--fail-over`, each such figure named on stderr.
pub fn diff(options: &DiffOptions) -> Result<i32, Error> {
    if options.format == Format::Pprof {
        let Some(output) = &options.output else {
            return Err(Error::Usage(
                "--format pprof writes a file: name it with -o".to_owned(),
            ));
        };
        return crate::profile::diff(&options.base, &options.head, output);
    }
    let base = crate::report::read(&options.base)?;
    let head = crate::report::read(&options.head)?;
    // NOTE: with nothing in the base, every function is new and nothing is
    // checked: the first change that adds memprof, or a base run that broke
    // or was not built with profiling, would pass silently.
    if !base.functions.iter().any(|f| f.calls > 0) {
        let why = "has no profiled function that ran, so nothing can be checked \
                   against it (a base from before memprof was added, or a run \
                   without profiling)";
        if !options.allow_empty_base {
            return Err(Error::Report {
                path: options.base.clone(),
                problem: format!("it {why}; pass --allow-empty-base to accept it"),
            });
        }
        eprintln!("mprof: {} {why}", crate::printable::path(&options.base));
    }
    let diffs = compare::compare(&base, &head, options.fail_over);
    let shown: Vec<&figures::FunctionDiff> = diffs
        .iter()
        .filter(|d| options.all || d.changed())
        .collect();
    let unchanged = diffs.len() - shown.len();
    let out = match options.format {
        Format::Text => table::report(&shown, unchanged, options.lines),
        Format::Markdown => markdown::report(&shown, unchanged, options.lines),
        Format::Pprof => String::new(),
    };
    print!("{out}");
    let Some(threshold) = options.fail_over else {
        return Ok(0);
    };
    let mut past = false;
    for diff in &diffs {
        for change in &diff.over {
            past = true;
            if change.base.is_none() {
                eprintln!(
                    "mprof: {}: new, {} {}, past --fail-over {threshold}",
                    printable(diff.name),
                    change.figure.name().to_lowercase(),
                    format::side(change, change.head),
                );
                continue;
            }
            eprintln!(
                "mprof: {}: {} grew from {} to {} ({}, {}), past --fail-over {threshold}",
                printable(diff.name),
                change.figure.name().to_lowercase(),
                format::side(change, change.base),
                format::side(change, change.head),
                format::delta(change),
                format::percent(change),
            );
        }
    }
    if !past {
        let gpu = diffs.iter().any(|d| {
            d.changes
                .iter()
                .any(|c| c.figure == figures::Figure::GpuPeak)
        });
        let figures = match gpu {
            true => "peak, kept/call or GPU peak",
            false => "peak or kept/call",
        };
        eprintln!("mprof: no function's {figures} grew past --fail-over {threshold}");
    }
    Ok(i32::from(past))
}
