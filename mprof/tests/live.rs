//! A running program watched from outside: `MEMPROF_LIVE`'s socket, `mprof
//! snapshot`, `mprof diff` between two snapshots, `mprof top --once`, and
//! `MEMPROF_JSON` written on SIGTERM and SIGINT; a snapshot as a heap profile
//! (`--format pprof`).
//!
//! The service is this test binary itself, run again with
//! `MPROF_TEST_SERVICE` set: `service_child` calls `remember`, which keeps
//! more on each call than on the one before (a cache of growing entries),
//! and `steady`, whose every call is alike, every 10 ms, until its stdin
//! closes. A line `pause` on its stdin stops the calls, and it answers
//! `paused`.
//!
//! NOTE: nothing here asserts a duration: waits are lower bounds (a second
//! between snapshots), and the test waits for lines the child prints, not
//! for time to pass.

mod common;

use common::live::{Service, ask, calls, snapshot, socket};
use common::{mprof, scratch, stderr, stdout};
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering::Relaxed};
use std::time::Duration;

/// Each entry `remember` keeps is this many bytes larger than the one
/// before, up to `ENTRY_CAP` entries' worth.
const ENTRY_STEP: usize = 64;
const ENTRY_CAP: usize = 256;

#[memprof::profile]
fn remember(history: &mut Vec<Vec<u8>>) {
    let entry = vec![1u8; ENTRY_STEP * (history.len() + 1).min(ENTRY_CAP)];
    history.push(entry);
}

#[memprof::profile]
fn steady() -> usize {
    let scratch = vec![0u8; 4096];
    scratch.len()
}

/// A call that runs until stdin closes, holding 4 KiB.
#[memprof::profile]
fn long_call(state: &AtomicU8) -> usize {
    let held = std::hint::black_box(vec![7u8; 4096]);
    println!("ready");
    while state.load(Relaxed) != STOP {
        std::thread::sleep(Duration::from_millis(10));
    }
    held.len()
}

const RUN: u8 = 0;
const PAUSE: u8 = 1;
const STOP: u8 = 2;

/// Set by the program's own SIGTERM handler (`MPROF_TEST_SERVICE=handler`).
static TERMINATED: AtomicBool = AtomicBool::new(false);

extern "C" fn own_handler(_: libc::c_int) {
    TERMINATED.store(true, Relaxed);
}

/// The service that the tests below watch; does nothing in an ordinary
/// test run.
#[test]
#[ignore = "a child run: the tests below start it"]
fn service_child() {
    let Ok(mode) = std::env::var("MPROF_TEST_SERVICE") else {
        return;
    };
    if mode == "connect" {
        // Run as another user: tries the socket named by MPROF_TEST_SOCKET.
        let path = std::env::var_os("MPROF_TEST_SOCKET").unwrap();
        match UnixStream::connect(path) {
            Ok(mut stream) => {
                let _ = stream.write_all(b"snapshot\n");
                let mut answer = String::new();
                let _ = stream.read_to_string(&mut answer);
                println!("connected: {answer}");
            }
            Err(err) => println!("refused: {:?}", err.kind()),
        }
        return;
    }
    if mode == "handler" {
        // SAFETY: a handler that stores to an atomic, installed before any
        // profiled call (so before memprof's).
        unsafe {
            libc::signal(
                libc::SIGTERM,
                own_handler as *const () as libc::sighandler_t,
            )
        };
    }
    static STATE: AtomicU8 = AtomicU8::new(RUN);
    std::thread::spawn(|| {
        let mut line = String::new();
        let mut stdin = std::io::stdin().lock();
        loop {
            line.clear();
            match stdin.read_line(&mut line) {
                Ok(0) | Err(_) => break,
                Ok(_) if line.trim() == "pause" => STATE.store(PAUSE, Relaxed),
                Ok(_) => {}
            }
        }
        STATE.store(STOP, Relaxed);
    });
    let mut history = Vec::new();
    if mode == "long" {
        long_call(&STATE);
        return;
    }
    if mode == "until-file" {
        // Started by `mprof top`, which holds its stdin: runs until the
        // file MPROF_TEST_STOP names exists.
        let stop = PathBuf::from(std::env::var_os("MPROF_TEST_STOP").unwrap());
        while !stop.exists() {
            remember(&mut history);
            steady();
            std::thread::sleep(Duration::from_millis(10));
        }
        println!("stopped");
        return;
    }
    remember(&mut history);
    steady();
    if mode == "fork" {
        fork_a_child();
    }
    println!("ready");
    let mut paused = false;
    loop {
        match STATE.load(Relaxed) {
            STOP => break,
            PAUSE if !paused => {
                paused = true;
                // The process's heap while paused: the snapshots taken
                // meanwhile must not raise it.
                let ((), measured) = memprof::measure_in(memprof::Scope::Process, || {
                    println!("paused");
                    while STATE.load(Relaxed) == PAUSE {
                        std::thread::sleep(Duration::from_millis(10));
                    }
                });
                println!("while paused: peak {} B", measured.peak);
            }
            PAUSE => {}
            _ => {
                remember(&mut history);
                steady();
            }
        }
        if TERMINATED.load(Relaxed) {
            println!("handled SIGTERM");
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Forks a child that makes a profiled call and exits through `exit`, so
/// that its exit handlers run; waits for it.
fn fork_a_child() {
    // SAFETY: the child calls only a profiled function and `exit`; the
    // parent waits for it.
    unsafe {
        let pid = libc::fork();
        if pid == 0 {
            steady();
            libc::exit(0);
        }
        let mut status = 0;
        libc::waitpid(pid, &mut status, 0);
        assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);
    }
}

#[test]
fn two_snapshots_name_what_grew_and_the_service_exits_as_usual() {
    let dir = scratch("live-grow");
    let service = Service::start("grow", &dir, &[("MEMPROF_LIVE", "1")]);
    let pid = service.pid();
    let first = snapshot(&dir, pid, "a.json");
    assert_eq!(first["schema"], 1);
    assert_eq!(first["pid"], pid);
    // In clock ticks (10 ms): 0 in the first tick.
    assert!(first["uptime"].as_f64().unwrap() >= 0.0);
    assert!(first["time"].as_f64().unwrap() > 1.7e9);
    // A second apart, and until the service made another call.
    let mut second;
    loop {
        std::thread::sleep(Duration::from_secs(1));
        second = snapshot(&dir, pid, "b.json");
        if calls(&second, "remember") > calls(&first, "remember") {
            break;
        }
    }
    // A sleep never ends early; the uptime counts in ticks of 10 ms.
    let uptime = |report: &serde_json::Value| report["uptime"].as_f64().unwrap();
    assert!(uptime(&second) >= uptime(&first) + 0.98, "{first} {second}");
    let out = mprof(&dir, &["diff", "a.json", "b.json", "--fail-over", "1%"]);
    let (text, why) = (stdout(&out), stderr(&out));
    assert_eq!(out.status.code(), Some(1), "{text}{why}");
    assert!(why.contains("live::remember: kept/call grew from"), "{why}");
    assert!(!why.contains("steady"), "{why}");

    // One frame of `mprof top`, as text: the function that grows, with
    // its rates.
    let out = mprof(
        &dir,
        &["top", "--once", "--interval", "0.5", &pid.to_string()],
    );
    let frame = stdout(&out);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(frame.starts_with(&format!("pid {pid}  up ")), "{frame}");
    let row = frame
        .lines()
        .find(|l| l.starts_with("live::remember "))
        .unwrap();
    // Calls, peak, kept, kept/min and allocs/s: kept grows.
    assert!(
        row.split_whitespace().nth(6).unwrap().starts_with('+'),
        "{row}"
    );
    assert!(frame.contains("\nlive::steady "), "{frame}");

    // The socket is the user's alone.
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let path = socket(&dir, pid);
    let meta = std::fs::symlink_metadata(&path).unwrap();
    assert!(std::os::unix::fs::FileTypeExt::is_socket(&meta.file_type()));
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    // SAFETY: a plain query.
    assert_eq!(meta.uid(), unsafe { libc::geteuid() });
    let folder = std::fs::metadata(dir.join("memprof")).unwrap();
    assert_eq!(folder.permissions().mode() & 0o777, 0o700);
    // SAFETY: a plain query.
    if unsafe { libc::geteuid() } == 0 {
        // Root can be another user: nobody's connection is refused.
        use std::os::unix::process::CommandExt;
        let other = Command::new(std::env::current_exe().unwrap())
            .args(["service_child", "--ignored", "--exact", "--nocapture"])
            .env("MPROF_TEST_SERVICE", "connect")
            .env("MPROF_TEST_SOCKET", &path)
            .uid(65534)
            .gid(65534)
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&other.stdout);
        assert!(said.contains("refused: PermissionDenied"), "{said}");
    }

    let (rest, status) = service.finish();
    assert!(status.success(), "{status:?}");
    // The exit tables, as without MEMPROF_LIVE.
    assert!(rest.contains("live::remember"), "{rest}");
    assert!(rest.contains("live::steady"), "{rest}");
    assert!(!path.exists(), "the socket outlived the service");
}

#[test]
fn garbage_is_refused_and_changes_no_figure() {
    let dir = scratch("live-garbage");
    let mut service = Service::start("grow", &dir, &[("MEMPROF_LIVE", "1")]);
    let pid = service.pid();
    service.send("pause");
    service.wait_for("paused");
    let path = socket(&dir, pid);
    let figures = |answer: &str| {
        assert!(answer.starts_with("ok\n{"), "{answer}");
        let report: serde_json::Value = serde_json::from_str(&answer[3..]).unwrap();
        (report["functions"].clone(), report["heap"].clone())
    };
    // NOTE: the heap is the whole process's: libtest's main thread makes
    // its first allocations for waiting on the test's thread whenever the
    // scheduler lets it, maybe after the service paused. So the figures
    // are taken once they hold still over a tenth of a second.
    let mut before = figures(&ask(&path, b"snapshot\n"));
    loop {
        std::thread::sleep(Duration::from_millis(100));
        let again = figures(&ask(&path, b"snapshot\n"));
        if again == before {
            break;
        }
        before = again;
    }
    for garbage in [
        &b"\xff\xfe\x00\x1b[2J\n"[..],
        b"SNAPSHOT\n",
        b"snapshot now\n",
        b"",
    ] {
        let answer = ask(&path, garbage);
        assert!(answer.starts_with("error: unknown request "), "{answer}");
        assert_eq!(answer.lines().count(), 1, "{answer}");
    }
    let long = vec![b'x'; 10_000];
    let mut stream = UnixStream::connect(&path).unwrap();
    // The program stops reading at its limit; the rest may not be sent.
    let _ = stream.write_all(&long);
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    assert_eq!(answer, "error: request too long\n");
    // A client that goes away without reading its answer.
    for _ in 0..20 {
        let mut stream = UnixStream::connect(&path).unwrap();
        stream.write_all(b"snapshot\n").unwrap();
        drop(stream);
    }
    let after = figures(&ask(&path, b"snapshot\n"));
    // Every row and the heap itself: the snapshots' own work and memory
    // show nowhere.
    assert_eq!(before, after);
    let (rest, status) = service.finish();
    assert!(status.success(), "{status:?}");
    // Nor while they were made: each snapshot's JSON (over 2 KiB here) is
    // built and freed outside every figure. Less than 1 KiB leaves room
    // for libtest's own first allocations (see above).
    let peak: u64 = rest
        .lines()
        .find_map(|l| {
            l.strip_prefix("while paused: peak ")?
                .strip_suffix(" B")?
                .parse()
                .ok()
        })
        .unwrap_or_else(|| panic!("{rest}"));
    assert!(
        peak < 1024,
        "the process's heap rose by {peak} B during the snapshots"
    );
    assert!(before.0.to_string().len() > 2048);
}

#[test]
fn snapshot_of_a_process_that_does_not_listen_is_one_line_of_error() {
    let dir = scratch("live-not-listening");
    let service = Service::start("grow", &dir, &[]);
    let out = mprof(&dir, &["snapshot", &service.pid().to_string()]);
    common::assert_one_line_error(&out, "does not listen: start it with MEMPROF_LIVE=1");
    assert!(!dir.join("memprof").exists(), "something listened");
    let (_, status) = service.finish();
    assert!(status.success());
    // A process that is gone.
    let out = mprof(&dir, &["snapshot", &service_pid_gone().to_string()]);
    common::assert_one_line_error(&out, "no process ");
}

/// The pid of a process that has ended and been waited for.
fn service_pid_gone() -> u32 {
    let mut child = Command::new("true").spawn().unwrap();
    child.wait().unwrap();
    child.id()
}

#[test]
fn a_socket_directory_open_to_others_is_not_used() {
    use std::os::unix::fs::PermissionsExt;
    let dir = scratch("live-open-dir");
    let shared = dir.join("memprof");
    std::fs::create_dir(&shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o777)).unwrap();
    // Its stdin closed, the service makes its first calls and ends.
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["service_child", "--ignored", "--exact", "--nocapture"])
        .env("MPROF_TEST_SERVICE", "grow")
        .env("MEMPROF_LIVE", "1")
        .env("MEMPROF_REPORT", "off")
        .env("XDG_RUNTIME_DIR", &dir)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let said = stderr(&out);
    assert!(out.status.success(), "{said}");
    assert!(
        said.contains("memprof: MEMPROF_LIVE: not listening: ")
            && said.contains("is not a directory of this user's alone"),
        "{said}"
    );
    assert_eq!(std::fs::read_dir(&shared).unwrap().count(), 0);
}

#[test]
fn snapshot_every_writes_numbered_snapshots_beside_memprof_json() {
    let dir = scratch("live-every");
    let json = dir.join("every.json");
    let service = Service::start(
        "grow",
        &dir,
        &[
            ("MEMPROF_SNAPSHOT_EVERY", "1s"),
            ("MEMPROF_JSON", json.to_str().unwrap()),
        ],
    );
    let second = dir.join("every.2.json");
    // NOTE: a bound for a broken build to fail rather than hang, not a
    // measure: the snapshots come a second apart.
    for _ in 0..600 {
        if second.exists() {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let read = |path: PathBuf| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    };
    let (one, two) = (read(dir.join("every.1.json")), read(second));
    assert!(
        calls(&two, "remember") > calls(&one, "remember"),
        "{one} {two}"
    );
    // Due a second apart from the start (not from each other: a late one
    // does not delay the next).
    assert!(two["uptime"].as_f64().unwrap() >= one["uptime"].as_f64().unwrap());
    let (_, status) = service.finish();
    assert!(status.success());
    // At exit, MEMPROF_JSON itself, as without snapshots.
    assert!(calls(&read(json), "remember") >= calls(&two, "remember"));
}

#[test]
fn top_once_starts_a_command_and_passes_its_output_and_status_on() {
    let dir = scratch("live-top-command");
    let exe = std::env::current_exe().unwrap();
    let stop = dir.join("stop");
    let mut top = Command::new(env!("CARGO_BIN_EXE_mprof"))
        .args(["top", "--once", "--interval", "0.2", "--"])
        .arg(exe)
        .args(["service_child", "--ignored", "--exact", "--nocapture"])
        .env("MPROF_TEST_SERVICE", "until-file")
        .env("MPROF_TEST_STOP", &stop)
        .env("XDG_RUNTIME_DIR", &dir)
        .env("MEMPROF_REPORT", "off")
        .env_remove("MEMPROF_LIVE")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(top.stdout.take().unwrap());
    let mut text = String::new();
    // The frame first; the program's output is held back until it is out.
    while !text.contains("\nlive::steady ") {
        assert!(out.read_line(&mut text).unwrap() > 0, "{text}");
    }
    assert!(text.starts_with("pid "), "{text}");
    assert!(text.contains("\nlive::remember "), "{text}");
    assert!(!text.contains("running 1 test"), "{text}");
    std::fs::write(&stop, "").unwrap();
    out.read_to_string(&mut text).unwrap();
    assert!(text.contains("running 1 test"), "{text}");
    assert!(text.contains("stopped"), "{text}");
    assert_eq!(top.wait().unwrap().code(), Some(0));
}

#[test]
fn top_misuse_is_one_line_of_error() {
    let dir = scratch("live-top-misuse");
    let out = mprof(&dir, &["top", "--once", "1", "--", "true"]);
    common::assert_one_line_error(&out, "give a process id or a command after --, not both");
    let out = mprof(&dir, &["top", "--once", "--", "true"]);
    common::assert_one_line_error(&out, "process");
    assert!(stderr(&out).contains("ended (exit status 0) before it listened"));
}

#[test]
fn a_forked_child_leaves_the_parents_socket_alone() {
    let dir = scratch("live-fork");
    let service = Service::start("fork", &dir, &[("MEMPROF_LIVE", "1")]);
    let pid = service.pid();
    // The child made a profiled call and exited through its exit handlers.
    let report = snapshot(&dir, pid, "after-fork.json");
    assert!(calls(&report, "steady") >= 1);
    let (_, status) = service.finish();
    assert!(status.success());
    assert!(!socket(&dir, pid).exists());
}

#[test]
fn sigterm_and_sigint_write_memprof_json_and_end_the_program_by_the_signal() {
    let dir = scratch("live-signals");
    for (signal, live) in [(libc::SIGTERM, "1"), (libc::SIGINT, "0")] {
        let json = dir.join(format!("signal-{signal}.json"));
        let json_var = json.to_str().unwrap();
        let service = Service::start(
            "grow",
            &dir,
            &[("MEMPROF_JSON", json_var), ("MEMPROF_LIVE", live)],
        );
        let pid = service.pid();
        // SAFETY: a signal to our own child, still running (not waited for).
        assert_eq!(unsafe { libc::kill(pid as i32, signal) }, 0);
        // Not `finish`: at the end of its stdin the service would exit by
        // itself, maybe before the signal ends it.
        let status = service.wait();
        assert_eq!(status.signal(), Some(signal), "{status:?}");
        let report: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        assert_eq!(report["schema"], 1);
        assert!(calls(&report, "remember") >= 1, "{report}");
        assert!(
            !socket(&dir, pid).exists(),
            "the socket outlived the signal"
        );
    }
}

#[test]
fn sigterm_during_a_call_reports_its_rows_so_far() {
    let dir = scratch("live-long-call");
    let json = dir.join("long.json");
    let service = Service::start("long", &dir, &[("MEMPROF_JSON", json.to_str().unwrap())]);
    // SAFETY: a signal to our own child, still running.
    assert_eq!(
        unsafe { libc::kill(service.pid() as i32, libc::SIGTERM) },
        0
    );
    assert_eq!(service.wait().signal(), Some(libc::SIGTERM));
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let function = report["functions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == "live::long_call")
        .unwrap_or_else(|| panic!("{report}"));
    // Not ended: no call counted, but the line that ran, exactly.
    assert_eq!(function["calls"], 0);
    let line = function["lines"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["contents"].as_str().unwrap().contains("let held"))
        .unwrap();
    assert_eq!(
        (&line["increment"], &line["occurrences"]),
        (&4096.into(), &1.into())
    );
}

#[test]
fn the_programs_own_sigterm_handler_still_runs_after_the_report() {
    let dir = scratch("live-handler");
    let json = dir.join("handled.json");
    let mut service = Service::start("handler", &dir, &[("MEMPROF_JSON", json.to_str().unwrap())]);
    // SAFETY: a signal to our own child, still running.
    assert_eq!(
        unsafe { libc::kill(service.pid() as i32, libc::SIGTERM) },
        0
    );
    service.wait_for("handled SIGTERM");
    let (_, status) = service.finish();
    assert!(status.success(), "{status:?}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert!(calls(&report, "remember") >= 1);
}

#[test]
fn a_snapshot_as_a_heap_profile_is_the_json_snapshot_s() {
    let dir = scratch("live-pprof");
    let mut service = Service::start("grow", &dir, &[("MEMPROF_LIVE", "1")]);
    service.send("pause");
    service.wait_for("paused");
    let pid = service.pid().to_string();
    let out = mprof(
        &dir,
        &["snapshot", &pid, "--format", "pprof", "-o", "heap.pb.gz"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    snapshot(&dir, service.pid(), "heap.json");
    let out = mprof(&dir, &["pprof", "heap.json", "-o", "from-json.pb.gz"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let read = |name: &str| {
        let bytes = std::fs::read(dir.join(name)).unwrap();
        memprof::HeapProfile::from_pprof(&bytes).unwrap()
    };
    let (live, from_json) = (read("heap.pb.gz"), read("from-json.pb.gz"));
    assert_eq!(live.samples, from_json.samples);
    // `remember`'s first line: one entry a call, a multiple of 64 bytes,
    // all kept (the history holds it).
    let (_, entry) = live
        .samples
        .iter()
        .find(|(stack, _)| stack[0].function == "live::remember")
        .unwrap();
    assert!(entry.alloc_objects >= 1, "{entry:?}");
    assert_eq!(entry.alloc_space % ENTRY_STEP as i64, 0, "{entry:?}");
    assert_eq!(entry.inuse_space, entry.alloc_space);
    let (_, status) = service.finish();
    assert!(status.success(), "{status:?}");
}
