//! A line's allocation sites (`MEMPROF_SITES`) on the page: a `<details>`
//! under the line's source, closed until clicked (the browser's own
//! disclosure, no script), listing each site as the report has it, most
//! bytes allocated first: what it allocated, in how many allocations, what
//! was still live when the line ended (`~` before an estimate from a
//! sample), and its stack, innermost frame first, as `function (file:line)`.
//!
//! A page whose report has no sites holds none of it, its style included:
//! it is the page of a run without `MEMPROF_SITES`, byte for byte.

use crate::diff::figures::to_i64;
use crate::diff::format::bytes;
use crate::printable::printable;
use maud::{Markup, html};
use memprof_runtime::{LineReport, Report, Site, SiteFrame};

/// The sites' style, added to the page's where a line has sites.
pub const STYLE: &str = include_str!("sites.css");

/// Whether a line of `report` has sites to show.
pub fn any(report: &Report) -> bool {
    report
        .functions
        .iter()
        .flat_map(|f| &f.lines)
        .any(|line| shown(line).is_some())
}

/// The line's sites, where it has any.
fn shown(line: &LineReport) -> Option<&[Site]> {
    line.sites.as_deref().filter(|sites| !sites.is_empty())
}

/// The line's sites, closed; nothing where it has none.
pub fn details(line: &LineReport) -> Markup {
    let Some(sites) = shown(line) else {
        return html! {};
    };
    html! {
        details.sites {
            summary {
                (sites.len())
                @if sites.len() == 1 { " allocation site" } @else { " allocation sites" }
                @if sites.iter().any(|s| s.estimated) { " (sampled: ~ marks estimates)" }
            }
            table.sites {
                thead {
                    tr {
                        th.num { "Allocated" }
                        th.num { "Allocs" }
                        th.num { "Live" }
                        th { "Stack, innermost frame first" }
                    }
                }
                tbody {
                    @for site in sites {
                        @let approx = if site.estimated { "~" } else { "" };
                        tr {
                            td.num { (approx) (bytes(to_i64(site.allocated_bytes))) }
                            td.num { (approx) (site.allocations) }
                            td.num { (approx) (bytes(site.live_bytes)) }
                            td {
                                @if site.frames.is_empty() {
                                    "(allocated by the line itself)"
                                } @else {
                                    ol.frames {
                                        @for frame in &site.frames {
                                            li { code { (frame_text(frame)) } }
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// `function (file:line)`, as memprof's tables write a frame,
/// [`printable`].
fn frame_text(frame: &SiteFrame) -> String {
    let function = printable(&frame.function);
    match (&frame.file, frame.line) {
        (Some(file), Some(line)) => format!("{function} ({}:{line})", printable(file)),
        (Some(file), None) => format!("{function} ({})", printable(file)),
        (None, _) => function.into_owned(),
    }
}
