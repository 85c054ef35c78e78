//! Which of a function's rows is which: its `fn` row, its statements, the
//! row of a line. Every reader of a report (tables, sites, budgets, the
//! summary, pprof) asks these questions; they are answered here once.

use super::{FunctionReport, LineReport};

impl FunctionReport {
    /// The `fn` row: the first row with figures, which carries the whole
    /// call (its increment is what the calls kept, its peak theirs). `None`
    /// where no row ran.
    ///
    /// ```
    /// #[memprof::profile]
    /// fn keep() -> Vec<u8> {
    ///     let v = vec![0u8; 512];
    ///     v
    /// }
    ///
    /// let v = keep();
    /// let report = memprof::report();
    /// let keep = report.function("keep").unwrap();
    /// let fn_row = keep.fn_row().unwrap();
    /// assert!(fn_row.contents.contains("fn keep"));
    /// assert_eq!(fn_row.increment, Some(512));
    /// # drop(v);
    /// ```
    // NOTE: a call still running on the thread that took the report has no
    // figures on its `fn` row until it ends (see `running`), so the first
    // row with figures is then its first statement that ran: the rule as
    // every reader has always applied it.
    pub fn fn_row(&self) -> Option<&LineReport> {
        self.fn_row_index().map(|i| &self.lines[i])
    }

    /// The index in `lines` of the [`fn` row](FunctionReport::fn_row).
    pub(crate) fn fn_row_index(&self) -> Option<usize> {
        self.rows_that_ran().next()
    }

    /// The function's statements that ran: the rows with figures after the
    /// [`fn` row](FunctionReport::fn_row), in line order.
    pub fn statements(&self) -> impl Iterator<Item = &LineReport> {
        self.statement_indices().map(|i| &self.lines[i])
    }

    /// The indices in `lines` of [`statements`](FunctionReport::statements).
    pub(crate) fn statement_indices(&self) -> impl Iterator<Item = usize> + '_ {
        self.rows_that_ran().skip(1)
    }

    /// The row of source line `line`.
    pub fn line(&self, line: u32) -> Option<&LineReport> {
        self.lines.iter().find(|l| l.line == line)
    }

    /// The first row whose text contains `needle`.
    pub fn line_containing(&self, needle: &str) -> Option<&LineReport> {
        self.lines.iter().find(|l| l.contents.contains(needle))
    }

    /// The indices of the rows with figures: those whose statements ran
    /// (a row that never ran has no increment).
    fn rows_that_ran(&self) -> impl Iterator<Item = usize> + '_ {
        self.lines
            .iter()
            .enumerate()
            .filter(|(_, l)| l.increment.is_some())
            .map(|(i, _)| i)
    }
}
