//! Building a [`Scene`] from the recorded files: the curves, the peaks and
//! the legend's rows for each file, in data coordinates.

use super::curve::clip;
use super::legend::file_labels;
use super::*;
use crate::summary;

impl Scene {
    pub(super) fn build(profiles: &[Profile], options: &PlotOptions) -> Scene {
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
            let totals = summary::functions(&profiles[0]);
            let whole_run = options.window.is_none();
            scene.add_calls(
                &calls,
                origin,
                options.flame,
                whole_run.then_some(totals.as_slice()),
            );
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
                figures: String::new(),
            });
            self.legend.push(LegendRow {
                icon: Icon::Line(peak_color, Stroke::Dotted),
                text: format!("{prefix}peak"),
                figures: format!(" {:.1} MiB at {:.2}s", peak.1, peak.0),
            });
        }
        self.curves.push(Curve {
            points: rss,
            color,
            stroke: Stroke::Solid,
            markers,
        });

        // `peak`: the series' peak gets its mark and legend row, as RSS's.
        let mut extra = |samples: &[Sample], label: &str, own_color: RGBColor, peak: bool| {
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
                figures: String::new(),
            });
            let top = points
                .iter()
                .copied()
                .reduce(|a, b| if b.1 > a.1 { b } else { a });
            if let Some(top) = top.filter(|_| peak) {
                self.peaks.push(PeakMark { at: top, color });
                self.legend.push(LegendRow {
                    icon: Icon::Line(color, Stroke::Dotted),
                    text: format!("{prefix}{label} peak"),
                    figures: format!(" {:.1} MiB at {:.2}s", top.1, top.0),
                });
            }
            self.curves.push(Curve {
                points,
                color,
                stroke,
                markers: false,
            });
        };
        extra(&profile.heap, "heap (exact, memprof)", HEAP_COLOR, false);
        extra(&profile.gpu, "GPU", GPU_COLOR, true);
        for (n, (pid, samples)) in profile.children.iter().enumerate() {
            extra(
                samples,
                &format!("child {pid}"),
                CHILD_COLORS[n % CHILD_COLORS.len()],
                false,
            );
        }
    }
}

/// The first time of a file: its curves start there.
pub(super) fn origin(profile: &Profile) -> f64 {
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

pub(super) fn last_time(profile: &Profile) -> f64 {
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
