//! `mprof html`: the page's structure for hand-written reports, exactly:
//! the summary's rows in order of peak, every line's bars, names and source
//! escaped, functions that never ran left out, nothing fetched from
//! outside; a line's allocation sites, escaped, and no trace of them in a
//! page without; the comparison's highlighted lines; the plot inlined. The
//! page in a browser is `scripts/html-check`'s.

mod common;

use common::report::{function, write};
use common::{assert_one_line_error, mprof, scratch, stderr};
use serde_json::{Value, json};
use std::path::Path;

const SERIALIZE: &str = "<S as serde::Serializer>::serialize_map";

/// A trait impl whose name and source need escaping, a plain function, and
/// one that never ran.
fn run_report(calls: u64, kept: i64, peak: u64) -> Vec<Value> {
    vec![
        function(
            SERIALIZE,
            calls,
            &[
                (10, None, None, "#[profile]"),
                (11, Some(kept), Some(peak), "fn serialize_map(&mut self) {"),
                (
                    12,
                    Some(kept),
                    Some(peak),
                    "    let v: Vec<&str> = a.then(|| b);",
                ),
                (13, Some(0), Some(peak / 2), "    drop(x < y && y > z);"),
                (14, None, None, "}"),
            ],
        ),
        function(
            "app::build",
            1,
            &[
                (20, Some(-1024), Some(8192), "fn build() {"),
                (21, Some(-1024), Some(0), "    drop(input);"),
            ],
        ),
        function(
            "app::never",
            0,
            &[(30, None, None, "fn never() {"), (31, None, None, "}")],
        ),
    ]
}

/// Writes the page for `args` in `dir`; returns it.
fn page(dir: &Path, args: &[&str]) -> String {
    let mut all = vec!["html"];
    all.extend(args);
    let out = mprof(dir, &all);
    assert!(out.status.success(), "{}", stderr(&out));
    let output = all
        .iter()
        .position(|&a| a == "-o")
        .map_or("run.html", |i| all[i + 1]);
    assert_eq!(stderr(&out), format!("mprof: wrote {output}\n"));
    std::fs::read_to_string(dir.join(output)).unwrap()
}

/// The element that starts with `start`, up to the first `end` after it.
fn element<'a>(page: &'a str, start: &str, end: &str) -> &'a str {
    let from = page
        .find(start)
        .unwrap_or_else(|| panic!("no {start} in {page}"));
    let to = page[from..].find(end).unwrap() + from + end.len();
    &page[from..to]
}

/// Splits a fragment before each row, for diffs that read.
fn rows(html: &str) -> Vec<String> {
    html.split("<tr")
        .enumerate()
        .map(|(i, part)| match i {
            0 => part.to_owned(),
            _ => format!("<tr{part}"),
        })
        .collect()
}

#[test]
fn the_summary_has_one_row_per_function_that_ran_by_peak() {
    let dir = scratch("html-summary");
    write(&dir, "run.json", run_report(2, 4096, 6144));
    let page = page(&dir, &["run.json"]);
    let summary = element(&page, "<section id=\"summary\">", "</section>");
    assert_eq!(
        rows(summary),
        [
            "<section id=\"summary\"><h2>Summary</h2><p class=\"meta\">2 functions ran. \
             Kept is what the calls left allocated (the <code>fn</code> row's increment); \
             Peak is the highest of any one call. Click a column's header to sort by it.</p>\
             <table class=\"sortable summary\"><thead>",
            "<tr><th>Function</th><th class=\"num\">Calls</th><th class=\"num\">Kept</th>\
             <th class=\"num\">Kept/call</th><th class=\"num\" aria-sort=\"descending\">Peak</th>\
             </tr></thead><tbody>",
            "<tr><td class=\"name\" data-sort=\"app::build\"><a href=\"#fn-1\"><code>app::build\
             </code></a></td><td class=\"num\" data-sort=\"1\">1</td>\
             <td class=\"num\" data-sort=\"-1024\">-1.0 KiB</td>\
             <td class=\"num\" data-sort=\"-1024\">-1.0 KiB</td>\
             <td class=\"num\" data-sort=\"8192\">8.0 KiB</td></tr>",
            "<tr><td class=\"name\" data-sort=\"&lt;S as serde::Serializer&gt;::serialize_map\">\
             <a href=\"#fn-0\"><code>&lt;S as serde::Serializer&gt;::serialize_map</code></a>\
             </td><td class=\"num\" data-sort=\"2\">2</td>\
             <td class=\"num\" data-sort=\"4096\">4.0 KiB</td>\
             <td class=\"num\" data-sort=\"2048\">2.0 KiB</td>\
             <td class=\"num\" data-sort=\"6144\">6.0 KiB</td></tr></tbody></table></section>",
        ]
    );
    // Never called: in no table, no link, no heading.
    assert!(!page.contains("app::never"), "{page}");
    assert!(!page.contains("fn never"), "{page}");
}

#[test]
fn every_line_that_ran_has_an_increment_bar_and_a_peak_bar_and_escaped_source() {
    let dir = scratch("html-lines");
    write(&dir, "run.json", run_report(2, 4096, 6144));
    let page = page(&dir, &["run.json"]);
    let section = element(
        &page,
        "<section class=\"function\" id=\"fn-0\">",
        "</section>",
    );
    let bar = |kind: &str, width: &str, text: &str| {
        format!(
            "<td class=\"num bar\"><div><span class=\"fill {kind}\" style=\"width:{width}%\">\
             </span><span class=\"value\">{text}</span></div></td>"
        )
    };
    let empty = "<td class=\"num bar\"></td>";
    // Occurrences: the report's, over both calls; none where nothing ran.
    let occurrences = |n: &str| format!("<td class=\"num\" data-sort=\"{n}\">{n}</td>");
    let no_occurrences = "<td class=\"num\" data-sort=\"\"></td>";
    // Mem usage: the report's, as memprof's tables show it.
    let usage = |n: &str, text: &str| format!("<td class=\"num\" data-sort=\"{n}\">{text}</td>");
    let no_usage = no_occurrences;
    assert_eq!(
        rows(section),
        [
            "<section class=\"function\" id=\"fn-0\"><h3><code>&lt;S as serde::Serializer&gt;\
             ::serialize_map</code></h3><p class=\"meta\"><code>src/app.rs</code> · 2 calls</p>\
             <table class=\"lines\"><thead>"
                .to_owned(),
            "<tr><th class=\"num\">Line #</th><th class=\"num\">Mem usage</th>\
             <th class=\"num\">Increment</th>\
             <th class=\"num\">Peak</th><th class=\"num\">Occurrences</th>\
             <th>Line Contents</th></tr></thead><tbody>"
                .to_owned(),
            format!(
                "<tr><td class=\"num\">10</td>{no_usage}{empty}{empty}{no_occurrences}\
                 <td class=\"src\"><code>#[profile]</code></td></tr>"
            ),
            format!(
                "<tr class=\"ran\"><td class=\"num\">11</td>{}{}{}{}<td class=\"src\"><code>\
                 fn serialize_map(&amp;mut self) {{</code></td></tr>",
                usage("4096", "4.0 KiB"),
                bar("increment", "100.0", "4.0 KiB"),
                bar("peak", "100.0", "6.0 KiB"),
                occurrences("2")
            ),
            format!(
                "<tr class=\"ran\"><td class=\"num\">12</td>{}{}{}{}<td class=\"src\"><code>    \
                 let v: Vec&lt;&amp;str&gt; = a.then(|| b);</code></td></tr>",
                usage("4096", "4.0 KiB"),
                bar("increment", "100.0", "4.0 KiB"),
                bar("peak", "100.0", "6.0 KiB"),
                occurrences("2")
            ),
            format!(
                "<tr class=\"ran\"><td class=\"num\">13</td>{}{}{}{}<td class=\"src\"><code>    \
                 drop(x &lt; y &amp;&amp; y &gt; z);</code></td></tr>",
                usage("0", "0 B"),
                bar("increment", "0.0", "0 B"),
                bar("peak", "50.0", "3.0 KiB"),
                occurrences("2")
            ),
            format!(
                "<tr><td class=\"num\">14</td>{no_usage}{empty}{empty}{no_occurrences}\
                 <td class=\"src\"><code>}}</code></td></tr></tbody></table></section>"
            ),
        ]
    );
    // Bytes freed have their own colour.
    let build = element(
        &page,
        "<section class=\"function\" id=\"fn-1\">",
        "</section>",
    );
    assert!(
        build.contains(&bar("freed", "100.0", "-1.0 KiB")),
        "{build}"
    );
}

#[test]
fn the_page_fetches_nothing_and_escapes_every_name() {
    let dir = scratch("html-self-contained");
    write(&dir, "run.json", run_report(2, 4096, 6144));
    let page = page(&dir, &["run.json", "-o", "page.html"]);
    assert!(page.starts_with("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"));
    assert!(page.ends_with("</script></body></html>"), "{page}");
    // No URL at all: no script, style sheet, font or image from elsewhere.
    for outside in ["http:", "https:", "://", "src=", "<link", "@import", "url("] {
        assert!(!page.contains(outside), "{outside} in the page");
    }
    assert_eq!(page.matches("<script>").count(), 1);
    assert_eq!(page.matches("<style>").count(), 1);
    // Every `<` of a name or of source text is escaped.
    assert!(!page.contains("<S as"));
    assert!(!page.contains("Vec<&str>"));
    // The summary's sort key and link, and the function's heading.
    let escaped = "&lt;S as serde::Serializer&gt;::serialize_map";
    assert_eq!(page.matches(escaped).count(), 3);
}

#[test]
fn the_comparison_highlights_what_grew() {
    let dir = scratch("html-compare");
    write(&dir, "base.json", run_report(2, 4096, 6144));
    write(&dir, "head.json", run_report(2, 8192, 6144));
    let page = page(
        &dir,
        &["head.json", "--base", "base.json", "-o", "head.html"],
    );
    let comparison = element(&page, "<section id=\"comparison\">", "</section>");
    let table = element(comparison, "<table class=\"sortable compare\">", "</table>");
    assert_eq!(
        rows(table),
        [
            "<table class=\"sortable compare\"><thead>",
            "<tr><th>Function</th><th>Status</th><th class=\"num\">Calls</th>\
             <th class=\"num\">Peak</th><th class=\"num\">Peak change</th>\
             <th class=\"num\">Kept/call</th><th class=\"num\">Kept/call change</th></tr>\
             </thead><tbody>",
            "<tr class=\"grew\"><td class=\"name\" data-sort=\"&lt;S as serde::Serializer&gt;\
             ::serialize_map\"><code>&lt;S as serde::Serializer&gt;::serialize_map</code></td>\
             <td>grew</td><td class=\"num\" data-sort=\"2\">2 → 2</td>\
             <td class=\"num\" data-sort=\"6144\">6.0 KiB → 6.0 KiB</td>\
             <td class=\"num change\" data-sort=\"0\">0 B (0.0%)</td>\
             <td class=\"num\" data-sort=\"4096\">2.0 KiB → 4.0 KiB</td>\
             <td class=\"num change grew\" data-sort=\"2048\">+2.0 KiB (+100.0%)</td></tr>\
             </tbody></table>",
        ]
    );
    assert!(
        comparison.contains(" 2 functions that did not change (or never ran) are not shown."),
        "{comparison}"
    );
    // The lines: the two that keep more are highlighted, per call.
    let lines = element(comparison, "<table class=\"lines\">", "</table>");
    let grown: Vec<&str> = lines
        .split("<tr class=\"grew ran\">")
        .skip(1)
        .map(|row| &row[row.find("<code>").unwrap() + 6..row.find("</code>").unwrap()])
        .collect();
    assert_eq!(
        grown,
        [
            "fn serialize_map(&amp;mut self) {",
            "    let v: Vec&lt;&amp;str&gt; = a.then(|| b);"
        ]
    );
    assert_eq!(lines.matches("<tr class=\"ran\">").count(), 1, "{lines}");
}

#[test]
fn a_dat_file_is_plotted_inline_with_its_calls() {
    let dir = scratch("html-plot");
    write(&dir, "run.json", run_report(1, 4096, 6144));
    std::fs::write(
        dir.join("run.dat"),
        "CMDLINE ./app --n <3>\n\
         MEM 5.000000 1795300840.0000\n\
         MEM 9.000000 1795300840.1000\n\
         MEM 7.000000 1795300840.2000\n\
         FUNC app::build 5.0 1795300840.0500 9.0 1795300840.1500 0\n",
    )
    .unwrap();
    let page = page(&dir, &["run.json", "--dat", "run.dat"]);
    let timeline = element(&page, "<section id=\"timeline\">", "</section>");
    assert!(
        timeline.starts_with(
            "<section id=\"timeline\"><h2>Memory over time</h2><p class=\"meta\">Recorded by \
             <code>mprof run</code> in <code>run.dat</code></p><figure class=\"plot\">\
             <svg width=\"1200\" height=\"600\" viewBox=\"0 0 1200 600\""
        ),
        "{timeline}"
    );
    assert!(
        timeline.ends_with("</svg>\n</figure></section>"),
        "{timeline}"
    );
    // The title (the command line) escaped by the plot's SVG writer, and the
    // call's legend.
    assert!(timeline.contains("./app --n &lt;3&gt;"), "{timeline}");
    assert!(timeline.contains("build 0.100s"), "{timeline}");
    assert!(page.contains("<a href=\"#timeline\">Memory over time</a>"));
}

#[test]
fn a_report_that_cannot_be_read_is_one_line() {
    let dir = scratch("html-errors");
    assert_one_line_error(&mprof(&dir, &["html", "missing.json"]), "missing.json");
    std::fs::write(dir.join("old.json"), json!({"functions": []}).to_string()).unwrap();
    let out = mprof(&dir, &["html", "old.json"]);
    assert_one_line_error(&out, "no schema version");
    assert_eq!(out.status.code(), Some(2));
    assert!(!dir.join("old.html").exists());
    // It says what it could not do with one file, not "compare".
    std::fs::write(dir.join("bad.json"), "not json").unwrap();
    let out = mprof(&dir, &["html", "bad.json"]);
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "mprof: cannot read bad.json: not JSON (expected ident at line 1 column 2)\n"
    );
}

/// The page of `run_report(calls, 4096, 6144)` with `field` set on the
/// first function's `fn` row and its next two rows: its summary and its two
/// functions' tables.
fn page_with(name: &str, calls: u64, field: &str, values: [u64; 3]) -> [String; 3] {
    let dir = scratch(name);
    let mut functions = run_report(calls, 4096, 6144);
    for (row, value) in (1..).zip(values) {
        functions[0]["lines"][row][field] = json!(value);
    }
    write(&dir, "run.json", functions);
    let page = page(&dir, &["run.json"]);
    let section = |id: &str| {
        let start = format!("<section class=\"function\" id=\"{id}\">");
        element(&page, &start, "</section>").to_owned()
    };
    [
        element(&page, "<section id=\"summary\">", "</section>").to_owned(),
        section("fn-0"),
        section("fn-1"),
    ]
}

/// Asserts the summary's column `header` right after Peak: `cell` for the
/// first function, whose peak is 6 KiB, and an empty cell, sorted last, for
/// the other, which has no such figure.
fn assert_summary_column(summary: &str, header: &str, cell: &str) {
    let after_peak = format!("<th class=\"num\" aria-sort=\"descending\">Peak</th>{header}");
    assert!(summary.contains(&after_peak), "{summary}");
    let first = format!("<td class=\"num\" data-sort=\"6144\">6.0 KiB</td>{cell}</tr>");
    assert!(summary.contains(&first), "{summary}");
    assert!(
        summary.contains(
            "<td class=\"num\" data-sort=\"8192\">8.0 KiB</td>\
             <td class=\"num\" data-sort=\"\"></td></tr>"
        ),
        "{summary}"
    );
}

#[test]
fn a_gpu_peak_column_where_the_run_counted_device_allocations() {
    let [summary, lines, build] = page_with("html-gpu", 1, "gpu_peak", [1 << 20, 1 << 20, 1 << 19]);
    assert_summary_column(
        &summary,
        "<th class=\"num\">GPU peak</th>",
        "<td class=\"num\" data-sort=\"1048576\">1.0 MiB</td>",
    );
    assert!(lines.contains("<th class=\"num\">GPU peak</th>"), "{lines}");
    assert!(
        lines.contains(
            "<span class=\"fill gpu\" style=\"width:50.0%\"></span>\
             <span class=\"value\">512.0 KiB</span>"
        ),
        "{lines}"
    );
    // Only functions with device figures have the column.
    assert!(!build.contains("GPU peak"), "{build}");
}

#[test]
fn pool_and_live_columns_where_the_run_has_them() {
    let [summary, lines, build] = page_with(
        "html-pool",
        1,
        "pool_allocated",
        [3 << 20, 3 << 20, 1 << 20],
    );
    assert_summary_column(
        &summary,
        "<th class=\"num\">Pool allocated</th>",
        "<td class=\"num\" data-sort=\"3145728\">3.0 MiB</td>",
    );
    assert!(
        lines.contains(
            "<th class=\"num\">Pool allocated</th><th class=\"num\">Pool increment</th>\
             <th class=\"num\">Pool reserved</th>"
        ),
        "{lines}"
    );
    assert!(
        lines.contains("<td class=\"num\" data-sort=\"1048576\">1.0 MiB</td>"),
        "{lines}"
    );
    assert!(!build.contains("Pool"), "{build}");
    let [summary, lines, build] = page_with("html-live", 1, "in_use_bytes", [4096, 4096, 0]);
    assert_summary_column(
        &summary,
        "<th class=\"num\">Live</th>",
        "<td class=\"num\" data-sort=\"4096\">4.0 KiB</td>",
    );
    assert!(lines.contains("<th class=\"num\">Live</th>"), "{lines}");
    assert!(!build.contains("Live"), "{build}");
}

#[test]
fn an_allocs_column_where_the_run_counted_allocations() {
    // The `fn` row's count is the calls', as in memprof's summary.
    let [summary, lines, build] = page_with("html-allocs", 2, "allocations", [6, 4, 0]);
    assert_summary_column(
        &summary,
        "<th class=\"num\">Allocs</th>",
        "<td class=\"num\" data-sort=\"6\">6</td>",
    );
    assert!(
        lines.contains("<th class=\"num\">Allocs</th><th class=\"num\">Occurrences</th>"),
        "{lines}"
    );
    for (count, line) in [(4, 12), (0, 13)] {
        let row = element(&lines, &format!("<td class=\"num\">{line}</td>"), "</tr>");
        assert!(
            row.contains(&format!(
                "<td class=\"num\" data-sort=\"{count}\">{count}</td>\
                 <td class=\"num\" data-sort=\"2\">2</td>"
            )),
            "{row}"
        );
    }
    // Only functions with counts have the column.
    assert!(!build.contains("Allocs"), "{build}");
}

#[test]
fn each_line_shows_its_mem_usage_as_memprof_s_tables_do() {
    let dir = scratch("html-mem-usage");
    let mut functions = run_report(2, 4096, 6144);
    functions[0]["lines"][1]["mem_usage"] = json!(1_572_864);
    write(&dir, "run.json", functions);
    let page = page(&dir, &["run.json"]);
    let table = page.split("section class=\"function\"").nth(1).unwrap();
    let header = table.split("</thead>").next().unwrap();
    let columns: Vec<&str> = header
        .split("<th class=")
        .skip(1)
        .map(|th| th.split('>').nth(1).unwrap().split('<').next().unwrap())
        .collect();
    assert_eq!(&columns[..3], ["Line #", "Mem usage", "Increment"]);
    assert!(
        table.contains(r#"<td class="num" data-sort="1572864">1.5 MiB</td>"#),
        "{table}"
    );
}

/// `run_report(2, 4096, 6144)` with allocation sites (`MEMPROF_SITES`) on
/// two lines: one through a frame whose name would be markup and a
/// terminal's escape if it were not made inert, the other sampled.
fn report_with_sites() -> Vec<Value> {
    let mut functions = run_report(2, 4096, 6144);
    functions[0]["lines"][2]["sites"] = json!([
        {"allocations": 3, "allocated_bytes": 6144, "live_bytes": 4096, "estimated": false,
         "frames": [
            {"function": "</script><img src=x onerror=alert(1)>::build\u{1b}[2J",
             "file": "src/<b>.rs", "line": 7},
            {"function": "app::helper", "file": null, "line": null}]},
        {"allocations": 1, "allocated_bytes": 512, "live_bytes": 0, "estimated": false,
         "frames": []}
    ]);
    // Ran, allocated nothing: no sites to show.
    functions[0]["lines"][3]["sites"] = json!([]);
    functions[1]["lines"][1]["sites"] = json!([
        {"allocations": 40, "allocated_bytes": 1_572_864, "live_bytes": 0, "estimated": true,
         "frames": [{"function": "app::load", "file": "src/load.rs", "line": null}]}
    ]);
    functions
}

#[test]
fn a_line_with_sites_opens_to_each_site_and_its_frames_escaped() {
    let dir = scratch("html-sites");
    write(&dir, "run.json", report_with_sites());
    let page = page(&dir, &["run.json"]);
    let serialize = element(
        &page,
        "<section class=\"function\" id=\"fn-0\">",
        "</section>",
    );
    let source = "<td class=\"src\"><code>    let v: Vec&lt;&amp;str&gt; = a.then(|| b);</code>";
    assert_eq!(
        rows(element(serialize, source, "</details></td>")),
        [
            format!(
                "{source}<details class=\"sites\"><summary>2 allocation sites</summary>\
                 <table class=\"sites\"><thead>"
            ),
            "<tr><th class=\"num\">Allocated</th><th class=\"num\">Allocs</th>\
             <th class=\"num\">Live</th><th>Stack, innermost frame first</th></tr></thead><tbody>"
                .to_owned(),
            "<tr><td class=\"num\">6.0 KiB</td><td class=\"num\">3</td>\
             <td class=\"num\">4.0 KiB</td><td><ol class=\"frames\"><li><code>\
             &lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;::build\\u{1b}[2J \
             (src/&lt;b&gt;.rs:7)</code></li><li><code>app::helper</code></li></ol></td></tr>"
                .to_owned(),
            "<tr><td class=\"num\">512 B</td><td class=\"num\">1</td><td class=\"num\">0 B</td>\
             <td>(allocated by the line itself)</td></tr></tbody></table></details></td>"
                .to_owned(),
        ]
    );
    // The line that ran with no sites, and the `fn` row, have no details.
    assert_eq!(serialize.matches("<details").count(), 1, "{serialize}");
    // A sampled site: its figures marked as estimates.
    let build = element(
        &page,
        "<section class=\"function\" id=\"fn-1\">",
        "</section>",
    );
    assert!(
        build.contains(
            "<code>    drop(input);</code><details class=\"sites\"><summary>1 allocation site \
             (sampled: ~ marks estimates)</summary>"
        ),
        "{build}"
    );
    assert!(
        build.contains(
            "<tr><td class=\"num\">~1.5 MiB</td><td class=\"num\">~40</td>\
             <td class=\"num\">~0 B</td><td><ol class=\"frames\"><li><code>app::load \
             (src/load.rs)</code></li></ol></td></tr>"
        ),
        "{build}"
    );
    // Inert: the page's one script, no element from a frame's name, no
    // escape character; the sites' style once.
    assert_eq!(page.matches("<script").count(), 1);
    assert_eq!(page.matches("</script>").count(), 1);
    assert!(!page.contains("<img"), "{page}");
    assert!(!page.contains('\u{1b}'), "{page}");
    assert_eq!(page.matches("details.sites {").count(), 1);
    // The allocation flame graph, inline: the line above its sites, each
    // frame's name escaped in its tooltip.
    assert!(page.contains("<section id=\"flamegraph\">"), "{page}");
    assert!(page.contains("<title>src/app.rs:12 (6,656 bytes"), "{page}");
    assert!(
        page.contains("<title>&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;::build"),
        "{page}"
    );
}

#[test]
fn a_page_without_sites_is_the_page_of_a_report_without_them() {
    let dir = scratch("html-no-sites");
    // Sites off: `null` on every line, as MEMPROF_JSON writes it; or on
    // with nothing to show.
    let mut off = run_report(2, 4096, 6144);
    let mut empty = run_report(2, 4096, 6144);
    for (off, empty) in off.iter_mut().zip(&mut empty) {
        for (line, none) in off["lines"]
            .as_array_mut()
            .unwrap()
            .iter_mut()
            .zip(empty["lines"].as_array_mut().unwrap())
        {
            line["sites"] = Value::Null;
            none["sites"] = json!([]);
        }
    }
    // The same file name, which the page shows.
    let page_of = |report| {
        write(&dir, "run.json", report);
        page(&dir, &["run.json"])
    };
    let none = page_of(run_report(2, 4096, 6144));
    assert_eq!(page_of(off), none);
    assert_eq!(page_of(empty), none);
    // Neither markup nor style of sites.
    assert!(
        !none.contains("sites") && !none.contains("<details"),
        "{none}"
    );
}
