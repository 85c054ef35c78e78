//! `MEMPROF_LIVE`'s channel against the other side misbehaving: a client
//! that trickles its request must hold up neither SIGTERM nor other
//! clients.
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
use common::scratch;
use std::io::{BufRead, Write};
use std::os::unix::net::UnixStream;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
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
        line.clear();
    }
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
