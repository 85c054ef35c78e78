//! `mprof html`: one run's `MEMPROF_JSON` report as a single page that opens
//! from a file (a CI artifact) with no server and no network: the CSS, a
//! small script that sorts the tables, and the plot (as SVG) are inline.
//!
//! The page holds a summary of the functions that ran, sortable by any
//! column ([`run`]); each function's lines with their source and a bar for
//! Increment and Peak ([`run`]), and its allocation sites where the run
//! recorded them ([`sites`]); with a `.dat` from `mprof run`, the memory
//! over time with the profiled calls' brackets, drawn by [`crate::plot`];
//! where sites were recorded, the allocation flame graph ([`flame`]);
//! and with a base report, `mprof diff`'s comparison, grown lines
//! highlighted ([`compare`]).
//!
//! maud writes the markup and escapes every value put into it: function
//! names such as `<S as serde::Serializer>::serialize_map`, source text,
//! file names. Only the CSS, the script and the plot's SVG (which plotters
//! escapes) go in as they are.

mod compare;
mod flame;
mod run;
mod sites;

use crate::error::Error;
use crate::report::read;
use maud::{DOCTYPE, Markup, PreEscaped, html};
use memprof_runtime::Report;
use std::path::{Path, PathBuf};

const STYLE: &str = include_str!("page.css");
const SCRIPT: &str = include_str!("page.js");

#[derive(Debug)]
pub struct HtmlOptions {
    /// The run's report (`MEMPROF_JSON`).
    pub report: PathBuf,
    /// An earlier run's report to compare the run with.
    pub base: Option<PathBuf>,
    /// The run's memory over time, from `mprof run`.
    pub dat: Option<PathBuf>,
    /// Where to write the page [default: the report's name with `.html`].
    pub output: Option<PathBuf>,
}

/// Writes the page; returns where.
pub fn html(options: &HtmlOptions) -> Result<PathBuf, Error> {
    let report = read(&options.report)?;
    let base = match &options.base {
        Some(path) => Some(read(path)?),
        None => None,
    };
    let plot = match &options.dat {
        Some(path) => Some(crate::plot::svg(path)?),
        None => None,
    };
    let flame = match sites::any(&report) {
        true => flame::graph(&report)?,
        false => None,
    };
    let output = match &options.output {
        Some(path) => path.clone(),
        None => options.report.with_extension("html"),
    };
    let page = page(&Page {
        report: &report,
        report_path: &options.report,
        base: base.as_ref().zip(options.base.as_deref()),
        plot: plot.as_deref().zip(options.dat.as_deref()),
        flame: flame.as_deref(),
    });
    std::fs::write(&output, page.into_string()).map_err(|e| Error::io("write", &output, e))?;
    Ok(output)
}

/// What one page shows.
pub struct Page<'a> {
    pub report: &'a Report,
    pub report_path: &'a Path,
    /// The base report and its path.
    pub base: Option<(&'a Report, &'a Path)>,
    /// The plot's SVG and the `.dat` it was drawn from.
    pub plot: Option<(&'a str, &'a Path)>,
    /// The allocation flame graph's inline SVG, where the run has sites.
    pub flame: Option<&'a str>,
}

/// The whole document.
pub fn page(page: &Page) -> Markup {
    let name = page.report_path.display().to_string();
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { "memprof: " (name) }
                style {
                    (PreEscaped(STYLE))
                    @if sites::any(page.report) { (PreEscaped(sites::STYLE)) }
                    @if page.flame.is_some() { (PreEscaped(flame::STYLE)) }
                }
            }
            body {
                header {
                    h1 { "memprof report" }
                    p.meta { "From " code { (name) } }
                    nav {
                        a href="#summary" { "Summary" }
                        @if page.plot.is_some() { a href="#timeline" { "Memory over time" } }
                        @if page.flame.is_some() { a href="#flamegraph" { "Flame graph" } }
                        a href="#functions" { "Functions" }
                        @if page.base.is_some() { a href="#comparison" { "Comparison" } }
                    }
                }
                main {
                    (run::summary(page.report))
                    @if let Some((svg, dat)) = page.plot {
                        section #timeline {
                            h2 { "Memory over time" }
                            p.meta { "Recorded by " code { "mprof run" } " in " code { (dat.display()) } }
                            figure.plot { (PreEscaped(inline_svg(svg))) }
                        }
                    }
                    @if let Some(svg) = page.flame { (flame::section(svg)) }
                    (run::functions(page.report))
                    @if let Some((base, path)) = page.base {
                        (compare::comparison(base, path, page.report))
                    }
                }
                script { (PreEscaped(SCRIPT)) }
            }
        }
    }
}

/// The SVG document as an element of the page: without an XML declaration,
/// should it have one.
fn inline_svg(svg: &str) -> &str {
    match svg.find("<svg") {
        Some(start) => &svg[start..],
        None => svg,
    }
}
