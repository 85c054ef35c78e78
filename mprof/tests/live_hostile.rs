//! `MEMPROF_LIVE`'s channel against the other side misbehaving: a client
//! that trickles its request must hold up neither SIGTERM nor other
//! clients (the program's side), and a socket that is not the program's
//! (in a directory another user could have made, or streaming without end)
//! must not be believed (`mprof snapshot`'s side, against fake servers).
//!
//! The service is this test binary itself, run again with
//! `MPROF_TEST_SERVICE` set: `service_child` makes a profiled call, prints
//! `ready`, and waits for its stdin to close.
//!
//! NOTE: nothing here asserts a duration. A hang is caught by a bound far
//! past what the code needs (a minute, against the program's 2 s request
//! deadline), which the old code passed only after 256 s.

mod common;

use common::live::{Service, calls, snapshot, socket};
use common::{assert_one_line_error, scratch};
use std::io::{BufRead, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::time::Duration;

/// Far more than the program needs to end on SIGTERM, whatever its
/// clients do.
const GENEROUS: Duration = Duration::from_secs(60);

#[memprof::profile]
fn work() -> usize {
    let buffer = vec![0u8; 1024];
    buffer.len()
}

/// The service that the tests below watch; does nothing in an ordinary
/// test run.
#[test]
#[ignore = "a child run: the tests below start it"]
fn service_child() {
    if std::env::var_os("MPROF_TEST_SERVICE").is_none() {
        return;
    }
    work();
    println!("ready");
    let mut line = String::new();
    while std::io::stdin().lock().read_line(&mut line).unwrap_or(0) > 0 {
        if line.trim() == "abort" {
            std::process::abort();
        }
        line.clear();
    }
}

/// `std::process::abort()` writes no report, and left the socket behind,
/// as SIGKILL does; the program still dies of SIGABRT.
#[test]
fn abort_removes_the_socket() {
    let dir = scratch("live-abort");
    let mut service = Service::start("idle", &dir, &[("MEMPROF_LIVE", "1")]);
    let path = socket(&dir, service.pid());
    assert!(path.exists(), "{}", path.display());
    service.send("abort");
    let status = service.wait_at_most(GENEROUS).expect("the program ended");
    assert_eq!(status.signal(), Some(libc::SIGABRT), "{status:?}");
    assert!(!path.exists(), "{}", path.display());
}

/// Starts a client that sends one byte a second to the socket at `path`
/// and never a newline, over a new connection whenever the program closes
/// one, until the socket is gone. The old code read each byte with a
/// timeout of its own: every such connection held the program 256 s.
fn trickle(path: PathBuf) {
    std::thread::spawn(move || {
        while let Ok(mut stream) = UnixStream::connect(&path) {
            while stream.write_all(b"s").is_ok() {
                std::thread::sleep(Duration::from_secs(1));
            }
        }
    });
}

/// Waits until the service is serving a client, the trickling one.
fn wait_until_held(service: &Service) {
    // NOTE: a bound for a broken build to fail rather than hang.
    for _ in 0..600 {
        if service.sockets() >= 2 {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("the service never took the trickling client");
}

#[test]
fn a_trickled_request_does_not_hold_sigterm() {
    let dir = scratch("live-trickle-sigterm");
    let json = dir.join("trickled.json");
    let service = Service::start(
        "idle",
        &dir,
        &[
            ("MEMPROF_LIVE", "1"),
            ("MEMPROF_JSON", json.to_str().unwrap()),
        ],
    );
    let pid = service.pid();
    trickle(socket(&dir, pid));
    wait_until_held(&service);
    // SAFETY: a signal to our own child, still running.
    assert_eq!(unsafe { libc::kill(pid as i32, libc::SIGTERM) }, 0);
    let status = service
        .wait_at_most(GENEROUS)
        .expect("a client trickling its request held SIGTERM up for a minute");
    assert_eq!(status.signal(), Some(libc::SIGTERM), "{status:?}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(calls(&report, "work"), 1);
    assert!(!socket(&dir, pid).exists());
}

#[test]
fn a_trickled_request_does_not_hold_other_clients() {
    let dir = scratch("live-trickle-others");
    let service = Service::start("idle", &dir, &[("MEMPROF_LIVE", "1")]);
    let pid = service.pid();
    trickle(socket(&dir, pid));
    wait_until_held(&service);
    // `mprof snapshot` waits 30 s for its answer: the trickling connection
    // ahead of it gets 2 s.
    let report = snapshot(&dir, pid, "meanwhile.json");
    assert_eq!(calls(&report, "work"), 1);
    let (_, status) = service.finish();
    assert!(status.success(), "{status:?}");
}

/// A process for mprof to ask about (`sleep`), started with `env` and
/// without `XDG_RUNTIME_DIR` unless `env` gives it; killed when dropped.
struct Target(Child);

impl Target {
    fn start(env: &[(&str, &Path)]) -> Target {
        let child = Command::new("sleep")
            .arg("600")
            .env_remove("XDG_RUNTIME_DIR")
            .env_remove("TMPDIR")
            .envs(env.iter().copied())
            .spawn()
            .unwrap();
        // `spawn` returns once the child's exec has replaced its memory,
        // which is before the kernel records where its environment lies:
        // until then `/proc/PID/environ` reads empty, and mprof would not
        // find the program's own socket directory. Wait for it.
        let environ = format!("/proc/{}/environ", child.id());
        let start = std::time::Instant::now();
        while std::fs::read(&environ).is_ok_and(|e| e.is_empty())
            && start.elapsed() < std::time::Duration::from_secs(10)
        {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        Target(child)
    }

    fn pid(&self) -> u32 {
        self.0.id()
    }
}

impl Drop for Target {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `mprof snapshot PID` with `env` and without `XDG_RUNTIME_DIR` unless
/// `env` gives it, as the target was started.
fn mprof_snapshot(pid: u32, env: &[(&str, &Path)]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mprof"))
        .args(["snapshot", &pid.to_string()])
        .env_remove("XDG_RUNTIME_DIR")
        .env_remove("TMPDIR")
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// A fake program's socket for process `pid` in `dir` (made with `mode`),
/// each connection served by `serve` on a thread of its own.
fn fake_server(dir: &Path, mode: u32, pid: u32, serve: fn(UnixStream)) {
    std::fs::DirBuilder::new().mode(mode).create(dir).unwrap();
    // The mode as asked, whatever the umask.
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(mode)).unwrap();
    let listener = UnixListener::bind(dir.join(format!("{pid}.sock"))).unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || serve(stream));
        }
    });
}

#[test]
fn a_socket_directory_others_can_write_is_not_trusted() {
    // No XDG_RUNTIME_DIR, and a temporary directory all users share: there,
    // another user can make `memprof-UID` (mode 0777) before the program.
    let dir = scratch("live-forged-dir");
    let env = [("TMPDIR", dir.as_path())];
    let target = Target::start(&env);
    // SAFETY: a plain query.
    let shared = dir.join(format!("memprof-{}", unsafe { libc::geteuid() }));
    static ASKED: AtomicBool = AtomicBool::new(false);
    fake_server(&shared, 0o777, target.pid(), |mut stream| {
        ASKED.store(true, Relaxed);
        let mut request = String::new();
        let _ = std::io::BufReader::new(&stream).read_line(&mut request);
        let _ = stream.write_all(b"ok\n{\"schema\":1,\"forged\":true}");
    });
    let out = mprof_snapshot(target.pid(), &env);
    assert_one_line_error(
        &out,
        &format!(
            "process {}: not trusting the socket in {}: it is owned by uid ",
            target.pid(),
            shared.display()
        ),
    );
    assert!(common::stderr(&out).contains("with mode 0777, where the program's is uid "));
    assert!(!ASKED.load(Relaxed), "mprof connected to the socket");
}

#[test]
fn an_answer_without_end_is_cut_at_the_cap() {
    let dir = scratch("live-endless");
    let env = [("XDG_RUNTIME_DIR", dir.as_path())];
    let target = Target::start(&env);
    let pid = target.pid();
    fake_server(&dir.join("memprof"), 0o700, pid, |mut stream| {
        let chunk = vec![b' '; 64 * 1024];
        let _ = stream.write_all(b"ok\n{");
        while stream.write_all(&chunk).is_ok() {}
    });
    // In this process, which finds the socket by the target's environment.
    let err = mprof::live::client::snapshot_at_most(pid, 1 << 20).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!("process {pid} answered with more than 1048576 bytes; stopped reading")
    );
    assert_eq!(mprof::live::client::MAX_ANSWER, 1 << 30);
}

#[test]
fn a_refusal_is_read_though_the_program_closed_with_the_request_unread() {
    // The program refuses another user before reading the request, and
    // closes: the connection is reset after the refusal, which mprof
    // showed as "did not answer: connection reset by peer".
    let dir = scratch("live-refused");
    let env = [("XDG_RUNTIME_DIR", dir.as_path())];
    let target = Target::start(&env);
    fake_server(&dir.join("memprof"), 0o700, target.pid(), |mut stream| {
        let mut arrived = libc::pollfd {
            fd: stream.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid `pollfd`; waits for the request to be there,
        // unread.
        unsafe { libc::poll(&mut arrived, 1, -1) };
        let _ = stream.write_all(b"error: refused: this program answers its own user only\n");
    });
    let out = mprof_snapshot(target.pid(), &env);
    assert_one_line_error(
        &out,
        &format!(
            "process {} refused: this program answers its own user only",
            target.pid()
        ),
    );
}
