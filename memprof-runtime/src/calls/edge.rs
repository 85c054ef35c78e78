//! One call edge's figures ([`Edge`]), and the list of them an aggregate
//! keeps at hand ([`EdgeCache`]): the data that `edges` keeps and the
//! per-thread aggregates hold, below both.

use super::meta::FnMeta;
use crate::kernel::layout::EdgeCounts;

/// One thread's figures of one edge: calls of `callee` made while row
/// `row` (an index into the caller's rows) of `caller` was open.
#[derive(Debug)]
pub(crate) struct Edge {
    pub(crate) caller: &'static FnMeta,
    pub(crate) row: u32,
    pub(crate) callee: &'static FnMeta,
    /// The callee's `memprof::reset` generation the counts belong to.
    pub(crate) generation: std::sync::atomic::AtomicU64,
    pub(crate) counts: EdgeCounts,
}

/// The edges one aggregate (one function on one thread) was called from,
/// by caller and row: what `edges::edge_of` finds without the lock, the map's
/// hashing or the allocator's pause, as a callee called from more rows than
/// the kernel's latest two keeps coming back to the same few. Owner only.
///
/// PERF: a list scanned in order, not a map: a function is called from a
/// few rows (serde_json's `Value::deserialize` from a handful of rows);
/// past [`CACHED`] rows the rest go through the lock, as all did before.
#[derive(Debug, Default)]
pub(crate) struct EdgeCache(std::cell::RefCell<Vec<(&'static FnMeta, u32, &'static Edge)>>);

/// The rows an [`EdgeCache`] keeps.
const CACHED: usize = 32;

impl EdgeCache {
    pub(crate) fn find(&self, caller: &'static FnMeta, row: u32) -> Option<&'static Edge> {
        let list = self.0.try_borrow().ok()?;
        list.iter()
            .find(|(c, r, _)| std::ptr::eq(*c, caller) && *r == row)
            .map(|(_, _, edge)| *edge)
    }

    /// Keeps `edge`, where there is room; called with the allocator paused
    /// (the list grows through it).
    pub(crate) fn keep(&self, caller: &'static FnMeta, row: u32, edge: &'static Edge) {
        if let Ok(mut list) = self.0.try_borrow_mut()
            && list.len() < CACHED
        {
            list.push((caller, row, edge));
        }
    }
}
