//! Call edges: which row of which profiled function was open on the thread
//! when each profiled call began, with the calls made from it and the bytes
//! they allocated. The summary's `[calls …]`, the JSON's `calls` of a row and
//! `mprof diff`'s callees come from these, never from a line's text.
//!
//! The row a call is made from is the one open in the thread's innermost
//! statement cursor (`Counters::open_cursor`): each cursor of a synchronous
//! call (a block's, a call's body) becomes the innermost as it is made and
//! puts the one before it back as it ends, so a call made through
//! unprofiled code counts from the profiled row that led to it. An `async
//! fn`'s cursors are in that chain only while the call is polled (a future
//! outlives the poll that made it): each poll puts the call's innermost
//! cursor with a row open there ([`PollChain`]), and its cursors keep it
//! there as they open and close rows ([`async_cursor_moved`]); the poll's
//! end puts back the poller's. So a line of an `async fn` is the caller of
//! what it calls while it is polled, as a synchronous line is (issue 60: a
//! handler's line did not say it called a profiled function, and the top
//! lines counted the callee's bytes twice). An `async fn` call names its
//! own caller once, at its first poll ([`caller_here`]), and counts in it
//! when it ends, on whichever thread.
//!
//! Each thread keeps each edge's figures in an [`EdgeCounts`] of its own,
//! made here the first time (outside every figure) and listed for
//! `report()`; the callee's aggregate remembers the latest two (its
//! `edges`), which the kernel's exit counts in without asking the runtime
//! while calls keep coming from those rows.
//!
//! NOTE: not counted: quiet calls (see `kernel::quiet`), which allocate
//! nothing in the steady state, and calls made while the caller's cursor is
//! between rows. A row with no edge has no marker: a marker is always an
//! edge that was recorded.

use super::edge::Edge;
use super::frame::Frame;
use super::meta::FnMeta;
use super::thread::ThreadFn;
use crate::alloc::untracked;
use crate::kernel::layout::{CursorHead, EdgeCounts, NO_CELL, ThreadFnHead};
use crate::owned::{get, load_u64, set};
use std::collections::HashMap;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Mutex, MutexGuard};

/// Every edge's figures, by the callee's aggregate (one thread's), the
/// callee (an ended thread's aggregate's memory may hold another
/// function's later), the caller and the row.
type Key = (usize, usize, usize, u32);

static EDGES: Mutex<Option<HashMap<Key, &'static Edge>>> = Mutex::new(None);

fn lock() -> MutexGuard<'static, Option<HashMap<Key, &'static Edge>>> {
    EDGES.lock().unwrap_or_else(|e| e.into_inner())
}

/// The edges' list, locked so that no thread is inside it while the process
/// forks (see `crate::fork`).
#[cfg(unix)]
pub(crate) struct EdgesHeldForFork(
    #[allow(dead_code)] MutexGuard<'static, Option<HashMap<Key, &'static Edge>>>,
);

#[cfg(unix)]
impl EdgesHeldForFork {
    pub(crate) fn lock() -> Self {
        EdgesHeldForFork(lock())
    }
}

/// The calling thread's edge of `callee` (its aggregate `tf`) from row
/// `row` of `caller`, made on first use; its counts cleared if they belong
/// to an older generation. Only the thread that owns `tf` writes them (an
/// aggregate at the address of an ended thread's takes over its edges,
/// which keep counting in reports, as its rows do in `retired`).
fn edge_of(tf: &ThreadFn, caller: &'static FnMeta, row: u32) -> &'static Edge {
    let callee = tf.meta();
    let generation = callee.head.generation.load(Relaxed);
    let edge = match tf.edge_cache.find(caller, row) {
        Some(edge) => edge,
        None => untracked(|| {
            let key = (
                std::ptr::from_ref(tf) as usize,
                std::ptr::from_ref(callee) as usize,
                std::ptr::from_ref(caller) as usize,
                row,
            );
            let edge = *lock()
                .get_or_insert_with(HashMap::new)
                .entry(key)
                .or_insert_with(|| {
                    Box::leak(Box::new(Edge {
                        caller,
                        row,
                        callee,
                        generation: generation.into(),
                        counts: EdgeCounts::default(),
                    }))
                });
            tf.edge_cache.keep(caller, row, edge);
            edge
        }),
    };
    if edge.generation.load(Relaxed) != generation {
        edge.counts.calls.store(0, Relaxed);
        edge.counts.allocated.store(0, Relaxed);
        edge.generation.store(generation, Relaxed);
    }
    edge
}

/// The caller whose cursor `outer` is, and the row open there: `None` for
/// no cursor, a cursor between rows, or a caller without an aggregate.
///
/// # Safety
/// `outer` is null or a live cursor of this thread's chain.
unsafe fn caller_of(outer: *const CursorHead) -> Option<(&'static ThreadFn, u32)> {
    // SAFETY: as the caller promises.
    let outer = unsafe { outer.as_ref() }?;
    let cell = get(&outer.cell);
    if cell == NO_CELL || outer.call.is_null() {
        return None;
    }
    // SAFETY: a cursor in the chain belongs to an open synchronous call of
    // this thread, or to an `async fn` call polled on it, whose poll set
    // its aggregate on this thread (see `Frame::polled_here`); an
    // aggregate, if set, lives as long as the thread.
    let caller = unsafe { get(&(*outer.call).thread_fn).cast::<ThreadFn>().as_ref() }?;
    let row = *caller.meta().cell_rows.get(cell as usize)?;
    Some((caller, row))
}

/// The kernel's exit found another edge than its aggregate's latest two
/// (its `exit` returned 2): makes the edge of the call whose body's cursor
/// is `top` the aggregate's latest, under the very key the kernel compares
/// (see `kernel::call::edge`), so that the exit, called again, counts in
/// it (or in none, where the caller has no aggregate).
///
/// # Safety
/// `top` is the body's cursor of the innermost open synchronous call of
/// this thread, which the kernel entered, and whose `outer` is a live
/// cursor with a row open.
pub(crate) unsafe fn find_for_kernel(top: *const CursorHead) {
    // SAFETY: as the caller promises: a kernel-entered call has its
    // aggregate, and its caller's cursor a call.
    let (outer, tf, caller_head) = unsafe {
        let top = &*top;
        let outer = get(&top.outer);
        (
            outer,
            &*get(&(*top.call).thread_fn).cast::<ThreadFn>(),
            &*(*outer).call,
        )
    };
    // SAFETY: as the caller promises.
    let cell = get(&unsafe { &*outer }.cell);
    // SAFETY: as the caller promises.
    let edge = match unsafe { caller_of(outer) } {
        Some((caller, row)) => std::ptr::from_ref(&edge_of(tf, caller.meta(), row).counts),
        None => std::ptr::null(),
    };
    // The latest first; the older of the two goes.
    let head: &ThreadFnHead = tf;
    let [latest, older] = &head.edges;
    set(&older.row, get(&latest.row));
    set(&older.caller, get(&latest.caller));
    set(&older.counts, get(&latest.counts));
    set(
        &latest.row,
        get(&caller_head.cells).wrapping_add(cell as usize),
    );
    set(&latest.caller, get(&caller_head.thread_fn));
    set(&latest.counts, edge);
}

/// The caller's function and row of a call beginning now on this thread:
/// the row open in its innermost cursor, if any. An `async fn` call reads
/// it at its first poll, and keeps it (see [`count_runtime_call`]).
pub(crate) fn caller_here() -> Option<(&'static FnMeta, u32)> {
    // SAFETY: null or this thread's counters.
    let t = unsafe { crate::alloc::thread_counters().as_ref() }?;
    // SAFETY: the thread's innermost cursor is null or live.
    unsafe { caller_of(get(&t.open_cursor)) }.map(|(caller, row)| (caller.meta(), row))
}

/// Counts a call that the runtime entered, whose frame is `frame`, whose
/// body's cursor began after `outer` and which allocated `allocated` bytes.
/// An `async fn` call counts from the row it named at its first poll, in
/// the aggregate of the thread it ends on (null `outer`).
pub(crate) fn count_runtime_call(frame: &Frame, outer: *const CursorHead, allocated: u64) {
    let counts = match frame.async_caller() {
        Some(None) => return,
        Some(Some((caller, row))) => {
            // SAFETY: an aggregate lives as long as its thread.
            let Some(tf) = (unsafe { super::thread::thread_fn(frame.meta).as_ref() }) else {
                return;
            };
            &edge_of(tf, caller, row).counts
        }
        None => {
            // SAFETY: a frame's aggregate lives as long as its thread.
            let Some(tf) = (unsafe { frame.thread_fn().as_ref() }) else {
                return;
            };
            // SAFETY: the body cursor's `outer` is null or a live cursor.
            let Some((caller, row)) = (unsafe { caller_of(outer) }) else {
                return;
            };
            &edge_of(tf, caller.meta(), row).counts
        }
    };
    counts.calls.store(load_u64(&counts.calls) + 1, Relaxed);
    let sum = load_u64(&counts.allocated).wrapping_add(allocated);
    counts.allocated.store(sum, Relaxed);
}

/// Makes `cursor` the thread's innermost, keeping the one before it in its
/// `outer`: for the cursors the runtime makes of synchronous calls.
pub(crate) fn cursor_began(cursor: &CursorHead) {
    // SAFETY: null or this thread's counters.
    if let Some(t) = unsafe { crate::alloc::thread_counters().as_ref() } {
        set(&cursor.outer, get(&t.open_cursor));
        set(&t.open_cursor, std::ptr::from_ref(cursor));
    }
}

/// Puts back the cursor that was innermost before `cursor` began.
pub(crate) fn cursor_ended(cursor: &CursorHead) {
    // SAFETY: null or this thread's counters.
    if let Some(t) = unsafe { crate::alloc::thread_counters().as_ref() }
        && std::ptr::eq(get(&t.open_cursor), cursor)
    {
        set(&t.open_cursor, get(&cursor.outer));
    }
}

/// An `async fn` call's poll under way on this thread: its innermost
/// cursor is the thread's while it lasts; the poller's comes back when it
/// drops, however the poll ends.
pub(crate) struct PollChain(*const CursorHead);

impl PollChain {
    /// Makes `innermost`, the polled call's innermost cursor with a row
    /// open (null: none yet, at its first poll, when the poller's stays
    /// until its first row opens), the thread's.
    pub(crate) fn enter(innermost: *const CursorHead) -> PollChain {
        // SAFETY: null or this thread's counters.
        let Some(t) = (unsafe { crate::alloc::thread_counters().as_ref() }) else {
            return PollChain(std::ptr::null());
        };
        let poller = get(&t.open_cursor);
        if !innermost.is_null() {
            set(&t.open_cursor, innermost);
        }
        PollChain(poller)
    }
}

impl Drop for PollChain {
    fn drop(&mut self) {
        // SAFETY: null or this thread's counters.
        if let Some(t) = unsafe { crate::alloc::thread_counters().as_ref() } {
            set(&t.open_cursor, self.0);
        }
    }
}

/// An `async fn` call being polled moved its innermost cursor with a row
/// open to `innermost` (null: none): the thread's innermost, until the
/// poll ends (see [`PollChain`]).
pub(crate) fn async_cursor_moved(innermost: *const CursorHead) {
    // SAFETY: null or this thread's counters.
    if let Some(t) = unsafe { crate::alloc::thread_counters().as_ref() } {
        set(&t.open_cursor, innermost);
    }
}

/// One edge as a report shows it: from a row of a caller to a callee, over
/// every thread.
#[derive(Debug, Clone)]
pub(crate) struct EdgeSum {
    pub(crate) row: u32,
    pub(crate) callee: &'static FnMeta,
    pub(crate) calls: u64,
    pub(crate) allocated: u64,
}

/// Every caller's edges, each summed over the threads, as one report reads
/// them: gathered in one pass over the edges, which number the threads
/// times the edges of each (a test suite's thousand test threads), so that
/// a report does not walk them once per function.
#[derive(Debug, Default)]
pub(crate) struct EdgeSums(HashMap<usize, Vec<EdgeSum>>);

impl EdgeSums {
    /// The edges from `caller`'s rows: by row, then most bytes allocated
    /// first, then by the callee's name.
    pub(crate) fn from(&self, caller: &FnMeta) -> &[EdgeSum] {
        self.0
            .get(&(std::ptr::from_ref(caller) as usize))
            .map_or(&[], Vec::as_slice)
    }
}

/// Every caller's edges as they stand (see [`EdgeSums`]).
pub(crate) fn sums() -> EdgeSums {
    // (caller, row, callee) → the sum.
    let mut summed: HashMap<(usize, u32, usize), EdgeSum> = HashMap::new();
    let edges = lock();
    for edge in edges.iter().flat_map(|m| m.values()) {
        if edge.generation.load(Relaxed) != edge.callee.head.generation.load(Relaxed) {
            continue;
        }
        let (calls, allocated) = (
            edge.counts.calls.load(Relaxed),
            edge.counts.allocated.load(Relaxed),
        );
        if calls == 0 {
            continue;
        }
        let key = (
            std::ptr::from_ref(edge.caller) as usize,
            edge.row,
            std::ptr::from_ref(edge.callee) as usize,
        );
        let sum = summed.entry(key).or_insert(EdgeSum {
            row: edge.row,
            callee: edge.callee,
            calls: 0,
            allocated: 0,
        });
        sum.calls += calls;
        sum.allocated += allocated;
    }
    drop(edges);
    let mut by_caller: HashMap<usize, Vec<EdgeSum>> = HashMap::new();
    for ((caller, ..), sum) in summed {
        by_caller.entry(caller).or_default().push(sum);
    }
    for sums in by_caller.values_mut() {
        sums.sort_by(|a, b| {
            a.row
                .cmp(&b.row)
                .then_with(|| b.allocated.cmp(&a.allocated))
                .then_with(|| a.callee.name().cmp(b.callee.name()))
        });
    }
    EdgeSums(by_caller)
}
