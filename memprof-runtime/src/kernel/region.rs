//! Thread-scope regions on a thread's [`Counters`], and a row's update when
//! an execution closes: the kernel's figures.
//!
//! PERF: plain loads and stores of state only the calling thread writes,
//! through the `owned` helpers, so that this stays a few instructions where
//! it is compiled without optimization too (the pure-Rust fallback).

use super::layout::{CallHead, Counters, LineCell, NO_SAMPLE, Slot};
use super::owned::{get, load_i64, load_u32, load_u64, max, set};
use core::sync::atomic::{Ordering, fence};

/// Figures for one closed region.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RegionStats {
    /// Net bytes allocated while open.
    pub increment: i64,
    /// Highest rise above the start.
    pub peak: u64,
    /// Allocations while open.
    pub allocations: u64,
    /// Bytes those allocations asked for (a `realloc`'s new size).
    pub allocated: u64,
    /// The count when the region closed (context terms for thread scope, the
    /// process total for process scope).
    pub end: i64,
}

impl Counters {
    /// Allocations plus frees on this thread so far, counted ones only: it
    /// moves with every event that moves a figure (a `realloc` is both).
    #[inline(always)]
    pub(crate) fn events(&self) -> u64 {
        get(&self.allocs).wrapping_add(get(&self.deallocs))
    }

    /// This thread's net count: bytes allocated minus bytes freed.
    #[inline(always)]
    pub(crate) fn net(&self) -> i64 {
        // SAFETY: `slot` points at a slot that outlives every use through
        // this thread's counters (see `alloc`).
        let slot: &Slot = unsafe { &*get(&self.slot) };
        // Only this thread stores to its slot.
        load_i64(&slot.net)
    }
}

/// Opens a thread-scope region on `t`: its start, and the enclosing
/// region's watermark to restore at its close.
#[inline(always)]
pub fn open_in(t: &Counters) -> (i64, i64) {
    let adjust = get(&t.adjust_net);
    let peak = get(&t.peak);
    let net = t.net();
    let saved = max(peak + adjust, get(&t.carry));
    set(&t.hi, max(get(&t.hi), peak));
    set(&t.peak, net);
    set(&t.carry, i64::MIN);
    (net + adjust, saved)
}

/// The calling context's allocation count, for a region's start (see
/// [`close_in`]).
#[inline(always)]
pub fn allocs_in(t: &Counters) -> u64 {
    get(&t.allocs).wrapping_add(get(&t.adjust_allocs))
}

/// The calling context's bytes allocated so far, for a region's start (see
/// [`close_in`]).
#[inline(always)]
pub fn allocated_in(t: &Counters) -> u64 {
    get(&t.allocated).wrapping_add(get(&t.adjust_allocated))
}

/// Closes the thread-scope region that [`open_in`] opened on `t`, when the
/// context's allocation count was `allocs` ([`allocs_in`]) and its bytes
/// allocated `allocated` ([`allocated_in`]).
#[inline(always)]
pub fn close_in(t: &Counters, start: i64, saved: i64, allocs: u64, allocated: u64) -> RegionStats {
    let adjust = get(&t.adjust_net);
    let watermark = max(get(&t.peak) + adjust, get(&t.carry));
    set(&t.carry, max(saved, watermark));
    let end = t.net() + adjust;
    let increment = end - start;
    let rise = max(watermark - start, increment);
    RegionStats {
        increment,
        peak: if rise > 0 { rise as u64 } else { 0 },
        allocations: allocs_in(t).wrapping_sub(allocs),
        allocated: allocated_in(t).wrapping_sub(allocated),
        end,
    }
}

/// Whether nothing was allocated or freed in the context since a region
/// opened at `start` with `allocs` ([`open_in`], [`allocs_in`]): then the
/// count is still `start`, the allocation count still `allocs`, and the
/// region closes with zero figures (see [`close_quiet_in`]).
///
/// PERF: a free without an allocation always moves the count (no block has
/// zero bytes), and a `realloc` counts as an allocation, so the two
/// comparisons see every event. Allocations are far rarer than statements:
/// this is how most statements close.
#[inline(always)]
pub fn quiet_in(t: &Counters, start: i64, allocs: u64) -> bool {
    t.net() + get(&t.adjust_net) == start && allocs_in(t) == allocs
}

/// [`close_in`] for a region that [`quiet_in`]: restores the enclosing
/// region's watermark, `saved`, which is all that the full close changes
/// then (the region's own watermark is its start, and `saved` is at least
/// that).
#[inline(always)]
pub fn close_quiet_in(t: &Counters, saved: i64) {
    set(&t.carry, saved);
}

/// Opens a thread-scope region on `t`'s device bytes: its start, and the
/// enclosing region's watermark to restore at its close. The same scheme
/// as [`open_in`], without contexts: device bytes are the thread's.
#[inline(always)]
pub fn open_device_in(t: &Counters) -> (i64, i64) {
    let net = get(&t.device_net);
    let saved = max(get(&t.device_peak), get(&t.device_carry));
    set(&t.device_peak, net);
    set(&t.device_carry, i64::MIN);
    (net, saved)
}

/// Closes the device region that [`open_device_in`] opened at `start`:
/// (increment, bytes after, highest rise), the figures of a row's GPU
/// columns.
#[inline(always)]
pub fn close_device_in(t: &Counters, start: i64, saved: i64) -> (i64, i64, u64) {
    let watermark = max(get(&t.device_peak), get(&t.device_carry));
    set(&t.device_carry, max(saved, watermark));
    let end = get(&t.device_net);
    let rise = max(watermark, end) - start;
    (end - start, end, if rise > 0 { rise as u64 } else { 0 })
}

/// [`close_device_in`] for a region in which the device bytes did not move
/// (see [`close_quiet_in`]).
#[inline(always)]
pub fn close_device_quiet_in(t: &Counters, saved: i64) {
    set(&t.device_carry, saved);
}

impl LineCell {
    /// An execution of the row starts (owner only).
    #[inline(always)]
    pub(crate) fn opened(&self) {
        // SAFETY: only the owning thread touches `open`.
        unsafe { *self.open.get() += 1 }
    }

    /// An execution of the row that [`LineCell::opened`] began and that was
    /// recorded already ends (owner only): see `CursorHead::held`.
    #[inline(always)]
    pub(crate) fn released(&self) {
        // SAFETY: only the owning thread touches `open`.
        let open = unsafe { &mut *self.open.get() };
        *open = open.saturating_sub(1);
    }

    #[inline(always)]
    pub(crate) fn begin_write(&self) -> u32 {
        let seq = load_u32(&self.seq);
        self.seq.store(seq.wrapping_add(1), Ordering::Relaxed);
        fence(Ordering::Release);
        seq
    }

    #[inline(always)]
    pub(crate) fn end_write(&self, seq: u32) {
        self.seq.store(seq.wrapping_add(2), Ordering::Release);
    }

    /// An execution of the row ends (owner only): adds its figures under the
    /// recursion rule (see `open`).
    ///
    /// PERF: the owner reads its own figures with plain loads and stores
    /// only what changed: a statement that allocated nothing stores its
    /// occurrence and the two sequence numbers.
    #[inline(always)]
    pub(crate) fn closed(&self, stats: &RegionStats, mem_usage: i64) {
        self.closed_with(stats, mem_usage, None);
    }

    /// [`LineCell::closed`] for an execution in which nothing was allocated
    /// or freed: its occurrence and its Mem usage, and its device bytes
    /// after (`NO_SAMPLE`: none), the only figures such an execution can
    /// move.
    #[inline(always)]
    pub(crate) fn closed_quiet(&self, mem_usage: i64, device_usage: i64) {
        use Ordering::Relaxed;
        // SAFETY: only the owning thread touches `open`.
        let open = unsafe { &mut *self.open.get() };
        *open = open.saturating_sub(1);
        let seq = self.begin_write();
        self.occurrences
            .store(load_u64(&self.occurrences) + 1, Relaxed);
        if mem_usage > load_i64(&self.mem_usage) {
            self.mem_usage.store(mem_usage, Relaxed);
        }
        if device_usage != NO_SAMPLE && device_usage > load_i64(&self.gpu_usage) {
            self.gpu_usage.store(device_usage, Relaxed);
        }
        self.end_write(seq);
    }

    /// [`LineCell::closed`] with the execution's GPU figures, (increment,
    /// usage, peak), if any: one write for both.
    #[inline(always)]
    pub(crate) fn closed_with(
        &self,
        stats: &RegionStats,
        mem_usage: i64,
        gpu: Option<(i64, i64, u64)>,
    ) {
        use Ordering::Relaxed;
        let (increment, peak) = (stats.increment, stats.peak);
        let (allocations, allocated) = (stats.allocations, stats.allocated);
        // SAFETY: only the owning thread touches `open`.
        let open = unsafe { &mut *self.open.get() };
        let nested = *open > 1;
        *open = open.saturating_sub(1);
        let seq = self.begin_write();
        self.occurrences
            .store(load_u64(&self.occurrences) + 1, Relaxed);
        if !nested {
            if increment != 0 {
                self.increment
                    .store(load_i64(&self.increment) + increment, Relaxed);
            }
            if peak > load_u64(&self.peak) {
                self.peak.store(peak, Relaxed);
            }
            if allocations != 0 {
                self.allocations
                    .store(load_u64(&self.allocations) + allocations, Relaxed);
                self.allocated
                    .store(load_u64(&self.allocated) + allocated, Relaxed);
            }
        }
        if mem_usage > load_i64(&self.mem_usage) {
            self.mem_usage.store(mem_usage, Relaxed);
        }
        if let Some((increment, usage, peak)) = gpu {
            if !nested {
                if increment != 0 {
                    self.gpu_increment
                        .store(load_i64(&self.gpu_increment) + increment, Relaxed);
                }
                if peak > load_u64(&self.gpu_peak) {
                    self.gpu_peak.store(peak, Relaxed);
                }
            }
            if usage > load_i64(&self.gpu_usage) {
                self.gpu_usage.store(usage, Relaxed);
            }
        }
        self.end_write(seq);
    }
}

impl CallHead {
    /// Row `cell`. The macro numbers cells below the function's cell count.
    #[inline(always)]
    pub(crate) fn row(&self, cell: u32) -> &LineCell {
        // SAFETY: `cells` points at the function's rows, which outlive the
        // call.
        unsafe { row_at(get(&self.cells), cell) }
    }
}

/// Row `cell` of the rows at `cells`.
///
/// # Safety
/// `cells` points at a function's rows, which outlive the returned
/// reference, and `cell` is below their count (as generated code's are).
#[inline(always)]
pub(super) unsafe fn row_at<'a>(cells: *const LineCell, cell: u32) -> &'a LineCell {
    // PERF: address arithmetic rather than `add`, which unoptimized builds
    // check in a call.
    let address = cells as usize + cell as usize * core::mem::size_of::<LineCell>();
    // SAFETY: as the caller promises.
    unsafe { &*(address as *const LineCell) }
}
