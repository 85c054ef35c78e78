//! `mprof plot`: memory over time as PNG or SVG, drawn as memory_profiler's
//! `mprof plot` draws it.
//!
//! The RSS curve (with the `FUNC` lines' entry and exit points merged in, as
//! memory_profiler does), memprof's exact heap and the GPU memory where the
//! file has them, one curve per child with `--multiprocess`, and a dashed
//! line through the peak. Each profiled call gets a `[` at its entry and a
//! `]` at its exit, in its function's colour, smaller the deeper it is
//! nested, under the curves so that a thousand calls a second still leave
//! the RSS in sight; brackets of a function a few pixels apart merge. The
//! legend, beside the plot so that it never hides a curve or a bracket,
//! names each call with its duration (`<name> <seconds %.3f>s`), or, for
//! many calls or calls that memprof merged into intervals, each function
//! with its calls and the wall time they covered (`<name> ×<calls>,
//! <seconds>s covered`), never their sum. `--flame` draws one box per call
//! instead, at the height of its depth, labelled where the label fits.
//! With several files the curves are overlaid, each from its own start, and
//! calls are left out, as memory_profiler does.
//!
//! plotters draws the lines; the text is collected on the way and drawn by
//! [`crate::text`], from a font embedded in the binary.
//!
//! This module holds the entry point, the image formats and the scene's
//! types; [`scene`] builds a scene from the files, [`calls`] adds the
//! profiled calls, and [`axes`], [`curve`], [`brackets`], [`flame`] and
//! [`legend`] draw its parts.

use crate::dat::{Call, Profile, Sample};
use crate::error::Error;
use crate::summary;
use crate::text::{self, Label};
use plotters::coord::Shift;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};
use std::path::{Path, PathBuf};

mod axes;
mod brackets;
mod calls;
mod curve;
mod flame;
mod legend;
mod scene;

pub struct PlotOptions {
    pub files: Vec<PathBuf>,
    pub output: Option<PathBuf>,
    pub title: Option<String>,
    pub flame: bool,
    /// Draw the profiled calls (`--no-function-ts` turns this off).
    pub functions: bool,
    pub window: Option<(f64, f64)>,
}

const WIDTH: u32 = 1200;
const HEIGHT: u32 = 600;
const LEGEND_WIDTH: u32 = 340;
const LEGEND_ROW: i32 = 21;

/// Draws the files and writes the image; returns where.
pub fn plot(options: &PlotOptions) -> Result<PathBuf, Error> {
    let profiles = options
        .files
        .iter()
        .map(|f| Profile::read(f))
        .collect::<Result<Vec<_>, _>>()?;
    let output = match &options.output {
        Some(path) => path.clone(),
        None => options.files[0].with_extension("png"),
    };
    let format = Format::of(&output)?;
    if options.functions {
        for profile in &profiles {
            print_summary(profile);
        }
    }
    let scene = Scene::build(&profiles, options);
    let bytes = match format {
        Format::Png => render_png(&scene)?,
        Format::Svg => render_svg(&scene)?,
    };
    std::fs::write(&output, bytes).map_err(|e| Error::io("write", &output, e))?;
    Ok(output)
}

/// One recorded file's plot, with its profiled calls, as an SVG document:
/// what `mprof plot -o FILE.svg` writes, for `mprof html` to inline.
pub fn svg(file: &Path) -> Result<String, Error> {
    let profile = Profile::read(file)?;
    let options = PlotOptions {
        files: vec![file.to_path_buf()],
        output: None,
        title: None,
        flame: false,
        functions: true,
        window: None,
    };
    let scene = Scene::build(std::slice::from_ref(&profile), &options);
    String::from_utf8(render_svg(&scene)?).map_err(plot_error)
}

/// Prints on stderr each function's calls and the wall time they covered,
/// which the plot cannot give for calls merged or too short to draw.
fn print_summary(profile: &Profile) {
    let functions = summary::functions(profile);
    if !functions.is_empty() {
        eprint!(
            "{}",
            summary::render(&crate::printable::path(&profile.path), &functions)
        );
    }
}

enum Format {
    Png,
    Svg,
}

impl Format {
    fn of(path: &Path) -> Result<Format, Error> {
        let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
        match ext.to_ascii_lowercase().as_str() {
            "png" => Ok(Format::Png),
            "svg" => Ok(Format::Svg),
            _ => Err(Error::OutputFormat(path.to_path_buf())),
        }
    }
}

fn plot_error(err: impl std::fmt::Display) -> Error {
    Error::Plot(err.to_string())
}

fn render_png(scene: &Scene) -> Result<Vec<u8>, Error> {
    let mut pixels = vec![0u8; (WIDTH * HEIGHT * 3) as usize];
    let mut labels = Vec::new();
    {
        let root = BitMapBackend::with_buffer(&mut pixels, (WIDTH, HEIGHT)).into_drawing_area();
        scene.draw(&root, &mut labels).map_err(plot_error)?;
        root.present().map_err(plot_error)?;
    }
    for label in &labels {
        text::rasterise(&mut pixels, (WIDTH, HEIGHT), label);
    }
    let mut bytes = Vec::new();
    let mut encoder = png::Encoder::new(&mut bytes, WIDTH, HEIGHT);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    encoder.set_compression(png::Compression::Balanced);
    let mut writer = encoder.write_header().map_err(plot_error)?;
    writer.write_image_data(&pixels).map_err(plot_error)?;
    writer.finish().map_err(plot_error)?;
    Ok(bytes)
}

fn render_svg(scene: &Scene) -> Result<Vec<u8>, Error> {
    let mut text = String::new();
    {
        let root = SVGBackend::with_string(&mut text, (WIDTH, HEIGHT)).into_drawing_area();
        let mut labels = Vec::new();
        scene.draw(&root, &mut labels).map_err(plot_error)?;
        for label in &labels {
            root.draw(&text::svg_text(label)).map_err(plot_error)?;
        }
        root.present().map_err(plot_error)?;
    }
    Ok(text.into_bytes())
}

// ---- what to draw, in data coordinates ----------------------------------------

/// Colours of the files' RSS curves, in order (memory_profiler's `k b r g c
/// y m`).
const FILE_COLORS: [RGBColor; 7] = [
    RGBColor(0, 0, 0),
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(23, 190, 207),
    RGBColor(188, 189, 34),
    RGBColor(227, 119, 194),
];
const HEAP_COLOR: RGBColor = RGBColor(31, 119, 180);
const GPU_COLOR: RGBColor = RGBColor(44, 160, 44);
const PEAK_COLOR: RGBColor = RGBColor(220, 20, 20);
/// One per profiled function, in order of first call: hues far apart from
/// one another and from the curves' (a test checks), dark enough on white.
/// (Two purples once drew two functions alike.)
const FUNCTION_COLORS: [RGBColor; 8] = [
    RGBColor(148, 103, 189),
    RGBColor(255, 127, 14),
    RGBColor(140, 86, 75),
    RGBColor(255, 0, 255),
    RGBColor(0, 80, 0),
    RGBColor(70, 0, 70),
    RGBColor(0, 0, 200),
    RGBColor(200, 0, 120),
];
/// Children's curves, none of the functions' colours.
const CHILD_COLORS: [RGBColor; 5] = [
    RGBColor(23, 190, 207),
    RGBColor(150, 160, 20),
    RGBColor(0, 120, 110),
    RGBColor(90, 110, 160),
    RGBColor(120, 200, 60),
];

#[derive(Clone, Copy, PartialEq)]
enum Stroke {
    Solid,
    Dashed,
    /// Thin short dashes: the peak's lines.
    Dotted,
}

struct Curve {
    points: Vec<(f64, f64)>,
    color: RGBColor,
    stroke: Stroke,
    /// memory_profiler's `+` at each sample.
    markers: bool,
}

struct Bracket {
    start: (f64, f64),
    end: (f64, f64),
    depth: u32,
    color: RGBColor,
}

struct FlameBox {
    x: (f64, f64),
    depth: u32,
    /// `<name> <duration>s`, or `name` alone where that does not fit.
    text: String,
    name: String,
    color: RGBColor,
}

struct PeakMark {
    at: (f64, f64),
    color: RGBColor,
}

enum Icon {
    Line(RGBColor, Stroke),
    Bracket(RGBColor),
    Box(RGBColor),
    None,
}

/// One row of the legend: a name, cut to fit where it must, then its
/// figures (`" ×26, 1.234s covered"`), which are never cut.
struct LegendRow {
    icon: Icon,
    text: String,
    figures: String,
}

struct Scene {
    title: String,
    x: (f64, f64),
    y_max: f64,
    curves: Vec<Curve>,
    peaks: Vec<PeakMark>,
    brackets: Vec<Bracket>,
    flame: Vec<FlameBox>,
    /// Bands of the flame graph: the deepest call's depth + 2, as
    /// memory_profiler leaves an empty band on top.
    flame_bands: u32,
    legend: Vec<LegendRow>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn distance(a: RGBColor, b: RGBColor) -> f64 {
        let d = |x: u8, y: u8| (f64::from(x) - f64::from(y)).powi(2);
        (d(a.0, b.0) + d(a.1, b.1) + d(a.2, b.2)).sqrt()
    }

    #[test]
    fn functions_colours_are_far_apart_and_from_the_curves() {
        for (i, &a) in FUNCTION_COLORS.iter().enumerate() {
            for &b in &FUNCTION_COLORS[i + 1..] {
                assert!(distance(a, b) >= 100.0, "{a:?} and {b:?} look alike");
            }
            for curve in [FILE_COLORS[0], HEAP_COLOR, GPU_COLOR, PEAK_COLOR] {
                assert!(distance(a, curve) >= 80.0, "{a:?} looks like a curve");
            }
            for child in CHILD_COLORS {
                assert!(distance(a, child) >= 60.0, "{a:?} looks like a child's");
            }
        }
    }
}
