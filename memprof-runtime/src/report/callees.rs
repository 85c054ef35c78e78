//! What each row called: the profiled functions whose calls began while the
//! row was open, from the call edges the runtime records (`calls::edges`),
//! never from the row's text.

use crate::calls::FnMeta;
use crate::calls::edges;

/// A profiled function that a row called: calls of it began while the row
/// was the thread's innermost open row of a synchronous profiled call,
/// directly or through functions that are not profiled (or whose calls
/// have gone quiet, which have no rows). Its bytes are
/// counted again in that function's own rows, so the two are not to be
/// added.
///
/// Not counted: calls that ran quiet (`MEMPROF_QUIET`: a function whose
/// calls moved nothing, or a hot one whose events take its rows' place),
/// so that `calls` and `allocated_bytes` count only the calls that took
/// their rows; and rows of an `async fn` (its calls count from the
/// synchronous row that polls it, if any).
///
/// ```
/// #[memprof::profile]
/// fn fill(n: usize) -> Vec<u8> {
///     vec![1; n]
/// }
///
/// #[memprof::profile]
/// fn build() -> usize {
///     let a = fill(100);
///     a.len()
/// }
///
/// build();
/// let report = memprof::report();
/// let row = report.function("build").unwrap().line_containing("fill(100)").unwrap();
/// let calls = row.calls.as_ref().unwrap();
/// assert_eq!(calls.len(), 1);
/// assert!(calls[0].function.ends_with("::fill"));
/// assert_eq!((calls[0].calls, calls[0].allocated_bytes), (1, 100));
/// ```
#[derive(
    Debug,
    Clone,
    PartialEq,
    Eq,
    serde::Serialize,
    serde::Deserialize,
    miniserde::Serialize,
    miniserde::Deserialize,
)]
pub struct LineCall {
    /// The callee's path.
    pub function: String,
    /// Its calls made from the row, nested ones (recursion) too.
    pub calls: u64,
    /// Bytes those calls allocated, freed or not, summed over them.
    pub allocated_bytes: u64,
}

/// Sets each row's calls from the edges of `meta`'s function (of `edges`,
/// the report's): an empty list on each row that ran, the edges from it
/// where it has some.
pub(super) fn fill(meta: &FnMeta, edges: &edges::EdgeSums, lines: &mut [super::LineReport]) {
    for line in lines.iter_mut().filter(|l| l.occurrences > 0) {
        line.calls = Some(Vec::new());
    }
    for edge in edges.from(meta) {
        let Some(line) = lines.get_mut(edge.row as usize) else {
            continue;
        };
        let call = LineCall {
            function: edge.callee.name().to_owned(),
            calls: edge.calls,
            allocated_bytes: edge.allocated,
        };
        merge(line.calls.get_or_insert_with(Vec::new), &[call]);
    }
}

/// Adds `theirs` to `ours`, a function's figures to its own: most bytes
/// first, then by name.
pub(super) fn merge(ours: &mut Vec<LineCall>, theirs: &[LineCall]) {
    for call in theirs {
        match ours.iter_mut().find(|c| c.function == call.function) {
            Some(mine) => {
                mine.calls += call.calls;
                mine.allocated_bytes += call.allocated_bytes;
            }
            None => ours.push(call.clone()),
        }
    }
    ours.sort_by(|a, b| {
        b.allocated_bytes
            .cmp(&a.allocated_bytes)
            .then_with(|| a.function.cmp(&b.function))
    });
}
