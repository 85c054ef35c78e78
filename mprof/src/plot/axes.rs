//! The frame of the plot: title, grid, ticks and axis descriptions, in
//! the order the parts are drawn, and the helpers every part draws with.

use super::*;

pub(super) type DrawResult<DB> =
    Result<(), DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;

const GRID: RGBColor = RGBColor(225, 225, 225);
const FRAME: RGBColor = RGBColor(120, 120, 120);

impl Scene {
    /// Draws everything but text, which goes to `labels` in pixel
    /// coordinates of the image (see [`crate::text`]).
    pub(super) fn draw<DB: DrawingBackend>(
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

        // Calls first, so that the curves are drawn over them: with many
        // calls their brackets would otherwise hide the RSS.
        self.draw_flame(&chart, root, labels)?;
        self.draw_brackets(&chart, root)?;
        self.draw_curves(&chart, root)?;
        for peak in &self.peaks {
            let (px, py) = chart.backend_coord(&peak.at);
            let dotted = |points| stroke(root, points, peak.color, Stroke::Dotted, 1);
            dotted(vec![(left, py), (right, py)])?;
            dotted(vec![(px, top), (px, bottom)])?;
        }
        root.draw(&Rectangle::new([(left, top), (right, bottom)], FRAME))?;
        self.draw_legend(root, labels, top, bottom)?;
        Ok(())
    }
}

/// A line through `points` (pixels of the image).
pub(super) fn stroke<DB: DrawingBackend>(
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

pub(super) type Chart<'a, DB> = ChartContext<
    'a,
    DB,
    Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
>;

/// Round tick values between `lo` and `hi` (steps of 1, 2 or 5 times a
/// power of ten, about 8 of them), and the decimals their labels need.
pub(super) fn ticks(lo: f64, hi: f64) -> (Vec<f64>, usize) {
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
