//! Regions: the stretches of execution whose heap figures we want (a
//! statement, a whole call, a `measure`). The per-statement recording layer,
//! just above the allocator's counters.
//!
//! Regions nest. Each one saves the enclosing region's watermark when it
//! opens and folds its own back in when it closes, so every region sees the
//! highest point reached while it was open, however deeply its inner regions
//! reset the thread's `peak`.
//!
//! A region's peak is also at least the peak of every region nested in it
//! that closed through this module or a call's exit (see [`nest_open`]): in
//! process scope, a rise of the heap inside a statement counts for the call
//! even when other threads freed as much before it started, and in either
//! scope a call that freed older memory before a temporary still shows the
//! temporary.
//!
//! Figures are read in *context* terms: a thread's real counters shifted by
//! `adjust_*`. Outside async code the shift is zero. While an async task is
//! polled (see `calls::task`) the shift makes the counters read as that
//! task's own, so a task that moves between threads keeps one consistent
//! count across `.await`.

use crate::alloc::{self, THREAD, ThreadCounters};
use std::cell::Cell;

thread_local! {
    /// Per scope, the highest peak of the regions closed inside the
    /// innermost open region of that scope that takes part (see
    /// [`nest_open`]). Swapped per poll for an async task (see
    /// `calls::task`).
    static NESTED_PEAK: [Cell<u64>; 2] = const { [Cell::new(0), Cell::new(0)] };
}

/// Opens a level of `scope`'s nested-peak carry: returns the enclosing
/// level's value, to hand back to [`nest_close`].
#[inline]
pub(crate) fn nest_open(scope: Scope) -> u64 {
    NESTED_PEAK
        .try_with(|c| c[scope as usize].replace(0))
        .unwrap_or(0)
}

/// Closes the level [`nest_open`] opened: `peak` raised to the peak of every
/// region that closed inside it, which the enclosing level then sees too.
/// A thread-scope peak also counts for the process-scope region around it
/// (a rise of one thread is one of the process); a process-scope peak,
/// which other threads may have made, does not count for a thread-scope
/// region around it.
#[inline]
pub(crate) fn nest_close(scope: Scope, saved: u64, peak: u64) -> u64 {
    NESTED_PEAK
        .try_with(|c| {
            let own = &c[scope as usize];
            let peak = peak.max(own.get());
            own.set(saved.max(peak));
            if scope == Scope::Thread {
                let process = &c[Scope::Process as usize];
                process.set(process.get().max(peak));
            }
            peak
        })
        .unwrap_or(peak)
}

/// Swaps the calling context's nested-peak carries for `value` (async
/// polls).
pub(crate) fn swap_nested_peak(value: [u64; 2]) -> [u64; 2] {
    NESTED_PEAK
        .try_with(|c| [c[0].replace(value[0]), c[1].replace(value[1])])
        .unwrap_or([0, 0])
}

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

pub(crate) use crate::kernel::region::{RegionStats, allocs_in, close_in, open_in};

pub(crate) fn with_thread<R: Default>(f: impl FnOnce(&ThreadCounters) -> R) -> R {
    THREAD.try_with(f).unwrap_or_default()
}

/// Allocation and deallocation counts of the calling context.
pub(crate) fn context_counts() -> (u64, u64) {
    with_thread(|t| {
        (
            t.allocs.get().wrapping_add(t.adjust_allocs.get()),
            t.deallocs.get().wrapping_add(t.adjust_deallocs.get()),
        )
    })
}

/// An open region. Closing it is mandatory and done by its owner's `Drop`.
#[derive(Debug, Default)]
pub(crate) struct Region {
    /// The count when the region opened.
    pub(crate) start: i64,
    /// Thread scope: the enclosing region's watermark when this one opened.
    /// Process scope: the enclosing level's nested peak (see [`nest_open`]).
    pub(crate) saved: i64,
    /// The context's allocation count when the region opened: allocations
    /// are the calling thread's (or task's) in either scope.
    pub(crate) start_allocs: u64,
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
                    watch: None,
                }
            }),
            Scope::Process => Region::open_process(),
        }
    }

    #[cold]
    fn open_process() -> Region {
        let saved = nest_open(Scope::Process) as i64;
        let watch = alloc::watch_begin();
        Region {
            start: alloc::process_net(),
            saved,
            start_allocs: context_counts().0,
            watch: Some(watch),
        }
    }

    /// Closes the region. Each region is closed exactly once, by its owner:
    /// a second close would fold a stale watermark into the enclosing one.
    #[inline]
    pub(crate) fn close(&mut self) -> RegionStats {
        match self.watch.take() {
            None => with_thread(|t| close_in(t, self.start, self.saved, self.start_allocs)),
            Some(watch) => {
                let end = alloc::process_net();
                let mut stats = stats(self.start, end, alloc::watch_end(watch));
                stats.allocations = context_counts().0.wrapping_sub(self.start_allocs);
                stats.peak = nest_close(Scope::Process, self.saved as u64, stats.peak);
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
        end,
    }
}
