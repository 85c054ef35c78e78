//! The profiled calls of a single file: brackets or flame boxes, and the
//! legend's rows that name them.

use super::brackets::thin;
use super::legend::legend_capacity;
use super::*;
use crate::summary::{self, FunctionSummary, Spans};

impl Scene {
    /// `totals`: the file's own count of each function's calls, where the
    /// whole run is plotted.
    pub(super) fn add_calls<'a>(
        &mut self,
        calls: &[&'a Call],
        origin: f64,
        flame: bool,
        totals: Option<&[FunctionSummary]>,
    ) {
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
            let figures = format!(" {:.3}s", call.duration());
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
            rows.push((call.name.as_str(), color, (label.clone(), figures), call));
        }
        if !flame {
            // Brackets closer than a few pixels merge: a thousand calls a
            // second would otherwise hide the curve under a solid band.
            let (x0, x1) = self.x;
            self.brackets = thin(std::mem::take(&mut self.brackets), (x1 - x0) / 200.0);
        }
        let icon = |color| {
            if flame {
                Icon::Box(color)
            } else {
                Icon::Bracket(color)
            }
        };
        let room = legend_capacity().saturating_sub(self.legend.len());
        // A `FUNC` line that stands for several calls (memprof merges
        // overlapping ones) is no call's duration: such functions get one
        // row with their totals.
        let merged = totals.is_some_and(|totals| {
            totals.iter().any(|t| {
                t.drawn > 0 && t.calls > rows.iter().filter(|r| r.0 == t.name).count() as u64
            })
        });
        if rows.len() <= room && !merged {
            for (_, color, (text, figures), _) in rows {
                self.legend.push(LegendRow {
                    icon: icon(color),
                    text,
                    figures,
                });
            }
            return;
        }
        // Too many calls for one row each: one row per function, with its
        // calls and the wall time they covered.
        let mut grouped: Vec<(&str, RGBColor, u64, Spans)> = Vec::new();
        for (name, color, _, call) in rows {
            let span = (call.start.time, call.end.time);
            match grouped.iter_mut().find(|g| g.0 == name) {
                Some(g) => {
                    g.2 += 1;
                    g.3.push(span);
                }
                None => grouped.push((name, color, 1, vec![span])),
            }
        }
        let shown = if grouped.len() <= room {
            grouped.len()
        } else {
            room.saturating_sub(1)
        };
        for (name, color, lines, spans) in &mut grouped[..shown] {
            let label = &labels[*name];
            let total = totals.and_then(|t| t.iter().find(|t| t.name == *name));
            let (calls, covered) = match total {
                Some(t) => (t.calls, t.covered),
                None => (*lines, summary::covered(spans)),
            };
            let figures = if calls == 1 {
                format!(" {covered:.3}s")
            } else {
                format!(" ×{calls}, {covered:.3}s covered")
            };
            self.legend.push(LegendRow {
                icon: icon(*color),
                text: label.clone(),
                figures,
            });
        }
        if shown < grouped.len() {
            self.legend.push(LegendRow {
                icon: Icon::None,
                text: format!("… {} more functions", grouped.len() - shown),
                figures: String::new(),
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
}
