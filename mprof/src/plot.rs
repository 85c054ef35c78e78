//! `mprof plot`: memory over time as PNG or SVG, drawn as memory_profiler's
//! `mprof plot` draws it.
//!
//! The RSS curve (with the `FUNC` lines' entry and exit points merged in, as
//! memory_profiler does), memprof's exact heap and the GPU memory where the
//! file has them, one curve per child with `--multiprocess`, and a dashed
//! line through the peak. Each profiled call gets a `[` at its entry and a
//! `]` at its exit, in its function's colour, smaller the deeper it is
//! nested; the legend, beside the plot so that it never hides a curve or a
//! bracket, names each call with its duration (`<name> <seconds %.3f>s`).
//! `--flame` draws one box per call instead, at the height of its depth.
//! With several files the curves are overlaid, each from its own start, and
//! calls are left out, as memory_profiler does.
//!
//! plotters draws the lines; the text is collected on the way and drawn by
//! [`crate::text`], from a font embedded in the binary.

use crate::dat::{Call, Profile, Sample};
use crate::error::Error;
use crate::text::{self, Label};
use plotters::coord::Shift;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};
use std::path::{Path, PathBuf};

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
            note_short_calls(profile);
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

/// Says on stderr which calls the file counts but the plot cannot show.
fn note_short_calls(profile: &Profile) {
    if profile.short.is_empty() {
        return;
    }
    let mut short: Vec<_> = profile.short.iter().collect();
    short.sort_by(|a, b| b.calls.cmp(&a.calls).then_with(|| a.name.cmp(&b.name)));
    let total: u64 = short.iter().map(|s| s.calls).sum();
    let most: Vec<String> = short
        .iter()
        .take(3)
        .map(|s| format!("{} {} ({:.3} s)", s.name, s.calls, s.seconds))
        .collect();
    let more = match short.len() {
        n if n > 3 => format!(", and {} more functions", n - 3),
        _ => String::new(),
    };
    eprintln!(
        "mprof: note: {}: {total} calls too short to draw, not shown: {}{more}",
        profile.path.display(),
        most.join(", ")
    );
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

// ---- what to draw, in data coordinates ------------------------------------

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
/// One per profiled function, in order of first call.
const FUNCTION_COLORS: [RGBColor; 8] = [
    RGBColor(148, 103, 189),
    RGBColor(255, 127, 14),
    RGBColor(214, 60, 160),
    RGBColor(140, 86, 75),
    RGBColor(190, 30, 45),
    RGBColor(110, 110, 110),
    RGBColor(120, 60, 200),
    RGBColor(240, 128, 100),
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

struct LegendRow {
    icon: Icon,
    text: String,
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

impl Scene {
    fn build(profiles: &[Profile], options: &PlotOptions) -> Scene {
        let single = profiles.len() == 1;
        let mut scene = Scene {
            title: match (&options.title, single) {
                (Some(title), _) => title.clone(),
                (None, true) => profiles[0].cmdline.clone().unwrap_or_default(),
                (None, false) => String::new(),
            },
            x: (0.0, 0.0),
            y_max: 0.0,
            curves: Vec::new(),
            peaks: Vec::new(),
            brackets: Vec::new(),
            flame: Vec::new(),
            flame_bands: 0,
            legend: Vec::new(),
        };
        let span = profiles
            .iter()
            .map(|p| {
                let origin = origin(p);
                last_time(p) - origin
            })
            .fold(0.0, f64::max);
        scene.x = match options.window {
            Some(window) => window,
            None => (0.0, if span > 0.0 { span } else { 1.0 }),
        };
        let names = file_labels(
            &profiles
                .iter()
                .map(|p| p.path.as_path())
                .collect::<Vec<_>>(),
        );
        for (index, profile) in profiles.iter().enumerate() {
            let prefix = if single {
                String::new()
            } else {
                format!("{}: ", names[index])
            };
            scene.add_profile(profile, index, single, &prefix);
        }
        let calls: Vec<&Call> = if single && options.functions {
            let origin = origin(&profiles[0]);
            let (x0, x1) = scene.x;
            profiles[0]
                .calls
                .iter()
                .filter(|c| c.start.time - origin <= x1 && c.end.time - origin >= x0)
                .collect()
        } else {
            Vec::new()
        };
        scene.y_max = scene
            .curves
            .iter()
            .flat_map(|c| c.points.iter().map(|p| p.1))
            .chain(calls.iter().flat_map(|c| [c.start.mib, c.end.mib]))
            .fold(0.0, f64::max)
            .max(1.0)
            * 1.1;
        if !calls.is_empty() {
            let origin = origin(&profiles[0]);
            scene.add_calls(&calls, origin, options.flame);
        }
        scene
    }

    /// `prefix` starts each of the profile's legend rows: empty for a single
    /// file, the file's label when several are overlaid.
    fn add_profile(&mut self, profile: &Profile, index: usize, single: bool, prefix: &str) {
        let origin = origin(profile);
        let relative = |samples: &[Sample]| -> Vec<(f64, f64)> {
            samples.iter().map(|s| (s.time - origin, s.mib)).collect()
        };
        let color = FILE_COLORS[index % FILE_COLORS.len()];

        // RSS, with the FUNC lines' points merged in as memory_profiler does.
        let mut rss: Vec<Sample> = profile.mem.clone();
        for call in &profile.calls {
            rss.push(call.start);
            rss.push(call.end);
        }
        rss.sort_by(|a, b| a.time.total_cmp(&b.time));
        let rss = clip(&relative(&rss), self.x);
        let markers = rss.len() <= 400;
        if let Some(peak) = rss
            .iter()
            .copied()
            .reduce(|a, b| if b.1 > a.1 { b } else { a })
        {
            let peak_color = if single { PEAK_COLOR } else { color };
            self.peaks.push(PeakMark {
                at: peak,
                color: peak_color,
            });
            self.legend.push(LegendRow {
                icon: Icon::Line(color, Stroke::Solid),
                text: format!("{prefix}RSS"),
            });
            self.legend.push(LegendRow {
                icon: Icon::Line(peak_color, Stroke::Dotted),
                text: format!("{prefix}peak {:.1} MiB at {:.2}s", peak.1, peak.0),
            });
        }
        self.curves.push(Curve {
            points: rss,
            color,
            stroke: Stroke::Solid,
            markers,
        });

        let mut extra = |samples: &[Sample], label: &str, own_color: RGBColor| {
            let points = clip(&relative(samples), self.x);
            if points.is_empty() {
                return;
            }
            // Overlaid files keep their colour and tell series by stroke.
            let (color, stroke) = if single {
                (own_color, Stroke::Solid)
            } else {
                (color, Stroke::Dashed)
            };
            self.legend.push(LegendRow {
                icon: Icon::Line(color, stroke),
                text: format!("{prefix}{label}"),
            });
            self.curves.push(Curve {
                points,
                color,
                stroke,
                markers: false,
            });
        };
        extra(&profile.heap, "heap (exact, memprof)", HEAP_COLOR);
        extra(&profile.gpu, "GPU", GPU_COLOR);
        for (n, (pid, samples)) in profile.children.iter().enumerate() {
            extra(
                samples,
                &format!("child {pid}"),
                CHILD_COLORS[n % CHILD_COLORS.len()],
            );
        }
    }

    fn add_calls<'a>(&mut self, calls: &[&'a Call], origin: f64, flame: bool) {
        let labels = short_names(calls.iter().map(|c| c.name.as_str()));
        let mut functions: Vec<&str> = Vec::new();
        let mut color_of = |name: &'a str| -> RGBColor {
            let index = functions
                .iter()
                .position(|f| *f == name)
                .unwrap_or_else(|| {
                    functions.push(name);
                    functions.len() - 1
                });
            FUNCTION_COLORS[index % FUNCTION_COLORS.len()]
        };
        let mut rows = Vec::new();
        for (index, call) in calls.iter().enumerate() {
            let color = color_of(&call.name);
            let label = &labels[&call.name];
            let text = format!("{label} {:.3}s", call.duration());
            let depth = call.depth.unwrap_or_else(|| inferred_depth(calls, index));
            let start = (call.start.time - origin, call.start.mib);
            let end = (call.end.time - origin, call.end.mib);
            if flame {
                self.flame.push(FlameBox {
                    x: (start.0, end.0),
                    depth,
                    text: text.clone(),
                    name: label.clone(),
                    color,
                });
                self.flame_bands = self.flame_bands.max(depth + 2);
            } else {
                self.brackets.push(Bracket {
                    start,
                    end,
                    depth,
                    color,
                });
            }
            rows.push((call.name.as_str(), color, text, call.duration()));
        }
        let icon = |color| {
            if flame {
                Icon::Box(color)
            } else {
                Icon::Bracket(color)
            }
        };
        let room = legend_capacity().saturating_sub(self.legend.len());
        if rows.len() <= room {
            for (_, color, text, _) in rows {
                self.legend.push(LegendRow {
                    icon: icon(color),
                    text,
                });
            }
            return;
        }
        // Too many calls for one row each: one row per function, with the
        // range of its calls' durations.
        let mut grouped: Vec<(&str, RGBColor, usize, f64, f64)> = Vec::new();
        for (name, color, _, duration) in rows {
            match grouped.iter_mut().find(|g| g.0 == name) {
                Some(g) => {
                    g.2 += 1;
                    g.3 = g.3.min(duration);
                    g.4 = g.4.max(duration);
                }
                None => grouped.push((name, color, 1, duration, duration)),
            }
        }
        let shown = if grouped.len() <= room {
            grouped.len()
        } else {
            room.saturating_sub(1)
        };
        for (name, color, count, min, max) in &grouped[..shown] {
            let label = &labels[*name];
            let text = if *count == 1 {
                format!("{label} {min:.3}s")
            } else {
                format!("{label} ×{count}, {min:.3}s to {max:.3}s")
            };
            self.legend.push(LegendRow {
                icon: icon(*color),
                text,
            });
        }
        if shown < grouped.len() {
            self.legend.push(LegendRow {
                icon: Icon::None,
                text: format!("… {} more functions", grouped.len() - shown),
            });
        }
    }
}

/// The depth of a call from a file that gives none (memory_profiler before
/// 0.58): the number of calls that enclose it in time, the first of equal
/// ones counting as the outer.
fn inferred_depth(calls: &[&Call], index: usize) -> u32 {
    let call = calls[index];
    let encloses = |(i, other): &(usize, &&Call)| {
        let (a, b) = (other.start.time, other.end.time);
        let (c, d) = (call.start.time, call.end.time);
        *i != index && a <= c && d <= b && (a < c || d < b || *i < index)
    };
    calls.iter().enumerate().filter(encloses).count() as u32
}

/// The first time of a file: its curves start there.
fn origin(profile: &Profile) -> f64 {
    let starts = [
        profile.mem.first(),
        profile.heap.first(),
        profile.gpu.first(),
        profile.calls.first().map(|c| &c.start),
    ];
    starts
        .into_iter()
        .flatten()
        .map(|s| s.time)
        .chain(
            profile
                .children
                .values()
                .filter_map(|s| Some(s.first()?.time)),
        )
        .fold(f64::INFINITY, f64::min)
}

fn last_time(profile: &Profile) -> f64 {
    let ends = [profile.mem.last(), profile.heap.last(), profile.gpu.last()];
    ends.into_iter()
        .flatten()
        .map(|s| s.time)
        .chain(profile.calls.iter().map(|c| c.end.time))
        .chain(
            profile
                .children
                .values()
                .filter_map(|s| Some(s.last()?.time)),
        )
        .fold(f64::NEG_INFINITY, f64::max)
}

/// The part of a curve inside the time window, cut where it crosses the
/// window's edges.
fn clip(points: &[(f64, f64)], (x0, x1): (f64, f64)) -> Vec<(f64, f64)> {
    let at = |a: (f64, f64), b: (f64, f64), x: f64| {
        let f = if b.0 == a.0 {
            0.0
        } else {
            (x - a.0) / (b.0 - a.0)
        };
        (x, a.1 + f * (b.1 - a.1))
    };
    let mut out = Vec::new();
    for (i, &p) in points.iter().enumerate() {
        let prev = i.checked_sub(1).map(|j| points[j]);
        if let Some(q) = prev
            && q.0 < x0
            && p.0 > x0
        {
            out.push(at(q, p, x0));
        }
        if (x0..=x1).contains(&p.0) {
            out.push(p);
        }
        if let Some(q) = prev
            && q.0 < x1
            && p.0 > x1
        {
            out.push(at(q, p, x1));
        }
    }
    out
}

/// Rows the legend holds.
fn legend_capacity() -> usize {
    ((HEIGHT as i32 - 120) / LEGEND_ROW) as usize
}

/// Labels that tell overlaid files apart: the part of each path that differs,
/// without the words all of them share at the start and at the end (words
/// split at `/`, `_`, `-` and `.`). The legend has room for about 40
/// characters and cuts longer rows in the middle, so full names, which
/// differ only near their end, came out the same.
///
/// `mprofile_20261123172000.dat` and `mprofile_20261123172005.dat` become
/// `17:20:00` and `17:20:05` (with the date, as `mprof list` writes it, when
/// the days differ); `a/run.dat` and `b/run.dat` become `a` and `b`. A file
/// whose differing part is empty keeps its file name, and a file given twice
/// gets `#1`, `#2`.
fn file_labels(paths: &[&Path]) -> Vec<String> {
    let texts: Vec<String> = paths
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let words: Vec<Vec<(usize, usize)>> = texts.iter().map(|t| words(t)).collect();
    let word = |file: usize, i: usize| {
        let (start, end) = words[file][i];
        &texts[file][start..end]
    };
    let shortest = words.iter().map(Vec::len).min().unwrap_or(0);
    let all_same =
        |at: &dyn Fn(usize) -> usize| (1..texts.len()).all(|f| word(f, at(f)) == word(0, at(0)));
    let mut head = 0;
    while head < shortest && all_same(&|_| head) {
        head += 1;
    }
    let mut tail = 0;
    while head + tail < shortest && all_same(&|f| words[f].len() - 1 - tail) {
        tail += 1;
    }
    let mut labels: Vec<String> = (0..texts.len())
        .map(|f| {
            let own = &words[f];
            if head + tail >= own.len() {
                let name = paths[f].file_name().unwrap_or(paths[f].as_os_str());
                return name.to_string_lossy().into_owned();
            }
            texts[f][own[head].0..own[own.len() - 1 - tail].1].to_owned()
        })
        .collect();
    // `mprof run`'s own names differ in their time stamp.
    let stamps: Option<Vec<&str>> = labels
        .iter()
        .map(|l| (l.len() == 14 && l.bytes().all(|b| b.is_ascii_digit())).then_some(l.as_str()))
        .collect();
    if let Some(stamps) = stamps {
        let one_day = stamps.iter().all(|s| s[..8] == stamps[0][..8]);
        labels = stamps
            .iter()
            .map(|s| {
                let time = format!("{}:{}:{}", &s[8..10], &s[10..12], &s[12..14]);
                if one_day {
                    time
                } else {
                    format!("{time} {}/{}/{}", &s[6..8], &s[4..6], &s[..4])
                }
            })
            .collect();
    }
    let repeated: Vec<bool> = labels
        .iter()
        .map(|l| labels.iter().filter(|m| *m == l).count() > 1)
        .collect();
    for (i, label) in labels.iter_mut().enumerate() {
        if repeated[i] {
            label.push_str(&format!(" #{}", i + 1));
        }
    }
    labels
}

/// Byte ranges of the words of a path: the runs between `/`, `_`, `-`, `.`.
fn words(text: &str) -> Vec<(usize, usize)> {
    let mut words = Vec::new();
    let mut start = None;
    for (i, c) in text.char_indices() {
        if matches!(c, '/' | '_' | '-' | '.') {
            if let Some(s) = start.take() {
                words.push((s, i));
            }
        } else if start.is_none() {
            start = Some(i);
        }
    }
    if let Some(s) = start {
        words.push((s, text.len()));
    }
    words
}

/// The shortest tail of each path (`a::b::f` → `f`, or `b::f` if another
/// function is also called `f`) that tells the functions apart, as
/// memory_profiler's `function_labels` does with its dotted names, which
/// are shortened the same way.
fn short_names<'a>(
    names: impl Iterator<Item = &'a str>,
) -> std::collections::HashMap<String, String> {
    let mut unique: Vec<&str> = names.collect();
    unique.sort_unstable();
    unique.dedup();
    let parts: Vec<Vec<&str>> = unique.iter().map(|n| segments(n)).collect();
    let mut labels = std::collections::HashMap::new();
    for (i, name) in unique.iter().enumerate() {
        let own = &parts[i];
        let mut keep = 1;
        while keep < own.len()
            && parts.iter().enumerate().any(|(j, other)| {
                j != i
                    && other.len() >= keep
                    && other[other.len() - keep..] == own[own.len() - keep..]
            })
        {
            keep += 1;
        }
        // The segments are slices of `name`: its tail from the first kept.
        let from = own[own.len() - keep].as_ptr() as usize - name.as_ptr() as usize;
        labels.insert(name.to_string(), name[from..].to_string());
    }
    labels
}

/// The segments of a path, split on the `::` (Rust) or `.` (Python) that
/// are not inside `<...>`.
fn segments(name: &str) -> Vec<&str> {
    let bytes = name.as_bytes();
    let (mut parts, mut depth, mut from, mut i) = (Vec::new(), 0i32, 0, 0);
    while i < bytes.len() {
        let separator = match bytes[i] {
            b'<' => {
                depth += 1;
                0
            }
            b'>' => {
                depth -= 1;
                0
            }
            b':' if bytes.get(i + 1) == Some(&b':') => 2,
            b'.' => 1,
            _ => 0,
        };
        if separator > 0 && depth == 0 {
            parts.push(&name[from..i]);
            from = i + separator;
        }
        i += separator.max(1);
    }
    parts.push(&name[from..]);
    parts
}

// ---- drawing ----------------------------------------------------------------

type DrawResult<DB> = Result<(), DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;

const GRID: RGBColor = RGBColor(225, 225, 225);
const FRAME: RGBColor = RGBColor(120, 120, 120);

impl Scene {
    /// Draws everything but text, which goes to `labels` in pixel
    /// coordinates of the image (see [`crate::text`]).
    fn draw<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, Shift>,
        labels: &mut Vec<Label>,
    ) -> DrawResult<DB> {
        root.fill(&WHITE)?;
        let top = if self.title.is_empty() {
            14
        } else {
            let title = text::fit(&self.title, 17.0, true, WIDTH as f32 - 40.0);
            labels.push(
                Label::new(title, (WIDTH as i32 / 2, 10), 17.0)
                    .anchor(HPos::Center, VPos::Top)
                    .bold(),
            );
            40
        };
        let body = root.margin(top, 6, 8, 0);
        let (plot_area, _) = body.split_horizontally(WIDTH - LEGEND_WIDTH);

        let (x0, x1) = self.x;
        let chart = ChartBuilder::on(&plot_area)
            .margin_right(18)
            .x_label_area_size(52)
            .y_label_area_size(80)
            .build_cartesian_2d(x0..x1, 0.0..self.y_max)?;
        let (left, top) = chart.backend_coord(&(x0, self.y_max));
        let (right, bottom) = chart.backend_coord(&(x1, 0.0));

        // Grid, ticks and axis descriptions, as memory_profiler labels them.
        let (x_ticks, x_decimals) = ticks(x0, x1);
        for &t in &x_ticks {
            let (px, _) = chart.backend_coord(&(t, 0.0));
            root.draw(&PathElement::new(vec![(px, top), (px, bottom)], GRID))?;
            root.draw(&PathElement::new(
                vec![(px, bottom), (px, bottom + 5)],
                FRAME,
            ))?;
            labels.push(
                Label::new(format!("{t:.x_decimals$}"), (px, bottom + 8), 13.0)
                    .anchor(HPos::Center, VPos::Top),
            );
        }
        let (y_ticks, y_decimals) = ticks(0.0, self.y_max);
        for &m in &y_ticks {
            let (_, py) = chart.backend_coord(&(x0, m));
            root.draw(&PathElement::new(vec![(left, py), (right, py)], GRID))?;
            root.draw(&PathElement::new(vec![(left - 5, py), (left, py)], FRAME))?;
            labels.push(
                Label::new(format!("{m:.y_decimals$}"), (left - 8, py), 13.0)
                    .anchor(HPos::Right, VPos::Center),
            );
        }
        labels.push(
            Label::new("time (in seconds)", ((left + right) / 2, bottom + 30), 15.0)
                .anchor(HPos::Center, VPos::Top),
        );
        labels.push(
            Label::new(
                "memory used (in MiB)",
                (left - 62, (top + bottom) / 2),
                15.0,
            )
            .anchor(HPos::Center, VPos::Center)
            .vertical(),
        );

        self.draw_flame(&chart, root, labels)?;
        self.draw_curves(&chart, root)?;
        for peak in &self.peaks {
            let (px, py) = chart.backend_coord(&peak.at);
            let dotted = |points| stroke(root, points, peak.color, Stroke::Dotted, 1);
            dotted(vec![(left, py), (right, py)])?;
            dotted(vec![(px, top), (px, bottom)])?;
        }
        self.draw_brackets(&chart, root)?;
        root.draw(&Rectangle::new([(left, top), (right, bottom)], FRAME))?;
        self.draw_legend(root, labels, top, bottom)?;
        Ok(())
    }

    /// One box per call at the height of its depth, behind the curves, with
    /// its name and duration where they fit.
    fn draw_flame<DB: DrawingBackend>(
        &self,
        chart: &Chart<'_, DB>,
        root: &DrawingArea<DB, Shift>,
        labels: &mut Vec<Label>,
    ) -> DrawResult<DB> {
        if self.flame_bands == 0 {
            return Ok(());
        }
        let (x0, x1) = self.x;
        let band = self.y_max / f64::from(self.flame_bands);
        for fb in &self.flame {
            let (a, b) = (fb.x.0.max(x0), fb.x.1.min(x1));
            if a >= b {
                continue;
            }
            let y0 = band * f64::from(fb.depth);
            let corner0 = chart.backend_coord(&(a, y0 + band));
            let corner1 = chart.backend_coord(&(b, y0));
            root.draw(&Rectangle::new(
                [corner0, corner1],
                fb.color.mix(0.3).filled(),
            ))?;
            root.draw(&Rectangle::new(
                [corner0, corner1],
                fb.color.stroke_width(1),
            ))?;
            let room = (corner1.0 - corner0.0 - 8) as f32;
            let text = if text::width(&fb.text, 12.0, false) <= room {
                fb.text.clone()
            } else {
                text::fit_end(&fb.name, 12.0, room)
            };
            if !text.is_empty() {
                labels.push(
                    Label::new(text, (corner0.0 + 4, corner0.1 + 4), 12.0)
                        .anchor(HPos::Left, VPos::Top),
                );
            }
        }
        Ok(())
    }

    fn draw_curves<DB: DrawingBackend>(
        &self,
        chart: &Chart<'_, DB>,
        root: &DrawingArea<DB, Shift>,
    ) -> DrawResult<DB> {
        for curve in &self.curves {
            let width = if curve.markers { 1 } else { 2 };
            let points: Vec<(i32, i32)> = curve
                .points
                .iter()
                .map(|p| chart.backend_coord(p))
                .collect();
            stroke(root, points.clone(), curve.color, curve.stroke, width)?;
            if curve.markers {
                // memory_profiler's "+" at each sample.
                for &(x, y) in &points {
                    root.draw(&PathElement::new(vec![(x - 3, y), (x + 4, y)], curve.color))?;
                    root.draw(&PathElement::new(vec![(x, y - 3), (x, y + 4)], curve.color))?;
                }
            }
        }
        Ok(())
    }

    /// memory_profiler's brackets are 1/10 of the y range high and 1/60 of
    /// the x range wide; here a nested call's are smaller, so nesting shows.
    fn draw_brackets<DB: DrawingBackend>(
        &self,
        chart: &Chart<'_, DB>,
        root: &DrawingArea<DB, Shift>,
    ) -> DrawResult<DB> {
        let (x0, x1) = self.x;
        let (left, top) = chart.backend_coord(&(x0, self.y_max));
        let (right, bottom) = chart.backend_coord(&(x1, 0.0));
        for bracket in &self.brackets {
            let scale = 0.75f64.powi(bracket.depth.min(6) as i32);
            let half = (f64::from(HEIGHT) / 22.0 * scale) as i32;
            let arm = (f64::from(WIDTH) / 110.0 * scale).max(4.0) as i32;
            let style = bracket.color.stroke_width(2);
            for (point, dir) in [(bracket.start, 1), (bracket.end, -1)] {
                if point.0 < x0 || point.0 > x1 {
                    continue;
                }
                let (px, py) = chart.backend_coord(&point);
                let tip = (px + dir * arm).clamp(left, right);
                let (up, down) = ((py - half).max(top), (py + half).min(bottom));
                root.draw(&PathElement::new(
                    vec![(tip, up), (px, up), (px, down), (tip, down)],
                    style,
                ))?;
            }
        }
        Ok(())
    }

    /// The legend, right of the plot so that it hides no curve or bracket.
    fn draw_legend<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, Shift>,
        labels: &mut Vec<Label>,
        top: i32,
        bottom: i32,
    ) -> DrawResult<DB> {
        if self.legend.is_empty() {
            return Ok(());
        }
        let rows = self.legend.len() as i32;
        let box_height = rows * LEGEND_ROW + 12;
        let box_top = ((top + bottom - box_height) / 2).max(top);
        let (left, right) = ((WIDTH - LEGEND_WIDTH) as i32 + 4, WIDTH as i32 - 10);
        root.draw(&Rectangle::new(
            [(left, box_top), (right, box_top + box_height)],
            RGBColor(250, 250, 250).filled(),
        ))?;
        root.draw(&Rectangle::new(
            [(left, box_top), (right, box_top + box_height)],
            RGBColor(200, 200, 200),
        ))?;
        for (i, row) in self.legend.iter().enumerate() {
            let y = box_top + 6 + LEGEND_ROW * i as i32 + LEGEND_ROW / 2;
            let x = left + 10;
            match row.icon {
                Icon::Line(color, style) => {
                    let width = if style == Stroke::Dotted { 1 } else { 2 };
                    stroke(root, vec![(x, y), (x + 28, y)], color, style, width)?;
                }
                Icon::Bracket(color) => {
                    let style = color.stroke_width(2);
                    root.draw(&PathElement::new(
                        vec![(x + 6, y - 6), (x, y - 6), (x, y + 6), (x + 6, y + 6)],
                        style,
                    ))?;
                    root.draw(&PathElement::new(
                        vec![
                            (x + 20, y - 6),
                            (x + 26, y - 6),
                            (x + 26, y + 6),
                            (x + 20, y + 6),
                        ],
                        style,
                    ))?;
                }
                Icon::Box(color) => {
                    root.draw(&Rectangle::new(
                        [(x, y - 6), (x + 26, y + 6)],
                        color.mix(0.3).filled(),
                    ))?;
                    root.draw(&Rectangle::new([(x, y - 6), (x + 26, y + 6)], color))?;
                }
                Icon::None => {}
            }
            let text_x = x + 36;
            let text = text::fit(&row.text, 13.0, false, (right - text_x - 6) as f32);
            labels.push(Label::new(text, (text_x, y), 13.0));
        }
        Ok(())
    }
}

/// A line through `points` (pixels of the image).
fn stroke<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    points: Vec<(i32, i32)>,
    color: RGBColor,
    stroke: Stroke,
    width: u32,
) -> DrawResult<DB> {
    let style = color.stroke_width(width);
    match stroke {
        Stroke::Solid => root.draw(&PathElement::new(points, style)),
        Stroke::Dashed => root.draw(&DashedPathElement::new(points, 7, 5, style)),
        Stroke::Dotted => root.draw(&DashedPathElement::new(points, 4, 3, style)),
    }
}

type Chart<'a, DB> = ChartContext<
    'a,
    DB,
    Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
>;

/// Round tick values between `lo` and `hi` (steps of 1, 2 or 5 times a
/// power of ten, about 8 of them), and the decimals their labels need.
fn ticks(lo: f64, hi: f64) -> (Vec<f64>, usize) {
    let raw = (hi - lo) / 8.0;
    if !(raw > 0.0 && raw.is_finite()) {
        return (vec![lo], 0);
    }
    let power = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * power)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * power);
    let decimals = (-step.log10().floor()).max(0.0) as usize;
    let mut ticks = Vec::new();
    let mut k = (lo / step).ceil();
    while k * step <= hi + step * 1e-9 {
        ticks.push(k * step);
        k += 1.0;
    }
    (ticks, decimals)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_names_tell_functions_apart() {
        let names = [
            "grow::step",
            "grow::run",
            "other::step",
            "<a::B as c::D>::run2",
        ];
        let labels = short_names(names.into_iter());
        assert_eq!(labels["grow::step"], "grow::step");
        assert_eq!(labels["other::step"], "other::step");
        assert_eq!(labels["grow::run"], "run");
        assert_eq!(labels["<a::B as c::D>::run2"], "run2");
        let dotted = short_names(["__main__.outer", "__main__.inner", "m.inner"].into_iter());
        assert_eq!(dotted["__main__.outer"], "outer");
        assert_eq!(dotted["__main__.inner"], "__main__.inner");
    }

    #[test]
    fn overlaid_files_are_told_apart() {
        let labels = |paths: &[&str]| file_labels(&paths.iter().map(Path::new).collect::<Vec<_>>());
        assert_eq!(
            labels(&["mprofile_20261123172000.dat", "mprofile_20261123172005.dat"]),
            ["17:20:00", "17:20:05"]
        );
        assert_eq!(
            labels(&["mprofile_20200101000000.dat", "mprofile_20261123172005.dat"]),
            ["00:00:00 01/01/2020", "17:20:05 23/11/2026"]
        );
        assert_eq!(labels(&["a/run.dat", "b/run.dat"]), ["a", "b"]);
        assert_eq!(
            labels(&["runs/before-fix.dat", "runs/after-fix.dat"]),
            ["before", "after"]
        );
        assert_eq!(
            labels(&["run.dat", "run_2.dat", "other.dat"]),
            ["run", "run_2", "other"]
        );
        assert_eq!(labels(&["run.dat", "run_2.dat"]), ["run.dat", "2"]);
        assert_eq!(labels(&["x.dat", "x.dat"]), ["x.dat #1", "x.dat #2"]);
    }

    #[test]
    fn infers_depths_of_calls_from_old_files() {
        let call = |start: f64, end: f64| Call {
            name: "f".to_string(),
            start: Sample {
                time: start,
                mib: 0.0,
            },
            end: Sample {
                time: end,
                mib: 0.0,
            },
            depth: None,
        };
        let (outer, twin, inner, after) = (
            call(0.0, 4.0),
            call(0.0, 4.0),
            call(1.0, 2.0),
            call(5.0, 6.0),
        );
        let calls = [&outer, &twin, &inner, &after];
        let depths: Vec<u32> = (0..4).map(|i| inferred_depth(&calls, i)).collect();
        assert_eq!(depths, [0, 1, 2, 0]);
    }

    #[test]
    fn clips_curves_at_the_window() {
        let points = [(0.0, 0.0), (2.0, 20.0), (4.0, 0.0)];
        assert_eq!(
            clip(&points, (1.0, 3.0)),
            vec![(1.0, 10.0), (2.0, 20.0), (3.0, 10.0)]
        );
    }
}
