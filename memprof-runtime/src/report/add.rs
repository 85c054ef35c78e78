//! Reports of several processes of one program added into one (`cargo
//! test`'s test binaries and doctests, a program and the processes it
//! starts): a function in both sums its calls and rows as one process's
//! calls would, under the one rule that merges a row's executions,
//! [`RowFigures::add`](crate::cells::RowFigures::add).

use super::{FunctionReport, LineReport, Report, callees};

impl Report {
    /// Adds another process's report of the same program to this one: a
    /// function in both (same path and file) sums its calls and rows as one
    /// process's calls would; the others are appended.
    ///
    /// PERF: functions are found through a map (a whole crate's report
    /// holds thousands), lines by a scan of their function's.
    pub fn add(&mut self, other: &Report) {
        let mut index: std::collections::HashMap<(String, String), usize> = self
            .functions
            .iter()
            .enumerate()
            .map(|(i, f)| ((f.name.clone(), f.file.clone()), i))
            .collect();
        for function in &other.functions {
            let key = (function.name.clone(), function.file.clone());
            match index.get(&key).and_then(|&i| self.functions.get_mut(i)) {
                Some(mine) => mine.add(function),
                None => {
                    index.insert(key, self.functions.len());
                    self.functions.push(function.clone());
                }
            }
        }
    }
}

impl FunctionReport {
    /// Another process's calls of this function: its rows added to the
    /// same lines', the lines only it ran appended.
    pub(super) fn add(&mut self, other: &FunctionReport) {
        self.calls += other.calls;
        self.quiet_calls += other.quiet_calls;
        self.events_calls += other.events_calls;
        self.quiet_unplaced += other.quiet_unplaced;
        self.gpu = self.gpu.take().or_else(|| other.gpu.clone());
        self.gpu_driver = self.gpu_driver.take().or_else(|| other.gpu_driver.clone());
        self.pool = self.pool.take().or_else(|| other.pool.clone());
        self.sites_left_out = match (self.sites_left_out.take(), &other.sites_left_out) {
            (Some(mut ours), Some(theirs)) => {
                ours.add(theirs);
                Some(ours)
            }
            (ours, theirs) => ours.or_else(|| theirs.clone()),
        };
        for line in &other.lines {
            match self.lines.iter_mut().find(|l| l.line == line.line) {
                Some(mine) => mine.add(line),
                None => self.lines.push(line.clone()),
            }
        }
    }
}

impl LineReport {
    /// Another process's executions of this line.
    pub(super) fn add(&mut self, other: &LineReport) {
        let mut sum = self.figures();
        sum.add(&other.figures());
        let counted = self.gpu_peak.is_some() || other.gpu_peak.is_some();
        self.set_figures(&sum, counted);
        if let Some(theirs) = &other.sites {
            let ours = self.sites.get_or_insert_with(Vec::new);
            crate::sites::merge(ours, theirs);
        }
        self.within = self.within.or(other.within);
        if let Some(theirs) = &other.calls {
            callees::merge(self.calls.get_or_insert_with(Vec::new), theirs);
        }
    }
}
