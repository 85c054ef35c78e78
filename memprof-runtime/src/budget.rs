//! Memory budgets: `#[profile(limit = .., max_retained = ..)]` and
//! `assert_memory!`, which fail a call or an expression that uses too much.

use crate::alloc::untracked;
use crate::calls::{CallFacts, FnMeta};
use crate::cells::LineCell;
use crate::measure::Measurement;
use crate::region::RegionStats;
use crate::report::{FunctionReport, LineReport, call_report};

/// A call over one of its budgets (`#[profile(limit = .., max_retained = ..)]`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Budget {
    peak: Option<(u64, u64)>,
    retained: Option<(u64, u64)>,
}

impl Budget {
    /// The budgets `stats` broke, if any.
    pub(crate) fn check(meta: &FnMeta, stats: &RegionStats) -> Option<Budget> {
        let peak = (stats.peak > meta.peak_limit).then_some((stats.peak, meta.peak_limit));
        let retained = u64::try_from(stats.increment)
            .ok()
            .filter(|r| *r > meta.retained_limit)
            .map(|r| (r, meta.retained_limit));
        (peak.is_some() || retained.is_some()).then_some(Budget { peak, retained })
    }

    /// `memory limit exceeded in <fn> (<file>:<line>): peak <X> > limit <L>`,
    /// then the call's table with the lines responsible marked, and the note
    /// a passing call's table would have under it.
    pub(crate) fn message(&self, meta: &FnMeta, cells: &[LineCell], facts: &CallFacts) -> String {
        untracked(|| {
            let settings = crate::settings::get().render;
            let b = |n: u64| crate::render::bytes(n as i64, &settings);
            let mut report = call_report(meta, cells, facts.sites_serial);
            let mut what = Vec::new();
            if let Some((peak, limit)) = self.peak {
                what.push(format!("peak {} > limit {}", b(peak), b(limit)));
                // The rows where the heap rose past the limit above the
                // call's start: a row's peak is its rise above its own
                // start, which may be above or below the call's.
                let call_start = report
                    .fn_row()
                    .and_then(|l| Some(l.mem_usage? - l.increment?));
                mark(&mut report, limit, "peak", |l| {
                    let from = l.mem_usage? - l.increment? - call_start?;
                    Some((from, from + l.peak? as i64))
                });
            }
            if let Some((retained, limit)) = self.retained {
                what.push(format!(
                    "retained {} > max_retained {}",
                    b(retained),
                    b(limit)
                ));
                mark(&mut report, limit, "increment", |l| Some((0, l.increment?)));
            }
            format!(
                "memory limit exceeded in {} ({}:{}): {}\n\n{}{}",
                crate::text::printable(&report.name),
                crate::text::printable(meta.file),
                meta.fn_line(),
                what.join(", "),
                crate::render::table(&report, false, &settings),
                crate::render::call_note(meta.scope, &report, facts, &settings),
            )
        })
    }
}

/// Marks the statement rows that rose past `limit`, or else the one that
/// rose highest: the lines to look at first. `span` gives a row's figure as
/// where it started and where it rose to; a row that started past the limit
/// did not cross it. (Which bytes a call retains is not known line by line,
/// so an increment marked here may have been freed again further down.)
fn mark(
    report: &mut FunctionReport,
    limit: u64,
    name: &str,
    span: impl Fn(&LineReport) -> Option<(i64, i64)>,
) {
    let mark = format!("   <-- {name} over the limit");
    let mark = mark.as_str();
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let rises = || {
        report.statement_indices().filter_map(|i| {
            let (from, to) = span(&report.lines[i])?;
            (to > from).then_some((i, from, to))
        })
    };
    let over: Vec<usize> = rises()
        .filter(|&(_, from, to)| from <= limit && to > limit)
        .map(|(i, _, _)| i)
        .collect();
    let chosen = if over.is_empty() {
        rises()
            .max_by_key(|&(_, _, to)| to)
            .map(|(i, _, _)| i)
            .into_iter()
            .collect()
    } else {
        over
    };
    for i in chosen {
        report.lines[i].contents.push_str(mark);
    }
}

/// A figure of a [`Measurement`] that `assert_memory!` can bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Quantity {
    /// [`Measurement::peak`].
    Peak,
    /// [`Measurement::increment`].
    Increment,
    /// [`Measurement::allocations`].
    Allocations,
    /// [`Measurement::deallocations`].
    Deallocations,
    /// [`Measurement::allocated_bytes`].
    AllocatedBytes,
}

/// A comparison in an `assert_memory!` condition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Comparison {
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `==`
    Eq,
    /// `>=`
    Ge,
    /// `>`
    Gt,
}

/// One condition of `assert_memory!`, such as `peak < 10 MiB`.
#[derive(Debug, Clone, Copy)]
pub struct Condition {
    /// What is bounded.
    pub quantity: Quantity,
    /// How.
    pub comparison: Comparison,
    /// The bound, in bytes (or a count, for allocations).
    pub bound: i128,
    /// The condition as written.
    pub text: &'static str,
}

/// Panics, listing each failed condition with the measured figure, unless
/// `m` meets every one of `conditions`. The panic's location is the caller's:
/// the user's `assert_memory!`, not this file.
#[track_caller]
pub fn check_memory(m: &Measurement, conditions: &[Condition]) {
    let failed: Vec<&Condition> = conditions.iter().filter(|c| !holds(m, c)).collect();
    if failed.is_empty() {
        return;
    }
    let message = untracked(|| {
        let settings = crate::settings::get().render;
        let reasons: Vec<String> = failed
            .iter()
            .map(|c| {
                let (name, value) = figure(m, c.quantity);
                let shown = match c.quantity {
                    Quantity::Peak | Quantity::Increment | Quantity::AllocatedBytes => format!(
                        "{} ({value} B)",
                        crate::render::bytes(value as i64, &settings)
                    ),
                    Quantity::Allocations | Quantity::Deallocations => value.to_string(),
                };
                format!("`{}`, but {name} was {shown}", c.text)
            })
            .collect();
        format!(
            "memory assertion failed: {}\nmeasured: increment {} B, peak {} B, {} allocations, {} deallocations",
            reasons.join("; "),
            m.increment,
            m.peak,
            m.allocations,
            m.deallocations
        )
    });
    panic!("{message}");
}

fn figure(m: &Measurement, quantity: Quantity) -> (&'static str, i128) {
    match quantity {
        Quantity::Peak => ("peak", m.peak as i128),
        Quantity::Increment => ("increment", m.increment as i128),
        Quantity::Allocations => ("allocations", m.allocations as i128),
        Quantity::Deallocations => ("deallocations", m.deallocations as i128),
        Quantity::AllocatedBytes => ("allocated_bytes", m.allocated_bytes as i128),
    }
}

fn holds(m: &Measurement, c: &Condition) -> bool {
    let value = figure(m, c.quantity).1;
    match c.comparison {
        Comparison::Lt => value < c.bound,
        Comparison::Le => value <= c.bound,
        Comparison::Eq => value == c.bound,
        Comparison::Ge => value >= c.bound,
        Comparison::Gt => value > c.bound,
    }
}
