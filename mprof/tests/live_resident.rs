//! What snapshots cost a running service in resident memory (issue 60):
//! under sampled sites (`cargo memprof run --sites=sample` sets
//! `MEMPROF_SITES=sample`) and the live channel, a service that keeps a
//! steady few MiB in use through 256 call sites stays within 10 MB and
//! what sites mapped of its resident size before snapshots, after ten
//! and a pprof one, and beside the same service without sites.
//!
//! Symbolizing a snapshot's stacks reads the binary's debug information:
//! kept after the snapshot, it held tens of MB of a real service for the
//! rest of its life (34 MB resident, then 117 MB after one snapshot).
//!
//! The service is this test binary, run again (see `common::live`): it
//! runs a round of work on each `work` line of its stdin (and allocates
//! at new addresses first on a `late` line) and answers `done`, the bytes
//! mapped for sites then written in its directory. A snapshot's debug
//! information is let go of 5 s after the last one: the service's size is
//! read right after the snapshots and 7 s after.
//! NOTE: figures are printed, bounds asserted; no duration is.

#![cfg(target_os = "linux")]

mod common;

use common::live::Service;
use common::{mprof, scratch, stderr};
use std::collections::VecDeque;
use std::hint::black_box;
use std::io::BufRead;
use std::path::Path;
use std::time::{Duration, Instant};

/// A buffer made at one of the service's call sites: each `(A, B)` is a
/// function of its own, at an address of its own.
type MakeBuffer = fn(usize) -> Vec<u8>;

#[inline(never)]
fn buffer_at<const A: usize, const B: usize>(size: usize) -> Vec<u8> {
    let mut buffer = Vec::with_capacity(size + A * 16 + B);
    buffer.resize(size, (A ^ B) as u8);
    black_box(buffer)
}

macro_rules! row {
    ($a:literal) => {
        [
            buffer_at::<$a, 0> as MakeBuffer,
            buffer_at::<$a, 1>,
            buffer_at::<$a, 2>,
            buffer_at::<$a, 3>,
            buffer_at::<$a, 4>,
            buffer_at::<$a, 5>,
            buffer_at::<$a, 6>,
            buffer_at::<$a, 7>,
            buffer_at::<$a, 8>,
            buffer_at::<$a, 9>,
            buffer_at::<$a, 10>,
            buffer_at::<$a, 11>,
            buffer_at::<$a, 12>,
            buffer_at::<$a, 13>,
            buffer_at::<$a, 14>,
            buffer_at::<$a, 15>,
        ]
    };
}

/// The service's 256 call sites.
const SITES: [[MakeBuffer; 16]; 16] = [
    row!(0),
    row!(1),
    row!(2),
    row!(3),
    row!(4),
    row!(5),
    row!(6),
    row!(7),
    row!(8),
    row!(9),
    row!(10),
    row!(11),
    row!(12),
    row!(13),
    row!(14),
    row!(15),
];

/// Buffers the service keeps: with sizes of 8 to 56 KiB, about 4 MiB.
const KEPT: usize = 128;

/// One round: a buffer from every site, the oldest freed as new ones come.
#[memprof::profile]
fn serve_round(round: usize, kept: &mut VecDeque<Vec<u8>>) {
    for (i, site) in SITES.iter().flatten().enumerate() {
        let buffer = site((8 + (round + i) % 7 * 8) << 10);
        kept.push_back(buffer);
        if kept.len() > KEPT {
            kept.pop_front();
        }
    }
}

/// Allocations at an address no snapshot has seen before: met by a
/// snapshot after the earlier ones' debug information was let go of.
#[inline(never)]
fn late_buffer(size: usize) -> Vec<u8> {
    black_box(vec![7; size])
}

#[memprof::profile]
fn late_round() {
    let buffers: Vec<Vec<u8>> = (0..64).map(|_| late_buffer(64 << 10)).collect();
    drop(black_box(buffers));
}

#[test]
#[ignore = "a child run: the tests below start it"]
fn service_child() {
    if std::env::var_os("MPROF_TEST_SERVICE").is_none() {
        return;
    }
    let mut kept = VecDeque::with_capacity(KEPT + 1);
    let mut round = 0;
    println!("ready");
    for line in std::io::stdin().lock().lines() {
        match line.unwrap().trim() {
            "work" => {}
            "late" => late_round(),
            _ => break,
        }
        for _ in 0..8 {
            serve_round(round, &mut kept);
            round += 1;
        }
        let mapped = memprof::__private::sites_mapped_bytes();
        std::fs::write("mapped", mapped.to_string()).unwrap();
        println!("done");
    }
}

/// The service's resident size, in bytes (`VmRSS`).
fn resident(pid: u32) -> u64 {
    mprof::procfs::rss(pid).expect("the service runs")
}

/// The service's highest resident size so far, in bytes (`VmHWM`): during
/// a snapshot, the debug information it reads is resident.
fn highest_resident(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kb = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().strip_suffix("kB")?.trim().parse::<u64>().ok())
        .unwrap();
    kb * 1024
}

/// Resident sizes of one run, and what sites had mapped at the end.
#[derive(Debug)]
struct Run {
    before: u64,
    /// Right after the last snapshot, and once its debug information was
    /// let go of.
    held: u64,
    after: u64,
    highest: u64,
    mapped: u64,
    /// The first JSON snapshot, the slowest of the nine after it, the
    /// pprof one, and the late one that met new addresses once the debug
    /// information was let go of, in ms.
    first_ms: f64,
    renewed_ms: f64,
    later_ms: f64,
    pprof_ms: f64,
}

fn work(service: &mut Service, what: &str) {
    service.send(what);
    service.wait_for("done");
}

/// Runs the service with `env`: warm, its resident size, then ten
/// snapshots and a pprof one between rounds of work, its resident size.
fn run(name: &str, env: &[(&str, &str)]) -> Run {
    let dir = scratch(name);
    let mut service = Service::start("resident", &dir, env);
    let pid = service.pid();
    for _ in 0..3 {
        work(&mut service, "work");
    }
    let before = resident(pid);
    let mut times = Vec::new();
    for n in 0..10 {
        let started = Instant::now();
        snapshot(&dir, pid, &["-o", &format!("{n}.json")]);
        times.push(started.elapsed().as_secs_f64() * 1e3);
        work(&mut service, "work");
    }
    let started = Instant::now();
    snapshot(&dir, pid, &["--format", "pprof", "-o", "heap.pb.gz"]);
    let pprof_ms = started.elapsed().as_secs_f64() * 1e3;
    work(&mut service, "work");
    let held = resident(pid);
    // The debug information stays 5 s after the last snapshot (`mprof top`
    // asks every second).
    std::thread::sleep(Duration::from_secs(7).saturating_sub(started.elapsed()));
    let after = resident(pid);
    let highest = highest_resident(pid);
    // Then allocations at new addresses: named, from the debug
    // information read again.
    work(&mut service, "late");
    let started = Instant::now();
    snapshot(&dir, pid, &["-o", "late.json"]);
    let renewed_ms = started.elapsed().as_secs_f64() * 1e3;
    assert_late_sites_are_named(&dir, env.iter().any(|(k, _)| *k == "MEMPROF_SITES"));
    let mapped = mapped(&dir);
    let (_, status) = service.finish();
    assert!(status.success());
    Run {
        before,
        held,
        after,
        highest,
        mapped,
        first_ms: times[0],
        renewed_ms,
        later_ms: times[1..].iter().copied().fold(0.0, f64::max),
        pprof_ms,
    }
}

fn snapshot(dir: &Path, pid: u32, args: &[&str]) {
    let pid = pid.to_string();
    let out = mprof(dir, &[&["snapshot", pid.as_str()], args].concat());
    assert!(out.status.success(), "{}", stderr(&out));
}

/// Under sites, the late snapshot names the late allocations' function in
/// their stacks: read again from debug information let go of earlier.
fn assert_late_sites_are_named(dir: &Path, sites_on: bool) {
    let text = std::fs::read_to_string(dir.join("late.json")).unwrap();
    let report: serde_json::Value = serde_json::from_str(&text).unwrap();
    let Some(late) = report["functions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"].as_str().unwrap().ends_with("late_round"))
    else {
        panic!("no late_round in the snapshot");
    };
    let sites: Vec<&serde_json::Value> = late["lines"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|l| l["sites"].as_array())
        .flatten()
        .collect();
    if !sites_on {
        assert!(sites.is_empty(), "{sites:#?}");
        return;
    }
    let named = sites.iter().any(|site| {
        site["frames"].as_array().unwrap().iter().any(|f| {
            f["function"]
                .as_str()
                .unwrap()
                // Whole, or its last segment where debug information
                // has line tables only (a release build's).
                .ends_with("late_buffer")
        })
    });
    assert!(named, "{sites:#?}");
}

fn mapped(dir: &Path) -> u64 {
    std::fs::read_to_string(dir.join("mapped"))
        .unwrap()
        .parse()
        .unwrap()
}

const MB: u64 = 1_000_000;

#[test]
fn snapshots_under_sampled_sites_keep_resident_memory_bounded() {
    let live = [("MEMPROF_LIVE", "1")];
    let plain = run("resident-plain", &live);
    let sampled = run(
        "resident-sampled",
        &[("MEMPROF_LIVE", "1"), ("MEMPROF_SITES", "sample")],
    );
    let kb = |b: u64| b / 1024;
    for (name, run) in [
        ("live, no sites", &plain),
        ("live, sampled sites", &sampled),
    ] {
        eprintln!(
            "{name}: {} kB resident before snapshots, {} kB right after, {} kB 7 s after \
             (highest {} kB), \
             {} kB mapped for sites; first snapshot {:.0} ms, later ones up to {:.0} ms, \
             pprof {:.0} ms, at new addresses after the let-go {:.0} ms",
            kb(run.before),
            kb(run.held),
            kb(run.after),
            kb(run.highest),
            kb(run.mapped),
            run.first_ms,
            run.later_ms,
            run.pprof_ms,
            run.renewed_ms,
        );
    }
    let allowed = 10 * MB + sampled.mapped;
    assert!(
        sampled.after <= sampled.before + allowed,
        "snapshots kept memory: {sampled:?}"
    );
    for (with, without) in [(sampled.before, plain.before), (sampled.after, plain.after)] {
        assert!(
            with <= without + allowed,
            "sites took more than their tables: {sampled:?} against {plain:?}"
        );
    }
}
