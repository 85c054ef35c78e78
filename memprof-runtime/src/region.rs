//! Regions: the stretches of execution whose heap figures we want (a
//! statement, a whole call, a `measure`). The per-statement recording layer,
//! just above the allocator's counters.
//!
//! Regions nest. Each one saves the enclosing region's watermark when it
//! opens and folds its own back in when it closes, so every region sees the
//! highest point reached while it was open, however deeply its inner regions
//! reset the thread's `peak`.
//!
//! A region's peak is the highest the count rose above *its own* start,
//! and nothing else: a call that frees older memory before a temporary
//! shows the rise above its start, which may be less than a row inside it
//! that started lower (that row's Peak is the rise above its own start).
//! The `fn` row of a call is what `measure` gives for the same call.
//!
//! Figures are read in *context* terms: a thread's real counters shifted by
//! `adjust_*`. Outside async code the shift is zero. While an async task is
//! polled (see `calls::task`) the shift makes the counters read as that
//! task's own, so a task that moves between threads keeps one consistent
//! count across `.await`.

use crate::alloc::{self, THREAD, ThreadCounters};

/// What other threads or tasks must change the heap by during a
/// thread-scope measurement (a call, a `memit!`) for its output to say so:
/// less is the noise of a busy program (such as libtest's main thread,
/// which allocates as a test thread starts). Calls mark their function
/// with it, tables and `memit!` read it.
pub(crate) const OTHERS_NOTED: u64 = 1024;

/// Whose allocations a measurement counts: `memprof::measure_in`'s
/// argument, and what `scope = ".."` of `#[profile]`, `memit!` and
/// `assert_memory!` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// The thread, or async task, running the code: exact, and blind to
    /// other threads, such as tests running beside it or a pool's workers.
    Thread,
    /// Every thread of the process, as memory_profiler's RSS does. While a
    /// process-scope measurement is open, every thread's allocations take
    /// the allocator's slower path.
    Process,
}

pub(crate) use crate::kernel::region::{
    RegionStats, allocated_in, allocs_in, close_device_in, close_in, open_device_in, open_in,
};

pub(crate) fn with_thread<R: Default>(f: impl FnOnce(&ThreadCounters) -> R) -> R {
    THREAD.try_with(f).unwrap_or_default()
}

/// Allocation and deallocation counts and bytes allocated of the calling
/// context.
pub(crate) fn context_counts() -> (u64, u64, u64) {
    with_thread(|t| {
        (
            allocs_in(t),
            t.deallocs.get().wrapping_add(t.adjust_deallocs.get()),
            allocated_in(t),
        )
    })
}

/// An open region. Closing it is mandatory and done by its owner's `Drop`.
#[derive(Debug, Default)]
pub(crate) struct Region {
    /// The count when the region opened.
    pub(crate) start: i64,
    /// Thread scope: the enclosing region's watermark when this one opened.
    /// Process scope: unused (the process-wide watch keeps its own).
    pub(crate) saved: i64,
    /// The context's allocation count when the region opened: allocations
    /// are the calling thread's (or task's) in either scope.
    pub(crate) start_allocs: u64,
    /// The context's bytes allocated when the region opened, likewise.
    pub(crate) start_allocated: u64,
    /// Process scope: the process-wide watermark.
    pub(crate) watch: Option<alloc::Watch>,
}

impl Region {
    #[inline]
    pub(crate) fn open(scope: Scope) -> Region {
        match scope {
            Scope::Thread => with_thread(|t| {
                let (start, saved) = open_in(t);
                Region {
                    start,
                    saved,
                    start_allocs: allocs_in(t),
                    start_allocated: allocated_in(t),
                    watch: None,
                }
            }),
            Scope::Process => Region::open_process(),
        }
    }

    #[cold]
    fn open_process() -> Region {
        let watch = alloc::watch_begin();
        let (start_allocs, _, start_allocated) = context_counts();
        Region {
            start: alloc::process_net(),
            saved: 0,
            start_allocs,
            start_allocated,
            watch: Some(watch),
        }
    }

    /// Closes the region. Each region is closed exactly once, by its owner:
    /// a second close would fold a stale watermark into the enclosing one.
    #[inline]
    pub(crate) fn close(&mut self) -> RegionStats {
        match self.watch.take() {
            None => with_thread(|t| {
                close_in(
                    t,
                    self.start,
                    self.saved,
                    self.start_allocs,
                    self.start_allocated,
                )
            }),
            Some(watch) => {
                let end = alloc::process_net();
                let mut stats = stats(self.start, end, alloc::watch_end(watch));
                let (allocs, _, allocated) = context_counts();
                stats.allocations = allocs.wrapping_sub(self.start_allocs);
                stats.allocated = allocated.wrapping_sub(self.start_allocated);
                stats
            }
        }
    }
}

fn stats(start: i64, end: i64, rise: i64) -> RegionStats {
    let increment = end - start;
    RegionStats {
        increment,
        peak: rise.max(increment).max(0) as u64,
        allocations: 0,
        allocated: 0,
        end,
    }
}
