//! The allocation sites printed under a table (`MEMPROF_SITES`).

use super::bytes;
use crate::config::RenderSettings;
use crate::report::{FunctionReport, LineReport};
use crate::sites::{Site, SiteFrame};

/// A line's sites are printed when it allocated at least this share of
/// what the whole call did, or its increment is at least this share of the
/// call's peak: one in twenty.
pub(crate) const SHOWN_SHARE: u64 = 20;
/// Frames printed per site, innermost first.
const SHOWN_FRAMES: usize = 8;

/// The sites of `function`'s loud lines, or nothing where none has any.
pub(crate) fn under_table(function: &FunctionReport, settings: &RenderSettings) -> String {
    let Some(fn_row) = function.lines.iter().find(|l| l.increment.is_some()) else {
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
        out.push_str(&format!(
            "        ... {} more frames\n",
            site.frames.len() - SHOWN_FRAMES
        ));
    }
    out
}

/// `function (file:line)`, control characters shown escaped.
fn frame_text(frame: &SiteFrame) -> String {
    let place = match (&frame.file, frame.line) {
        (Some(file), Some(line)) => format!(" ({}:{line})", inert(file)),
        (Some(file), None) => format!(" ({})", inert(file)),
        _ => String::new(),
    };
    format!("{}{place}", inert(&frame.function))
}

fn inert(text: &str) -> String {
    text.chars()
        .flat_map(|c| {
            if c.is_control() {
                c.escape_default().collect::<Vec<_>>()
            } else {
                vec![c]
            }
        })
        .collect()
}
