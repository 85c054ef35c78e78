//! What a profiled call costs where it is used: `cargo bench --bench call_cost`.
//!
//! Builds `benches/crates/call-cost`, a crate of its own shaped like a user's
//! (no profile settings), in the dev profile that `cargo test` uses and in
//! the release profile, and runs each: once as it is, once under
//! `MEMPROF=off`, and once with its calls gone quiet (`MEMPROF_QUIET` unset; the other runs set it off, so that calls keep their rows). Each run times a 3-statement function with and without
//! `#[profile]` on one thread and on two at once, a loop whose body binds
//! a local (per probe and per statement), the same loop in an `async fn`,
//! the call through a function pointer,
//! and a recursive function, in interleaved rounds; a figure is the median over rounds of the
//! difference within a round. Then the 1-thread call again in the same
//! process, after 10,000 threads came and went and with 2,000 alive, as a
//! ratio to its figure in the fresh process. Ends with rows for the summary
//! table (`scripts/bench-summary`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Builds the fixture in `profile` and returns its binary.
fn build(profile: &str) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let fixture = root.join("benches/crates/call-cost");
    let target = Path::new(env!("CARGO_TARGET_TMPDIR")).join("call-cost");
    // The workspace's exact dependency versions, with nothing to resolve.
    std::fs::copy(root.join("Cargo.lock"), fixture.join("Cargo.lock"))
        .expect("fixture is writable");
    let mut cargo = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cargo
        .args(["build", "--quiet", "--manifest-path"])
        .arg(fixture.join("Cargo.toml"))
        .env("CARGO_TARGET_DIR", &target);
    if profile == "release" {
        cargo.arg("--release");
    }
    let status = cargo.status().expect("cargo runs");
    assert!(status.success(), "building the {profile} fixture failed");
    let dir = if profile == "release" {
        "release"
    } else {
        "debug"
    };
    target.join(dir).join("memprof-call-cost")
}

/// Runs `bin` and returns its `name value` lines.
/// Calls with rows (`MEMPROF_QUIET=off`) unless `quiet`: the fixture's
/// functions allocate nothing, so their calls would go quiet.
fn run(bin: &Path, calls: u64, rounds: u64, off: bool, quiet: bool) -> HashMap<String, f64> {
    let mut cmd = Command::new(bin);
    cmd.args([calls.to_string(), rounds.to_string()])
        .env("MEMPROF_REPORT", "off")
        .env_remove("MEMPROF");
    if off {
        cmd.env("MEMPROF", "off");
    }
    if !quiet {
        cmd.env("MEMPROF_QUIET", "off");
    }
    let out = cmd.output().expect("the fixture runs");
    assert!(out.status.success(), "{out:?}");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let (k, v) = l.split_once(' ')?;
            Some((k.to_owned(), v.parse().ok()?))
        })
        .collect()
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let mut rows = Vec::new();
    for (profile, calls, rounds) in [("release", 4_000_000, 9), ("dev", 400_000, 7)] {
        let bin = build(profile);
        let on = run(&bin, calls, rounds, false, false);
        let off = run(&bin, calls, rounds, true, false);
        let quiet = run(&bin, calls, rounds, false, true);
        println!("{profile}, MEMPROF unset: {on:?}");
        println!("{profile}, MEMPROF=off: {off:?}");
        println!("{profile}, quiet calls: {quiet:?}");
        let one = on["call_overhead"];
        let two = on["call_overhead_2_threads"];
        let plain = on["plain_call"];
        let (target_call, target_off) = if profile == "release" {
            ("≤ 15 ns", "≤ 3 ns")
        } else {
            ("≤ 30 ns", "≤ 1.2× plain")
        };
        rows.push((
            format!("a profiled 3-statement call over the plain one, {profile} profile, 1 thread"),
            format!("{one:.1} ns"),
            format!("plain call {plain:.1} ns"),
            target_call.to_owned(),
        ));
        rows.push((
            format!("the same call gone quiet (it moves nothing), {profile} profile, 1 thread"),
            format!("{:.1} ns", quiet["call_overhead"]),
            format!("with rows {one:.1} ns"),
            String::new(),
        ));
        rows.push((
            format!("the same, 2 threads calling it at once, {profile} (× the 1-thread overhead)"),
            format!("{:.2}", two / one),
            format!("{two:.1} ns per call"),
            "≤ 1.1".to_owned(),
        ));
        rows.push((
            format!("a profiled statement, loop body binding a local, {profile} profile"),
            format!("{:.1} ns", on["probe"]),
            "per probe: 2 statements and the `}`".to_owned(),
            if profile == "release" {
                "≤ 10 ns"
            } else {
                ""
            }
            .to_owned(),
        ));
        rows.push((
            format!("a statement of a two-statement loop body, {profile} profile"),
            format!("{:.1} ns", on["loop_statement"]),
            "per statement, its share of the `}` and the body's cursor".to_owned(),
            if profile == "release" { "≤ 3 ns" } else { "" }.to_owned(),
        ));
        rows.push((
            format!("a statement of the same loop in an `async fn`, {profile} profile"),
            format!("{:.1} ns", on["async_loop_statement"]),
            format!("in a synchronous fn {:.1} ns", on["loop_statement"]),
            String::new(),
        ));
        rows.push((
            format!("the 3-statement call through a function pointer, {profile} profile"),
            format!("{:.1} ns", on["call_overhead_fn_pointer"]),
            format!("direct: {one:.1} ns"),
            if profile == "release" {
                "≤ 15 ns"
            } else {
                "≤ 30 ns"
            }
            .to_owned(),
        ));
        for (key, situation) in [
            (
                "call_overhead_after_10000_threads",
                "after 10,000 threads came and went",
            ),
            (
                "call_overhead_2000_live_threads",
                "with 2,000 threads alive",
            ),
        ] {
            rows.push((
                format!("the 1-thread call {situation}, {profile} (× in the fresh process)"),
                format!("{:.2}", on[key] / one),
                format!("{:.1} ns over the plain call", on[key]),
                "≤ 1.2".to_owned(),
            ));
        }
        let off_call = off["call_overhead"];
        rows.push((
            format!("the 3-statement call under `MEMPROF=off`, {profile} profile"),
            if profile == "release" {
                format!("+{off_call:.1} ns")
            } else {
                format!(
                    "{:.2}× plain",
                    (off["plain_call"] + off_call) / off["plain_call"]
                )
            },
            format!("plain call {:.1} ns", off["plain_call"]),
            target_off.to_owned(),
        ));
        let level = off["recursive_plain_level"];
        rows.push((
            format!("a recursive function under `MEMPROF=off`, {profile} profile (× plain)"),
            format!("{:.2}× plain", off["recursive_ratio"]),
            format!("plain level {level:.1} ns"),
            "≤ 1.2× plain".to_owned(),
        ));
    }
    println!();
    for (what, measured, reference, target) in rows {
        println!("| {what} | {measured} | {reference} | {target} |");
    }
}
