//! `mprof top -- CMD ARGS`: the program started with `MEMPROF_LIVE=1`, its
//! stdout and stderr held back while the screen is shown (they would
//! scribble over it) and passed on after, as they came.

use super::model::Snapshot;
use crate::error::Error;
use std::ffi::OsString;
use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The program's output while held back.
#[derive(Debug, Default)]
struct Held {
    holding: bool,
    out: Vec<u8>,
    err: Vec<u8>,
}

#[derive(Debug)]
pub struct Program {
    child: Child,
    held: Arc<Mutex<Held>>,
    readers: Vec<JoinHandle<()>>,
    /// Where the program writes its report at exit, and whether mprof
    /// chose the path (and removes the file).
    report: (PathBuf, bool),
}

/// What became of the program while mprof waited for it to listen.
#[derive(Debug)]
pub enum Listening {
    /// It listens: its pid.
    Pid(u32),
    /// It ended first, a memprof program: its figures at exit.
    Ended(Snapshot),
}

impl Program {
    pub fn start(argv: &[OsString]) -> Result<Program, Error> {
        // NOTE: the report at exit, for a program that ends before mprof
        // connects: the user's MEMPROF_JSON if set, else a file of mprof's.
        let report = match std::env::var_os("MEMPROF_JSON").filter(|p| !p.is_empty()) {
            Some(path) => (PathBuf::from(path), false),
            None => {
                let name = format!("mprof-top-{}.json", std::process::id());
                (std::env::temp_dir().join(name), true)
            }
        };
        let mut child = Command::new(&argv[0])
            .args(&argv[1..])
            .env("MEMPROF_LIVE", "1")
            .env("MEMPROF_JSON", &report.0)
            // The keys are the screen's.
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|source| Error::Spawn {
                program: argv[0].to_string_lossy().into_owned(),
                source,
            })?;
        let held = Arc::new(Mutex::new(Held {
            holding: true,
            ..Held::default()
        }));
        let mut readers = Vec::new();
        if let Some(out) = child.stdout.take() {
            readers.push(pass_on(out, held.clone(), false));
        }
        if let Some(err) = child.stderr.take() {
            readers.push(pass_on(err, held.clone(), true));
        }
        Ok(Program {
            child,
            held,
            readers,
            report,
        })
    }

    /// Waits until the program answers on its channel (from its first
    /// profiled call); its pid, or, if it ended first having written its
    /// report, that report.
    pub fn wait_until_listening(&mut self) -> Result<Listening, Error> {
        let pid = self.child.id();
        let start = Instant::now();
        let mut told = false;
        loop {
            if crate::live::client::snapshot(pid).is_ok() {
                return Ok(Listening::Pid(pid));
            }
            if let Some(ended) = self.ended() {
                if let Some(mut report) = self.report_at_exit() {
                    report.facts.pid = pid;
                    report.at_exit = Some(format!("{ended} before mprof connected"));
                    return Ok(Listening::Ended(report));
                }
                self.release();
                return Err(Error::Live(format!(
                    "{ended} before it listened (it listens from its first profiled call, \
                     if built with memprof)"
                )));
            }
            if !told && start.elapsed() > Duration::from_secs(2) {
                told = true;
                eprintln!("mprof: waiting for process {pid}'s first profiled call");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The report the program wrote at exit, if it did (a memprof program);
    /// mprof's own file is removed once read.
    fn report_at_exit(&self) -> Option<Snapshot> {
        let (path, ours) = &self.report;
        let text = std::fs::read_to_string(path).ok();
        if *ours {
            let _ = std::fs::remove_file(path);
        }
        Snapshot::parse(&text?).ok()
    }

    /// "the program ended (exit status 0)" once it has.
    pub fn ended(&mut self) -> Option<String> {
        let status = self.child.try_wait().ok()??;
        Some(format!(
            "process {} ended (exit status {})",
            self.child.id(),
            crate::run::exit_code(status)
        ))
    }

    /// Writes out the output held back; from now on it goes out as it comes.
    fn release(&self) {
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        held.holding = false;
        let _ = std::io::stdout().write_all(&std::mem::take(&mut held.out));
        let _ = std::io::stderr().write_all(&std::mem::take(&mut held.err));
    }

    /// Passes the program's output on and waits for it to end: its exit
    /// status, or 128 + the signal that ended it.
    pub fn finish(mut self) -> Result<i32, Error> {
        self.release();
        let status = self
            .child
            .wait()
            .map_err(|e| Error::Live(format!("cannot wait for the program: {e}")))?;
        for reader in self.readers {
            let _ = reader.join();
        }
        Ok(crate::run::exit_code(status))
    }
}

/// Reads `from` until its end, holding its bytes back while `held` says so.
fn pass_on(
    mut from: impl Read + Send + 'static,
    held: Arc<Mutex<Held>>,
    to_stderr: bool,
) -> JoinHandle<()> {
    std::thread::spawn(move || {
        let mut buffer = [0u8; 8192];
        loop {
            let n = match from.read(&mut buffer) {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            };
            let mut held = held.lock().unwrap_or_else(|e| e.into_inner());
            let chunk = &buffer[..n];
            match (held.holding, to_stderr) {
                (true, false) => held.out.extend_from_slice(chunk),
                (true, true) => held.err.extend_from_slice(chunk),
                (false, false) => {
                    let _ = std::io::stdout().write_all(chunk);
                    let _ = std::io::stdout().flush();
                }
                (false, true) => {
                    let _ = std::io::stderr().write_all(chunk);
                }
            }
        }
    })
}
