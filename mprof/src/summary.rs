//! What a file says about each profiled function: how many calls, and the
//! wall time during which at least one of them ran.
//!
//! Covered time, not summed time: a service runs one handler in hundreds
//! of tasks at once, and the sum of their durations is many times the
//! length of the run. memprof's `CALLS` lines give both figures exactly;
//! for other files (memory_profiler's, memprof's before `CALLS`) they come
//! from the `FUNC` lines, with `SHORT` lines' calls added.

use crate::dat::Profile;
use std::collections::BTreeMap;

/// `[start, end]` of calls, in unix seconds.
pub type Spans = Vec<(f64, f64)>;

/// One profiled function's calls.
#[derive(Debug, Clone, PartialEq)]
pub struct FunctionSummary {
    pub name: String,
    pub calls: u64,
    /// Seconds during which at least one call ran. Calls at different
    /// depths are covered apart and added; a recursion's inner calls are
    /// not recorded (memprof's timeline holds its outermost calls).
    pub covered: f64,
    /// Its `FUNC` lines: none when every call was too short to draw.
    pub drawn: usize,
}

/// The functions of a file, most covered time first.
pub fn functions(profile: &Profile) -> Vec<FunctionSummary> {
    let mut by_name: BTreeMap<&str, (u64, Spans)> = BTreeMap::new();
    for call in &profile.calls {
        let entry = by_name.entry(&call.name).or_default();
        entry.0 += 1;
        entry.1.push((call.start.time, call.end.time));
    }
    let mut functions: Vec<FunctionSummary> = if profile.totals.is_empty() {
        let mut functions: BTreeMap<&str, FunctionSummary> = by_name
            .iter_mut()
            .map(|(name, (count, spans))| {
                let summary = FunctionSummary {
                    name: name.to_string(),
                    calls: *count,
                    covered: covered(spans),
                    drawn: *count as usize,
                };
                (*name, summary)
            })
            .collect();
        for short in &profile.short {
            let entry = functions
                .entry(&short.name)
                .or_insert_with(|| FunctionSummary {
                    name: short.name.clone(),
                    calls: 0,
                    covered: 0.0,
                    drawn: 0,
                });
            entry.calls += short.calls;
            entry.covered += short.seconds;
        }
        functions.into_values().collect()
    } else {
        let mut functions: BTreeMap<&str, FunctionSummary> = BTreeMap::new();
        for totals in &profile.totals {
            let entry = functions
                .entry(&totals.name)
                .or_insert_with(|| FunctionSummary {
                    name: totals.name.clone(),
                    calls: 0,
                    covered: 0.0,
                    drawn: by_name
                        .get(totals.name.as_str())
                        .map_or(0, |f| f.0 as usize),
                });
            entry.calls += totals.calls;
            entry.covered += totals.covered;
        }
        functions.into_values().collect()
    };
    functions.sort_by(|a, b| b.covered.total_cmp(&a.covered).then(a.name.cmp(&b.name)));
    functions
}

/// The length of the union of `[start, end]` spans: time during which at
/// least one ran. Sorts `spans`.
pub fn covered(spans: &mut [(f64, f64)]) -> f64 {
    spans.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut total = 0.0;
    let mut current: Option<(f64, f64)> = None;
    for &(start, end) in spans.iter() {
        current = match current {
            Some((a, b)) if start <= b => Some((a, b.max(end))),
            Some((a, b)) => {
                total += b - a;
                Some((start, end))
            }
            None => Some((start, end)),
        };
    }
    total + current.map_or(0.0, |(a, b)| b - a)
}

/// The table `mprof plot` prints on stderr: one row per function.
pub fn render(file: &str, functions: &[FunctionSummary]) -> String {
    let width = functions.iter().map(|f| f.name.len()).max().unwrap_or(0);
    let mut text = format!(
        "mprof: {file}: profiled calls, and the wall time during which at least one ran:\n"
    );
    for f in functions {
        let calls = match f.calls {
            1 => "1 call ".to_string(),
            n => format!("{n} calls"),
        };
        let note = if f.drawn == 0 {
            "  (too short to draw)"
        } else {
            ""
        };
        text.push_str(&format!(
            "  {:width$}  {calls:>12}  {:>9.3} s{note}\n",
            f.name, f.covered
        ));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn covered_time_counts_overlapping_spans_once() {
        let mut spans = [(2.0, 2.5), (0.0, 1.0), (0.5, 1.5), (0.25, 0.75), (3.0, 4.0)];
        assert_eq!(covered(&mut spans), 3.0);
        assert_eq!(covered(&mut []), 0.0);
    }

    #[test]
    fn memory_profilers_overlapping_calls_are_covered_not_summed() {
        // Four calls of 1 s, three of them at once: 4 s summed, 2 s covered.
        let text = "MEM 1.0 100.0\n\
                    FUNC app.handle 1.0 100.0 1.0 101.0\n\
                    FUNC app.handle 1.0 100.2 1.0 101.2\n\
                    FUNC app.handle 1.0 100.4 1.0 101.4\n\
                    FUNC app.handle 1.0 105.0 1.0 106.0\n\
                    SHORT app.parse 300 0.250000\n";
        let (profile, _) = Profile::parse(Path::new("x.dat"), text);
        let functions = functions(&profile);
        assert_eq!(
            render("x.dat", &functions),
            "mprof: x.dat: profiled calls, and the wall time during which at least one ran:\n\
             \x20 app.handle       4 calls      2.400 s\n\
             \x20 app.parse      300 calls      0.250 s  (too short to draw)\n"
        );
    }

    #[test]
    fn memprofs_totals_are_exact_and_added_over_depths() {
        let text = "MEM 1.0 100.0\n\
                    FUNC svc::handle 1.0 100.0 1.0 101.5 0\n\
                    FUNC svc::handle 1.0 102.0 1.0 103.0 0\n\
                    CALLS svc::handle 0 6000 3.195877\n\
                    CALLS svc::walk 0 10 0.500000\n\
                    CALLS svc::walk 1 90 0.400000\n\
                    CALLS svc::serve 0 1 3.243900\n";
        let (profile, _) = Profile::parse(Path::new("x.dat"), text);
        let functions = functions(&profile);
        assert_eq!(
            functions[1],
            FunctionSummary {
                name: "svc::handle".into(),
                calls: 6000,
                covered: 3.195877,
                drawn: 2
            }
        );
        assert_eq!(
            render("x.dat", &functions),
            "mprof: x.dat: profiled calls, and the wall time during which at least one ran:\n\
             \x20 svc::serve        1 call       3.244 s  (too short to draw)\n\
             \x20 svc::handle    6000 calls      3.196 s\n\
             \x20 svc::walk       100 calls      0.900 s  (too short to draw)\n"
        );
    }
}
