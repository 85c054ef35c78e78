//! The service that `tests/live.rs` runs (its own test binary, again)
//! and watches: starting it, reading its lines, asking its socket.

use super::{mprof, stderr};
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// The running service and its stdout.
pub struct Service {
    child: Child,
    out: BufReader<ChildStdout>,
}

impl Service {
    pub fn start(mode: &str, dir: &Path, env: &[(&str, &str)]) -> Service {
        let mut child = super::default_signals(&mut Command::new(std::env::current_exe().unwrap()))
            .args(["service_child", "--ignored", "--exact", "--nocapture"])
            .args(["--test-threads=1"])
            .env("MPROF_TEST_SERVICE", mode)
            .env("MEMPROF_REPORT", "exit")
            .env("XDG_RUNTIME_DIR", dir)
            .env_remove("MEMPROF_LIVE")
            .env_remove("MEMPROF_JSON")
            .envs(env.iter().copied())
            .current_dir(dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let out = BufReader::new(child.stdout.take().unwrap());
        let mut service = Service { child, out };
        service.wait_for("ready");
        service
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Reads the service's stdout up to a line `line`.
    pub fn wait_for(&mut self, line: &str) {
        let mut read = String::new();
        loop {
            let mut next = String::new();
            let n = self.out.read_line(&mut next).unwrap();
            assert!(n > 0, "the service ended before {line:?}: {read}");
            // libtest writes "test service_child ... " before the first line.
            if next.trim_end().ends_with(line) {
                return;
            }
            read.push_str(&next);
        }
    }

    pub fn send(&mut self, line: &str) {
        let stdin = self.child.stdin.as_mut().unwrap();
        writeln!(stdin, "{line}").unwrap();
    }

    /// Waits for the service to end by itself (a signal), stdin open.
    pub fn wait(mut self) -> std::process::ExitStatus {
        // NOTE: `Child::wait` closes the child's stdin first; kept open
        // here, or the service would end by itself, maybe before the
        // signal ends it.
        let stdin = self.child.stdin.take();
        let status = self.child.wait().unwrap();
        drop(stdin);
        status
    }

    /// As [`Service::wait`], for at most `limit`: `None`, the service
    /// killed, if it runs on. A bound for a test to fail rather than hang,
    /// not a measure: give it far more than the service should need.
    pub fn wait_at_most(mut self, limit: Duration) -> Option<ExitStatus> {
        let stdin = self.child.stdin.take();
        let deadline = Instant::now() + limit;
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break Some(status);
            }
            if Instant::now() >= deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                break None;
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        drop(stdin);
        status
    }

    /// How many sockets the service holds open: its listening socket, and
    /// one more while it serves a client.
    pub fn sockets(&self) -> usize {
        let Ok(fds) = std::fs::read_dir(format!("/proc/{}/fd", self.pid())) else {
            return 0;
        };
        fds.filter_map(|fd| std::fs::read_link(fd.ok()?.path()).ok())
            .filter(|target| target.to_string_lossy().starts_with("socket:"))
            .count()
    }

    /// Closes stdin, and returns the rest of stdout and the exit status.
    pub fn finish(mut self) -> (String, std::process::ExitStatus) {
        drop(self.child.stdin.take());
        let mut rest = String::new();
        self.out.read_to_string(&mut rest).unwrap();
        (rest, self.child.wait().unwrap())
    }
}

/// The socket of process `pid` started with `XDG_RUNTIME_DIR=dir`.
pub fn socket(dir: &Path, pid: u32) -> PathBuf {
    dir.join("memprof").join(format!("{pid}.sock"))
}

pub fn snapshot(dir: &Path, pid: u32, name: &str) -> serde_json::Value {
    let out = mprof(dir, &["snapshot", &pid.to_string(), "-o", name]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = std::fs::read_to_string(dir.join(name)).unwrap();
    serde_json::from_str(&text).unwrap()
}

pub fn calls(report: &serde_json::Value, function: &str) -> u64 {
    report["functions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"].as_str().unwrap().ends_with(function))
        .map_or(0, |f| f["calls"].as_u64().unwrap())
}

/// A request on the socket, and the whole answer.
pub fn ask(path: &Path, request: &[u8]) -> String {
    let mut stream = UnixStream::connect(path).unwrap();
    stream.write_all(request).unwrap();
    stream.shutdown(std::net::Shutdown::Write).unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    answer
}
