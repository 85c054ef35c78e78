//! Per-thread aggregates: each thread adds its calls of a function to a
//! [`ThreadFn`] of its own, so calls on different threads never write the
//! same memory. `report()` sums them (see `FnMeta::totals`); a thread that
//! ends folds its figures into the function's `retired` rows and frees its
//! aggregates.

use super::meta::{FnMeta, ThreadFnPtr, first_quiet_state};
use crate::alloc::untracked;
use crate::cells::{LineCell, RowFigures};
use crate::kernel::layout::{EdgeSlot, QuietHead, ThreadFnHead};
use crate::owned::load_u64;
use std::cell::{Cell, UnsafeCell};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};

/// One thread's figures for one function.
///
/// PERF: aligned, and its rows padded, to 128 bytes (a pair of cache lines,
/// which x86 prefetches together), so that no two threads' aggregates share
/// a line.
///
/// Starts with the [`ThreadFnHead`] that the kernel's call entry uses.
#[derive(Debug)]
#[repr(C, align(128))]
pub(crate) struct ThreadFn {
    head: ThreadFnHead,
    meta: &'static FnMeta,
    /// One row per cell, between `PAD` unused rows on each side. Written by
    /// the owner only (see `LineCell`).
    padded: Box<[LineCell]>,
    /// Per-call tables this thread has handed out, where they are counted
    /// per thread (see `meta::tables_per_thread`). Owner only.
    pub(crate) tables: Cell<u64>,
    /// The sites serial of the table `target` points at (see
    /// `Frame::site_key`). Owner only.
    pub(crate) target_serial: Cell<u64>,
    /// The edges this aggregate was called from, for the runtime to find
    /// without the lock (see `edge::EdgeCache`). Owner only.
    pub(crate) edge_cache: super::edge::EdgeCache,
}

impl std::ops::Deref for ThreadFn {
    type Target = ThreadFnHead;

    #[inline(always)]
    fn deref(&self) -> &ThreadFnHead {
        &self.head
    }
}

// SAFETY: other threads touch only `calls` and `cells`, which are atomics;
// `depth` and `target` are read and written by the owning thread alone.
unsafe impl Sync for ThreadFn {}

/// Unused rows on each side of a `ThreadFn`'s rows: 128 bytes or more.
const PAD: usize = 128usize.div_ceil(std::mem::size_of::<LineCell>());

impl ThreadFn {
    /// The function.
    pub(crate) fn meta(&self) -> &'static FnMeta {
        self.meta
    }

    /// One row per cell.
    #[inline]
    pub(crate) fn cells(&self) -> &[LineCell] {
        &self.padded[PAD..self.padded.len() - PAD]
    }

    /// Clears the figures if `memprof::reset` ran since they were made
    /// (owner only; between calls, or the open ones would lose rows).
    #[inline]
    pub(crate) fn renew(&self) {
        let generation = self.meta.head.generation.load(Relaxed);
        if load_u64(&self.generation) != generation {
            self.restart(generation);
        }
    }

    #[cold]
    fn restart(&self, generation: u64) {
        self.cells().iter().for_each(LineCell::clear);
        self.calls.store(0, Relaxed);
        self.quiet_calls.store(0, Relaxed);
        self.events_calls.store(0, Relaxed);
        self.quiet_moved.set(0);
        crate::quiet_events::clear_slots(self);
        self.streak.set(0);
        self.hot.set(first_hot());
        // Edges of the older generation are left out of reports: later
        // calls find this generation's (see `calls::edges`).
        for slot in &self.edges {
            slot.row.set(std::ptr::null());
            slot.counts.set(std::ptr::null());
        }
        self.generation.store(generation, Relaxed);
        if self.tables.get() != 0 {
            // Tables are to be handed out again: the kernel must leave this
            // thread's calls to the runtime until they are.
            self.tables.set(0);
            set_published(self.meta, false);
        }
    }
}

/// The calling thread's aggregates, indexed by `FnMeta::id - 1`.
struct ThreadTable {
    fns: UnsafeCell<Vec<*const ThreadFn>>,
    /// What the kernel's call entry finds: `fns`, but null for a function
    /// whose calls on this thread still hand out tables of their own when
    /// tables are counted per thread (see `meta::tables_per_thread`).
    published: UnsafeCell<Vec<*const ThreadFn>>,
}

impl Drop for ThreadTable {
    fn drop(&mut self) {
        // The thread is ending: keep its figures in each function's `retired`
        // rows and free the aggregates, outside every figure.
        let fns = self.fns.get_mut();
        // The kernel's entry must not find the aggregates any more.
        publish(&[]);
        untracked(|| drop(std::mem::take(self.published.get_mut())));
        untracked(|| {
            for thread_fn in std::mem::take(fns) {
                if !thread_fn.is_null() {
                    retire(thread_fn);
                }
            }
        });
        super::stack::release();
        // Its allocation sites join the ended threads', and its tables go
        // to the next thread.
        untracked(crate::sites::thread_ends);
        // The thread is done with profiled calls: its allocator slot can go
        // to the next thread, so that every call's process-wide sum reads
        // the slots of live threads only.
        crate::alloc::release_slot();
    }
}

thread_local! {
    static TABLE: ThreadTable = const {
        ThreadTable {
            fns: UnsafeCell::new(Vec::new()),
            published: UnsafeCell::new(Vec::new()),
        }
    };
}

/// Mirrors the thread's table into its counters, where the kernel's call
/// entry looks aggregates up (see `Counters::fns`).
fn publish(fns: &[*const ThreadFn]) {
    // SAFETY: null or this thread's counters, which live as long as it.
    if let Some(t) = unsafe { crate::alloc::thread_counters().as_ref() } {
        // `ThreadFn` starts with its head.
        t.fns.set(fns.as_ptr().cast::<*const ThreadFnHead>());
        t.fns_len.set(fns.len());
    }
}

/// Lets the kernel's call entry find the calling thread's aggregate of
/// `meta` (`true`), or not (`false`): its calls then take the runtime's.
pub(crate) fn set_published(meta: &'static FnMeta, on: bool) {
    let index = (meta.head.id.load(Relaxed) as usize).wrapping_sub(1);
    let _ = TABLE.try_with(|table| {
        // SAFETY: only this thread touches its table, and nothing here
        // re-enters it.
        let (fns, published) = unsafe { (&*table.fns.get(), &mut *table.published.get()) };
        if let (Some(&found), Some(slot)) = (fns.get(index), published.get_mut(index)) {
            *slot = if on { found } else { std::ptr::null() };
        }
    });
}

/// Hands out function ids.
static NEXT_ID: AtomicU32 = AtomicU32::new(1);

/// The calling thread's aggregate of `meta`, created at its first call; null
/// while the thread is being torn down.
#[inline]
pub(crate) fn thread_fn(meta: &'static FnMeta) -> *const ThreadFn {
    let index = (meta.head.id.load(Relaxed) as usize).wrapping_sub(1);
    TABLE
        .try_with(|table| {
            // SAFETY: only this thread touches its table, and nothing here
            // re-enters it.
            let fns = unsafe { &*table.fns.get() };
            match fns.get(index) {
                Some(&found) if !found.is_null() => found,
                _ => first_call_on_thread(meta, table),
            }
        })
        .unwrap_or(std::ptr::null())
}

/// Whether the calling thread is inside a synchronous call of `meta`'s
/// function, and, if that call records into rows of its own rather than
/// into this thread's aggregate, their figures so far.
pub(crate) fn open_here(meta: &'static FnMeta) -> Option<Option<Vec<RowFigures>>> {
    let index = (meta.head.id.load(Relaxed) as usize).wrapping_sub(1);
    TABLE
        .try_with(|table| {
            // SAFETY: only this thread touches its table, and nothing here
            // re-enters it.
            let fns = unsafe { &*table.fns.get() };
            let found = *fns.get(index)?;
            // SAFETY: a listed aggregate lives as long as this thread.
            let thread_fn = unsafe { found.as_ref() }?;
            if thread_fn.depth.get() == 0 {
                return None;
            }
            let target = thread_fn.target.get();
            if target.is_null() || std::ptr::eq(target, thread_fn.cells) {
                return Some(None);
            }
            // SAFETY: the outermost open call's own rows, one per cell, which
            // live until that call, still open on this thread, ends.
            let rows = unsafe { std::slice::from_raw_parts(target, meta.cell_count()) };
            Some(Some(rows.iter().map(LineCell::read).collect()))
        })
        .ok()
        .flatten()
}

#[cold]
#[inline(never)]
fn first_call_on_thread(meta: &'static FnMeta, table: &ThreadTable) -> *const ThreadFn {
    untracked(|| {
        let mut id = meta.head.id.load(Relaxed);
        if id == 0 {
            let fresh = NEXT_ID.fetch_add(1, Relaxed);
            id = match meta.head.id.compare_exchange(0, fresh, Relaxed, Relaxed) {
                Ok(_) => {
                    meta.head.quiet.store(first_quiet_state(), Relaxed);
                    fresh
                }
                Err(winner) => winner,
            };
        }
        let index = id as usize - 1;
        let padded = LineCell::row_set(meta.cell_count() + 2 * PAD);
        let thread_fn = Box::into_raw(Box::new(ThreadFn {
            head: ThreadFnHead {
                calls: AtomicU64::new(0),
                generation: AtomicU64::new(meta.head.generation.load(Relaxed)),
                depth: Cell::new(0),
                streak: Cell::new(0),
                hot: Cell::new(first_hot()),
                quiet_calls: AtomicU64::new(0),
                quiet_moved: Cell::new(0),
                head: &meta.head,
                target: Cell::new(std::ptr::null()),
                cells: padded[PAD..].as_ptr(),
                edges: [EdgeSlot::NONE, EdgeSlot::NONE],
                events: Default::default(),
                rows_events: Cell::new(QuietHead::NONE),
                events_calls: AtomicU64::new(0),
            },
            meta,
            padded,
            tables: Cell::new(0),
            target_serial: Cell::new(0),
            edge_cache: super::edge::EdgeCache::default(),
        }));
        meta.threads
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(ThreadFnPtr(thread_fn.cast::<ThreadFnHead>()));
        // SAFETY: only this thread touches its table.
        let fns = unsafe { &mut *table.fns.get() };
        if fns.len() <= index {
            fns.resize(index + 1, std::ptr::null());
        }
        fns[index] = thread_fn;
        // SAFETY: only this thread touches its table.
        let published = unsafe { &mut *table.published.get() };
        published.resize(fns.len(), std::ptr::null());
        if !super::meta::tables_per_thread() {
            published[index] = thread_fn;
        }
        publish(published);
        thread_fn
    })
}

/// Where a thread's count of calls that moved the heap starts (see
/// `ThreadFnHead::hot`): at 0, or past counting where the build keeps no
/// frame pointers, so that calls which move the heap often keep their rows.
fn first_hot() -> u32 {
    if crate::sites::ANCHORS {
        0
    } else {
        crate::kernel::layout::NEVER_HOT
    }
}

/// Folds an ending thread's aggregate into its function's `retired` rows,
/// unlists it and frees it.
fn retire(thread_fn: *const ThreadFn) {
    // SAFETY: `thread_fn` came from `Box::into_raw` in `first_call_on_thread`
    // and is still listed, hence alive.
    let meta = unsafe { (*thread_fn).meta };
    let mut threads = meta.threads.lock().unwrap_or_else(|e| e.into_inner());
    threads.retain(|listed| listed.0 != thread_fn.cast::<ThreadFnHead>());
    // SAFETY: unlisted under the lock, so no reader can reach it any more.
    let owned = unsafe { Box::from_raw(thread_fn.cast_mut()) };
    let events_head = owned.rows_events.get();
    // SAFETY: a linked head's counters are this thread's, which outlive its
    // aggregates.
    if let Some(t) = unsafe { events_head.counters.as_ref() } {
        // A call whose rows took its events is still open as its thread
        // ends (the process exiting from inside it): its head, about to be
        // freed, leaves the thread's quiet calls.
        crate::kernel::rows_events::leave_events(t, &owned);
    }
    if owned.generation.load(Relaxed) != meta.head.generation.load(Relaxed) {
        return;
    }
    for (sum, cell) in meta.retired.iter().zip(owned.cells()) {
        sum.absorb(&cell.read());
    }
    meta.retired_calls
        .fetch_add(owned.calls.load(Relaxed), Relaxed);
    meta.retired_quiet_calls
        .fetch_add(owned.quiet_calls.load(Relaxed), Relaxed);
    meta.retired_events_calls
        .fetch_add(owned.events_calls.load(Relaxed), Relaxed);
    crate::quiet_events::absorb(&meta.head, &owned);
    if owned.depth.get() > 0 {
        // A call is still open as its thread ends: the process is exiting
        // from inside it. Its rows so far count, as `report()` would show
        // them while it ran (see `open_here`).
        let target = owned.target.get();
        if !target.is_null() && !std::ptr::eq(target, owned.cells().as_ptr()) {
            // SAFETY: the outermost open call's own rows, one per cell; the
            // call's frame is still there, as exiting does not unwind.
            let rows = unsafe { std::slice::from_raw_parts(target, meta.cell_count()) };
            for (sum, cell) in meta.retired.iter().zip(rows) {
                sum.absorb(&cell.read());
            }
        }
        meta.retired_running.fetch_add(1, Relaxed);
    }
}
