//! Running cargo in the shadow: its arguments, its environment, and its
//! stderr read back with the user's paths in place of the shadow's. A
//! compiler error in the copy is held back until cargo ends, so that the
//! line saying it is memprof's bug (with the functions and the
//! `--skip-fn` that leaves them out) comes first.

use super::annotate::Annotated;
use super::error::CargoError;
use super::shadow::Layout;
use super::{Options, Subcommand, cargo_part};
use std::collections::BTreeSet;
use std::ffi::OsString;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

pub struct Invocation<'a> {
    pub options: &'a Options,
    pub layout: &'a Layout,
    /// Where each process writes its report (`MEMPROF_JSON=DIR/%p.json`).
    pub reports: &'a Path,
    /// (copy, original) of each `--dep` package's directory.
    pub dep_dirs: Vec<(PathBuf, PathBuf)>,
    pub functions: &'a [Annotated],
    /// `MEMPROF_SITES` for the processes, from `--sites`.
    pub sites: Option<String>,
    /// The names of the packages the user's own build compiles (the
    /// workspace's members and its Cargo.lock's packages); None where the
    /// workspace has no Cargo.lock.
    pub user_packages: Option<&'a BTreeSet<String>>,
}

/// The libraries memprof's runtime links (`cargo tree -p memprof-runtime
/// -e normal`, proc-macros aside). Those the user's own build does not
/// compile (its Cargo.lock does not name them) are built optimized and
/// without debug information, and the runtime with line tables only:
/// every test binary and doctest links them again (their debug
/// information was a quarter of a doctest's time, link and build, on
/// pulldown-cmark's suite; unoptimized, their code is about twice the
/// size), and they symbolize a process's addresses at exit. Their frames
/// never show in a table or a site (memprof's own, known by file:
/// `sites::resolve`). Without a Cargo.lock, or for a name missing here,
/// they are built as the profile says.
const RUNTIME_LIBRARIES: &[&str] = &[
    "addr2line",
    "adler2",
    "backtrace",
    "bitflags",
    "bytecount",
    "bytes",
    "flate2",
    "fnv",
    "foldhash",
    "gimli",
    "inventory",
    "itoa",
    "libloading",
    "memchr",
    "miniserde",
    "miniz_oxide",
    "nvml-wrapper",
    "nvml-wrapper-sys",
    "object",
    "papergrid",
    "prost",
    "rustc-demangle",
    "serde",
    "serde_core",
    "static_assertions",
    "tabled",
    "thiserror",
    "unicode-width",
    "zlib-rs",
    "zmij",
];

/// `MEMPROF_SITES` for `--sites`'s value: `all` (the flag alone), `sample`
/// or `sample:<size>`, checked here so that a bad one is one error, not a
/// warning from every process.
pub fn sites_setting(value: &str) -> Result<String, CargoError> {
    use memprof_runtime::units::{SIZE_HELP, parse_size};
    match value.split_once(':') {
        None if value == "all" => Ok("1".to_owned()),
        None if value == "sample" => Ok(value.to_owned()),
        Some(("sample", size)) if parse_size(size).is_ok_and(|n| n >= 1) => Ok(value.to_owned()),
        Some(("sample", size)) => Err(CargoError::Sites(format!(
            "--sites=sample:{size}: expected {SIZE_HELP}, of at least 1 B"
        ))),
        _ => Err(CargoError::Sites(format!(
            "--sites={value}: expected --sites (every allocation), --sites=sample or \
             --sites=sample:<size> (one sample per that many bytes on average)"
        ))),
    }
}

/// The shadow's target directory: `CARGO_MEMPROF_TARGET_DIR`, or
/// `<target-dir>/memprof/target`.
pub fn target_dir(layout: &Layout) -> PathBuf {
    std::env::var_os("CARGO_MEMPROF_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| layout.root.join("target"))
}

/// The user's arguments as the copy needs them: `--manifest-path` into the
/// shadow; `--locked` dropped and `--frozen` read as `--offline`, as the
/// copy's Cargo.lock gains memprof and its dependencies.
fn cargo_args(args: &[OsString], layout: &Layout) -> Vec<OsString> {
    let split = cargo_part(args).len();
    let mut out = Vec::new();
    let mut iter = args[..split].iter();
    while let Some(arg) = iter.next() {
        if arg == "--locked" {
            continue;
        } else if arg == "--frozen" {
            out.push("--offline".into());
        } else if arg == "--manifest-path" {
            out.push(arg.clone());
            if let Some(path) = iter.next() {
                out.push(mirrored(Path::new(path), layout).into_os_string());
            }
        } else if let Some(path) = arg
            .to_str()
            .and_then(|a| a.strip_prefix("--manifest-path="))
        {
            out.push("--manifest-path".into());
            out.push(mirrored(Path::new(path), layout).into_os_string());
        } else {
            out.push(arg.clone());
        }
    }
    out.extend(args[split..].iter().cloned());
    out
}

/// The Cargo.toml cargo would take from `dir`: the nearest above it, up to
/// the workspace root.
fn nearest_manifest(dir: &Path, layout: &Layout) -> Option<PathBuf> {
    dir.ancestors()
        .take_while(|d| d.starts_with(&layout.workspace))
        .map(|d| d.join("Cargo.toml"))
        .find(|m| m.is_file())
}

fn mirrored(path: &Path, layout: &Layout) -> PathBuf {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let absolute = absolute.canonicalize().unwrap_or(absolute);
    layout.mirror(&absolute)
}

/// The flag that builds every crate with frame pointers, which allocation
/// sites walk (`--sites`: a few loads a frame, where the unwinder takes
/// microseconds a stack). Always, so that `--sites` rebuilds nothing.
const FRAME_POINTERS: &str = "-Cforce-frame-pointers=yes";

/// Adds [`FRAME_POINTERS`] to the flags cargo passes rustc: to the
/// environment's, which override the configuration's, or else to the
/// configuration's `build.rustflags` (where a `target.<triple>.rustflags`
/// of the user's overrides it, sites take the unwinder: slower, the same).
fn frame_pointers(command: &mut Command) {
    if let Some(flags) = std::env::var_os("CARGO_ENCODED_RUSTFLAGS") {
        let mut flags = flags;
        if !flags.is_empty() {
            flags.push("\x1f");
        }
        flags.push(FRAME_POINTERS);
        command.env("CARGO_ENCODED_RUSTFLAGS", flags);
    } else if let Some(flags) = std::env::var_os("RUSTFLAGS") {
        let mut flags = flags;
        flags.push(" ");
        flags.push(FRAME_POINTERS);
        command.env("RUSTFLAGS", flags);
    } else {
        command
            .arg("--config")
            .arg(format!("build.rustflags=[\"{FRAME_POINTERS}\"]"));
    }
}

/// The `--config` settings of the dev and test profiles for memprof's
/// runtime and the libraries only it links, given the packages the user's
/// own build compiles (see [`RUNTIME_LIBRARIES`]).
///
/// PERF: memprof's runtime optimized in every profile (in a dev build it
/// was most of a test suite's cost: each test's thread sets up and merges
/// its functions' rows), and the JSON library it writes and merges each
/// process's report with at exit (unoptimized, that was half of a test
/// binary's time in pulldown-cmark's suite, whose merged report is about 9
/// MB); the user's crates as their profiles build them.
fn profile_settings(user_packages: Option<&BTreeSet<String>>) -> Vec<String> {
    let mut settings = Vec::new();
    for profile in ["dev", "test"] {
        for package in ["memprof-runtime", "miniserde", "itoa"] {
            settings.push(format!("profile.{profile}.package.{package}.opt-level=3"));
        }
        for package in ["memprof", "memprof-runtime"] {
            settings.push(format!(
                "profile.{profile}.package.{package}.debug=\"line-tables-only\""
            ));
        }
        let runtime_only = RUNTIME_LIBRARIES
            .iter()
            .filter(|p| user_packages.is_some_and(|u| !u.contains(**p)));
        for package in runtime_only {
            for setting in ["debug=0", "opt-level=3"] {
                settings.push(format!("profile.{profile}.package.{package}.{setting}"));
            }
        }
    }
    settings
}

/// Runs cargo; returns its exit status (128 + the signal that ended it).
pub fn run_cargo(invocation: &Invocation<'_>) -> Result<i32, CargoError> {
    let options = invocation.options;
    let layout = invocation.layout;
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = Command::new(cargo);
    command.arg(options.subcommand.name());
    let here = std::env::current_dir()
        .ok()
        .and_then(|d| d.canonicalize().ok())
        .filter(|d| d.starts_with(&layout.workspace) && !d.starts_with(&layout.user_target));
    let given = super::values(&options.cargo_args, "--manifest-path", None);
    if options.subcommand == Subcommand::Run {
        // NOTE: the program runs where you are, as under `cargo run` (its
        // relative paths, the files it writes); cargo finds the copy
        // through --manifest-path: the copy of the manifest it would have
        // taken from here.
        if given.is_empty()
            && let Some(manifest) = here.as_deref().and_then(|d| nearest_manifest(d, layout))
        {
            command.arg("--manifest-path").arg(layout.mirror(&manifest));
        }
    } else {
        // Test binaries run in their package's directory: the copy's.
        command.current_dir(here.map_or_else(|| layout.tree.clone(), |d| layout.mirror(&d)));
    }
    for setting in profile_settings(invocation.user_packages) {
        command.arg("--config").arg(setting);
    }
    // Debug information, so that sites and pprof locations have files and
    // lines in a release build too.
    for setting in super::debug_info::config_args(
        options.subcommand,
        &options.cargo_args,
        &layout.workspace.join("Cargo.toml"),
    ) {
        command.arg("--config").arg(setting);
    }
    frame_pointers(&mut command);
    command.args(cargo_args(&options.cargo_args, layout));
    command.env("CARGO_TARGET_DIR", target_dir(layout));
    command.env("MEMPROF_JSON", invocation.reports.join("%p.json"));
    // NOTE: the flag, written for this run, wins over a MEMPROF_SITES
    // exported for every run.
    if let Some(sites) = &invocation.sites {
        command.env("MEMPROF_SITES", sites);
    }
    if std::env::var_os("MEMPROF_REPORT").is_none() {
        // The program's own tables would be one per function, and a test
        // binary's the first calls' of every function on every test's
        // thread, rendered for libtest to drop (most of a profiled suite's
        // time); the merged report is printed at the end instead.
        command.env("MEMPROF_REPORT", "off");
    }
    command.stderr(Stdio::piped());
    super::signals::install();
    let mut child = command.spawn().map_err(CargoError::Cargo)?;
    super::signals::child_started(child.id());
    let live = std::env::var_os("MEMPROF_LIVE").is_some_and(|v| v != "0" && !v.is_empty());
    if options.subcommand == Subcommand::Run && live {
        // `cargo run` execs the program in cargo's place: this pid.
        eprintln!(
            "cargo-memprof: the program runs as process {0} (mprof snapshot {0}, mprof top {0})",
            child.id()
        );
    }
    let mut held: Vec<String> = Vec::new();
    let mut stderr = std::io::stderr();
    if let Some(pipe) = child.stderr.take() {
        for line in BufReader::new(pipe).lines() {
            let Ok(line) = line else { break };
            let line = user_paths(&line, invocation);
            if held.is_empty() && !line.starts_with("error") {
                let _ = writeln!(stderr, "{line}");
            } else {
                held.push(line);
            }
        }
    }
    let status = child.wait().map_err(CargoError::Cargo)?;
    let code = status.code().unwrap_or_else(|| {
        use std::os::unix::process::ExitStatusExt;
        128 + status.signal().unwrap_or(0)
    });
    if !status.success()
        && held
            .iter()
            .any(|l| l.starts_with("error: could not compile"))
    {
        let why = own_allocator_line(&held).unwrap_or_else(|| bug_line(&held, invocation));
        let _ = writeln!(stderr, "{why}");
    }
    for line in held {
        let _ = writeln!(stderr, "{line}");
    }
    Ok(code)
}

fn user_paths(line: &str, invocation: &Invocation<'_>) -> String {
    let layout = invocation.layout;
    let mut line = line.replace(
        &layout.tree.display().to_string(),
        &layout.workspace.display().to_string(),
    );
    for (copy, original) in &invocation.dep_dirs {
        line = line.replace(&copy.display().to_string(), &original.display().to_string());
    }
    line
}

/// The line that says why a crate with a `#[global_allocator]` of its own
/// does not build with memprof's (a known limit, not memprof's bug), if
/// the compiler said so: the crate that declares it is not profiled (a
/// profiled one's is wrapped in memprof's).
fn own_allocator_line(held: &[String]) -> Option<String> {
    held.iter()
        .any(|l| l.contains("conflicts with global allocator in"))
        .then(|| {
            "cargo-memprof: a crate the build links has a #[global_allocator] of its own, and \
             it is not profiled: profile its package too (-p), whose allocator memprof then \
             counts through, or wrap it in memprof::Allocator (see \"Using your own \
             allocator\" in memprof's reference)"
                .to_string()
        })
}

/// The line that says a compiler error is memprof's: the functions around
/// the error's locations and the `--skip-fn` that leaves them as written.
fn bug_line(held: &[String], invocation: &Invocation<'_>) -> String {
    let mut names: Vec<&str> = Vec::new();
    for line in held {
        let Some(location) = line.trim_start().strip_prefix("--> ") else {
            continue;
        };
        let mut parts = location.rsplitn(3, ':');
        let (_, line_no, file) = (parts.next(), parts.next(), parts.next());
        let (Some(file), Some(line_no)) = (file, line_no.and_then(|l| l.parse::<usize>().ok()))
        else {
            continue;
        };
        let file = invocation.layout.workspace.join(file);
        let around = invocation
            .functions
            .iter()
            .filter(|f| f.file == file && f.line <= line_no)
            .max_by_key(|f| f.line);
        if let Some(f) = around
            && !names.contains(&f.path.as_str())
        {
            names.push(&f.path);
        }
    }
    if names.is_empty() {
        return "cargo-memprof: the annotated copy does not build; if the original does, \
                this is memprof's bug (the compiler's error follows)"
            .to_string();
    }
    let pattern: Vec<String> = names
        .iter()
        .map(|n| format!("^{}$", regex::escape(n)))
        .collect();
    format!(
        "cargo-memprof: the annotated copy does not build in {}; if the original does, this is \
         memprof's bug: leave them as written with --skip-fn '{}'",
        names.join(", "),
        pattern.join("|")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings_for(package: &str, user: Option<&BTreeSet<String>>) -> Vec<String> {
        let prefix = format!("profile.test.package.{package}.");
        profile_settings(user)
            .into_iter()
            .filter_map(|s| s.strip_prefix(&prefix).map(str::to_owned))
            .collect()
    }

    #[test]
    fn runtime_only_libraries_are_optimized_and_the_users_own_are_left_as_their_profile_says() {
        let user: BTreeSet<String> = ["memchr", "serde", "my-app"].map(String::from).into();
        assert_eq!(
            settings_for("gimli", Some(&user)),
            ["debug=0", "opt-level=3"]
        );
        assert_eq!(
            settings_for("tabled", Some(&user)),
            ["debug=0", "opt-level=3"]
        );
        // The user's build compiles these too: their profile decides.
        assert!(settings_for("memchr", Some(&user)).is_empty());
        assert!(settings_for("serde", Some(&user)).is_empty());
        assert!(settings_for("my-app", Some(&user)).is_empty());
        // Without a Cargo.lock nothing says which are the user's.
        assert!(settings_for("gimli", None).is_empty());
        // The runtime itself, always.
        assert_eq!(
            settings_for("memprof-runtime", None),
            ["opt-level=3", "debug=\"line-tables-only\""]
        );
    }
}
