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

/// Merges the brackets of each function at each depth that are less than
/// `gap` apart (in seconds) into one, from the first's start to the last's
/// end. The brackets come in order of their start.
pub(super) fn thin(brackets: Vec<Bracket>, gap: f64) -> Vec<Bracket> {
    let mut kept: Vec<Bracket> = Vec::with_capacity(brackets.len());
    // Per (colour, depth): the index in `kept` of the last one.
    let mut last: Vec<((RGBColor, u32), usize)> = Vec::new();
    for bracket in brackets {
        let key = (bracket.color, bracket.depth);
        let found = last.iter_mut().find(|(k, _)| *k == key);
        match found {
            Some((_, at)) if bracket.start.0 - kept[*at].end.0 < gap => {
                let open = &mut kept[*at];
                if bracket.end.0 > open.end.0 {
                    open.end = bracket.end;
                }
            }
            Some((_, at)) => {
                *at = kept.len();
                kept.push(bracket);
            }
            None => {
                last.push((key, kept.len()));
                kept.push(bracket);
            }
        }
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn brackets_closer_than_the_gap_merge() {
        let purple = FUNCTION_COLORS[0];
        let orange = FUNCTION_COLORS[1];
        let b = |start: f64, end: f64, depth, color| Bracket {
            start: (start, 1.0),
            end: (end, 2.0),
            depth,
            color,
        };
        let brackets = vec![
            b(0.0, 1.0, 0, purple),
            b(0.5, 0.75, 1, purple),
            b(1.005, 2.0, 0, purple),
            b(1.5, 1.6, 0, orange),
            b(1.9, 3.0, 0, purple),
            b(3.5, 4.0, 0, purple),
        ];
        let thinned: Vec<(f64, f64, u32)> = thin(brackets, 0.01)
            .iter()
            .map(|b| (b.start.0, b.end.0, b.depth))
            .collect();
        assert_eq!(
            thinned,
            [(0.0, 3.0, 0), (0.5, 0.75, 1), (1.5, 1.6, 0), (3.5, 4.0, 0)]
        );
    }
}
