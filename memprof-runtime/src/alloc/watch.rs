//! Process-scope watermarks: while a `scope = "process"` region is open,
//! every thread's allocations also feed a few global high-water marks.

use std::sync::atomic::{
    AtomicI64, AtomicU64,
    Ordering::{Relaxed, SeqCst},
};

/// At most this many process-scope regions can track a peak at once.
const WATCHERS: usize = 64;
pub(super) static WATCH_MASK: AtomicU64 = AtomicU64::new(0);
/// Net bytes allocated while any watcher was active: a running delta, only
/// ever read as differences.
static WATCH_NET: AtomicI64 = AtomicI64::new(0);
/// Allocations and deallocations made while any watcher was active: running
/// counts, only ever read as differences (process-scope `measure`).
static WATCH_ALLOCS: AtomicU64 = AtomicU64::new(0);
static WATCH_DEALLOCS: AtomicU64 = AtomicU64::new(0);
/// Bytes allocated while any watcher was active, as the counts are.
static WATCH_ALLOCATED: AtomicU64 = AtomicU64::new(0);
static WATCH_PEAK: [AtomicI64; WATCHERS] = [const { AtomicI64::new(0) }; WATCHERS];

/// Sends every thread's allocator to the slow path, which feeds the
/// watches, while one is open.
fn set_watched(on: bool) {
    crate::tls::suspend(on);
}

#[cold]
pub(super) fn watch_record(delta: i64, allocated: usize, allocs: u64, deallocs: u64) {
    if allocs != 0 {
        WATCH_ALLOCS.fetch_add(allocs, Relaxed);
        WATCH_ALLOCATED.fetch_add(allocated as u64, Relaxed);
    }
    if deallocs != 0 {
        WATCH_DEALLOCS.fetch_add(deallocs, Relaxed);
    }
    let now = WATCH_NET.fetch_add(delta, Relaxed) + delta;
    if delta > 0 {
        let mut mask = WATCH_MASK.load(Relaxed);
        while mask != 0 {
            let i = mask.trailing_zeros() as usize;
            WATCH_PEAK[i].fetch_max(now, Relaxed);
            mask &= mask - 1;
        }
    }
}

/// Allocations, deallocations and bytes allocated counted so far while a
/// watch was open: their differences across an open watch are the whole
/// process's.
pub(crate) fn watch_counts() -> (u64, u64, u64) {
    (
        WATCH_ALLOCS.load(Relaxed),
        WATCH_DEALLOCS.load(Relaxed),
        WATCH_ALLOCATED.load(Relaxed),
    )
}

/// A process-wide watermark, open from [`watch_begin`] to [`watch_end`].
#[derive(Debug)]
pub(crate) struct Watch {
    index: Option<u32>,
    start: i64,
}

impl Watch {
    /// As plain integers, for storing in atomics: index (`u32::MAX` for
    /// none) and start.
    pub(crate) fn into_parts(self) -> (u32, i64) {
        (self.index.unwrap_or(u32::MAX), self.start)
    }

    pub(crate) fn from_parts(index: u32, start: i64) -> Watch {
        Watch {
            index: (index != u32::MAX).then_some(index),
            start,
        }
    }
}

/// Starts watching the process-wide high-water mark.
///
/// Allocations that race with this call may be missed by the peak (never by
/// the increment, which comes from the slots); with all 64 watchers busy the
/// peak falls back to the larger of the start and end figures.
pub(crate) fn watch_begin() -> Watch {
    let mut mask = WATCH_MASK.load(Relaxed);
    loop {
        let free = !mask;
        if free == 0 {
            return Watch {
                index: None,
                start: WATCH_NET.load(Relaxed),
            };
        }
        let i = free.trailing_zeros();
        let start = WATCH_NET.load(Relaxed);
        WATCH_PEAK[i as usize].store(start, Relaxed);
        match WATCH_MASK.compare_exchange(mask, mask | (1 << i), SeqCst, Relaxed) {
            Ok(_) => {
                set_watched(true);
                return Watch {
                    index: Some(i),
                    start,
                };
            }
            Err(now) => mask = now,
        }
    }
}

/// Ends a watch and returns the highest rise above its start.
pub(crate) fn watch_end(watch: Watch) -> i64 {
    let end = WATCH_NET.load(Relaxed);
    let peak = match watch.index {
        Some(i) => {
            let peak = WATCH_PEAK[i as usize].load(Relaxed);
            if WATCH_MASK.fetch_and(!(1 << i), SeqCst) == 1 << i {
                set_watched(false);
                // A watch opened meanwhile must not find its flags cleared.
                if WATCH_MASK.load(SeqCst) != 0 {
                    set_watched(true);
                }
            }
            peak
        }
        None => end,
    };
    (peak.max(end) - watch.start).max(0)
}
