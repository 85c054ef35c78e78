//! `cargo memprof test|run`: memprof's line tables for every function of a
//! crate, its tests or its binary, with no change to its sources (see
//! docs/cargo-memprof.md).

use clap::{Parser, Subcommand};
use mprof::cargo_memprof::{self, Options};
use std::ffi::OsString;
use std::path::PathBuf;

#[derive(Debug, Parser)]
#[command(
    name = "cargo-memprof",
    bin_name = "cargo memprof",
    version,
    about = "Profile every function of a crate, its tests or its binary, without editing it",
    after_help = "Copies the workspace under target/memprof/tree with #[memprof::profile] on each \
        function of the selected packages (all members, or cargo's -p ones), runs cargo there \
        and prints the summary and the top tables with your files and lines (after run on \
        stderr, after test on stdout; MEMPROF_OUTPUT=FILE puts them there; `mprof report \
        target/memprof/report.json` prints them again). Your files are never written.\n\nExamples:\n  cargo memprof test\n  cargo memprof test --fn 'parse' -p mycrate -- --test-threads 1\n  \
        cargo memprof run --release --bin server -- --port 8080\n\n\
        memprof's flags may come before or after test/run, before `--`; MEMPROF_* settings \
        work as usual."
)]
struct Cli {
    /// Profile only functions whose path (crate::module::Type::name) matches
    #[arg(long = "fn", value_name = "REGEX", global = true)]
    only: Option<String>,
    /// Leave functions whose path matches as written (repeatable)
    #[arg(long, value_name = "REGEX", global = true)]
    skip_fn: Vec<String>,
    /// Also profile this dependency's own functions (repeatable)
    #[arg(long, value_name = "NAME", global = true)]
    dep: Vec<String>,
    /// How many functions' tables to print, highest peak first
    #[arg(long, value_name = "N", default_value_t = 10, global = true)]
    top: usize,
    /// Also write the whole report as JSON (as MEMPROF_JSON writes it)
    #[arg(long, value_name = "FILE", global = true)]
    json: Option<PathBuf>,
    /// Also write the whole report as an HTML page (as `mprof html` does)
    #[arg(long, value_name = "FILE", global = true)]
    html: Option<PathBuf>,
    /// Also write the report as a heap profile in pprof's format (as `mprof pprof` does)
    #[arg(long, value_name = "FILE", global = true)]
    pprof: Option<PathBuf>,
    /// Show where each line's bytes were allocated (call stacks); =sample or =sample:SIZE samples them
    #[arg(
        long,
        value_name = "sample[:SIZE]",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "all",
        global = true
    )]
    sites: Option<String>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// `cargo test` with every function profiled; arguments go to cargo test
    Test {
        /// cargo test's arguments, then `--` and the test binaries'
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<OsString>,
    },
    /// `cargo run` with every function profiled; arguments go to cargo run
    Run {
        /// cargo run's arguments, then `--` and the program's
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<OsString>,
    },
    /// Remove target/memprof: the copy, its build, the report and the record of earlier runs
    Clean {
        /// The workspace's Cargo.toml (else the one cargo finds from here)
        #[arg(long, value_name = "PATH")]
        manifest_path: Option<PathBuf>,
    },
}

/// memprof's flags that take a value, to be moved before the subcommand.
const OWN_FLAGS: [&str; 7] = [
    "--fn",
    "--skip-fn",
    "--dep",
    "--top",
    "--json",
    "--html",
    "--pprof",
];
/// memprof's flags whose value, if any, follows `=`: moved alone.
const OWN_SWITCHES: [&str; 1] = ["--sites"];

/// The arguments with `cargo`'s `memprof` dropped and memprof's own flags
/// moved in front of `test`/`run`, so that the rest reaches cargo as given.
fn reorder(mut args: Vec<OsString>) -> Vec<OsString> {
    if args.get(1).is_some_and(|a| a == "memprof") {
        args.remove(1);
    }
    let Some(sub) = args.iter().position(|a| a == "test" || a == "run") else {
        return args;
    };
    let mut own = Vec::new();
    let mut rest = Vec::new();
    let mut iter = args.drain(sub + 1..);
    while let Some(arg) = iter.next() {
        if arg == "--" {
            rest.push(arg);
            rest.extend(iter.by_ref());
            break;
        }
        let text = arg.to_string_lossy();
        let name = text.split('=').next().unwrap_or_default();
        if OWN_SWITCHES.contains(&name) {
            own.push(arg.clone());
        } else if OWN_FLAGS.contains(&name) {
            let inline = text.contains('=');
            own.push(arg.clone());
            if !inline {
                own.extend(iter.next());
            }
        } else {
            rest.push(arg);
        }
    }
    drop(iter);
    let command = args.pop();
    args.extend(own);
    args.extend(command);
    args.extend(rest);
    args
}

fn main() {
    // NOTE: a bug must still read as one line, not as a backtrace.
    std::panic::set_hook(Box::new(|info| {
        eprintln!("cargo-memprof: internal error: {info}");
    }));
    let cli = Cli::parse_from(reorder(std::env::args_os().collect()));
    let (subcommand, cargo_args) = match cli.command {
        Command::Test { args } => (cargo_memprof::Subcommand::Test, args),
        Command::Run { args } => (cargo_memprof::Subcommand::Run, args),
        Command::Clean { manifest_path } => {
            let code = match cargo_memprof::clean(manifest_path) {
                Ok(Some(dir)) => {
                    let dir = dir.display().to_string();
                    eprintln!(
                        "cargo-memprof: removed {}",
                        mprof::printable::printable(&dir)
                    );
                    0
                }
                Ok(None) => 0,
                Err(err) => {
                    eprintln!("cargo-memprof: {err}");
                    err.exit_code()
                }
            };
            std::process::exit(code);
        }
    };
    let options = Options {
        subcommand,
        cargo_args,
        only: cli.only,
        skip: cli.skip_fn,
        deps: cli.dep,
        top: cli.top,
        json: cli.json,
        html: cli.html,
        pprof: cli.pprof,
        sites: cli.sites,
    };
    let code = match cargo_memprof::execute(&options) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("cargo-memprof: {err}");
            err.exit_code()
        }
    };
    std::process::exit(code);
}
