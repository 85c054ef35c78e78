//! Allocation sites (`MEMPROF_SITES`): each line's allocations by call
//! stack, below the line, in code nobody annotated (this crate's and a
//! dependency's), with exact figures that add up to the line's.

#[path = "support/child.rs"]
mod child;

use child::{is_child, run_child};
use serde_json::Value;
use std::hint::black_box;

/// `n` blocks of 1000 bytes, in one vector of capacity `n`: three frames
/// deep, as `memprof_sites_helper::outer` is.
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
fn parse(n: usize) -> usize {
    let local = top(n);
    let dependency = memprof_sites_helper::outer(n);
    let scratch = black_box(vec![0u64; 64]);
    drop(scratch);
    local.len() + dependency.len()
}

/// Calls `parse` often enough that the kernel enters the later calls (the
/// first ones hand out tables of their own), from a profiled line.
#[memprof::profile]
#[inline(never)]
fn parse_often() -> usize {
    let total: usize = (0..6).map(|_| parse(10)).sum();
    total
}

#[test]
#[ignore = "a child run: this file's tests start it"]
fn child_parse_often() {
    if is_child() {
        assert_eq!(parse_often(), 120);
    }
}

#[test]
fn calls_the_kernel_enters_and_nested_calls_have_the_same_sites() {
    let report = exit_report("child_parse_often", "sites-often");
    let parse = function(&report, "sites::parse");
    assert_eq!(parse["calls"], 6);
    assert_eq!(sites_of(&parse, "let local = top(n);"), parse_local_sites());
    // The calling line's sites go through `parse`, its frames included;
    // nothing is live when the line ends (each call drops its vectors).
    let often = function(&report, "sites::parse_often");
    let sites = sites_of(&often, "map(|_| parse(10))");
    let total: u64 = sites.iter().map(|s| s.1).sum();
    assert_eq!(total, 6 * 30_992, "{sites:?}");
    assert!(sites.iter().all(|s| s.2 == 0), "{sites:?}");
    let leaf = sites
        .iter()
        .find(|s| s.3.first().map(String::as_str) == Some("sites::leaf"))
        .unwrap();
    assert_eq!((leaf.0, leaf.1), (60, 60_000));
    assert!(leaf.3.contains(&"sites::parse".to_owned()), "{leaf:?}");
}

/// Calls `parse` from a loop body. This function's only call is one the
/// runtime enters (it hands out a table), and the body's cursor is the
/// kernel's all the same.
#[memprof::profile]
#[inline(never)]
fn parse_in_a_loop() -> usize {
    let mut total = 0;
    for _ in 0..6 {
        total += parse(10);
    }
    total
}

#[test]
#[ignore = "a child run: this file's tests start it"]
fn child_parse_in_a_loop() {
    if is_child() {
        assert_eq!(parse_in_a_loop(), 120);
    }
}

#[test]
fn a_call_in_a_loop_body_of_a_call_the_runtime_entered_has_its_sites() {
    let report = exit_report("child_parse_in_a_loop", "sites-loop");
    // The walk of the side stack used to step over the body's cursor as a
    // record of the runtime's, and lost every row above it: `parse`'s lines
    // had no sites.
    assert_eq!(
        sites_of(&function(&report, "sites::parse"), "let local = top(n);"),
        parse_local_sites()
    );
    let sites = sites_of(
        &function(&report, "sites::parse_in_a_loop"),
        "total += parse(10);",
    );
    let total: u64 = sites.iter().map(|s| s.1).sum();
    assert_eq!(total, 6 * 30_992, "{sites:?}");
}

#[test]
#[ignore = "a child run: this file's tests start it"]
fn child_parse() {
    if is_child() {
        assert_eq!(parse(10), 20);
    }
}

/// The JSON report of child run `child` with every allocation's site
/// recorded, its tables at exit only.
fn exit_report(child: &str, dir: &str) -> Value {
    let dir = child::scratch_dir(dir);
    let json = dir.join("report.json");
    run_child(
        child,
        &[
            ("MEMPROF_SITES", "1"),
            ("MEMPROF_REPORT", "exit"),
            ("MEMPROF_JSON", json.to_str().unwrap()),
        ],
    );
    serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap()
}

/// Function `name` of `report`.
fn function(report: &Value, name: &str) -> Value {
    report["functions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == name)
        .unwrap_or_else(|| panic!("no {name} in {report}"))
        .clone()
}

/// The sites of `parse`'s first line over its six calls: ten blocks of
/// 1,000 bytes and their vector a call, all live when the line ends.
fn parse_local_sites() -> Vec<(u64, u64, i64, Vec<String>)> {
    vec![
        (
            60,
            60_000,
            60_000,
            names(&["sites::leaf", "sites::middle", "sites::top"]),
        ),
        (6, 1440, 1440, names(&["sites::middle", "sites::top"])),
    ]
}

/// A line's sites from the JSON: `(allocations, allocated, live, frames'
/// function names)`, most bytes first.
fn sites_of(function: &Value, text: &str) -> Vec<(u64, u64, i64, Vec<String>)> {
    let line = function["lines"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["contents"].as_str().unwrap().contains(text))
        .unwrap();
    line["sites"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let frames = s["frames"]
                .as_array()
                .unwrap()
                .iter()
                .map(|f| f["function"].as_str().unwrap().to_owned())
                .collect();
            (
                s["allocations"].as_u64().unwrap(),
                s["allocated_bytes"].as_u64().unwrap(),
                s["live_bytes"].as_i64().unwrap(),
                frames,
            )
        })
        .collect()
}

fn names(frames: &[&str]) -> Vec<String> {
    frames.iter().map(|f| f.to_string()).collect()
}

#[test]
fn a_lines_sites_name_each_helper_and_add_up_to_the_line() {
    let dir = child::scratch_dir("sites-exact");
    let json = dir.join("exact.json");
    let (out, _) = run_child(
        "child_parse",
        &[
            ("MEMPROF_SITES", "1"),
            ("MEMPROF_REPORT", "call"),
            ("MEMPROF_UNIT", "B"),
            ("MEMPROF_JSON", json.to_str().unwrap()),
        ],
    );
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let parse = report["functions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == "sites::parse")
        .unwrap();
    // Ten blocks of 1000 bytes through leaf, middle and top; middle's
    // vector of ten 24-byte handles.
    assert_eq!(
        sites_of(parse, "let local = top(n);"),
        [
            (
                10,
                10_000,
                10_000,
                names(&["sites::leaf", "sites::middle", "sites::top"])
            ),
            (1, 240, 240, names(&["sites::middle", "sites::top"])),
        ]
    );
    // The same, in a dependency: its frames are named from its own crate.
    assert_eq!(
        sites_of(parse, "memprof_sites_helper::outer(n)"),
        [
            (
                10,
                20_000,
                20_000,
                names(&[
                    "memprof_sites_helper::inner",
                    "memprof_sites_helper::middle",
                    "memprof_sites_helper::outer"
                ])
            ),
            (
                1,
                240,
                240,
                names(&[
                    "memprof_sites_helper::middle",
                    "memprof_sites_helper::outer"
                ])
            ),
        ]
    );
    // A line that allocates itself, and frees before it ends: nothing live.
    assert_eq!(sites_of(parse, "let scratch"), [(1, 512, 512, vec![])]);
    assert_eq!(sites_of(parse, "drop(scratch)"), []);
    // The sites add up to each line's figures.
    for line in parse["lines"].as_array().unwrap() {
        let Some(sites) = line["sites"].as_array() else {
            continue;
        };
        let sum = |field: &str| {
            sites
                .iter()
                .map(|s| s[field].as_u64().unwrap())
                .sum::<u64>()
        };
        assert_eq!(
            sum("allocations"),
            line["allocations"].as_u64().unwrap(),
            "{line}"
        );
        assert_eq!(
            sum("allocated_bytes"),
            line["allocated_bytes"].as_u64().unwrap(),
            "{line}"
        );
    }
    // The `fn` row: everything the call allocated, none of it live at its
    // end (its locals are dropped).
    let fn_row = &parse["lines"].as_array().unwrap()[2];
    assert_eq!(fn_row["allocated_bytes"], 30_992);
    assert_eq!(
        fn_row["sites"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["live_bytes"].as_i64().unwrap())
            .sum::<i64>(),
        0
    );
    // Under the table, each frame with its file and line where the build
    // has debug information (the dev profile; cargo's release profile has
    // none, so the function alone).
    let place = |file: &str, snippet: &str| {
        if !cfg!(debug_assertions) {
            return String::new();
        }
        let source = match file {
            "tests/sites.rs" => include_str!("sites.rs"),
            _ => include_str!("crates/sites-helper/src/lib.rs"),
        };
        let line = source.lines().position(|l| l.contains(snippet)).unwrap() + 1;
        format!(" ({file}:{line})")
    };
    // The summary's top line says where most of its bytes were allocated:
    // 20,000 of 20,240 in `inner`, 98 % rounded down.
    let top = report["summary"]["top_increment"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["contents"] == "let dependency = memprof_sites_helper::outer(n);")
        .unwrap();
    let site = &top["site"];
    assert_eq!(top["allocated_bytes"], 20_240);
    assert_eq!(
        (
            &site["allocated_bytes"],
            &site["percent"],
            &site["estimated"]
        ),
        (&Value::from(20_000), &Value::from(98), &Value::from(false)),
        "{top}"
    );
    let frame = &site["frame"];
    assert_eq!(frame["function"], "memprof_sites_helper::inner");
    let at = match (frame["file"].as_str(), frame["line"].as_u64()) {
        (Some(file), Some(line)) => format!(" ({file}:{line})"),
        _ => String::new(),
    };
    assert_eq!(
        at,
        place(
            "tests/crates/sites-helper/src/lib.rs",
            "black_box(vec![1u8; 2000])"
        )
    );
    let local_line = include_str!("sites.rs")
        .lines()
        .position(|l| l.ends_with("let local = top(n);"))
        .unwrap()
        + 1;
    let shown = out.split("Allocation sites").nth(1).unwrap();
    if cfg!(debug_assertions) {
        // The README's excerpt, default units, is what this run printed.
        let (plain, _) = run_child(
            "child_parse",
            &[("MEMPROF_SITES", "1"), ("MEMPROF_REPORT", "call")],
        );
        let readme = include_str!("../README.md");
        let block = readme
            .split("From\n`tests/sites.rs`:\n\n```text\n")
            .nth(1)
            .and_then(|rest| rest.split("```").next())
            .expect("the README's sites excerpt");
        let mut rest = plain.as_str();
        for line in block.lines().filter(|l| *l != "...") {
            // A row's Mem usage is the harness's heap too: from Increment on.
            let line = match line.trim_start().starts_with(char::is_numeric) {
                true => &line[21..],
                false => line,
            };
            let at = rest
                .find(line)
                .unwrap_or_else(|| panic!("README line not printed (in order): {line:?}\n{plain}"));
            rest = &rest[at + line.len()..];
        }
    }
    for text in [
        format!(
            "Line {local_line}: 10240 B allocated in 11 allocations, 10240 B of it live when the line ended\n    10000 B in 10 allocations, 10000 B live\n        sites::leaf{}\n        sites::middle{}\n        sites::top{}\n",
            place("tests/sites.rs", "black_box(vec![7u8; 1000])"),
            place("tests/sites.rs", "blocks.push(leaf());"),
            place("tests/sites.rs", "black_box(middle(n))"),
        ),
        format!(
            "        memprof_sites_helper::inner{}\n",
            place(
                "tests/crates/sites-helper/src/lib.rs",
                "black_box(vec![1u8; 2000])"
            )
        ),
    ] {
        assert!(shown.contains(&text), "{text}\n---\n{shown}");
    }
}

#[test]
#[ignore = "a child run: this file's tests start it"]
fn child_threads_one_after_another() {
    if is_child() {
        for _ in 0..200 {
            std::thread::spawn(|| assert_eq!(parse(2), 4))
                .join()
                .unwrap();
        }
        // Each thread's tables went to the next: a set for the threads
        // recording at once (the main thread made no profiled call).
        assert_eq!(memprof::__private::sites_table_sets(), 1);
        let report = memprof::report();
        let parse = report.function("sites::parse").unwrap();
        let sites = parse
            .line_containing("let local = top(n);")
            .unwrap()
            .sites
            .clone()
            .unwrap();
        let figures: Vec<(u64, u64, i64)> = sites
            .iter()
            .map(|s| (s.allocations, s.allocated_bytes, s.live_bytes))
            .collect();
        // Two 1000-byte blocks and the 48-byte vector, on each of 200 threads.
        assert_eq!(figures, [(400, 400_000, 400_000), (200, 9600, 9600)]);
    }
}

/// Threads that start and end one after another keep one set of tables,
/// and their sites stay in the report after they end.
#[test]
fn ended_threads_keep_their_sites_and_hand_their_tables_on() {
    run_child(
        "child_threads_one_after_another",
        &[("MEMPROF_SITES", "1"), ("MEMPROF_REPORT", "off")],
    );
}
