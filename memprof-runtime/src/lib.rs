//! Runtime of memprof: the counting allocator, the probes that generated code
//! calls, aggregation, and rendering.
//!
//! Users depend on the `memprof` facade crate, which re-exports what is public
//! here. Data flows one way: allocator ([`alloc`]) → probes (`probe`) → per-call
//! frames → per-function aggregates → [`Report`] → tables (`render`).

#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

pub mod alloc;
mod budget;
pub mod env;
mod gpu;
mod probe;
mod render;
mod report;
mod timeline;
mod tls;
mod track;
pub mod units;

pub use alloc::{Allocator, process_heap};
pub use report::{
    AUTO_CALL_TABLES, FunctionReport, LineReport, Measurement, Report, report, reset,
};

/// Runs `f` and measures the heap it used on the calling thread (or async
/// task), without printing anything. Documented at `memprof::measure`.
pub fn measure<R>(f: impl FnOnce() -> R) -> (R, Measurement) {
    let guard = probe::MeasureGuard::start();
    let value = f();
    let (measurement, _) = guard.finish();
    if !alloc::is_installed() {
        alloc::untracked(report::warn_not_installed);
    }
    (value, measurement)
}

// Not public API. Used by generated code.
#[doc(hidden)]
pub mod __private {
    pub use crate::budget::{Comparison, Condition, Quantity, check_memory};
    pub use crate::probe::{
        CallFrame, CallGuard, Cursor, FnMeta, Instrumented, LineCell, MeasureGuard, Registration,
        Scope, TailGuard,
    };
    pub use crate::tls::{give_up as give_up_tls_shortcut, in_use as tls_shortcut_in_use};
    pub use crate::track::track;
    pub use crate::units::size_or_panic;
    pub use inventory;
}
