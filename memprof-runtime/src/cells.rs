//! The figures of one table row, [`LineCell`], and how executions add to it.
//!
//! A cell is written by one thread at a time: the thread whose aggregate it
//! belongs to, or the call that owns it. Other threads only read it, for
//! `report()`. Each write is bracketed by a per-cell sequence number, so a
//! reader never sees a row with half an execution in it.

use crate::gpu::GpuFigures;
pub use crate::kernel::layout::LineCell;
pub(crate) use crate::kernel::layout::NO_SAMPLE;
use crate::owned::{self, load_i64, load_u64};
use crate::pool::PoolFigures;
use std::sync::atomic::{AtomicI64, Ordering::Relaxed, fence};

/// One reader's consistent copy of a [`LineCell`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RowFigures {
    pub(crate) occurrences: u64,
    pub(crate) increment: i64,
    pub(crate) peak: u64,
    pub(crate) allocations: u64,
    /// Bytes allocated (a `realloc`'s new size), under the same rule.
    pub(crate) allocated: u64,
    pub(crate) mem_usage: i64,
    /// The GPU columns, if any execution was sampled: increments summed,
    /// usage and peak the highest.
    pub(crate) gpu: Option<GpuFigures>,
    /// The driver's view, if read (`fn` rows).
    pub(crate) driver: Option<DriverFigures>,
    /// A framework's pool, if read (see `pool`).
    pub(crate) pool: Option<PoolFigures>,
}

/// A `fn` row's driver view (NVML, read at call entry and exit).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DriverFigures {
    /// At exit minus at entry (summed over calls).
    pub(crate) increment: i64,
    /// At exit (the highest).
    pub(crate) usage: i64,
}

impl RowFigures {
    /// Adds `other`'s executions to these: counts and sums add (held at
    /// their type's bounds), highs take the higher. The one merge rule of
    /// rows: threads' aggregates of a function, the cells of one source
    /// line, and processes' reports (`Report::add`) all merge through it.
    pub(crate) fn add(&mut self, other: &RowFigures) {
        self.occurrences = self.occurrences.saturating_add(other.occurrences);
        self.increment = self.increment.saturating_add(other.increment);
        self.peak = self.peak.max(other.peak);
        self.allocations = self.allocations.saturating_add(other.allocations);
        self.allocated = self.allocated.saturating_add(other.allocated);
        self.mem_usage = self.mem_usage.max(other.mem_usage);
        self.gpu = match (self.gpu, other.gpu) {
            (Some(a), Some(b)) => Some(GpuFigures {
                increment: a.increment.saturating_add(b.increment),
                usage: a.usage.max(b.usage),
                peak: a.peak.max(b.peak),
            }),
            (a, b) => a.or(b),
        };
        self.driver = match (self.driver, other.driver) {
            (Some(a), Some(b)) => Some(DriverFigures {
                increment: a.increment.saturating_add(b.increment),
                usage: a.usage.max(b.usage),
            }),
            (a, b) => a.or(b),
        };
        self.pool = match (self.pool, other.pool) {
            (Some(a), Some(b)) => Some(PoolFigures {
                increment: a.increment.saturating_add(b.increment),
                allocated: a.allocated.max(b.allocated),
                reserved: a.reserved.max(b.reserved),
            }),
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
            allocations: 0,
            allocated: 0,
            mem_usage: i64::MIN,
            gpu: None,
            driver: None,
            pool: None,
        }
    }
}

impl LineCell {
    /// `n` empty rows, for a call's own table.
    pub(crate) fn row_set(n: usize) -> Box<[LineCell]> {
        (0..n).map(|_| LineCell::new()).collect()
    }

    /// Adds one execution's GPU figures (owner only), under the recursion
    /// rule; before [`LineCell::closed`], which ends the execution.
    pub(crate) fn closed_gpu(&self, figures: GpuFigures) {
        self.closed_beside(|nested| {
            if !nested {
                sum(&self.gpu_increment, figures.increment);
                if figures.peak > load_u64(&self.gpu_peak) {
                    self.gpu_peak.store(figures.peak, Relaxed);
                }
            }
            raise(&self.gpu_usage, figures.usage);
        });
    }

    /// Adds one call's driver view (owner only, `fn` rows), under the
    /// recursion rule; before [`LineCell::closed`].
    pub(crate) fn closed_driver(&self, figures: DriverFigures) {
        self.closed_beside(|nested| {
            if !nested {
                sum(&self.driver_increment, figures.increment);
            }
            raise(&self.driver_usage, figures.usage);
        });
    }

    /// Adds one execution's pool figures, from [`crate::pool::figures`]
    /// (owner only), under the recursion rule; before [`LineCell::closed`].
    pub(crate) fn closed_pool(&self, figures: PoolFigures) {
        self.closed_beside(|nested| {
            if !nested {
                sum(&self.pool_increment, figures.increment);
            }
            raise(&self.pool_allocated, figures.allocated);
            raise(&self.pool_reserved, figures.reserved);
        });
    }

    /// One write of the figures beside the heap's (owner only): `write`
    /// stores them, told whether this execution is nested in another of
    /// the row's (recursion), whose sums must not count it twice.
    fn closed_beside(&self, write: impl FnOnce(bool)) {
        // SAFETY: only the owning thread touches `open`.
        let nested = unsafe { *self.open.get() } > 1;
        let seq = self.begin_write();
        write(nested);
        self.end_write(seq);
    }

    /// A consistent copy of the row, whatever its owner is doing.
    pub(crate) fn read(&self) -> RowFigures {
        loop {
            let before = self.seq.load(std::sync::atomic::Ordering::Acquire);
            let usage = self.gpu_usage.load(Relaxed);
            let driver_usage = self.driver_usage.load(Relaxed);
            let pool_allocated = self.pool_allocated.load(Relaxed);
            let figures = RowFigures {
                occurrences: self.occurrences.load(Relaxed),
                increment: self.increment.load(Relaxed),
                peak: self.peak.load(Relaxed),
                allocations: self.allocations.load(Relaxed),
                allocated: self.allocated.load(Relaxed),
                mem_usage: self.mem_usage.load(Relaxed),
                gpu: (usage != NO_SAMPLE).then(|| GpuFigures {
                    increment: self.gpu_increment.load(Relaxed),
                    usage,
                    peak: self.gpu_peak.load(Relaxed),
                }),
                driver: (driver_usage != NO_SAMPLE).then(|| DriverFigures {
                    increment: self.driver_increment.load(Relaxed),
                    usage: driver_usage,
                }),
                pool: (pool_allocated != NO_SAMPLE).then(|| PoolFigures {
                    increment: self.pool_increment.load(Relaxed),
                    allocated: pool_allocated,
                    reserved: self.pool_reserved.load(Relaxed),
                }),
            };
            fence(std::sync::atomic::Ordering::Acquire);
            if before & 1 == 0 && self.seq.load(Relaxed) == before {
                return figures;
            }
            std::hint::spin_loop();
        }
    }

    /// In a child process after `fork`: ends a write that a thread of the
    /// parent was making as it forked, which no thread will finish here, so
    /// that [`LineCell::read`] does not wait for it forever. The row keeps
    /// whatever part of that one execution's figures was written.
    #[cfg(unix)]
    pub(crate) fn end_lost_write(&self) {
        let seq = self.seq.load(Relaxed);
        if seq & 1 == 1 {
            self.seq
                .store(seq.wrapping_add(1), std::sync::atomic::Ordering::Release);
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
        self.allocations.store(f.allocations, Relaxed);
        self.allocated.store(f.allocated, Relaxed);
        self.mem_usage.store(f.mem_usage, Relaxed);
        let gpu = f.gpu.unwrap_or(GpuFigures {
            increment: 0,
            usage: NO_SAMPLE,
            peak: 0,
        });
        self.gpu_increment.store(gpu.increment, Relaxed);
        self.gpu_usage.store(gpu.usage, Relaxed);
        self.gpu_peak.store(gpu.peak, Relaxed);
        let driver = f.driver.unwrap_or(DriverFigures {
            increment: 0,
            usage: NO_SAMPLE,
        });
        self.driver_increment.store(driver.increment, Relaxed);
        self.driver_usage.store(driver.usage, Relaxed);
        let pool = f.pool.unwrap_or(PoolFigures {
            increment: 0,
            allocated: NO_SAMPLE,
            reserved: NO_SAMPLE,
        });
        self.pool_increment.store(pool.increment, Relaxed);
        self.pool_allocated.store(pool.allocated, Relaxed);
        self.pool_reserved.store(pool.reserved, Relaxed);
    }
}

/// Adds `v` to a figure that sums (owner only, inside a write).
fn sum(figure: &AtomicI64, v: i64) {
    figure.store(load_i64(figure) + v, Relaxed);
}

/// Raises a figure that keeps the highest to `v` (owner only, inside a
/// write).
fn raise(figure: &AtomicI64, v: i64) {
    figure.store(owned::max(v, load_i64(figure)), Relaxed);
}
