//! The allocation flame graph on the page, where the run recorded sites
//! (`MEMPROF_SITES`): `mprof flamegraph --allocated`'s graph (the
//! profiled function at the root, its lines above it, then the sites'
//! frames), inline. inferno's script, style and controls are left out:
//! the page keeps its one script and one style sheet, and the graph is
//! read through each frame's tooltip (its `<title>`). Zoom and search are
//! those of `mprof flamegraph`'s own SVG file.

use crate::error::Error;
use crate::profile::flamegraph::{Width, svg};
use maud::{Markup, PreEscaped, html};
use memprof_runtime::{HeapProfile, Report};
use regex::Regex;

/// The graph's style, added to the page's where the graph is shown.
pub const STYLE: &str = include_str!("flame.css");

/// The flame graph of `report`, ready to be put in the page; `None` when
/// no stack allocated anything.
pub fn graph(report: &Report) -> Result<Option<String>, Error> {
    let profile = HeapProfile::of_report(report);
    Ok(svg(&profile, Width::Allocated, "")?.map(|svg| inert(&svg)))
}

/// inferno's SVG without what the page does not take from it: the XML
/// prologue, its script and style, the controls they drive, and the root's
/// namespace declarations (HTML gives inline SVG its namespace).
fn inert(svg: &str) -> String {
    let svg = super::inline_svg(svg);
    let patterns = [
        r"(?s)<script[^>]*>.*?</script>",
        r"(?s)<style[^>]*>.*?</style>",
        r#"<text id="(title|details|unzoom|search|matched)"[^>]*>[^<]*</text>"#,
        r#" (xmlns(:\w+)?="[^"]*"|onload="[^"]*")"#,
    ];
    let mut out = svg.to_owned();
    for pattern in patterns {
        // The patterns are constants: they compile.
        if let Ok(re) = Regex::new(pattern) {
            out = re.replace_all(&out, "").into_owned();
        }
    }
    out
}

/// The page's section for `svg`.
pub fn section(svg: &str) -> Markup {
    html! {
        section #flamegraph {
            h2 { "Allocation flame graph" }
            p.meta {
                "Bytes allocated: each profiled function at the root, its lines above it, then the \
                 stacks of their allocation sites, innermost on top. Hover a frame for its bytes; "
                code { "mprof flamegraph" } " writes the same graph with zoom and search."
            }
            figure.flame { (PreEscaped(svg)) }
        }
    }
}
