//! `--flame`: one box per call, at the height of its depth.

use super::axes::{Chart, DrawResult};
use super::*;

impl Scene {
    /// One box per call at the height of its depth, behind the curves, with
    /// its name and duration where they fit.
    pub(super) fn draw_flame<DB: DrawingBackend>(
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
        // Pixels of one band: a label taller than it would run into the
        // next band's.
        let band_px = chart.backend_coord(&(x0, 0.0)).1 - chart.backend_coord(&(x0, band)).1;
        let mut placed = PlacedLabels::default();
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
            if band_px < LABEL_SIZE as i32 + 6 {
                continue;
            }
            let room = (corner1.0 - corner0.0 - 2 * LABEL_PAD) as f32;
            let Some(text) = fit_label(&fb.text, &fb.name, room) else {
                continue;
            };
            let left = corner0.0 + LABEL_PAD;
            let right = left + text::width(&text, LABEL_SIZE, false).ceil() as i32;
            if placed.place(fb.depth, left, right) {
                labels.push(
                    Label::new(text, (left, corner0.1 + 4), LABEL_SIZE)
                        .anchor(HPos::Left, VPos::Top),
                );
            }
        }
        // NOTE: the boxes share the plot with the curves, whose axis is MiB:
        // each band says it is a depth, so that no box reads as memory.
        let right = chart.backend_coord(&(x1, 0.0)).0;
        let mut depths: Vec<u32> = self.flame.iter().map(|fb| fb.depth).collect();
        depths.sort_unstable();
        depths.dedup();
        for depth in depths {
            let (_, top) = chart.backend_coord(&(x0, band * f64::from(depth + 1)));
            labels.push(
                Label::new(format!("depth {depth}"), (right - 4, top + 3), LABEL_SIZE)
                    .anchor(HPos::Right, VPos::Top),
            );
        }
        Ok(())
    }
}

const LABEL_SIZE: f32 = 12.0;
/// Pixels between a box's edge and its label.
const LABEL_PAD: i32 = 4;
/// The fewest characters of a name worth showing, before the `…`.
const MIN_NAME_CHARS: usize = 3;

/// A box's label in `room` pixels: `<name> <duration>s`, else the name,
/// else its start and `…` if at least [`MIN_NAME_CHARS`] characters fit;
/// `None` where nothing readable fits.
pub(super) fn fit_label(text: &str, name: &str, room: f32) -> Option<String> {
    if text::width(text, LABEL_SIZE, false) <= room {
        return Some(text.to_string());
    }
    let cut = text::fit_end(name, LABEL_SIZE, room);
    let kept = cut.trim_end_matches('…').chars().count();
    (kept >= MIN_NAME_CHARS.min(name.chars().count())).then_some(cut)
}

/// The labels drawn so far, per band: a label that would overlap one is
/// left out (boxes of two functions at one depth can overlap).
#[derive(Default)]
pub(super) struct PlacedLabels(Vec<(u32, i32, i32)>);

impl PlacedLabels {
    /// Takes `[left, right]` of `band` if free; whether it was.
    pub(super) fn place(&mut self, band: u32, left: i32, right: i32) -> bool {
        let overlaps = self
            .0
            .iter()
            .any(|&(b, l, r)| b == band && left < r + LABEL_PAD && l < right + LABEL_PAD);
        if !overlaps {
            self.0.push((band, left, right));
        }
        !overlaps
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flame_labels_shrink_to_their_box_or_go() {
        let text = "load_page ×1250, 3.069s covered";
        let width = |t: &str| text::width(t, LABEL_SIZE, false);
        let fit = |room: f32| fit_label(text, "load_page", room);
        assert_eq!(fit(width(text)).as_deref(), Some(text));
        assert_eq!(fit(width(text) - 1.0).as_deref(), Some("load_page"));
        assert_eq!(fit(width("load_page") - 1.0).as_deref(), Some("load_pa…"));
        assert_eq!(fit(width("loa…")).as_deref(), Some("loa…"));
        assert_eq!(fit(width("loa…") - 1.0), None);
        // A name shorter than three characters shows whole or not at all.
        assert_eq!(fit_label("f 0.200s", "f", width("f")).as_deref(), Some("f"));
        assert_eq!(fit_label("f 0.200s", "f", 2.0), None);
    }

    #[test]
    fn labels_that_would_overlap_in_a_band_are_left_out() {
        let mut placed = PlacedLabels::default();
        assert!(placed.place(0, 10, 60));
        assert!(!placed.place(0, 40, 90), "overlaps the first");
        assert!(!placed.place(0, 62, 90), "closer than the padding");
        assert!(placed.place(0, 65, 90));
        assert!(placed.place(1, 40, 90), "another band");
    }
}
