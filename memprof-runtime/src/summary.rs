//! The heavy lines at a glance: one row per function that ran, ranked, and
//! the program's top lines by Increment and by Peak, each with its function
//! and source text and, where allocation sites were recorded, where most of
//! its bytes came from. Data only; `render` writes it as text.

use crate::report::{FunctionReport, LineCall, LineReport, Report};
use crate::sites::SiteFrame;

/// How many lines each of the top-line lists holds.
const TOP_LINES: usize = 10;

/// A report's summary: see [`Report::summary`].
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, miniserde::Serialize)]
pub struct Summary {
    /// One row per function that ran, highest peak first (then by name);
    /// where the report has Live (sites recorded, a snapshot), most Live
    /// first, then by peak ([`Summary::ranked_by_live`]).
    pub functions: Vec<FunctionSummary>,
    /// The statement lines of every function with the highest Increment,
    /// highest first; at most 10, only lines that kept bytes.
    pub top_increment: Vec<TopLine>,
    /// The statement lines with the highest Peak, highest first; at most
    /// 10, only lines whose peak is above zero.
    pub top_peak: Vec<TopLine>,
    /// The statement lines holding the most bytes still in use (Live),
    /// highest first; at most 10, only lines holding some. Empty where
    /// allocation sites were not recorded.
    pub top_live: Vec<TopLine>,
}

/// One function's row of the summary: its `fn` row's figures.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, miniserde::Serialize)]
pub struct FunctionSummary {
    /// The function's path.
    pub name: String,
    /// The source file.
    pub file: String,
    /// Outermost calls, as in the function's table.
    pub calls: u64,
    /// Bytes its calls left allocated, summed over them.
    pub kept: i64,
    /// `kept` over `calls`, rounded toward zero.
    pub kept_per_call: i64,
    /// The highest rise of the heap within one call.
    pub peak: u64,
    /// Allocations its calls made, summed over them.
    pub allocations: u64,
    /// Bytes its calls allocated, freed or not, summed over them.
    pub allocated_bytes: u64,
    /// The highest rise of counted device memory within one call, where
    /// device allocations were counted.
    pub gpu_peak: Option<u64>,
    /// Bytes its calls allocated that are still in use (Live), where
    /// allocation sites were recorded.
    pub live: Option<u64>,
    /// A framework's pool (`memprof::watch_pool`): bytes in its live
    /// tensors after a call, the highest, where one was read.
    pub pool_allocated: Option<u64>,
}

/// One line of the program, in the top lists.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, miniserde::Serialize)]
pub struct TopLine {
    /// The function the line is in.
    pub function: String,
    /// The line's number in its file.
    pub line: u32,
    /// The line's Increment, summed over its executions.
    pub increment: i64,
    /// The line's Peak, highest over its executions.
    pub peak: u64,
    /// Allocations the line made, summed over its executions.
    pub allocations: u64,
    /// Bytes the line allocated, freed or not, summed over its executions.
    pub allocated_bytes: u64,
    /// Executions of the line.
    pub occurrences: u64,
    /// Bytes the line allocated that are still in use (Live), where
    /// allocation sites were recorded.
    pub in_use_bytes: Option<u64>,
    /// The source text, trimmed.
    pub contents: String,
    /// The profiled function this line calls, if any: the first of
    /// `callees`. Its bytes are counted again in that function's own lines,
    /// so the two are not to be added.
    pub calls: Option<String>,
    /// Every profiled function this line called, from the call edges the
    /// runtime records (see [`LineCall`]), most bytes allocated first.
    pub callees: Vec<LineCall>,
    /// The nearest line of the same function that holds this one (its
    /// `for`, `if` or block: see [`LineReport::within`]) and is in the same
    /// list: its figures include this line's, so the two are not to be
    /// added.
    pub within: Option<u32>,
    /// Where most of its bytes came from, where the line has allocation
    /// sites (`MEMPROF_SITES`) and allocated any bytes.
    pub site: Option<TopSite>,
}

/// Where a top line allocated the most bytes (see [`Site`](crate::Site)):
/// the function that made the allocations, over every call stack through
/// which it did.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, miniserde::Serialize)]
pub struct TopSite {
    /// The sites' innermost frame, the code that made the allocations (of
    /// its largest site, where the function's sites end at different
    /// lines of it); `None` where the line made them itself (`vec![0; n]`
    /// written on it).
    pub frame: Option<SiteFrame>,
    /// Bytes allocated through the sites whose innermost frame is this
    /// function's, freed or not, summed over the line's executions.
    pub allocated_bytes: u64,
    /// `allocated_bytes`' share of the line's, in whole percent: rounded
    /// down, so 100 only where the site is all of the line's bytes, and at
    /// most 100 (an estimate can exceed the line's exact figure).
    pub percent: u8,
    /// `allocated_bytes` is an estimate from a sample
    /// (`MEMPROF_SITES=sample`); the line's own figures stay exact.
    pub estimated: bool,
}

impl Report {
    /// The summary of this report: every function that ran, ranked by
    /// peak, and the program's top lines by Increment and by Peak.
    ///
    /// Its `Display` is the text printed at exit after the exit tables.
    ///
    /// ```
    /// #[memprof::profile]
    /// fn build() -> Vec<u8> {
    ///     let v = vec![0u8; 4096];
    ///     v
    /// }
    ///
    /// let v = build();
    /// let summary = memprof::report().summary();
    /// let build = summary.functions.iter().find(|f| f.name.ends_with("build")).unwrap();
    /// assert_eq!((build.calls, build.kept, build.peak), (1, 4096, 4096));
    /// assert_eq!(summary.top_increment[0].contents, "let v = vec![0u8; 4096];");
    /// # drop(v);
    /// ```
    pub fn summary(&self) -> Summary {
        let mut functions: Vec<FunctionSummary> = self
            .functions
            .iter()
            .filter(|f| f.calls > 0)
            .filter_map(function_summary)
            .collect();
        // NOTE: a service's question is what holds memory now (Live), not
        // what one call peaked at; without Live the order stays by peak.
        let by_live = functions.iter().any(|f| f.live.is_some());
        functions.sort_by(|a, b| {
            let live = match by_live {
                true => b.live.unwrap_or(0).cmp(&a.live.unwrap_or(0)),
                false => std::cmp::Ordering::Equal,
            };
            live.then_with(|| b.peak.cmp(&a.peak))
                .then_with(|| a.name.cmp(&b.name))
        });
        let statements: Vec<(&FunctionReport, &LineReport)> = self
            .functions
            .iter()
            .flat_map(|f| f.statements().map(move |row| (f, row)))
            .collect();
        let top = |key: fn(&LineReport) -> i64| {
            let mut lines: Vec<&(&FunctionReport, &LineReport)> =
                statements.iter().filter(|(_, row)| key(row) > 0).collect();
            lines.sort_by(|(fa, a), (fb, b)| {
                key(b)
                    .cmp(&key(a))
                    .then_with(|| fa.name.cmp(&fb.name))
                    .then_with(|| a.line.cmp(&b.line))
            });
            let listed: Vec<&(&FunctionReport, &LineReport)> =
                lines.into_iter().take(TOP_LINES).collect();
            listed
                .iter()
                .map(|(f, row)| {
                    let mut line = top_line(f, row);
                    line.within = listed_holder(f, row, &listed);
                    line
                })
                .collect()
        };
        let top_increment = top(|row| row.increment.unwrap_or(0));
        let top_peak = top(|row| i64::try_from(row.peak.unwrap_or(0)).unwrap_or(i64::MAX));
        let top_live = top(|row| i64::try_from(row.in_use_bytes.unwrap_or(0)).unwrap_or(i64::MAX));
        Summary {
            functions,
            top_increment,
            top_peak,
            top_live,
        }
    }
}

impl Summary {
    /// Whether the functions are ranked by Live: the report has it.
    pub fn ranked_by_live(&self) -> bool {
        self.functions.iter().any(|f| f.live.is_some())
    }

    /// The functions' order, in words: `highest peak first`, or `most
    /// Live first` where they are ranked by it.
    pub fn order(&self) -> &'static str {
        match self.ranked_by_live() {
            true => "most Live first",
            false => "highest peak first",
        }
    }
}

/// The nearest line of `function` that holds `row` (following `within`
/// outward) and is `listed` too.
fn listed_holder(
    function: &FunctionReport,
    row: &LineReport,
    listed: &[&(&FunctionReport, &LineReport)],
) -> Option<u32> {
    let mut at = row;
    // Each step goes to an enclosing line: at most one per row.
    for _ in 0..function.lines.len() {
        let holder = function.line(at.within?)?;
        let is_listed = listed
            .iter()
            .any(|(f, l)| std::ptr::eq(*f, function) && l.line == holder.line);
        if is_listed {
            return Some(holder.line);
        }
        at = holder;
    }
    None
}

fn function_summary(function: &FunctionReport) -> Option<FunctionSummary> {
    let row = function.fn_row()?;
    let kept = row.increment.unwrap_or(0);
    Some(FunctionSummary {
        name: function.name.clone(),
        file: function.file.clone(),
        calls: function.calls,
        kept,
        kept_per_call: kept / i64::try_from(function.calls.max(1)).unwrap_or(i64::MAX),
        peak: row.peak.unwrap_or(0),
        allocations: row.allocations.unwrap_or(0),
        allocated_bytes: row.allocated_bytes.unwrap_or(0),
        gpu_peak: row.gpu_peak,
        live: row.in_use_bytes,
        pool_allocated: row.pool_allocated,
    })
}

fn top_line(function: &FunctionReport, row: &LineReport) -> TopLine {
    let callees = row.calls.clone().unwrap_or_default();
    TopLine {
        function: function.name.clone(),
        line: row.line,
        increment: row.increment.unwrap_or(0),
        peak: row.peak.unwrap_or(0),
        allocations: row.allocations.unwrap_or(0),
        allocated_bytes: row.allocated_bytes.unwrap_or(0),
        occurrences: row.occurrences,
        in_use_bytes: row.in_use_bytes,
        contents: row.contents.trim().to_owned(),
        calls: callees.first().map(|c| c.function.clone()),
        callees,
        within: None,
        site: top_site(row),
    }
}

/// The function that allocated the most of the line's bytes, its sites
/// added up by their innermost frame's function (a line allocating through
/// one function by two paths is that function's, whole). Sites come most
/// bytes first, so the first of a function's is its largest.
fn top_site(row: &LineReport) -> Option<TopSite> {
    let sites = row.sites.as_ref()?;
    let line_bytes = row.allocated_bytes.filter(|&b| b > 0)?;
    let function = |site: &crate::sites::Site| site.frames.first().map(|f| f.function.clone());
    let mut by_function: Vec<(Option<String>, u64, &crate::sites::Site)> = Vec::new();
    for site in sites {
        let name = function(site);
        match by_function.iter_mut().find(|(f, _, _)| *f == name) {
            Some((_, bytes, _)) => *bytes += site.allocated_bytes,
            None => by_function.push((name, site.allocated_bytes, site)),
        }
    }
    // The first of the largest: ties go to the function with the largest
    // single site.
    let (_, bytes, largest) = by_function
        .into_iter()
        .rev()
        .max_by_key(|(_, bytes, _)| *bytes)?;
    let percent = u128::from(bytes) * 100 / u128::from(line_bytes);
    Some(TopSite {
        frame: largest.frames.first().cloned(),
        allocated_bytes: bytes,
        percent: percent.min(100) as u8,
        estimated: largest.estimated,
    })
}
