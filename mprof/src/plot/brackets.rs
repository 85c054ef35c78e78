//! memory_profiler's brackets: a `[` at each call's entry and a `]` at its
//! exit.

use super::axes::{Chart, DrawResult};
use super::*;

impl Scene {
    /// memory_profiler's brackets are 1/10 of the y range high and 1/60 of
    /// the x range wide; here a nested call's are smaller, so nesting shows.
    pub(super) fn draw_brackets<DB: DrawingBackend>(
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
}
