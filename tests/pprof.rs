//! Heap profiles in pprof's format (`MEMPROF_PPROF`, `memprof::heap_profile`,
//! `HeapProfile`): each line's sites as stacks ending at the profiled line,
//! or the line alone without sites, with the JSON's exact figures.

#[path = "support/child.rs"]
mod child;

use child::{is_child, run_child};
use memprof::{HeapProfile, HeapValues, SiteFrame};
use std::hint::black_box;

/// `n` blocks of 1000 bytes in one vector of capacity `n`.
#[inline(never)]
fn top(n: usize) -> Vec<Vec<u8>> {
    black_box(middle(n))
}

#[inline(never)]
fn middle(n: usize) -> Vec<Vec<u8>> {
    let mut blocks = Vec::with_capacity(n);
    for _ in 0..n {
        blocks.push(leaf());
    }
    black_box(blocks)
}

#[inline(never)]
fn leaf() -> Vec<u8> {
    black_box(vec![7u8; 1000])
}

#[memprof::profile]
#[inline(never)]
fn build(n: usize) -> usize {
    let local = top(n);
    let kept = black_box(vec![0u64; 64]);
    let len = local.len() + kept.len();
    // Still in use at exit: the profile's in-use figures.
    std::mem::forget(kept);
    len
}

/// A loop whose body's allocations its line holds too, as its row does.
#[memprof::profile]
#[inline(never)]
fn repeat(n: usize) -> usize {
    let mut kept = Vec::new();
    for i in 0..n {
        kept.push(vec![i as u8; 100]);
    }
    let len = kept.len();
    std::mem::forget(kept);
    len
}

/// Lines that call another profiled function.
#[memprof::profile]
#[inline(never)]
fn batches(n: usize) -> usize {
    let mut total = 0;
    for _ in 0..2 {
        total += build(n);
    }
    total
}

#[test]
#[ignore = "a child run: this file's tests start it"]
fn child_build() {
    if is_child() {
        assert_eq!(build(10), 74);
    }
}

#[test]
#[ignore = "a child run: this file's tests start it"]
fn child_nested() {
    if is_child() {
        assert_eq!(repeat(3), 3);
        assert_eq!(batches(10), 148);
    }
}

/// The line of this file that holds `text`.
fn line_of(text: &str) -> u32 {
    let source = include_str!("pprof.rs");
    let index = source.lines().position(|l| l.contains(text)).unwrap();
    index as u32 + 1
}

/// The profiled line `text` of `build` as a frame.
fn build_line(text: &str) -> SiteFrame {
    SiteFrame {
        function: "pprof::build".to_owned(),
        file: Some("tests/pprof.rs".to_owned()),
        line: Some(line_of(text)),
    }
}

/// Values with the objects in use too (what sites' Live counts).
fn live(objects: i64, space: i64, inuse_objects: i64, inuse: i64) -> HeapValues {
    HeapValues {
        inuse_objects,
        ..values(objects, space, inuse)
    }
}

fn values(objects: i64, space: i64, inuse: i64) -> HeapValues {
    HeapValues {
        alloc_objects: objects,
        alloc_space: space,
        inuse_objects: 0,
        inuse_space: inuse,
    }
}

/// The child's profile (`MEMPROF_PPROF`) and its JSON report, with sites
/// `sites` (`MEMPROF_SITES`).
fn child_profile(sites: &str, dir: &str) -> (HeapProfile, memprof::Report) {
    child_profile_of("child_build", sites, dir)
}

/// [`child_profile`] of child test `child`.
fn child_profile_of(child: &str, sites: &str, dir: &str) -> (HeapProfile, memprof::Report) {
    let dir = child::scratch_dir(dir);
    let pprof = dir.join("heap.pb.gz");
    let json = dir.join("report.json");
    run_child(
        child,
        &[
            ("MEMPROF_SITES", sites),
            ("MEMPROF_REPORT", "off"),
            ("MEMPROF_PPROF", pprof.to_str().unwrap()),
            ("MEMPROF_JSON", json.to_str().unwrap()),
        ],
    );
    let bytes = std::fs::read(&pprof).unwrap();
    assert_eq!(&bytes[..2], &[0x1f, 0x8b], "gzipped");
    let profile = HeapProfile::from_pprof(&bytes).unwrap();
    let text = std::fs::read_to_string(&json).unwrap();
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    let functions = value["functions"].clone();
    (profile, report_of(&functions))
}

/// The report that a JSON document's `functions` hold, through the public
/// types.
fn report_of(functions: &serde_json::Value) -> memprof::Report {
    let mut report = memprof::Report::default();
    for f in functions.as_array().unwrap() {
        let mut lines = Vec::new();
        for l in f["lines"].as_array().unwrap() {
            lines.push(line_of_json(l));
        }
        report.functions.push(memprof::FunctionReport {
            name: f["name"].as_str().unwrap().to_owned(),
            file: f["file"].as_str().unwrap().to_owned(),
            calls: f["calls"].as_u64().unwrap(),
            running: 0,
            gpu: None,
            gpu_driver: None,
            pool: None,
            lines,
            sites_left_out: None,
            quiet_calls: 0,
            events_calls: 0,
            quiet_unplaced: 0,
        });
    }
    report
}

fn line_of_json(l: &serde_json::Value) -> memprof::LineReport {
    let sites = l["sites"].as_array().map(|sites| {
        sites
            .iter()
            .map(|s| memprof::Site {
                allocations: s["allocations"].as_u64().unwrap(),
                allocated_bytes: s["allocated_bytes"].as_u64().unwrap(),
                live_bytes: s["live_bytes"].as_i64().unwrap(),
                in_use_allocations: s["in_use_allocations"].as_u64(),
                in_use_bytes: s["in_use_bytes"].as_u64(),
                estimated: s["estimated"].as_bool().unwrap(),
                frames: s["frames"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|f| SiteFrame {
                        function: f["function"].as_str().unwrap().to_owned(),
                        file: f["file"].as_str().map(str::to_owned),
                        line: f["line"].as_u64().map(|n| n as u32),
                    })
                    .collect(),
            })
            .collect()
    });
    memprof::LineReport {
        line: l["line"].as_u64().unwrap() as u32,
        mem_usage: l["mem_usage"].as_i64(),
        increment: l["increment"].as_i64(),
        peak: l["peak"].as_u64(),
        occurrences: l["occurrences"].as_u64().unwrap(),
        allocations: l["allocations"].as_u64(),
        allocated_bytes: l["allocated_bytes"].as_u64(),
        gpu_usage: None,
        gpu_increment: None,
        gpu_peak: None,
        gpu_driver_usage: None,
        gpu_driver_increment: None,
        pool_allocated: None,
        pool_increment: None,
        pool_reserved: None,
        in_use_allocations: l["in_use_allocations"].as_u64(),
        in_use_bytes: l["in_use_bytes"].as_u64(),
        calls: None,
        within: None,
        contents: l["contents"].as_str().unwrap().to_owned(),
        sites,
    }
}

#[test]
fn without_sites_each_statement_line_is_one_sample_of_its_figures() {
    let (profile, report) = child_profile("0", "pprof-lines");
    let expected = [
        (
            vec![build_line("let local = top(n);")],
            values(11, 10_240, 10_240),
        ),
        (
            vec![build_line("let kept = black_box")],
            values(1, 512, 512),
        ),
    ];
    assert_eq!(profile.samples.into_iter().collect::<Vec<_>>(), expected);
    assert_eq!(profile.sample_mean, None);
    assert_eq!(HeapProfile::of_report(&report).samples.len(), 2);
}

#[test]
fn with_sites_each_site_is_a_stack_that_ends_at_its_line() {
    let (profile, report) = child_profile("1", "pprof-sites");
    let frame = |function: &str| function.to_owned();
    let stacks: Vec<(Vec<String>, HeapValues)> = profile
        .samples
        .iter()
        .map(|(stack, v)| (stack.iter().map(|f| f.function.clone()).collect(), *v))
        .collect();
    assert_eq!(
        stacks,
        [
            // Forgotten: still in use at exit.
            (vec![frame("pprof::build")], live(1, 512, 1, 512)),
            // Freed when `build` returned: none in use.
            (
                vec![
                    frame("pprof::leaf"),
                    frame("pprof::middle"),
                    frame("pprof::top"),
                    frame("pprof::build")
                ],
                live(10, 10_000, 0, 0)
            ),
            (
                vec![
                    frame("pprof::middle"),
                    frame("pprof::top"),
                    frame("pprof::build")
                ],
                live(1, 240, 0, 0)
            ),
        ]
    );
    // The profiled line ends each stack, as a frame of its own; the sites'
    // frames are symbolized with their files and lines where the binary has
    // debug information (not `cargo test --release`'s).
    let debug_info = cfg!(debug_assertions);
    for stack in profile.samples.keys() {
        let last = stack.last().unwrap();
        assert_eq!(last.file.as_deref(), Some("tests/pprof.rs"));
        for f in &stack[..stack.len() - 1] {
            if debug_info || f.file.is_some() {
                assert_eq!(f.file.as_deref(), Some("tests/pprof.rs"), "{f:?}");
                assert!(f.line.is_some(), "{f:?}");
            }
        }
    }
    // The same run's JSON gives the same profile.
    assert_eq!(HeapProfile::of_report(&report).samples, profile.samples);
}

#[test]
fn a_profile_minus_its_base_holds_what_grew() {
    let line = build_line("let local = top(n);");
    let other = build_line("let kept = black_box");
    let mut base = HeapProfile::default();
    base.samples.insert(vec![line.clone()], values(1, 100, 100));
    base.samples.insert(vec![other.clone()], values(2, 64, 0));
    let mut now = HeapProfile::default();
    now.samples.insert(vec![line.clone()], values(3, 400, 250));
    now.samples.insert(vec![other.clone()], values(2, 64, 0));
    let gone = build_line("local.len() + kept.len()");
    base.samples.insert(vec![gone.clone()], values(1, 8, 8));
    let grown = now.minus(&base);
    let expected = [
        (vec![line], values(2, 300, 150)),
        (vec![gone], values(-1, -8, -8)),
    ];
    let mut got: Vec<_> = grown.samples.clone().into_iter().collect();
    got.sort_by_key(|(s, _)| s[0].line);
    assert_eq!(got, expected);
    // Negative values survive the format.
    let back = HeapProfile::from_pprof(&grown.to_pprof()).unwrap();
    assert_eq!(back.samples, grown.samples);
}

/// The profiled line `text` of `function` in this file, as a frame.
fn line_in(function: &str, text: &str) -> SiteFrame {
    SiteFrame {
        function: format!("pprof::{function}"),
        file: Some("tests/pprof.rs".to_owned()),
        line: Some(line_of(text)),
    }
}

#[test]
fn a_line_inside_a_loop_holds_its_share_and_the_loop_s_line_is_on_its_stack() {
    for (sites, dir) in [("0", "pprof-loop"), ("1", "pprof-loop-sites")] {
        let (profile, _) = child_profile_of("child_nested", sites, dir);
        let push = line_in("repeat", "kept.push(vec![i as u8; 100]);");
        let for_line = line_in("repeat", "for i in 0..n {");
        let repeat: Vec<_> = profile
            .samples
            .iter()
            .filter(|(stack, _)| stack.iter().any(|f| f.function == "pprof::repeat"))
            .map(|(stack, v)| (stack.clone(), *v))
            .collect();
        // Three blocks of 100 bytes and `kept`'s buffer of 4 handles, made
        // once (four allocations), all kept and still in use (forgotten):
        // the body's, not the loop's line, which holds nothing of its own.
        // Without sites, in use is the line's Increment, with no count.
        let in_use_objects = if sites == "1" { 4 } else { 0 };
        assert_eq!(
            repeat,
            [(vec![push, for_line], live(4, 396, in_use_objects, 396))],
            "MEMPROF_SITES={sites}"
        );
    }
}

#[test]
fn sites_through_another_profiled_function_are_left_to_its_lines() {
    let (profile, _) = child_profile_of("child_nested", "1", "pprof-through");
    // `batches` calls `build` twice: its lines hold nothing of their own,
    // `build`'s hold both calls, each allocation once.
    assert!(
        profile
            .samples
            .keys()
            .all(|stack| stack.iter().all(|f| f.function != "pprof::batches")),
        "{profile:?}"
    );
    let build: Vec<HeapValues> = profile
        .samples
        .iter()
        .filter(|(stack, _)| stack.last().unwrap().function == "pprof::build")
        .map(|(_, v)| *v)
        .collect();
    assert_eq!(
        build,
        [
            live(2, 1024, 2, 1024),
            live(20, 20_000, 0, 0),
            live(2, 480, 0, 0)
        ]
    );
}

#[test]
fn memprof_pprof_never_writes_through_a_link() {
    let dir = child::scratch_dir("pprof-link");
    let target = dir.join("precious.txt");
    std::fs::write(&target, "keep me").unwrap();
    let link = dir.join("heap.pb.gz");
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let (_, stderr) = run_child(
        "child_build",
        &[
            ("MEMPROF_REPORT", "off"),
            ("MEMPROF_PPROF", link.to_str().unwrap()),
        ],
    );
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep me");
    assert!(std::fs::symlink_metadata(&link).unwrap().is_symlink());
    let warning = format!("memprof: cannot write MEMPROF_PPROF={}: ", link.display());
    assert!(stderr.contains(&warning), "{stderr}");
}
