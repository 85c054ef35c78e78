//! `mprof diff`'s rules for what counts as growth, what a threshold means,
//! which functions pair across runs, and Markdown that renders: one test
//! per rule, with exact output.

mod common;

use common::report::{diff, function, simple, write};
use common::{mprof, scratch, stderr};

/// A function that frees its input: its `fn` row keeps `kept` (< 0).
fn frees_input(kept: i64, peak: u64) -> serde_json::Value {
    simple("app::consume", 1, kept, peak)
}

#[test]
fn kept_below_zero_that_rises_is_not_growth() {
    let dir = scratch("diff-rule-negative-kept");
    write(&dir, "base.json", vec![frees_input(-(56 << 20), 0)]);
    write(&dir, "head.json", vec![frees_input(-(40 << 20), 0)]);
    let (out, err, status) = diff(&dir, &["base.json", "head.json", "--fail-over", "10%"]);
    assert_eq!(
        out,
        "\
Filename: src/app.rs   Function: app::consume   Status: changed

 Figure           Base        Head      Change   Change %
=========================================================
 Calls               1           1           0       0.0%
 Peak              0 B         0 B         0 B       0.0%
 Kept/call   -56.0 MiB   -40.0 MiB   +16.0 MiB        n/a
"
    );
    assert_eq!(
        err,
        "mprof: no function's peak or kept/call grew past --fail-over 10%\n"
    );
    assert_eq!(status, Some(0));
}

#[test]
fn kept_that_turns_positive_grows_from_zero() {
    let dir = scratch("diff-rule-kept-turns-positive");
    write(&dir, "base.json", vec![frees_input(-4096, 0)]);
    write(&dir, "head.json", vec![frees_input(2048, 2048)]);
    let (_, err, status) = diff(&dir, &["base.json", "head.json", "--fail-over", "10%"]);
    assert_eq!(
        err,
        "\
mprof: app::consume: peak grew from 0 B to 2.0 KiB (+2.0 KiB, n/a), past --fail-over 10%
mprof: app::consume: kept/call grew from -4.0 KiB to 2.0 KiB (+6.0 KiB, n/a), past --fail-over 10%
"
    );
    assert_eq!(status, Some(1));
}

#[test]
fn a_floor_keeps_small_growth_from_failing() {
    let dir = scratch("diff-rule-floor");
    write(
        &dir,
        "base.json",
        vec![
            simple("app::tiny", 1, 16, 16),
            simple("app::big", 1, 1 << 20, 1 << 20),
        ],
    );
    write(
        &dir,
        "head.json",
        vec![
            simple("app::tiny", 1, 32, 32),
            simple("app::big", 1, 3 << 19, 3 << 19),
        ],
    );
    let args = [
        "base.json",
        "head.json",
        "--fail-over",
        "10%",
        "--min",
        "64KiB",
    ];
    let (_, err, status) = diff(&dir, &args);
    assert_eq!(
        err,
        "\
mprof: app::big: peak grew from 1.0 MiB to 1.5 MiB (+512.0 KiB, +50.0%), past --fail-over 10% --min 64.0 KiB
mprof: app::big: kept/call grew from 1.0 MiB to 1.5 MiB (+512.0 KiB, +50.0%), past --fail-over 10% --min 64.0 KiB
"
    );
    assert_eq!(status, Some(1));
    // Without the floor, the 16 B that became 32 B fails too.
    let (_, err, _) = diff(&dir, &["base.json", "head.json", "--fail-over", "10%"]);
    assert!(
        err.contains("app::tiny: peak grew from 16 B to 32 B"),
        "{err}"
    );
}

#[test]
fn a_bare_number_is_not_a_threshold() {
    let dir = scratch("diff-rule-bare-number");
    let out = mprof(&dir, &["diff", "a.json", "b.json", "--fail-over", "10"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains(
            "a bare number is ambiguous: write a percentage (10%) or a size with its unit \
             (10B, 10KiB)"
        ),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_base_with_nothing_that_ran_is_refused_unless_accepted() {
    let dir = scratch("diff-rule-empty-base");
    write(&dir, "base.json", vec![]);
    write(&dir, "head.json", vec![simple("app::added", 1, 100, 100)]);
    let (out, err, status) = diff(&dir, &["base.json", "head.json", "--fail-over", "10%"]);
    assert_eq!(out, "");
    assert_eq!(
        err,
        "mprof: cannot read base.json: it has no profiled function that ran, so \
         nothing can be checked against it (a base from before memprof was added, or a \
         run without profiling); pass --allow-empty-base to accept it\n"
    );
    assert_eq!(status, Some(2));
    let args = ["base.json", "head.json", "--allow-empty-base"];
    let (out, err, status) = diff(&dir, &args);
    assert!(out.contains("Function: app::added   Status: new"), "{out}");
    assert_eq!(
        err,
        "mprof: base.json has no profiled function that ran, so nothing can be checked \
         against it (a base from before memprof was added, or a run without profiling)\n"
    );
    assert_eq!(status, Some(0));
}

/// `serialize_map` of a trait impl, whose trait moved crates between the
/// two versions of a dependency.
fn serialize_map(name: &str, kept: i64) -> serde_json::Value {
    function(
        name,
        1,
        &[
            (40, None, None, "#[profile]"),
            (
                41,
                Some(kept),
                Some(kept as u64),
                "fn serialize_map(self) -> Result<()> {",
            ),
            (
                42,
                Some(kept),
                Some(kept as u64),
                "    let map = Map::new();",
            ),
        ],
    )
}

#[test]
fn a_function_renamed_by_a_dependency_is_matched_by_file_and_signature() {
    let dir = scratch("diff-rule-renamed");
    let base = "<app::Serializer as serde::ser::Serializer>::serialize_map";
    let head = "<app::Serializer as serde_core::ser::Serializer>::serialize_map";
    write(&dir, "base.json", vec![serialize_map(base, 0)]);
    write(&dir, "head.json", vec![serialize_map(head, 1126)]);
    let (out, _, status) = diff(&dir, &["base.json", "head.json", "--fail-over", "1KiB"]);
    assert_eq!(
        out,
        "\
Filename: src/app.rs   Function: <app::Serializer as serde_core::ser::Serializer>::serialize_map   Status: grew   Past --fail-over: Peak, Kept/call
(matched by file and `fn` line; in the base: <app::Serializer as serde::ser::Serializer>::serialize_map)

 Figure      Base      Head     Change   Change %
=================================================
 Calls          1         1          0       0.0%
 Peak         0 B   1.1 KiB   +1.1 KiB        n/a
 Kept/call    0 B   1.1 KiB   +1.1 KiB        n/a
"
    );
    assert_eq!(status, Some(1));
}

/// The text of the HTML that a CommonMark renderer with GitHub's tables
/// makes of `markdown`, tags removed and entities decoded.
fn rendered_text(markdown: &str) -> String {
    use pulldown_cmark::{Options, Parser, html};
    let mut out = String::new();
    html::push_html(&mut out, Parser::new_ext(markdown, Options::ENABLE_TABLES));
    let mut text = String::new();
    let mut in_tag = false;
    for c in out.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => in_tag = false,
            c if !in_tag => text.push(c),
            _ => {}
        }
    }
    text.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&amp;", "&")
}

#[test]
fn markdown_names_render_whole() {
    let names = [
        "<serde_json::value::ser::Serializer as serde_core::ser::Serializer>::serialize_map",
        "serde_json::read::SliceRead::parse_str",
        "serde_json::read::StrRead::parse_str",
        "app::Cache<alloc::string::String, u64>::insert",
        "app::main::{{closure}}",
        "app::pick<&str>",
    ];
    let dir = scratch("diff-rule-markdown-names");
    let with_kept = |kept| names.iter().map(|n| simple(n, 1, kept, 100)).collect();
    write(&dir, "base.json", with_kept(100));
    write(&dir, "head.json", with_kept(200));
    let args = ["base.json", "head.json", "--format", "markdown", "--lines"];
    let (out, _, _) = diff(&dir, &args);
    let text = rendered_text(&out);
    for name in names {
        // Once in the table, once in its lines' summary.
        assert_eq!(
            text.matches(name).count(),
            2,
            "{name} in:\n{text}\nfrom:\n{out}"
        );
    }
}

/// `build` with the argument on line 23 of its multi-line statement.
fn build(argument: &str, bytes: i64) -> serde_json::Value {
    function(
        "app::build",
        1,
        &[
            (20, None, None, "#[profile]"),
            (
                21,
                Some(bytes),
                Some(bytes as u64),
                "fn build() -> Vec<u8> {",
            ),
            (22, Some(bytes), Some(bytes as u64), "    let v = make("),
            (23, None, None, argument),
            (24, None, None, "    );"),
            (25, Some(0), Some(0), "    v"),
            (26, None, None, "}"),
        ],
    )
}

#[test]
fn a_change_inside_a_multi_line_statement_shows_its_text() {
    let dir = scratch("diff-rule-multi-line");
    write(&dir, "base.json", vec![build("        100,", 100)]);
    write(&dir, "head.json", vec![build("        200,", 200)]);
    let (out, _, _) = diff(&dir, &["base.json", "head.json", "--lines"]);
    let lines = out.split_once("\n\n Base #").unwrap().1;
    assert_eq!(
        lines,
        "   Head #   Base incr.   Head incr.   Incr. change   Base peak   Head peak   Peak change   Diff      Line Contents
=========================================================================================================================
     21       21        100 B        200 B         +100 B       100 B       200 B        +100 B             fn build() -> Vec<u8> {
     22       22        100 B        200 B         +100 B       100 B       200 B        +100 B                 let v = make(
     23                                                                                           removed           100,
              23                                                                                  added             200,
     25       25          0 B          0 B            0 B         0 B         0 B           0 B                 v
"
    );
}

/// `load` calls `parse`, whose buffer grew; `load` adds nothing of its own.
fn caller_and_callee(parse_bytes: i64) -> Vec<serde_json::Value> {
    let parse = function(
        "app::parse",
        1,
        &[
            (30, None, None, "#[profile]"),
            (
                31,
                Some(parse_bytes),
                Some(parse_bytes as u64),
                "fn parse(text: &str) -> Vec<u8> {",
            ),
            (
                32,
                Some(parse_bytes),
                Some(parse_bytes as u64),
                "    let out = Vec::with_capacity(text.len());",
            ),
        ],
    );
    let load = function(
        "app::load",
        1,
        &[
            (40, None, None, "#[profile]"),
            (
                41,
                Some(parse_bytes + 100),
                Some(parse_bytes as u64 + 100),
                "fn load() -> Vec<u8> {",
            ),
            (42, Some(100), Some(100), "    let text = read();"),
            (
                43,
                Some(parse_bytes),
                Some(parse_bytes as u64),
                "    let bytes = parse(&text);",
            ),
        ],
    );
    vec![parse, with_call(load, 3, "app::parse", parse_bytes)]
}

/// `function` with the call edge memprof records from its row `row` (an
/// index into its lines) to `callee`, one call allocating `bytes`.
fn with_call(
    mut function: serde_json::Value,
    row: usize,
    callee: &str,
    bytes: i64,
) -> serde_json::Value {
    function["lines"][row]["calls"] =
        serde_json::json!([{"function": callee, "calls": 1, "allocated_bytes": bytes}]);
    function
}

#[test]
fn a_function_that_grew_through_its_callee_only_says_so() {
    let dir = scratch("diff-rule-callees");
    write(&dir, "base.json", caller_and_callee(16));
    write(&dir, "head.json", caller_and_callee(32));
    let (out, _, _) = diff(&dir, &["base.json", "head.json"]);
    let headers: Vec<&str> = out.lines().filter(|l| l.starts_with("Filename")).collect();
    assert_eq!(
        headers,
        [
            "Filename: src/app.rs   Function: app::load   Status: grew in callees",
            "Filename: src/app.rs   Function: app::parse   Status: grew",
        ]
    );
    assert!(
        out.contains("(each line that grew calls a function that grew: app::parse)\n"),
        "{out}"
    );
}

#[test]
fn a_line_named_like_a_grown_function_that_did_not_call_it_is_own_growth() {
    // The same reports without the edge: `parse(&text)` reads as a call of
    // `app::parse`, but memprof saw none begin there (another type's
    // `parse`), so the growth is the line's own.
    let dir = scratch("diff-rule-callees-by-edge");
    let without_edge = |bytes: i64| {
        let mut functions = caller_and_callee(bytes);
        functions[1]["lines"][3]["calls"] = serde_json::json!([]);
        functions
    };
    write(&dir, "base.json", without_edge(16));
    write(&dir, "head.json", without_edge(32));
    let (out, _, _) = diff(&dir, &["base.json", "head.json"]);
    let headers: Vec<&str> = out.lines().filter(|l| l.starts_with("Filename")).collect();
    assert_eq!(
        headers,
        [
            "Filename: src/app.rs   Function: app::load   Status: grew",
            "Filename: src/app.rs   Function: app::parse   Status: grew",
        ]
    );
    assert!(!out.contains("each line that grew calls"), "{out}");
}

/// Names, files and lines that try to break out: newlines, backticks,
/// pipes, tags, links and images, terminal escapes.
const HOSTILE: [&str; 4] = [
    "x\n\n![p](https://host/p.png) <img src=x onerror=alert(1)> [click](https://host)\n\n| a | b |\n|---|---|",
    "a`b``c ](https://host) <script>alert(1)</script> \\| |",
    "evil\u{1b}[2J\u{1b}]0;pwned\u{7}\r\u{202e}",
    "</code></summary><a href=\"https://host\">x</a>\n```\n",
];

fn hostile_reports(dir: &std::path::Path) {
    let function = |name: &str, kept: i64| {
        let mut f = simple(name, 1, kept, 100);
        f["file"] = serde_json::Value::from(format!("src/{name}.rs"));
        f["lines"][2]["contents"] = serde_json::Value::from(format!("    let v = {name};"));
        f
    };
    let with_kept = |kept| HOSTILE.iter().map(|n| function(n, kept)).collect();
    write(dir, "base.json", with_kept(100));
    write(dir, "head.json", with_kept(200));
}

#[test]
fn hostile_names_stay_inert_in_markdown() {
    use pulldown_cmark::{Event, Options, Parser, Tag};
    let dir = scratch("diff-rule-hostile-markdown");
    hostile_reports(&dir);
    let args = ["base.json", "head.json", "--format", "markdown", "--lines"];
    let (out, err, _) = diff(&dir, &args);
    assert_eq!(err, "");
    let mut tables = 0;
    for event in Parser::new_ext(&out, Options::ENABLE_TABLES) {
        match event {
            Event::Start(Tag::Table(_)) => tables += 1,
            Event::Start(Tag::Image { .. } | Tag::Link { .. }) => {
                panic!("an image or a link from the input:\n{out}")
            }
            // Only the report's own folding tags.
            Event::Html(html) | Event::InlineHtml(html) => {
                let html = html.trim();
                let name = html
                    .strip_prefix("<details><summary><code>")
                    .and_then(|h| h.strip_suffix("</code>: lines</summary>"));
                let ours = name.is_some_and(|n| !n.contains(['<', '>'])) || html == "</details>";
                assert!(ours, "raw HTML from the input: {html:?} in\n{out}");
            }
            _ => {}
        }
    }
    assert_eq!(tables, 1, "{out}");
    assert!(!out.contains('\u{1b}') && !out.contains('\u{7}'), "{out}");
}

#[test]
fn text_reports_show_control_characters_escaped() {
    let dir = scratch("diff-rule-hostile-text");
    hostile_reports(&dir);
    let (out, err, _) = diff(&dir, &["base.json", "head.json", "--lines"]);
    assert_eq!(err, "");
    for c in ['\u{1b}', '\u{7}', '\r', '\u{202e}'] {
        assert!(!out.contains(c), "{c:?} in\n{out}");
    }
    assert!(
        out.contains("Function: evil\\u{1b}[2J\\u{1b}]0;pwned\\u{7}\\r\\u{202e}"),
        "{out}"
    );
    // Every name is on one line of its own header.
    assert_eq!(out.matches("Function: ").count(), HOSTILE.len(), "{out}");
    assert!(out.contains("Function: x\\n\\n![p]"), "{out}");
}

#[test]
fn a_new_function_is_judged_as_grown_from_nothing() {
    let dir = scratch("diff-rule-new-function");
    write(&dir, "base.json", vec![simple("app::kept", 1, 100, 100)]);
    write(
        &dir,
        "head.json",
        vec![
            simple("app::kept", 1, 100, 100),
            simple("app::analyse", 1, 0, 284 << 20),
        ],
    );
    let (_, err, code) = diff(&dir, &["base.json", "head.json", "--fail-over", "1MiB"]);
    assert_eq!(code, Some(1));
    assert_eq!(
        err,
        "mprof: app::analyse: new, peak 284.0 MiB, past --fail-over 1.0 MiB\n"
    );
    // Under --min, it passes.
    let args = [
        "base.json",
        "head.json",
        "--fail-over",
        "10%",
        "--min",
        "300MiB",
    ];
    let (_, _, code) = diff(&dir, &args);
    assert_eq!(code, Some(0));
}

#[test]
fn a_removed_function_shows_no_change_and_the_largest_change_comes_first() {
    let dir = scratch("diff-rule-removed");
    write(
        &dir,
        "base.json",
        vec![
            simple("app::consumes", 1, -(197 << 20), 1 << 20),
            simple("app::analyse", 1, 100, 100 << 20),
            simple("app::small", 1, 100, 100),
        ],
    );
    write(
        &dir,
        "head.json",
        vec![
            simple("app::analyse", 1, 100, 8 << 20),
            simple("app::small", 1, 200, 200),
        ],
    );
    let (out, _, _) = diff(&dir, &["base.json", "head.json"]);
    let order: Vec<&str> = out
        .lines()
        .filter_map(|l| l.split("Function: ").nth(1))
        .collect();
    assert_eq!(
        order,
        [
            "app::consumes   Status: removed",
            "app::analyse   Status: shrank",
            "app::small   Status: grew"
        ]
    );
    assert!(out.contains(" Kept/call   -197.0 MiB\n"), "{out}");
}

#[test]
fn figures_no_heap_can_hold_are_refused() {
    let dir = scratch("diff-rule-huge");
    let mut huge = simple("app::huge", 1, 100, 100);
    huge["lines"][2]["peak"] = serde_json::Value::from(1u64 << 63);
    write(&dir, "base.json", vec![simple("app::huge", 1, 100, 100)]);
    write(&dir, "head.json", vec![huge]);
    let (out, err, code) = diff(&dir, &["base.json", "head.json"]);
    assert_eq!((out.as_str(), code), ("", Some(2)));
    assert_eq!(
        err,
        "mprof: cannot read head.json: not a memprof report (app::huge line 12: peak of \
         9223372036854775808 B, more than any heap can hold)\n"
    );
}
