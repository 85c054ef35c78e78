//! `mprof`: memory usage over time, as Python memory_profiler's `mprof`
//! records and plots it, for any program; programs built with memprof add
//! their profiled calls and their exact heap.

// NOTE: the `///` comments on the argument types are clap's --help text,
// written for a terminal, not Markdown: `<YYYYmmddHHMMSS>` is not an HTML tag.
#![allow(rustdoc::invalid_html_tags)]

use clap::{Parser, Subcommand};
use mprof::error::Error;
use mprof::{diff, files, html, live, plot, profile, run, top};
use std::ffi::OsString;
use std::path::PathBuf;

#[derive(Debug, Parser)]
#[command(
    name = "mprof",
    version,
    about = "Record a program's memory over time and plot it, as memory_profiler's mprof does"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run a program and record its memory every interval into mprofile_<YYYYmmddHHMMSS>.dat
    Run(RunArgs),
    /// Plot recorded files (the newest by default) to PNG or SVG
    Plot(PlotArgs),
    /// List the recorded files of the current directory, oldest first, with their index
    List,
    /// Remove every recorded file of the current directory
    Clean {
        /// Name the files without removing them
        #[arg(long)]
        dry_run: bool,
    },
    /// Remove recorded files, named or by index (0 is the oldest, -1 the newest)
    Rm {
        /// Name the files without removing them
        #[arg(long)]
        dry_run: bool,
        #[arg(
            required = true,
            allow_negative_numbers = true,
            value_name = "FILE|INDEX"
        )]
        profiles: Vec<OsString>,
    },
    /// Print the peak memory of recorded files (the newest by default)
    Peak {
        #[arg(allow_negative_numbers = true, value_name = "FILE|INDEX")]
        profiles: Vec<OsString>,
    },
    /// Compare two runs' MEMPROF_JSON reports function by function, largest growth first;
    /// functions that did not change are left out (--all shows them)
    #[command(after_help = DIFF_HELP)]
    Diff(DiffArgs),
    /// Print a run's MEMPROF_JSON report (or a snapshot, or cargo memprof's --json) as text:
    /// the summary, highest peak first, then the tables of the --top functions
    Report {
        /// The report
        report: PathBuf,
        /// Tables of this many functions with the highest peaks
        #[arg(long, default_value_t = 3, value_name = "N")]
        top: usize,
    },
    /// Write a run's MEMPROF_JSON report as one self-contained HTML page: a sortable summary,
    /// each function's lines with bars, the memory over time (--dat) and a comparison (--base)
    Html(HtmlArgs),
    /// Write a running program's report as it stands (MEMPROF_JSON's schema, with the time
    /// and its uptime), without stopping it; the program must run with MEMPROF_LIVE=1
    Snapshot(SnapshotArgs),
    /// Write a run's report (MEMPROF_JSON, a snapshot) as a heap profile in pprof's format
    /// (gzipped profile.proto), for pprof's viewer and profiling backends
    Pprof {
        /// The report
        report: PathBuf,
        /// The profile to write
        #[arg(short = 'o', long, value_name = "FILE")]
        output: PathBuf,
    },
    /// Draw a report's or a pprof heap profile's allocation stacks as an SVG flame graph:
    /// the profiled function at the root, its lines above it, then the sites' frames; widths
    /// are bytes in use, as in pprof's viewers, or bytes allocated with --allocated
    Flamegraph {
        /// The report (MEMPROF_JSON, a snapshot) or heap profile (MEMPROF_PPROF)
        input: PathBuf,
        /// The SVG to write
        #[arg(short = 'o', long, value_name = "FILE")]
        output: PathBuf,
        /// Widths are bytes allocated (freed or not) rather than bytes in use
        #[arg(long)]
        allocated: bool,
        /// Widths are bytes in use: the default, accepted for older command lines
        #[arg(long, conflicts_with = "allocated")]
        inuse: bool,
    },
    /// Watch a running program's functions live (it must run with MEMPROF_LIVE=1), or start
    /// one after -- with it: heap, and per function calls, peak, kept, kept/min, allocs/s
    Top(TopArgs),
}

#[derive(Debug, clap::Args)]
struct TopArgs {
    /// The program's process id
    #[arg(required_unless_present = "program")]
    pid: Option<u32>,
    /// Print one frame as text and exit (its rates from two snapshots an interval apart,
    /// not --window)
    #[arg(long)]
    once: bool,
    /// With --once, print this function's lines (Live per line, with sites) instead of the
    /// functions: its whole name, or the first function whose name has this in it
    #[arg(long, value_name = "FUNCTION")]
    lines: Option<String>,
    /// Time between refreshes: seconds, or with s, m or h (0.1s to 1h)
    #[arg(short = 'T', long, default_value = "1", value_name = "DURATION")]
    interval: String,
    /// Time the rates (Live/min, Allocs/s) cover on the screen: from the oldest snapshot
    /// of this window to the newest (1s to 24h)
    #[arg(long, default_value = "60s", value_name = "DURATION")]
    window: String,
    /// A program to start with MEMPROF_LIVE=1 and watch; its output follows when the
    /// screen closes
    #[arg(last = true, value_name = "CMD")]
    program: Vec<OsString>,
}

#[derive(Debug, clap::Args)]
struct SnapshotArgs {
    /// The program's process id
    pid: u32,
    /// The file to write [default: stdout]
    #[arg(short = 'o', long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// The snapshot's form: memprof's JSON, or a heap profile in pprof's format
    #[arg(long, value_enum, default_value = "json")]
    format: live::snapshot::Format,
}

const DIFF_HELP: &str = "\
Figures are per call, so that runs with different call counts compare: Peak is
the highest of any one call, Kept/call the bytes a call leaves allocated (the
`fn` row's increment over the calls; with --lines, each line's increment over
the calls). GPU peak shows where a run counted device allocations. --fail-over
checks the functions of both runs, and a new one's figures as grown from nothing
(past any percentage, once over --min); removed ones are listed, not checked.
Functions past --fail-over come first, then the largest changes, shrinks too.
A function renamed between the runs (a dependency's new version changes trait
paths in names) is matched by its file and `fn` line, and shown with both names.
A function whose figures are the same in both runs (never called in either,
say) is left out, and one last line counts those; --all shows them too.
Exit status: 0; 1 when a figure grew past --fail-over; 2 when a report cannot be
read (missing, not JSON, not memprof's, or of another schema version), or when
the base has no profiled function that ran and --allow-empty-base is not given.";

#[derive(Debug, clap::Args)]
struct DiffArgs {
    /// The earlier run's report (written with MEMPROF_JSON=FILE)
    base: PathBuf,
    /// The later run's report
    head: PathBuf,
    /// Also compare the lines of functions that changed. Lines match by their trimmed text,
    /// so a moved line still matches; a line whose text changed shows as removed and added
    #[arg(long)]
    lines: bool,
    /// Exit with status 1 when a function in both runs grew its peak, kept/call or GPU peak
    /// by more than this: a percentage (10%) or a size with its unit (1MiB, 512B; binary
    /// units, MB = MiB). Kept/call grows only above 0: a call that frees its input does
    /// not grow when it frees less
    #[arg(long, value_name = "LIMIT", value_parser = diff::parse_limit)]
    fail_over: Option<diff::Limit>,
    /// With --fail-over: growth of this size or less never fails (--fail-over 10% --min 64KiB)
    #[arg(long, value_name = "SIZE", requires = "fail_over", value_parser = parse_min)]
    min: Option<u64>,
    /// Accept a base with no profiled function that ran (the first change that adds
    /// memprof); without it such a base is an error, since nothing could be checked
    #[arg(long)]
    allow_empty_base: bool,
    /// The report's form
    #[arg(long, value_enum, default_value = "text")]
    format: diff::Format,
    /// With --format pprof: the profile to write
    #[arg(
        short = 'o',
        long,
        value_name = "FILE",
        required_if_eq("format", "pprof")
    )]
    output: Option<PathBuf>,
    /// Also show the functions whose figures did not change
    #[arg(long)]
    all: bool,
}

#[derive(Debug, clap::Args)]
struct HtmlArgs {
    /// The run's report (written with MEMPROF_JSON=FILE)
    report: PathBuf,
    /// Also plot the run's memory over time, with its profiled calls, from this file of
    /// `mprof run`
    #[arg(long, value_name = "FILE")]
    dat: Option<PathBuf>,
    /// Also compare the run with an earlier run's report, as `mprof diff BASE REPORT --lines`
    /// does
    #[arg(long, value_name = "BASE")]
    base: Option<PathBuf>,
    /// The page to write [default: the report's name with .html]
    #[arg(short = 'o', long, value_name = "FILE")]
    output: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
struct RunArgs {
    /// Seconds between samples
    #[arg(short = 'T', long, default_value = "0.1", value_parser = parse_interval)]
    interval: f64,
    /// Add the memory of the program's child processes to its own
    #[arg(short = 'C', long)]
    include_children: bool,
    /// Record each child process on its own CHLD lines
    #[arg(short = 'M', long)]
    multiprocess: bool,
    /// The file to write [default: mprofile_<YYYYmmddHHMMSS>.dat]
    #[arg(short = 'o', long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Also record the program's GPU memory through NVML (MEMPROF_NVML_LIB names the library)
    #[arg(long)]
    gpu: bool,
    /// Accepted for memory_profiler's users: the exit code is always passed on
    #[arg(short = 'E', long, hide = true)]
    exit_code: bool,
    /// The program to run, and its arguments
    #[arg(
        required = true,
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "CMD"
    )]
    program: Vec<OsString>,
}

#[derive(Debug, clap::Args)]
struct PlotArgs {
    /// Files or indices to plot, overlaid [default: the newest recorded file]
    #[arg(allow_negative_numbers = true, value_name = "FILE|INDEX")]
    profiles: Vec<OsString>,
    /// The image to write, PNG or SVG by its extension [default: the first file's name with .png]
    #[arg(short = 'o', long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// The plot's title [default: the recorded command line]
    #[arg(short = 't', long)]
    title: Option<String>,
    /// Draw profiled calls as a flame graph: one rectangle per call, at the height of its depth
    #[arg(short = 'f', long)]
    flame: bool,
    /// Do not draw the profiled calls
    #[arg(short = 'n', long)]
    no_function_ts: bool,
    /// Plot only this time range, in seconds: START,END
    #[arg(short = 'w', long, value_name = "START,END", value_parser = parse_window, allow_hyphen_values = true)]
    window: Option<(f64, f64)>,
}

/// `--min`: a size with its unit, as `--fail-over`'s.
fn parse_min(text: &str) -> Result<u64, String> {
    match diff::parse_limit(text)? {
        diff::Limit::Bytes(n) => Ok(n),
        diff::Limit::Percent(_) => Err("expected a size, such as 64KiB".to_owned()),
    }
}

fn parse_interval(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(secs) if secs.is_finite() && secs >= 0.001 => Ok(secs),
        _ => Err("expected a number of seconds, at least 0.001".to_string()),
    }
}

fn parse_window(text: &str) -> Result<(f64, f64), String> {
    let bad = || "expected two numbers of seconds separated by a comma, such as 0,20.5".to_string();
    let (start, end) = text.split_once(',').ok_or_else(bad)?;
    let start: f64 = start.trim().parse().map_err(|_| bad())?;
    let end: f64 = end.trim().parse().map_err(|_| bad())?;
    if !(start.is_finite() && end.is_finite()) {
        return Err(bad());
    }
    if start >= end {
        return Err("the window's start must come before its end".to_string());
    }
    Ok((start, end))
}

fn main() {
    // NOTE: a bug must still read as one line, not as a backtrace.
    std::panic::set_hook(Box::new(|info| {
        eprintln!("mprof: internal error: {info}");
    }));
    let cli = Cli::parse();
    if !matches!(cli.command, Command::Run(_)) {
        // NOTE: what prints to stdout stops quietly when a pipe's reader
        // goes (`mprof list | head -1`), as Unix tools do. `run` keeps
        // Rust's default of ignoring SIGPIPE: it must outlive its stderr.
        // SAFETY: no other thread runs yet; SIG_DFL is a valid disposition.
        unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    }
    let code = match execute(cli.command) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("mprof: {err}");
            err.exit_code()
        }
    };
    std::process::exit(code);
}

fn execute(command: Command) -> Result<i32, Error> {
    match command {
        Command::Run(args) => run::run(run::RunOptions {
            interval: args.interval,
            include_children: args.include_children,
            multiprocess: args.multiprocess,
            output: args.output,
            gpu: args.gpu,
            program: args.program,
        }),
        Command::Plot(args) => {
            let files = files::resolve(&args.profiles)?;
            let output = plot::plot(&plot::PlotOptions {
                files,
                output: args.output,
                title: args.title,
                flame: args.flame,
                functions: !args.no_function_ts,
                window: args.window,
            })?;
            eprintln!("mprof: wrote {}", mprof::printable::path(&output));
            Ok(0)
        }
        Command::List => files::list().map(|()| 0),
        Command::Clean { dry_run } => {
            files::remove(&files::recorded()?, dry_run)?;
            Ok(0)
        }
        Command::Rm { dry_run, profiles } => {
            files::remove(&files::resolve(&profiles)?, dry_run)?;
            Ok(0)
        }
        Command::Peak { profiles } => files::peak(&profiles).map(|()| 0),
        Command::Report { report, top } => mprof::report::report(&report, top).map(|()| 0),
        Command::Html(args) => {
            let output = html::html(&html::HtmlOptions {
                report: args.report,
                base: args.base,
                dat: args.dat,
                output: args.output,
            })?;
            eprintln!("mprof: wrote {}", mprof::printable::path(&output));
            Ok(0)
        }
        Command::Top(args) => {
            let (interval, window) = top::durations(&args.interval, &args.window)?;
            top::top(&top::TopOptions {
                pid: args.pid,
                program: args.program,
                once: args.once,
                lines: args.lines,
                interval,
                window,
            })
        }
        Command::Snapshot(args) => {
            live::snapshot::snapshot(args.pid, args.output.as_deref(), args.format)
        }
        Command::Pprof { report, output } => profile::pprof(&report, &output),
        Command::Flamegraph {
            input,
            output,
            allocated,
            inuse: _,
        } => {
            let width = match allocated {
                true => profile::flamegraph::Width::Allocated,
                false => profile::flamegraph::Width::default(),
            };
            profile::flamegraph::flamegraph(&input, &output, width)
        }
        Command::Diff(args) => diff::diff(&diff::DiffOptions {
            base: args.base,
            head: args.head,
            lines: args.lines,
            fail_over: args.fail_over.map(|limit| diff::Threshold {
                limit,
                floor: args.min.unwrap_or(0),
            }),
            allow_empty_base: args.allow_empty_base,
            format: args.format,
            output: args.output,
            all: args.all,
        }),
    }
}
