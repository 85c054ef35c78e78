//! `MEMPROF_JSON`'s file: one report for every process of one run.
//!
//! `cargo test` runs each test binary and each doctest as a process of its
//! own, one after another, and every one of them writes `MEMPROF_JSON` at
//! exit. Each process locks the file's directory, reads what the processes
//! before it in the same run wrote, adds its own report to it and writes the
//! sum back, so that `MEMPROF_JSON=base.json cargo test` gathers the whole
//! run. A file left by an earlier run is replaced.
//!
//! The report is written to a new file in the same directory and renamed
//! over the old one: a process killed while writing leaves the old report
//! whole (and a `.NAME.PID.tmp` beside it), never half of a new one. A path
//! that is a symbolic link is refused with a warning, never written
//! through, so that a link planted in a shared directory (`/tmp`) cannot
//! point the report at another file; a dangling link's target is not
//! created either.
//!
//! A run is known by the `cargo` process that started this one (its pid and
//! start time, so that a reused pid is another run). A process that is to
//! write the file names its run in [`RUN_VAR`] as it loads; the processes
//! it starts, which cargo did not start, inherit it and belong to its run.
//! A process that neither cargo nor a process of a run started, as a
//! program started directly or by `cargo run` (which execs it, so that no
//! `cargo` is left above it), is a run of its own.
//!
//! Windows has no `/proc` to find `cargo` by, as macOS: there each test
//! binary is a run of its own, and its report replaces the one before it.
//! Its lock is a named mutex rather than `flock` (see `os::DirLock`).
//!
//! `%p` in the path stands for the process's id, as in valgrind's
//! `--log-file`: `MEMPROF_JSON=reports/%p.json` gives each process a file
//! of its own, which no other process reads or adds to (`cargo memprof`
//! gathers them once, after the run, rather than each process re-reading
//! and re-writing the whole run's report at its exit).

use crate::os::{DirLock, open_no_follow};
use crate::report::Report;
use crate::safe_file::{refuse_link, refuse_special, refused_if_link, replace};
use std::borrow::Cow;
use std::fs::OpenOptions;
use std::io::{self, Read};
use std::path::Path;
use std::time::Duration;

/// How long a process exiting waits for its turn at the file.
pub(crate) const AT_EXIT: Duration = Duration::from_secs(10);
/// How long a process ending by a signal waits for its turn: a service
/// must end within 2 s of SIGTERM whatever else holds the directory.
#[cfg(unix)]
pub(crate) const AT_SIGNAL: Duration = Duration::from_secs(1);

/// Writes `report` to `path`, added to what earlier processes of this run
/// wrote there. Waits at most `patience` for the other processes writing
/// into that directory (a lock on it held longer, by anyone, fails the
/// write, which then replaces nothing).
pub(crate) fn write(path: &Path, report: &Report, patience: Duration) -> io::Result<()> {
    let path = &*of_this_process(path);
    refuse_link(path)?;
    refuse_special(path)?;
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let _lock = DirLock::exclusive(dir, patience)?;
    let mut earlier = String::new();
    match open_no_follow(OpenOptions::new().read(true), path) {
        Ok(mut file) => {
            file.read_to_string(&mut earlier)?;
        }
        Err(err) if err.kind() == io::ErrorKind::NotFound => {}
        Err(err) => return Err(refused_if_link(err)),
    }
    // A second write of this process (a call made after the report at
    // exit) replaces its first: its report goes with what the earlier
    // processes had written then, not with its own first report.
    let earlier = {
        let mut first = EARLIER.lock().unwrap_or_else(|e| e.into_inner());
        first.get_or_insert(earlier).clone()
    };
    let run = run_id();
    let merged = match Report::from_json_of_run(&earlier, &run) {
        Some(mut earlier) => {
            earlier.add(report);
            earlier
        }
        None => report.clone(),
    };
    let text = merged.to_json_of_run(&run);
    replace(path, dir, text.as_bytes())
}

/// `path` with each `%p` replaced by this process's id, read when the file
/// is written (a forked child writes its own).
pub(crate) fn of_this_process(path: &Path) -> Cow<'_, Path> {
    of_process(path, std::process::id())
}

/// `path` with each `%p` replaced by `pid`; as it is if it has none, or is
/// not UTF-8.
fn of_process(path: &Path, pid: u32) -> Cow<'_, Path> {
    match path.to_str() {
        Some(text) if text.contains("%p") => {
            Cow::Owned(text.replace("%p", &pid.to_string()).into())
        }
        _ => Cow::Borrowed(path),
    }
}

/// The process's start, in clock ticks after boot, and the system's
/// uptime in seconds: the process's own uptime is their difference.
#[cfg(unix)]
pub(crate) fn uptime() -> Option<f64> {
    let start = Stat::read(std::process::id())?.start;
    let system: f64 = std::fs::read_to_string("/proc/uptime")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    // SAFETY: a plain query.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    (ticks > 0).then(|| (system - start as f64 / ticks as f64).max(0.0))
}

/// What the file held when this process first wrote it.
static EARLIER: std::sync::Mutex<Option<String>> = std::sync::Mutex::new(None);

/// The variable through which a process that is to write the file names
/// its run for the processes it starts.
const RUN_VAR: &str = "MEMPROF_RUN";

// Names the run as the program loads, before its `main` and its threads:
// changing the environment later could race with a thread reading it.
crate::os::run_at_load!(NAME_THE_RUN = name_the_run);

#[cfg(any(target_os = "linux", target_os = "macos", windows))]
extern "C" fn name_the_run() {
    if std::env::var_os("MEMPROF_JSON").is_none_or(|v| v.is_empty()) {
        return;
    }
    crate::alloc::untracked(|| {
        let run = run_id();
        // SAFETY: the program has not started: no other thread runs yet.
        unsafe { std::env::set_var(RUN_VAR, run) };
    });
}

/// This process's run: `cargo:PID:START` if `cargo` started it (a test
/// binary; a doctest, through rustdoc; a test under `cargo nextest`);
/// else the run that the process that started it named in [`RUN_VAR`];
/// else `process:PID:START` for itself, as for a program that `cargo run`
/// execs (no `cargo` is left above it).
fn run_id() -> String {
    let own = std::process::id();
    let mut pid = Stat::read(own).map_or(0, |s| s.parent);
    for _ in 0..3 {
        let Some(stat) = Stat::read(pid) else { break };
        if stat.command == "cargo" {
            return format!("cargo:{pid}:{}", stat.start);
        }
        if !matches!(stat.command.as_str(), "rustdoc" | "cargo-nextest") {
            break;
        }
        pid = stat.parent;
    }
    if let Some(run) = std::env::var(RUN_VAR).ok().filter(|r| !r.is_empty()) {
        return run;
    }
    let start = Stat::read(own).map_or(0, |s| s.start);
    format!("process:{own}:{start}")
}

/// The fields of `/proc/PID/stat` that tell a process apart.
struct Stat {
    command: String,
    parent: u32,
    /// Start time, in clock ticks after boot.
    start: u64,
}

impl Stat {
    fn read(pid: u32) -> Option<Stat> {
        let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        Stat::parse(&text)
    }

    /// `PID (COMMAND) STATE PPID ... STARTTIME ...`: the command may hold
    /// spaces and parentheses, so fields are counted after its last `)`.
    fn parse(text: &str) -> Option<Stat> {
        let open = text.find('(')?;
        let close = text.rfind(')')?;
        let command = text.get(open + 1..close)?.to_owned();
        let fields: Vec<&str> = text.get(close + 1..)?.split_whitespace().collect();
        // After the command: state is field 3 of the whole line, ppid 4,
        // starttime 22.
        Some(Stat {
            command,
            parent: fields.get(1)?.parse().ok()?,
            start: fields.get(19)?.parse().ok()?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_p_in_the_path_is_the_process_id() {
        assert_eq!(
            of_process(Path::new("target/reports/%p.json"), 4242),
            Path::new("target/reports/4242.json")
        );
        assert_eq!(
            of_process(Path::new("run-%p/%p.json"), 7),
            Path::new("run-7/7.json")
        );
        assert!(matches!(
            of_process(Path::new("report.json"), 7),
            Cow::Borrowed(_)
        ));
    }

    #[test]
    fn stat_fields_are_counted_after_the_command() {
        let line = "4242 (my (odd) prog) S 17 4242 4242 0 -1 4194560 100 0 0 0 \
                    1 2 0 0 20 0 1 0 987654 1000 200";
        let stat = Stat::parse(line).unwrap();
        assert_eq!(stat.command, "my (odd) prog");
        assert_eq!(stat.parent, 17);
        assert_eq!(stat.start, 987654);
    }
}
