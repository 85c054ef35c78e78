//! The allocation sites printed under a table (`MEMPROF_SITES`), and under
//! a top line of the summary.

use super::bytes;
use crate::config::RenderSettings;
use crate::report::{FunctionReport, LineReport};
use crate::sites::{Site, SiteFrame};
use crate::summary::TopSite;
use crate::text::printable;

/// A line's sites are printed when it allocated at least this share of
/// what the whole call did, or its increment is at least this share of the
/// call's peak: one in twenty.
pub(crate) const SHOWN_SHARE: u64 = 20;
/// Frames printed per site, innermost first.
const SHOWN_FRAMES: usize = 8;

/// The sites of `function`'s loud lines, or nothing where none has any.
pub(crate) fn under_table(function: &FunctionReport, settings: &RenderSettings) -> String {
    let Some(fn_row) = function.fn_row() else {
        return String::new();
    };
    if fn_row.sites.is_none() {
        return String::new();
    }
    let total = fn_row.allocated_bytes.unwrap_or(0);
    let peak = fn_row.peak.unwrap_or(0);
    let loud = |line: &LineReport| {
        let allocated = line.allocated_bytes.unwrap_or(0);
        let increment = line.increment.unwrap_or(0).unsigned_abs();
        (allocated > 0 && allocated.saturating_mul(SHOWN_SHARE) >= total)
            || (increment > 0 && increment.saturating_mul(SHOWN_SHARE) >= peak)
    };
    let lines: Vec<&LineReport> = function
        .lines
        .iter()
        .filter(|l| !std::ptr::eq(*l, fn_row) && l.sites.as_ref().is_some_and(|s| !s.is_empty()))
        .filter(|l| loud(l))
        .collect();
    if lines.is_empty() {
        return String::new();
    }
    let estimated = lines
        .iter()
        .flat_map(|l| l.sites.iter().flatten())
        .any(|s| s.estimated);
    let b = |n: i64| bytes(n, settings);
    let approx = if estimated { "~" } else { "" };
    let mut out = format!(
        "\nAllocation sites{}, by bytes allocated (lines with 1/{SHOWN_SHARE} or more of the call's):\n",
        if estimated {
            " (sampled: estimates)"
        } else {
            ""
        }
    );
    for line in lines {
        let sites = line.sites.as_deref().unwrap_or(&[]);
        let live: i64 = sites.iter().map(|s| s.live_bytes).sum();
        out.push_str(&format!(
            "Line {}: {approx}{} allocated in {approx}{} allocation{}, {approx}{} of it live when the line ended\n",
            line.line,
            b(line.allocated_bytes.unwrap_or(0) as i64),
            line.allocations.unwrap_or(0),
            if line.allocations == Some(1) { "" } else { "s" },
            b(live),
        ));
        for site in sites.iter().take(settings.sites_top) {
            out.push_str(&site_text(site, approx, &b));
        }
        // NOTE: a line's allocations made with more profiled calls open
        // than the side stack holds (see `calls::stack`) are charged to no
        // row's sites, as the walk cannot reach the rows past it. Exact
        // figures only: sampled ones do not add up to the line's anyway.
        let in_sites: u64 = sites.iter().map(|s| s.allocations).sum();
        let missing = line.allocations.unwrap_or(0).saturating_sub(in_sites);
        if !estimated && missing > 0 {
            let in_sites_bytes: u64 = sites.iter().map(|s| s.allocated_bytes).sum();
            let missing_bytes = line
                .allocated_bytes
                .unwrap_or(0)
                .saturating_sub(in_sites_bytes);
            out.push_str(&format!(
                "    {missing} allocation{}, {}, in no site: made with more profiled calls open than memprof's side stack holds\n",
                if missing == 1 { "" } else { "s" },
                b(missing_bytes as i64),
            ));
        }
        if sites.len() > settings.sites_top {
            let rest = &sites[settings.sites_top..];
            let bytes_rest: u64 = rest.iter().map(|s| s.allocated_bytes).sum();
            out.push_str(&format!(
                "    ... {} more site{}: {approx}{} (MEMPROF_SITES_TOP shows more; the JSON has all)\n",
                rest.len(),
                if rest.len() == 1 { "" } else { "s" },
                b(bytes_rest as i64),
            ));
        }
    }
    out
}

fn site_text(site: &Site, approx: &str, b: &dyn Fn(i64) -> String) -> String {
    let mut out = format!(
        "    {approx}{} in {approx}{} allocation{}, {approx}{} live\n",
        b(site.allocated_bytes as i64),
        site.allocations,
        if site.allocations == 1 { "" } else { "s" },
        b(site.live_bytes),
    );
    if site.frames.is_empty() {
        out.push_str("        (allocated by the line itself)\n");
    }
    for frame in site.frames.iter().take(SHOWN_FRAMES) {
        out.push_str(&format!("        {}\n", frame_text(frame)));
    }
    if site.frames.len() > SHOWN_FRAMES {
        // A stack that did not reach the profiled function ends with a note
        // saying so, which the frames left out must not hide.
        let cut = site
            .frames
            .last()
            .filter(|f| f.file.is_none() && f.function.starts_with("(stack cut"));
        out.push_str(&format!(
            "        ... {} more frames{}\n",
            site.frames.len() - SHOWN_FRAMES - usize::from(cut.is_some()),
            cut.map(|f| format!(", then {}", f.function))
                .unwrap_or_default()
        ));
    }
    out
}

/// A top line's sub-line in the summary, under its source, in `width`
/// columns: `↳ 98 % allocated in app::parse (src/app.rs:12)`, or `by the
/// line itself`. The function's name is kept whole and its place
/// (`file:line`) elided from the left, where its file's name and line are
/// (`(…/src/raw_vec.rs:24)`); a cut at the end left `(li…`, neither.
pub(crate) fn top_site_within(site: &TopSite, width: usize) -> String {
    let approx = if site.estimated { "~" } else { "" };
    let share = format!("↳ {approx}{} % allocated", site.percent);
    let Some(frame) = &site.frame else {
        return format!("{share} by the line itself");
    };
    let head = format!("{share} in {}", printable(&frame.function));
    let place = match (&frame.file, frame.line) {
        (Some(file), Some(line)) => format!("{}:{line}", printable(file)),
        (Some(file), None) => printable(file).into_owned(),
        _ => return head,
    };
    // The place's parentheses and the space before them.
    let room = width.saturating_sub(head.chars().count() + 3);
    let length = place.chars().count();
    match room {
        _ if length <= room => format!("{head} ({place})"),
        // NOTE: too little room for a file's name: the name alone.
        0..PLACE_AT_LEAST => head,
        _ => {
            let tail: String = place.chars().skip(length - (room - 1)).collect();
            format!("{head} (…{tail})")
        }
    }
}

/// The fewest columns of a place worth showing, elided.
const PLACE_AT_LEAST: usize = 12;

/// `function (file:line)`, [`printable`].
fn frame_text(frame: &SiteFrame) -> String {
    let place = match (&frame.file, frame.line) {
        (Some(file), Some(line)) => format!(" ({}:{line})", printable(file)),
        (Some(file), None) => format!(" ({})", printable(file)),
        _ => String::new(),
    };
    format!("{}{place}", printable(&frame.function))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::Report;

    fn site(allocations: u64, bytes: u64, estimated: bool, frames: &[(&str, Option<u32>)]) -> Site {
        Site {
            allocations,
            allocated_bytes: bytes,
            live_bytes: bytes as i64,
            in_use_allocations: None,
            in_use_bytes: None,
            estimated,
            frames: frames
                .iter()
                .map(|&(function, line)| SiteFrame {
                    function: function.to_owned(),
                    file: line.map(|_| "helper/src/lib.rs".to_owned()),
                    line,
                })
                .collect(),
        }
    }

    /// A row that ran once: `increment`, which is also its peak and its
    /// bytes allocated, in `allocations`, with `sites`.
    fn row(
        line: u32,
        text: &str,
        increment: i64,
        allocations: u64,
        sites: Option<Vec<Site>>,
    ) -> LineReport {
        let mut row = LineReport::empty(line, text.to_owned());
        row.mem_usage = Some(increment);
        row.increment = Some(increment);
        row.peak = Some(increment.max(0) as u64);
        row.occurrences = 1;
        row.allocations = Some(allocations);
        row.allocated_bytes = Some(increment.max(0) as u64);
        row.sites = sites;
        row
    }

    #[test]
    fn a_cut_stack_says_so_past_the_frames_shown() {
        let mut frames: Vec<(&str, Option<u32>)> = vec![("app::step", Some(1)); 10];
        frames.push((
            "(stack cut: the profiled function's frame was not found)",
            None,
        ));
        let text = site_text(&site(1, 8, false, &frames), "", &|n| format!("{n} B"));
        assert!(
            text.ends_with(
                "        ... 2 more frames, then (stack cut: the profiled function's frame was not found)\n"
            ),
            "{text}"
        );
    }

    #[test]
    fn a_top_line_with_sites_says_where_most_of_its_bytes_were_allocated() {
        let lines = vec![
            LineReport::empty(10, "#[profile]".to_owned()),
            row(
                11,
                "fn parse(n: usize) -> usize {",
                30_000,
                14,
                Some(vec![]),
            ),
            // 20,000 of its 20,240 bytes in `inner`: 98 %, rounded down.
            row(
                12,
                "    let dependency = helper::outer(n);",
                20_240,
                11,
                Some(vec![
                    site(
                        10,
                        20_000,
                        false,
                        &[("helper::inner", Some(22)), ("helper::outer", Some(8))],
                    ),
                    site(1, 240, false, &[("helper::outer", Some(7))]),
                ]),
            ),
            row(
                13,
                "    let scratch = vec![0u64; 1024];",
                8192,
                1,
                Some(vec![site(1, 8192, false, &[])]),
            ),
            // Sampled: an estimate above the line's exact bytes says 100 %;
            // a name without debug information, its control character inert.
            row(
                14,
                "    let words = read(n);",
                1808,
                1,
                Some(vec![site(1, 2048, true, &[("app::read\u{1b}[2J", None)])]),
            ),
            // No sites (an `async fn`'s row): no sub-line.
            row(15, "    let kept = other(n);", 512, 1, None),
            row(16, "}", 0, 0, Some(vec![])),
        ];
        let report = Report {
            functions: vec![FunctionReport::of_lines("app::parse", "src/app.rs", lines)],
        };
        let summary = report.summary();
        assert_eq!(
            summary.top_increment[0].site,
            Some(TopSite {
                frame: Some(SiteFrame {
                    function: "helper::inner".to_owned(),
                    file: Some("helper/src/lib.rs".to_owned()),
                    line: Some(22),
                }),
                allocated_bytes: 20_000,
                percent: 98,
                estimated: false,
            })
        );
        assert_eq!(
            miniserde::json::to_string(&summary.top_peak[2].site),
            r#"{"frame":{"function":"app::read\u001b[2J","file":null,"line":null},"allocated_bytes":2048,"percent":100,"estimated":true}"#
        );
        assert_eq!(summary.top_peak[3].site, None);
        let text = super::super::summary(&summary, &RenderSettings::default());
        let top = text.split("Top lines by Increment\n\n").nth(1).unwrap();
        let top: Vec<&str> = top
            .split("\nTop lines by Peak")
            .next()
            .unwrap()
            .lines()
            .collect();
        let under = " ".repeat(69);
        assert_eq!(
            top,
            [
                " Increment       Peak   Allocs   Occurrences   Line #   Function     Line Contents",
                "==================================================================================",
                "  19.8 KiB   19.8 KiB       11             1       12   app::parse   let dependency = helper::outer(n);",
                &format!("{under}↳ 98 % allocated in helper::inner (helper/src/lib.rs:22)"),
                "   8.0 KiB    8.0 KiB        1             1       13   app::parse   let scratch = vec![0u64; 1024];",
                &format!("{under}↳ 100 % allocated by the line itself"),
                "   1.8 KiB    1.8 KiB        1             1       14   app::parse   let words = read(n);",
                &format!("{under}↳ ~100 % allocated in app::read\\u{{1b}}[2J"),
                "     512 B      512 B        1             1       15   app::parse   let kept = other(n);",
            ]
        );
    }

    #[test]
    fn a_cut_site_keeps_its_functions_name_and_the_end_of_its_path() {
        let site = TopSite {
            frame: Some(SiteFrame {
                function: "live_service::orders::remember".to_owned(),
                file: Some("/home/build/.cargo/registry/src/live-service/src/orders.rs".to_owned()),
                line: Some(214),
            }),
            allocated_bytes: 20_000,
            percent: 98,
            estimated: true,
        };
        // Whole, 107 columns; in 80 the path is cut from its left.
        assert_eq!(
            top_site_within(&site, usize::MAX),
            "↳ ~98 % allocated in live_service::orders::remember \
             (/home/build/.cargo/registry/src/live-service/src/orders.rs:214)"
        );
        let cut = top_site_within(&site, 80);
        assert_eq!(
            cut,
            "↳ ~98 % allocated in live_service::orders::remember (…service/src/orders.rs:214)"
        );
        assert_eq!(cut.chars().count(), 80);
        // No room for a place worth reading: the name alone.
        assert_eq!(
            top_site_within(&site, 60),
            "↳ ~98 % allocated in live_service::orders::remember"
        );
    }
}
