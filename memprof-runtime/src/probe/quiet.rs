//! [`QuietCall`]: what generated code calls for a synchronous function
//! whose body it can also run as written, when the kernel enters the call
//! quietly (see `kernel::quiet`).

use crate::alloc::KERNEL_GLOBALS;
use crate::calls::FnMeta;
use crate::kernel::layout::{QUIET, QuietHead};

/// A quiet call of a profiled function, whose head the kernel keeps on the
/// thread's side stack: generated code runs the body as written while it
/// holds one. Ends the call when dropped.
#[derive(Debug)]
#[must_use]
pub struct QuietCall(*const QuietHead);

impl QuietCall {
    /// A quiet call of `meta`'s function, if its calls are quiet; `None`:
    /// the call takes its rows. Generated code asks after `is_off`.
    ///
    /// PERF: a call with rows reads one static more, with no call; a quiet
    /// one makes one call into the kernel, as [`super::SyncCall::start`].
    #[inline(always)]
    pub fn start(meta: &'static FnMeta) -> Option<QuietCall> {
        if crate::kernel::thread::load_relaxed(&meta.head.quiet) != QUIET {
            return None;
        }
        // The frame of the function this is inlined into: the body's, where
        // its events are found (see `quiet_events`).
        Self::enter(meta, crate::sites::anchor())
    }

    #[cfg_attr(memprof_unoptimized, inline(never))]
    #[cfg_attr(not(memprof_unoptimized), inline(always))]
    fn enter(meta: &'static FnMeta, anchor: usize) -> Option<QuietCall> {
        // SAFETY: a function's head and the runtime's globals.
        let head = unsafe { crate::kernel::quiet_enter(&meta.head, &KERNEL_GLOBALS, anchor) };
        // NOTE: not `then_some`, which would make and drop a null one.
        if head.is_null() {
            None
        } else {
            Some(QuietCall(head))
        }
    }
}

impl Drop for QuietCall {
    // PERF: inlined into the drop glue only, as `SyncCall`'s.
    #[inline(always)]
    fn drop(&mut self) {
        // SAFETY: this thread's innermost quiet call, which the kernel
        // entered: generated code holds it for the body's run, and the
        // calls nested in the body have ended.
        unsafe { crate::kernel::quiet_exit(self.0, &KERNEL_GLOBALS) };
    }
}
