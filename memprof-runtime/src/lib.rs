//! Runtime of memprof: the counting allocator, the probes that generated code
//! calls, aggregation, and rendering.
//!
//! Users depend on the `memprof` facade crate, which re-exports what is public
//! here. The modules form layers, from the leaves and the allocator's
//! counters up to what generated code calls; each imports only from its own
//! layer and the layers below it, and data flows upwards. The table in
//! `docs/internals.md` ("The runtime's modules and who owns what") is the one
//! place the order is written: `scripts/check-modules` reads it and fails on
//! an import from a layer above.
//!
//! The hot path crosses the layers once: generated code calls `probe`, whose
//! steady-state work is one call into `kernel` (see there), which reads and
//! writes the state that `alloc` and `calls` own through their `repr(C)`
//! heads.

#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

pub mod alloc;
mod budget;
mod calls;
mod cells;
pub mod config;
mod document;
#[cfg(unix)]
mod fork;
#[cfg(feature = "gpu")]
mod gpu;
#[cfg(not(feature = "gpu"))]
#[path = "gpu/off.rs"]
mod gpu;
#[doc(hidden)]
pub mod gpu_rule;
mod json_file;
mod kernel;
#[cfg(unix)]
mod live;
#[cfg(not(unix))]
#[path = "live/off.rs"]
mod live;
#[cfg(unix)]
#[doc(hidden)]
pub mod live_rule;
mod measure;
use kernel::owned;
mod os;
mod output;
mod pool;
mod pprof;
mod probe;
mod quiet_events;
mod region;
mod render;
mod report;
#[doc(hidden)]
pub mod safe_file;
mod settings;
mod sink;
mod sites;
mod stdio;
mod summary;
#[doc(hidden)]
pub mod text;
mod timeline;
mod tls;
mod track;
pub mod units;

pub use alloc::{Allocator, process_heap};
pub use calls::AUTO_CALL_TABLES;
pub use document::{ReadError, ReportDocument, SnapshotFacts};
pub use measure::Measurement;
pub use pool::{PoolUsage, unwatch_pool};
pub use pprof::{DecodeError, HeapProfile, HeapValues, heap_profile};
pub use region::Scope;
pub use report::{FunctionReport, LineCall, LineReport, Report, report, reset};
pub use sites::{Site, SiteFrame, SitesLeftOut};
pub use summary::{FunctionSummary, Summary, TopLine, TopSite};

/// Reads a framework's pool at the statements of profiled calls.
/// Documented at `memprof::watch_pool`.
pub fn watch_pool(
    name: impl Into<String>,
    read: impl Fn() -> Option<PoolUsage> + Send + Sync + 'static,
) {
    pool::watch(name, read);
    // A function's fast entry skips the runtime's step, which reads the
    // pool: later calls take the runtime's entry again.
    alloc::untracked(|| {
        for meta in report::registered() {
            meta.withdraw_fast_entry();
        }
    });
}

/// Runs `f` and measures the heap it used on the calling thread (or async
/// task), without printing anything. Documented at `memprof::measure`.
pub fn measure<R>(f: impl FnOnce() -> R) -> (R, Measurement) {
    measure_in(Scope::Thread, f)
}

/// [`measure`] in `scope`. Documented at `memprof::measure_in`.
pub fn measure_in<R>(scope: Scope, f: impl FnOnce() -> R) -> (R, Measurement) {
    let guard = measure::MeasureGuard::start(scope);
    let value = f();
    let (measurement, _, _) = guard.finish();
    if !alloc::is_installed() {
        alloc::untracked(output::warn_not_installed);
    }
    (value, measurement)
}

// Not public API. Used by generated code.
#[doc(hidden)]
pub mod __private {
    pub use crate::alloc::{SLOT_COUNT, slots_in_use};
    pub use crate::budget::{Comparison, Condition, Quantity, check_memory};
    pub use crate::calls::{Cursor, FnMeta, Instrumented, Registration, TailGuard, is_off};
    pub use crate::cells::LineCell;
    pub use crate::kernel::library as kernel_library;
    pub use crate::measure::MeasureGuard;
    pub use crate::probe::{
        CallFrame, CallGuard, Probe, QuietCall, StackCursor, StackTail, SyncCall, statement,
    };
    pub use crate::region::Scope;
    pub use crate::report::reports_built;
    pub use crate::sites::mapped_bytes as sites_mapped_bytes;
    pub use crate::sites::table_sets as sites_table_sets;
    pub use crate::tls::{give_up as give_up_tls_shortcut, in_use as tls_shortcut_in_use};
    pub use crate::track::track;
    pub use inventory;
}
