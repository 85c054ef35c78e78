//! Plain reads and writes of state that only the calling thread writes.
//!
//! PERF: generated code calls the statement probes on every statement, and
//! under `cargo test` the runtime is compiled without optimization, where
//! `Cell::get`, `AtomicI64::load` and `Ord::max` are each a real call (an
//! atomic load several). These helpers are always inlined, in every build,
//! to a single move.

use core::cell::{Cell, UnsafeCell};
use core::sync::atomic::{AtomicI64, AtomicU32, AtomicU64, AtomicUsize};

/// `c.get()`.
#[inline(always)]
pub(crate) fn get<T: Copy>(c: &Cell<T>) -> T {
    // SAFETY: `Cell<T>` has the layout of `T`, and a `Cell` is only ever
    // used by one thread, this one.
    unsafe { *(c as *const Cell<T>).cast::<T>() }
}

/// `c.set(value)`.
#[inline(always)]
pub(crate) fn set<T: Copy>(c: &Cell<T>, value: T) {
    // SAFETY: `Cell<T>` is a transparent `UnsafeCell<T>`, whose `get` (always
    // inlined) is the way to write through a shared reference; only this
    // thread uses the cell, and no reference into its contents exists.
    unsafe { *(*(c as *const Cell<T>).cast::<UnsafeCell<T>>()).get() = value }
}

/// A relaxed load of an atomic that only this thread stores to. Other
/// threads may load it at the same time: reads never race with reads.
#[inline(always)]
pub(crate) fn load_i64(a: &AtomicI64) -> i64 {
    // SAFETY: `AtomicI64` has the layout of `i64`; every store to it is
    // made by this thread, so nothing writes it during this read.
    unsafe { *(a as *const AtomicI64).cast::<i64>() }
}

/// [`load_i64`] for `AtomicU64`.
#[inline(always)]
pub(crate) fn load_u64(a: &AtomicU64) -> u64 {
    // SAFETY: as in `load_i64`.
    unsafe { *(a as *const AtomicU64).cast::<u64>() }
}

/// [`load_i64`] for `AtomicU32`.
#[inline(always)]
pub(crate) fn load_u32(a: &AtomicU32) -> u32 {
    // SAFETY: as in `load_i64`.
    unsafe { *(a as *const AtomicU32).cast::<u32>() }
}

/// [`load_i64`] for `AtomicUsize`.
#[inline(always)]
pub(crate) fn load_usize(a: &AtomicUsize) -> usize {
    // SAFETY: as in `load_i64`.
    unsafe { *(a as *const AtomicUsize).cast::<usize>() }
}

/// The larger of two integers, without `Ord::max`'s call.
#[inline(always)]
pub(crate) fn max(a: i64, b: i64) -> i64 {
    if a > b { a } else { b }
}
