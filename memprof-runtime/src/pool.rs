//! A framework's own memory pool, as the framework counts it: the bytes its
//! live tensors hold ("allocated", PyTorch's `torch.cuda.memory_allocated`)
//! and the bytes its pools hold from the driver ("reserved",
//! `torch.cuda.memory_reserved`). A program or an integration hands memprof
//! a reader ([`watch_pool`]); profiled calls that watch the GPU then read
//! it at each statement boundary, and their tables gain the `Pool` columns.
//!
//! Only the framework knows which of its bytes a tensor holds: CUPTI sees
//! what the pools take from the driver, NVML what the process holds in all.
//! A reader typically takes the framework's lock and microseconds, so it is
//! read only while one is registered, and such calls take the runtime's
//! step. Reads run untracked: the reader's own allocations never show in a
//! heap figure. The figures are the framework's, all threads: a pool has no
//! notion of which thread asked.

use crate::alloc::untracked;
use std::sync::RwLock;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

/// One reading of a framework's memory pool, in bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PoolUsage {
    /// Bytes held by live tensors (PyTorch's `memory_allocated`; cubecl's
    /// `bytes_in_use`).
    pub allocated: u64,
    /// Bytes the pools hold from the driver, in use or not (PyTorch's
    /// `memory_reserved`; cubecl's `bytes_reserved`).
    pub reserved: u64,
}

type Reader = Box<dyn Fn() -> Option<PoolUsage> + Send + Sync>;

struct Watched {
    /// Names the pool in the tables' header line.
    name: String,
    read: Reader,
}

static WATCHED: RwLock<Option<Watched>> = RwLock::new(None);
/// A reader is registered: one relaxed load at each call's entry.
static ON: AtomicBool = AtomicBool::new(false);

/// Reads `name`'s pool through `read` at the statement boundaries of every
/// profiled call that watches the GPU (all but `#[profile(gpu = false)]`),
/// from the next call on; replaces an earlier reader. `read` answers `None`
/// when it cannot read now: those lines get no pool figures. The caller
/// withdraws the functions' fast entries (see `crate::watch_pool`).
pub(crate) fn watch(
    name: impl Into<String>,
    read: impl Fn() -> Option<PoolUsage> + Send + Sync + 'static,
) {
    let watched = untracked(|| Watched {
        name: name.into(),
        read: Box::new(read),
    });
    let mut slot = WATCHED.write().unwrap_or_else(|e| e.into_inner());
    // The old reader is dropped untracked too.
    let old = slot.replace(watched);
    drop(slot);
    untracked(|| drop(old));
    ON.store(true, Relaxed);
}

/// Stops reading the pool: later calls have no `Pool` columns. Documented
/// at `memprof::unwatch_pool`.
pub fn unwatch_pool() {
    ON.store(false, Relaxed);
    let old = WATCHED.write().unwrap_or_else(|e| e.into_inner()).take();
    untracked(|| drop(old));
}

/// Whether a reader is registered.
#[inline]
pub(crate) fn watched() -> bool {
    ON.load(Relaxed)
}

/// The pool now, if a reader is registered and answers.
pub(crate) fn read() -> Option<PoolUsage> {
    if !watched() {
        return None;
    }
    untracked(|| {
        let slot = WATCHED.read().unwrap_or_else(|e| e.into_inner());
        slot.as_ref().and_then(|w| (w.read)())
    })
}

/// The header line for tables with `Pool` columns.
pub(crate) fn description() -> Option<String> {
    let slot = WATCHED.read().unwrap_or_else(|e| e.into_inner());
    slot.as_ref().map(|w| {
        format!(
            "Pool: {}'s own figures: allocated = bytes in live tensors \
             (PyTorch's memory_allocated), reserved = bytes its pools hold \
             (memory_reserved)",
            w.name
        )
    })
}

/// A row's Pool columns: one execution's, between two readings, or a
/// row's over its executions (see `RowFigures::add`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PoolFigures {
    /// Bytes in live tensors after minus before (summed over executions).
    pub(crate) increment: i64,
    /// Bytes in live tensors after (the highest).
    pub(crate) allocated: i64,
    /// Bytes the pools held from the driver after (the highest).
    pub(crate) reserved: i64,
}

/// One execution's figures between two readings.
pub(crate) fn figures(start: PoolUsage, end: PoolUsage) -> PoolFigures {
    let signed = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
    PoolFigures {
        increment: signed(end.allocated).saturating_sub(signed(start.allocated)),
        allocated: signed(end.allocated),
        reserved: signed(end.reserved),
    }
}
