//! The legend beside the plot, and the labels that tell overlaid files
//! apart in it.

use super::axes::{DrawResult, stroke};
use super::*;

impl Scene {
    /// The legend, right of the plot so that it hides no curve or bracket.
    pub(super) fn draw_legend<DB: DrawingBackend>(
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
            let text = row_text(row, (right - text_x - 6) as f32);
            labels.push(Label::new(text, (text_x, y), 13.0));
        }
        Ok(())
    }
}

/// A legend row in `room` pixels: its name cut in the middle where it must,
/// its figures whole; where not even they fit beside three characters of
/// the name, the whole row cut as one.
fn row_text(row: &LegendRow, room: f32) -> String {
    let whole = format!("{}{}", row.text, row.figures);
    if text::width(&whole, 13.0, false) <= room {
        return whole;
    }
    let name = text::fit(
        &row.text,
        13.0,
        false,
        room - text::width(&row.figures, 13.0, false),
    );
    match name.chars().count() >= 3 {
        true => format!("{name}{}", row.figures),
        false => text::fit(&whole, 13.0, false, room),
    }
}

/// Rows the legend holds.
pub(super) fn legend_capacity() -> usize {
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
pub(super) fn file_labels(paths: &[&Path]) -> Vec<String> {
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

#[cfg(test)]
mod tests {
    use super::*;

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
    fn a_legend_row_cuts_its_name_never_its_figures() {
        let row = LegendRow {
            icon: Icon::None,
            text: "md::parser::parse_paragraph".to_owned(),
            figures: " ×26, 1.234s covered".to_owned(),
        };
        let whole = "md::parser::parse_paragraph ×26, 1.234s covered";
        let width = text::width(whole, 13.0, false);
        assert_eq!(row_text(&row, width), whole);
        let cut = row_text(&row, width - 40.0);
        assert!(cut.ends_with(" ×26, 1.234s covered"), "{cut}");
        assert!(cut.starts_with("md::p") && cut.contains('…'), "{cut}");
        assert!(text::width(&cut, 13.0, false) <= width - 40.0, "{cut}");
    }
}
