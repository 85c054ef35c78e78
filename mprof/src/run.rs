//! `mprof run`: starts a program, samples its memory until it exits, and
//! returns its exit status.
//!
//! Every sample goes to the file as it is taken, in one `write(2)` on a file
//! opened with `O_APPEND`, so the file is complete at every moment and lines
//! that a memprof program appends itself (see memprof-runtime's `timeline`)
//! never mix with ours. The program finds the file in `MEMPROF_MPROF`.
//!
//! SIGINT and SIGTERM do not stop `mprof`: it passes them on to the program
//! (unless the terminal already sent them to the whole foreground group) and
//! records until the program exits, then exits as the program did.

use crate::dat;
use crate::error::Error;
use crate::gpu::GpuSampler;
use crate::procfs;
use std::ffi::OsString;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus};
use std::sync::atomic::{AtomicI32, Ordering::SeqCst};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The variable that tells a memprof program where to append its `FUNC` and
/// `HEAP` lines.
pub const FILE_VAR: &str = "MEMPROF_MPROF";
/// Its sampling interval in seconds.
pub const INTERVAL_VAR: &str = "MEMPROF_MPROF_INTERVAL";

pub struct RunOptions {
    pub interval: f64,
    pub include_children: bool,
    pub multiprocess: bool,
    pub output: Option<PathBuf>,
    pub gpu: bool,
    pub program: Vec<OsString>,
}

const MIB: f64 = (1u64 << 20) as f64;

/// Runs the program and returns the exit status `mprof` should exit with.
pub fn run(options: RunOptions) -> Result<i32, Error> {
    let path = options
        .output
        .clone()
        .unwrap_or_else(crate::files::new_name);
    let absolute = std::path::absolute(&path).map_err(|e| Error::io("create", &path, e))?;
    let mut file = OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(true)
        .open(&path)
        .map_err(|e| Error::io("create", &path, e))?;
    let args: Vec<String> = options
        .program
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    // Reopened for appending now that it is empty: the program appends too.
    file.write_all(format!("CMDLINE {}\n", dat::cmdline(&args)).as_bytes())
        .map_err(|e| Error::io("write", &path, e))?;
    drop(file);
    let mut file = OpenOptions::new()
        .append(true)
        .open(&path)
        .map_err(|e| Error::io("write", &path, e))?;

    let gpu = if options.gpu { GpuSampler::new() } else { None };
    signals::install();
    let spawned = Command::new(&options.program[0])
        .args(&options.program[1..])
        .env(FILE_VAR, &absolute)
        .env(INTERVAL_VAR, options.interval.to_string())
        .spawn();
    let mut child = match spawned {
        Ok(child) => child,
        Err(source) => {
            let _ = std::fs::remove_file(&path);
            return Err(Error::Spawn {
                program: args[0].clone(),
                source,
            });
        }
    };
    signals::set_child(child.id());
    eprintln!(
        "mprof: sampling memory every {}s into {}",
        options.interval,
        crate::printable::path(&path)
    );

    let mut recorder = Recorder {
        file: &mut file,
        path: &path,
        options: &options,
        gpu,
        write_failed: false,
    };
    let status = recorder.record(&mut child);
    signals::child_reaped();
    Ok(exit_code(status?))
}

struct Recorder<'a> {
    file: &'a mut File,
    path: &'a std::path::Path,
    options: &'a RunOptions,
    gpu: Option<GpuSampler>,
    write_failed: bool,
}

impl Recorder<'_> {
    /// Samples every interval until the program exits.
    fn record(&mut self, child: &mut Child) -> Result<ExitStatus, Error> {
        let interval = Duration::from_secs_f64(self.options.interval);
        let pid = child.id();
        sample_until_exit(
            &mut SystemClock,
            interval,
            || child.try_wait().map_err(wait_error),
            || self.sample(pid),
        )
    }

    fn sample(&mut self, pid: u32) {
        let time = unix_now();
        let Some(rss) = procfs::rss(pid) else {
            // Exited, not yet reaped: the next check ends the recording.
            return;
        };
        let with_children = self.options.include_children || self.options.multiprocess;
        let children = if with_children || self.gpu.is_some() {
            procfs::descendants(pid)
        } else {
            Vec::new()
        };
        let child_rss: Vec<(u32, u64)> = if with_children {
            children
                .iter()
                .filter_map(|&c| Some((c, procfs::rss(c)?)))
                .collect()
        } else {
            Vec::new()
        };
        let mut total = rss;
        if self.options.include_children {
            total += child_rss.iter().map(|(_, r)| r).sum::<u64>();
        }
        let mut lines = dat::sample_line("MEM", total as f64 / MIB, time);
        if self.options.multiprocess {
            for (child, bytes) in &child_rss {
                lines.push_str(&dat::child_line(*child, *bytes as f64 / MIB, time));
            }
        }
        if let Some(gpu) = &mut self.gpu {
            let mut pids = vec![pid];
            if self.options.include_children || self.options.multiprocess {
                pids.extend(&children);
            }
            if let Some(bytes) = gpu.sample(&pids) {
                lines.push_str(&dat::sample_line("GPU", bytes as f64 / MIB, time));
            }
        }
        if let Err(err) = self.file.write_all(lines.as_bytes()) {
            // The program keeps running; say so once rather than stop it.
            if !self.write_failed {
                self.write_failed = true;
                eprintln!(
                    "mprof: warning: cannot write {}: {}; samples are being lost",
                    crate::printable::path(self.path),
                    crate::error::describe(&err)
                );
            }
        }
    }
}

/// Where [`sample_until_exit`] reads the time and waits: the system's
/// clock, or a test's.
trait Clock {
    fn now(&mut self) -> Instant;
    fn sleep(&mut self, duration: Duration);
}

struct SystemClock;

impl Clock for SystemClock {
    fn now(&mut self) -> Instant {
        Instant::now()
    }
    fn sleep(&mut self, duration: Duration) {
        std::thread::sleep(duration);
    }
}

/// Calls `sample` once per `interval` until `exited` gives the program's
/// status. Deadlines, not sleeps of a fixed length, so samples do not drift
/// and a late one is taken at once, none skipped; `exited` is checked
/// often so that the end of the program ends the recording at once.
fn sample_until_exit<T>(
    clock: &mut impl Clock,
    interval: Duration,
    mut exited: impl FnMut() -> Result<Option<T>, Error>,
    mut sample: impl FnMut(),
) -> Result<T, Error> {
    let origin = clock.now();
    let mut tick: u32 = 0;
    loop {
        if let Some(status) = exited()? {
            return Ok(status);
        }
        sample();
        tick = tick.saturating_add(1);
        let deadline = origin + interval * tick;
        loop {
            let now = clock.now();
            if now >= deadline {
                break;
            }
            clock.sleep((deadline - now).min(Duration::from_millis(5)));
            if let Some(status) = exited()? {
                return Ok(status);
            }
        }
    }
}

fn wait_error(source: std::io::Error) -> Error {
    Error::io("wait for", std::path::Path::new("the program"), source)
}

fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// The program's exit code, or 128 + the signal that ended it, as shells
/// report it.
pub fn exit_code(status: ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => code,
        (None, Some(signal)) => 128 + signal,
        (None, None) => 1,
    }
}

/// SIGINT and SIGTERM handling: record the signal, pass it on to the
/// program, keep recording.
mod signals {
    use super::{AtomicI32, SeqCst};

    /// The program's pid once started; 0 before, -1 once it is reaped (its
    /// pid may then belong to another process).
    static CHILD: AtomicI32 = AtomicI32::new(0);
    /// A signal sent by a process before the program started, to pass on.
    static PENDING: AtomicI32 = AtomicI32::new(0);

    pub fn install() {
        for signal in [libc::SIGINT, libc::SIGTERM] {
            // SAFETY: `on_signal` only does async-signal-safe work (atomics
            // and `kill`); the `sigaction` struct is fully initialised.
            unsafe {
                let mut action: libc::sigaction = std::mem::zeroed();
                action.sa_sigaction = on_signal as *const () as usize;
                action.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
                libc::sigemptyset(&mut action.sa_mask);
                libc::sigaction(signal, &action, std::ptr::null_mut());
            }
        }
    }

    pub fn set_child(pid: u32) {
        let pid = pid as i32;
        CHILD.store(pid, SeqCst);
        let pending = PENDING.swap(0, SeqCst);
        if pending != 0 {
            // SAFETY: `kill` has no memory preconditions.
            unsafe { libc::kill(pid, pending) };
        }
    }

    pub fn child_reaped() {
        CHILD.store(-1, SeqCst);
    }

    extern "C" fn on_signal(signal: i32, info: *mut libc::siginfo_t, _: *mut libc::c_void) {
        // SAFETY: the kernel passes a valid `siginfo_t` to an SA_SIGINFO
        // handler.
        let code = unsafe { (*info).si_code };
        // A signal from the terminal (si_code > 0, SI_KERNEL) reached the
        // whole foreground process group, the program included; one sent
        // with kill(2) (si_code <= 0) reached only us.
        if code > 0 {
            return;
        }
        match CHILD.load(SeqCst) {
            0 => PENDING.store(signal, SeqCst),
            -1 => {}
            // SAFETY: `kill` is async-signal-safe.
            pid => unsafe {
                libc::kill(pid, signal);
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A clock that moves only when slept on, or when a sample takes time.
    struct FakeClock {
        now: Instant,
    }

    impl Clock for FakeClock {
        fn now(&mut self) -> Instant {
            self.now
        }
        fn sleep(&mut self, duration: Duration) {
            self.now += duration;
        }
    }

    /// The seconds since `origin` at which samples were taken, for a
    /// program that exits at `exit_at`, when the sample at index `slow`
    /// takes `slow_for`.
    fn sample_times(exit_at: f64, slow: usize, slow_for: Duration) -> Vec<f64> {
        let origin = Instant::now();
        let exit_at = origin + Duration::from_secs_f64(exit_at);
        let clock = std::cell::RefCell::new(FakeClock { now: origin });
        let mut times = Vec::new();
        let status = sample_until_exit(
            &mut Shared(&clock),
            Duration::from_millis(100),
            || Ok((clock.borrow().now >= exit_at).then_some(7)),
            || {
                let mut clock = clock.borrow_mut();
                times.push((clock.now - origin).as_secs_f64());
                if times.len() == slow + 1 {
                    clock.now += slow_for;
                }
            },
        );
        assert_eq!(status.unwrap(), 7);
        times
    }

    struct Shared<'a>(&'a std::cell::RefCell<FakeClock>);

    impl Clock for Shared<'_> {
        fn now(&mut self) -> Instant {
            self.0.borrow_mut().now()
        }
        fn sleep(&mut self, duration: Duration) {
            self.0.borrow_mut().sleep(duration);
        }
    }

    fn rounded(times: &[f64]) -> Vec<f64> {
        times.iter().map(|t| (t * 1e6).round() / 1e6).collect()
    }

    #[test]
    fn one_sample_per_interval_until_the_program_exits() {
        let times = sample_times(0.45, 0, Duration::ZERO);
        assert_eq!(rounded(&times), [0.0, 0.1, 0.2, 0.3, 0.4]);
    }

    #[test]
    fn late_samples_are_taken_at_once_and_none_skipped() {
        // The second sample takes 0.25 s: the two samples due meanwhile
        // follow at once, and the next ones are back on their deadlines.
        let times = sample_times(0.65, 1, Duration::from_millis(250));
        assert_eq!(rounded(&times), [0.0, 0.1, 0.35, 0.35, 0.4, 0.5, 0.6]);
    }
}
