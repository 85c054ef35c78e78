//! The curves: RSS, heap, GPU and children, clipped to the time window.

use super::axes::{Chart, DrawResult, stroke};
use super::*;

impl Scene {
    pub(super) fn draw_curves<DB: DrawingBackend>(
        &self,
        chart: &Chart<'_, DB>,
        root: &DrawingArea<DB, Shift>,
    ) -> DrawResult<DB> {
        for curve in &self.curves {
            let width = if curve.markers { 1 } else { 2 };
            let pixels: Vec<(i32, i32)> = curve
                .points
                .iter()
                .map(|p| chart.backend_coord(p))
                .collect();
            let (line, spans) = per_column(pixels.iter().copied());
            stroke(root, line, curve.color, curve.stroke, width)?;
            for span in spans {
                stroke(root, span.to_vec(), curve.color, curve.stroke, width)?;
            }
            if curve.markers {
                // memory_profiler's "+" at each sample: once per pixel.
                let mut marked = pixels;
                marked.sort_unstable();
                marked.dedup();
                for &(x, y) in &marked {
                    root.draw(&PathElement::new(vec![(x - 3, y), (x + 4, y)], curve.color))?;
                    root.draw(&PathElement::new(vec![(x, y - 3), (x, y + 4)], curve.color))?;
                }
            }
        }
        Ok(())
    }
}

/// A column's topmost and bottommost pixel of a curve.
type Span = [(i32, i32); 2];

/// A curve's pixels as the line through them covers them: the line
/// through the first and the last point of each column of pixels, and in
/// each column the span from its topmost to its bottommost point, drawn
/// apart (a thick line that turns back on itself loses pixels at the turn).
/// PERF: a line through 2 million samples took minutes to draw in a PNG;
/// this draws the same pixels in a moment.
fn per_column(points: impl Iterator<Item = (i32, i32)>) -> (Vec<(i32, i32)>, Vec<Span>) {
    let mut line: Vec<(i32, i32)> = Vec::new();
    let mut spans: Vec<Span> = Vec::new();
    // The current column: x, its first point's y, its top and bottom, and
    // its last point's y.
    let mut column: Option<(i32, i32, i32, i32, i32)> = None;
    let mut flush = |(x, first, top, bottom, last): (i32, i32, i32, i32, i32)| {
        for p in [(x, first), (x, last)] {
            if line.last() != Some(&p) {
                line.push(p);
            }
        }
        if top != bottom {
            spans.push([(x, top), (x, bottom)]);
        }
    };
    for (x, y) in points {
        column = match column {
            Some((cx, first, top, bottom, _)) if cx == x => {
                Some((x, first, top.min(y), bottom.max(y), y))
            }
            done => {
                if let Some(done) = done {
                    flush(done);
                }
                Some((x, y, y, y, y))
            }
        };
    }
    if let Some(done) = column {
        flush(done);
    }
    (line, spans)
}

/// The part of a curve inside the time window, cut where it crosses the
/// window's edges.
pub(super) fn clip(points: &[(f64, f64)], (x0, x1): (f64, f64)) -> Vec<(f64, f64)> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_column_is_its_first_and_last_point_and_its_span() {
        let points = [(0, 5), (0, 1), (0, 9), (0, 4), (1, 4), (1, 4), (2, 7)];
        let (line, spans) = per_column(points.into_iter());
        assert_eq!(line, vec![(0, 5), (0, 4), (1, 4), (2, 7)]);
        assert_eq!(spans, vec![[(0, 1), (0, 9)]]);
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
