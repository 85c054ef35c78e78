//! The kernel's work: thread-scope regions on a thread's [`Counters`], a
//! row's update when an execution closes, and the statement step.
//!
//! PERF: plain loads and stores of state only the calling thread writes,
//! through the `owned` helpers, so that this stays a few instructions where
//! it is compiled without optimization too (the pure-Rust fallback).

use super::layout::{CallHead, Counters, CursorHead, LineCell, NO_CELL, Slot};
use super::owned::{get, load_i64, load_u32, load_u64, max, set};
use core::sync::atomic::{Ordering, fence};

/// Figures for one closed region.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RegionStats {
    /// Net bytes allocated while open.
    pub increment: i64,
    /// Highest rise above the start.
    pub peak: u64,
    /// The count when the region closed (context terms for thread scope, the
    /// process total for process scope).
    pub end: i64,
}

impl Counters {
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

/// Closes the thread-scope region that [`open_in`] opened on `t`.
#[inline(always)]
pub fn close_in(t: &Counters, start: i64, saved: i64) -> RegionStats {
    let adjust = get(&t.adjust_net);
    let watermark = max(get(&t.peak) + adjust, get(&t.carry));
    set(&t.carry, max(saved, watermark));
    let end = t.net() + adjust;
    let increment = end - start;
    let rise = max(watermark - start, increment);
    RegionStats {
        increment,
        peak: if rise > 0 { rise as u64 } else { 0 },
        end,
    }
}

impl LineCell {
    /// An execution of the row starts (owner only).
    #[inline(always)]
    pub(crate) fn opened(&self) {
        // SAFETY: only the owning thread touches `open`.
        unsafe { *self.open.get() += 1 }
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
    pub(crate) fn closed(&self, increment: i64, peak: u64, mem_usage: i64) {
        self.closed_with(increment, peak, mem_usage, None);
    }

    /// [`LineCell::closed`] with the execution's GPU figures, (increment,
    /// usage, peak), if any: one write for both.
    #[inline(always)]
    pub(crate) fn closed_with(
        &self,
        increment: i64,
        peak: u64,
        mem_usage: i64,
        gpu: Option<(i64, i64, u64)>,
    ) {
        use Ordering::Relaxed;
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
        // PERF: address arithmetic rather than `add`, which unoptimized
        // builds check in a call.
        let address =
            get(&self.cells) as usize + cell as usize * core::mem::size_of::<LineCell>();
        // SAFETY: `cells` points at the function's rows, which outlive the
        // call, and generated code passes only cell numbers below their count.
        unsafe { &*(address as *const LineCell) }
    }
}

/// The statement step: closes the cursor's open row, if any, and opens row
/// `next`, unless it is `NO_CELL`. Returns 0 when done, 1 when the call
/// takes the runtime's slow step instead (nothing was done then).
///
/// # Safety
/// `cursor` points at a live cursor of the calling thread, whose `call`, if
/// not null, is a call entered on this thread and still open.
#[cfg_attr(memprof_kernel, allow(dead_code))]
#[inline(always)]
pub unsafe fn step(cursor: *const CursorHead, next: u32) -> u32 {
    // SAFETY: as the caller promises.
    let cursor = unsafe { &*cursor };
    if cursor.call.is_null() {
        return 0;
    }
    // SAFETY: as the caller promises.
    let call = unsafe { &*cursor.call };
    let counters = get(&call.counters);
    if get(&call.flags) != 0 || counters.is_null() {
        return 1;
    }
    // SAFETY: a synchronous call's counters are its thread's, which live as
    // long as the thread.
    let t = unsafe { &*counters };
    let cell = get(&cursor.cell);
    if cell != NO_CELL {
        let stats = close_in(t, get(&cursor.start), get(&cursor.saved));
        call.row(cell)
            .closed(stats.increment, stats.peak, get(&call.base) + stats.end);
    }
    set(&cursor.cell, next);
    if next != NO_CELL {
        call.row(next).opened();
        let (start, saved) = open_in(t);
        set(&cursor.start, start);
        set(&cursor.saved, saved);
    }
    0
}
