//! [`QuietCall`]: what generated code calls for a synchronous function
//! whose body it can also run as written, when the kernel enters the call
//! quietly (see `kernel::quiet`).

use crate::alloc::KERNEL_GLOBALS;
use crate::calls::FnMeta;
use crate::kernel::layout::{QUIET, QuietHead};

/// A quiet call of a profiled function, whose head the kernel keeps on the
/// thread's side stack (null: a call under `MEMPROF=off`, which records
/// nothing): generated code runs the body as written while it holds one.
/// Ends the call when dropped.
#[derive(Debug)]
#[must_use]
pub struct QuietCall(*const QuietHead);

impl QuietCall {
    /// Whether generated code runs a call of `meta`'s function as written:
    /// under `MEMPROF=off` (a call that records nothing), or when its calls
    /// are quiet (a quiet call). `None`: the call takes
    /// its rows.
    ///
    /// PERF: under `MEMPROF=off`, one load and a test, as `is_off`;
    /// otherwise one call into the kernel, as [`super::SyncCall::start`].
    #[inline(always)]
    pub fn as_written(meta: &'static FnMeta) -> Option<QuietCall> {
        if crate::calls::is_off() {
            return Some(QuietCall(std::ptr::null()));
        }
        // PERF: a call with rows reads one more static, with no call.
        if crate::kernel::thread::load_relaxed(&meta.head.quiet) != QUIET {
            return None;
        }
        Self::start(meta)
    }

    #[cfg_attr(memprof_unoptimized, inline(never))]
    #[cfg_attr(not(memprof_unoptimized), inline(always))]
    fn start(meta: &'static FnMeta) -> Option<QuietCall> {
        // SAFETY: a function's head and the runtime's globals.
        let head = unsafe { crate::kernel::quiet_enter(&meta.head, &KERNEL_GLOBALS) };
        (!head.is_null()).then_some(QuietCall(head))
    }
}

impl Drop for QuietCall {
    // PERF: inlined into the drop glue only, as `SyncCall`'s.
    #[inline(always)]
    fn drop(&mut self) {
        if !self.0.is_null() {
            // SAFETY: this thread's innermost quiet call, which the kernel
            // entered: generated code holds it for the body's run, and the
            // calls nested in the body have ended.
            unsafe { crate::kernel::quiet_exit(self.0, &KERNEL_GLOBALS) };
        }
    }
}
