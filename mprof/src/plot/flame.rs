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
}
