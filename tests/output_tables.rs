//! What a table looks like: its columns, units and cut long lines, from
//! hand-made reports rendered in a child run (see `support/child.rs`); and
//! the README's quick start, which must be `examples/quickstart.rs` and what
//! it prints.

#[path = "support/child.rs"]
mod child;

use child::{is_child, run_child};
use std::process::Command;

/// A row of a hand-made report: line number, (mem usage, increment, peak,
/// occurrences) if it ran, and its text.
fn row(line: u32, figures: Option<(i64, i64, u64, u64)>, contents: &str) -> memprof::LineReport {
    let (mem_usage, increment, peak, occurrences) = match figures {
        Some((m, i, p, n)) => (Some(m), Some(i), Some(p), n),
        None => (None, None, None, 0),
    };
    memprof::LineReport {
        line,
        mem_usage,
        increment,
        peak,
        occurrences,
        allocations: figures.map(|_| 0),
        allocated_bytes: figures.map(|_| 0),
        gpu_usage: None,
        gpu_increment: None,
        gpu_peak: None,
        gpu_driver_usage: None,
        gpu_driver_increment: None,
        pool_allocated: None,
        pool_increment: None,
        pool_reserved: None,
        in_use_allocations: None,
        in_use_bytes: None,
        contents: contents.to_owned(),
        sites: None,
        calls: None,
        within: None,
    }
}

fn function(name: &str, lines: Vec<memprof::LineReport>) -> memprof::FunctionReport {
    memprof::FunctionReport {
        name: name.to_owned(),
        file: "src/lib.rs".to_owned(),
        calls: 1,
        running: 0,
        gpu: None,
        gpu_driver: None,
        pool: None,
        lines,
        sites_left_out: None,
        quiet_calls: 0,
        events_calls: 0,
        quiet_unplaced: 0,
    }
}

#[test]
#[ignore = "a child run: this file's tests start it"]
fn child_two_tables() {
    if is_child() {
        let long = format!("    let s = \"{}\";", "x".repeat(120));
        let small = function(
            "app::small",
            vec![
                row(1, None, "#[profile]"),
                row(2, Some((900, 24, 24, 1)), "fn small() {"),
                row(3, Some((900, 24, 24, 1)), &long),
                row(4, Some((900, 0, 0, 1)), "}"),
            ],
        );
        let large = function(
            "app::large",
            vec![
                row(10, None, "#[profile]"),
                row(11, Some((3 << 29, -(3 << 29), 1 << 30, 1)), "fn large() {"),
                row(12, Some((1000 << 10, -(1000 << 10), 0, 12)), "\tdrop(v);"),
                row(13, Some((3 << 29, 0, 0, 1)), "}"),
            ],
        );
        print!("{small}\n{large}");
    }
}

#[test]
fn tables_keep_their_columns_and_cut_long_lines() {
    let (out, _) = run_child("child_two_tables", &[]);
    let tables = &out[out.find("Filename:").unwrap()..];
    // The rule is as wide as the header; the figure columns are as wide in a
    // table of bytes as in one of gigabytes; a line past 100 columns ends in
    // `…` at the 100th; a tab is four spaces.
    let expected = format!(
        "\
Filename: src/lib.rs   Function: app::small   Calls: 1

 Line #    Mem usage     Increment         Peak   Occurrences   Line Contents
=============================================================================
      1                                                         #[profile]
      2        900 B          24 B         24 B             1   fn small() {{
      3        900 B          24 B         24 B             1       let s = \"{}…
      4        900 B           0 B          0 B             1   }}

Filename: src/lib.rs   Function: app::large   Calls: 1

 Line #    Mem usage     Increment         Peak   Occurrences   Line Contents
=============================================================================
     10                                                         #[profile]
     11      1.5 GiB      -1.5 GiB      1.0 GiB             1   fn large() {{
     12   1000.0 KiB   -1000.0 KiB          0 B            12       drop(v);
     13      1.5 GiB           0 B          0 B             1   }}
",
        "x".repeat(86)
    );
    assert_eq!(&tables[..expected.len()], expected, "{out}");
}

/// The fenced block that follows `after` in `text`.
fn block_after<'a>(text: &'a str, after: &str) -> &'a str {
    let rest = &text[text.find(after).unwrap_or_else(|| panic!("no {after:?}"))..];
    let fence = rest.find("```").unwrap();
    let body = fence + rest[fence..].find('\n').unwrap() + 1;
    &rest[body..body + rest[body..].find("```").unwrap()]
}

#[test]
fn readme_quick_start_is_the_example_and_what_it_prints() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let section = &readme[readme.find("## Quick start").unwrap()..];
    let example = std::fs::read_to_string(root.join("examples/quickstart.rs")).unwrap();
    // The example without its `//!` line.
    assert_eq!(
        block_after(section, "```rust"),
        example.split_once('\n').unwrap().1
    );
    let out = Command::new(env!("CARGO"))
        .args(["run", "--quiet", "--example", "quickstart"])
        .current_dir(root)
        .env_remove("MEMPROF")
        .env_remove("MEMPROF_REPORT")
        .env_remove("MEMPROF_UNIT")
        .env_remove("MEMPROF_PRECISION")
        .env_remove("MEMPROF_OUTPUT")
        .env_remove("MEMPROF_MIN_INCREMENT")
        .env_remove("MEMPROF_JSON")
        // The README shows a machine without a GPU.
        .env("MEMPROF_GPU", "off")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let printed = String::from_utf8(out.stdout).unwrap();
    // The README leaves out the second table, at `...`.
    let shown = block_after(section, "`cargo run --example quickstart` begins with");
    let (head, tail) = shown.split_once("...\n\n").expect("a `...` line");
    assert!(
        printed.starts_with(head),
        "README:\n{shown}\nprinted:\n{printed}"
    );
    assert!(
        printed.ends_with(tail),
        "README:\n{shown}\nprinted:\n{printed}"
    );
    assert!(printed.len() > head.len() + tail.len() + 1000, "{printed}");
}

#[test]
fn the_documented_summary_is_what_the_quick_start_prints_at_exit() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let page = std::fs::read_to_string(root.join("docs/reference.md")).unwrap();
    let section = &page[page.find("### The summary").unwrap()..];
    let shown = block_after(section, "quickstart` ends with:");
    let out = Command::new(env!("CARGO"))
        .args(["run", "--quiet", "--example", "quickstart"])
        .current_dir(root)
        .env_remove("MEMPROF")
        .env_remove("MEMPROF_UNIT")
        .env_remove("MEMPROF_PRECISION")
        .env_remove("MEMPROF_OUTPUT")
        .env_remove("MEMPROF_MIN_INCREMENT")
        .env_remove("MEMPROF_JSON")
        .env("MEMPROF_REPORT", "exit")
        .env("MEMPROF_GPU", "off")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let printed = String::from_utf8(out.stdout).unwrap();
    let summary = &printed[printed.find("Summary: ").expect("a summary at exit")..];
    // The README cuts the second list short.
    let (head, _) = shown.split_once("Top lines by Peak").unwrap();
    assert!(
        summary.starts_with(head),
        "README:\n{shown}\nprinted:\n{summary}"
    );
}
