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
    fn clips_curves_at_the_window() {
        let points = [(0.0, 0.0), (2.0, 20.0), (4.0, 0.0)];
        assert_eq!(
            clip(&points, (1.0, 3.0)),
            vec![(1.0, 10.0), (2.0, 20.0), (3.0, 10.0)]
        );
    }
}
