//! The figures of one table row, [`LineCell`], and how executions add to it.
//!
//! A cell is written by one thread at a time: the thread whose aggregate it
//! belongs to, or the call that owns it. Other threads only read it, for
//! `report()`. Each write is bracketed by a per-cell sequence number, so a
//! reader never sees a row with half an execution in it.

use crate::owned::{self, load_i64, load_u32, load_u64};
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicI64, AtomicU32, AtomicU64, Ordering::Relaxed, fence};

/// No GPU sample.
pub(crate) const NO_SAMPLE: i64 = i64::MIN;

/// Accumulated figures of one table row.
#[derive(Debug)]
pub struct LineCell {
    /// Odd while the owner writes: readers retry.
    seq: AtomicU32,
    /// Executions of this row open on the owning thread. An execution that
    /// closes while another is open is nested in it (recursion): it counts
    /// in Occurrences and Mem usage, not in Increment or Peak, which the
    /// outer execution already holds. Only the owner reads or writes it.
    open: UnsafeCell<u32>,
    occurrences: AtomicU64,
    increment: AtomicI64,
    peak: AtomicU64,
    /// Highest heap after the row; `i64::MIN` before any execution.
    mem_usage: AtomicI64,
    /// Sum of GPU bytes after minus before, over sampled executions.
    gpu_increment: AtomicI64,
    /// GPU bytes after the row, highest over sampled executions;
    /// `NO_SAMPLE` when never sampled.
    gpu_usage: AtomicI64,
    /// Highest GPU rise within one execution.
    gpu_peak: AtomicU64,
    /// `fn` rows while counting: the driver's view (NVML) at call exit minus
    /// entry, summed, and at exit, highest; `NO_SAMPLE` when never read.
    driver_increment: AtomicI64,
    driver_usage: AtomicI64,
}

/// One reader's consistent copy of a [`LineCell`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RowFigures {
    pub(crate) occurrences: u64,
    pub(crate) increment: i64,
    pub(crate) peak: u64,
    pub(crate) mem_usage: i64,
    /// (increment, usage, peak), if any execution was sampled.
    pub(crate) gpu: Option<(i64, i64, u64)>,
    /// The driver's view, (increment, usage), if read (`fn` rows).
    pub(crate) driver: Option<(i64, i64)>,
}

impl RowFigures {
    /// Adds `other`'s executions to these.
    pub(crate) fn add(&mut self, other: &RowFigures) {
        self.occurrences += other.occurrences;
        self.increment += other.increment;
        self.peak = self.peak.max(other.peak);
        self.mem_usage = self.mem_usage.max(other.mem_usage);
        self.gpu = match (self.gpu, other.gpu) {
            (Some((i, u, p)), Some((j, v, q))) => Some((i + j, u.max(v), p.max(q))),
            (a, b) => a.or(b),
        };
        self.driver = match (self.driver, other.driver) {
            (Some((i, u)), Some((j, v))) => Some((i + j, u.max(v))),
            (a, b) => a.or(b),
        };
    }
}

impl Default for RowFigures {
    fn default() -> Self {
        RowFigures {
            occurrences: 0,
            increment: 0,
            peak: 0,
            mem_usage: i64::MIN,
            gpu: None,
            driver: None,
        }
    }
}

impl LineCell {
    /// An empty row.
    pub const fn new() -> Self {
        LineCell {
            seq: AtomicU32::new(0),
            open: UnsafeCell::new(0),
            occurrences: AtomicU64::new(0),
            increment: AtomicI64::new(0),
            peak: AtomicU64::new(0),
            mem_usage: AtomicI64::new(i64::MIN),
            gpu_increment: AtomicI64::new(0),
            gpu_usage: AtomicI64::new(NO_SAMPLE),
            gpu_peak: AtomicU64::new(0),
            driver_increment: AtomicI64::new(0),
            driver_usage: AtomicI64::new(NO_SAMPLE),
        }
    }

    /// `n` empty rows, for a call's own table.
    pub(crate) fn row_set(n: usize) -> Box<[LineCell]> {
        (0..n).map(|_| LineCell::new()).collect()
    }

    /// Executions of the row open on this (the owning) thread.
    #[inline(always)]
    fn open_count(&self) -> *mut u32 {
        self.open.get()
    }

    /// An execution of the row starts (owner only).
    #[inline(always)]
    pub(crate) fn opened(&self) {
        // SAFETY: only the owning thread touches `open`.
        unsafe { *self.open_count() += 1 }
    }

    #[inline(always)]
    fn begin_write(&self) -> u32 {
        let seq = load_u32(&self.seq);
        self.seq.store(seq.wrapping_add(1), Relaxed);
        fence(std::sync::atomic::Ordering::Release);
        seq
    }

    #[inline(always)]
    fn end_write(&self, seq: u32) {
        self.seq
            .store(seq.wrapping_add(2), std::sync::atomic::Ordering::Release);
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
        // SAFETY: only the owning thread touches `open`.
        let open = unsafe { &mut *self.open_count() };
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

    /// Adds one execution's GPU figures (owner only), under the recursion
    /// rule; before [`LineCell::closed`], which ends the execution.
    pub(crate) fn closed_gpu(&self, increment: i64, usage: i64, peak: u64) {
        // SAFETY: only the owning thread touches `open`.
        let nested = unsafe { *self.open_count() } > 1;
        let seq = self.begin_write();
        if !nested {
            self.gpu_increment
                .store(load_i64(&self.gpu_increment) + increment, Relaxed);
            if peak > load_u64(&self.gpu_peak) {
                self.gpu_peak.store(peak, Relaxed);
            }
        }
        self.gpu_usage
            .store(owned::max(usage, load_i64(&self.gpu_usage)), Relaxed);
        self.end_write(seq);
    }

    /// Adds one call's driver view (owner only, `fn` rows), under the
    /// recursion rule; before [`LineCell::closed`].
    pub(crate) fn closed_driver(&self, increment: i64, usage: i64) {
        // SAFETY: only the owning thread touches `open`.
        let nested = unsafe { *self.open_count() } > 1;
        let seq = self.begin_write();
        if !nested {
            self.driver_increment
                .store(load_i64(&self.driver_increment) + increment, Relaxed);
        }
        self.driver_usage
            .store(owned::max(usage, load_i64(&self.driver_usage)), Relaxed);
        self.end_write(seq);
    }

    /// A consistent copy of the row, whatever its owner is doing.
    pub(crate) fn read(&self) -> RowFigures {
        loop {
            let before = self.seq.load(std::sync::atomic::Ordering::Acquire);
            let usage = self.gpu_usage.load(Relaxed);
            let driver_usage = self.driver_usage.load(Relaxed);
            let figures = RowFigures {
                occurrences: self.occurrences.load(Relaxed),
                increment: self.increment.load(Relaxed),
                peak: self.peak.load(Relaxed),
                mem_usage: self.mem_usage.load(Relaxed),
                gpu: (usage != NO_SAMPLE).then(|| {
                    (
                        self.gpu_increment.load(Relaxed),
                        usage,
                        self.gpu_peak.load(Relaxed),
                    )
                }),
                driver: (driver_usage != NO_SAMPLE)
                    .then(|| (self.driver_increment.load(Relaxed), driver_usage)),
            };
            fence(std::sync::atomic::Ordering::Acquire);
            if before & 1 == 0 && self.seq.load(Relaxed) == before {
                return figures;
            }
            std::hint::spin_loop();
        }
    }

    /// Adds `figures` to the row (owner only, or under the lock that makes
    /// the caller its only writer).
    pub(crate) fn absorb(&self, figures: &RowFigures) {
        if figures.occurrences == 0 {
            return;
        }
        let mut sum = self.read();
        sum.add(figures);
        let seq = self.begin_write();
        self.store(&sum);
        self.end_write(seq);
    }

    /// Empties the row's figures; executions open stay open.
    pub(crate) fn clear(&self) {
        let seq = self.begin_write();
        self.store(&RowFigures::default());
        self.end_write(seq);
    }

    fn store(&self, f: &RowFigures) {
        self.occurrences.store(f.occurrences, Relaxed);
        self.increment.store(f.increment, Relaxed);
        self.peak.store(f.peak, Relaxed);
        self.mem_usage.store(f.mem_usage, Relaxed);
        let (gpu_increment, gpu_usage, gpu_peak) = f.gpu.unwrap_or((0, NO_SAMPLE, 0));
        self.gpu_increment.store(gpu_increment, Relaxed);
        self.gpu_usage.store(gpu_usage, Relaxed);
        self.gpu_peak.store(gpu_peak, Relaxed);
        let (driver_increment, driver_usage) = f.driver.unwrap_or((0, NO_SAMPLE));
        self.driver_increment.store(driver_increment, Relaxed);
        self.driver_usage.store(driver_usage, Relaxed);
    }
}

// SAFETY: other threads only read the atomics; `open` is touched by the
// owning thread alone.
unsafe impl Sync for LineCell {}

impl Default for LineCell {
    fn default() -> Self {
        Self::new()
    }
}
