//! Which of a function's calls the kernel may enter (`FnHead::fast`): the
//! permit a call the runtime entered grants, and the streak of calls that
//! moved nothing, which the runtime counts while the kernel may enter only
//! quiet calls (under `mprof run`).

use super::{AUTO_CALL_TABLES, Frame};
use crate::calls::meta::{table_every_call, tables_per_thread};
use crate::kernel::layout::{FAST_ALL, FAST_QUIET};
use crate::owned::get;
use crate::region::Scope;
use std::sync::atomic::Ordering::Relaxed;

impl Frame {
    /// Lets the kernel enter this function's later calls if nothing about
    /// them can differ from this one's but through `memprof::reset` (which
    /// withdraws it): see `FnHead::fast`. `timed`: the `mprof run`
    /// timeline times each call with rows, which the kernel's entry does
    /// not: there it enters quiet calls only.
    #[cold]
    pub(super) fn grant_fast_entry(&self, timed: bool) {
        let meta = self.meta;
        // SAFETY: a non-null aggregate lives as long as this thread.
        let thread_done = unsafe { get(&self.state().thread_fn).as_ref() }
            .is_some_and(|t| t.tables.get() >= AUTO_CALL_TABLES);
        let tables_done =
            meta.tables.load(Relaxed) >= AUTO_CALL_TABLES || (thread_done && tables_per_thread());
        // A call that reads the GPU at its entry and exit goes through the
        // runtime, whether or not its statements do.
        let watches_gpu = meta.gpu && crate::gpu::active();
        let alike = tables_done
            && !meta.has_budget()
            && !table_every_call()
            && meta.scope == Scope::Thread
            && !watches_gpu
            && !get(&self.state().slow)
            && !crate::calls::exit_report_taken_already();
        if alike {
            let fast = match timed {
                true => FAST_QUIET,
                false => FAST_ALL,
            };
            meta.head.fast.store(fast, Relaxed);
        }
    }

    /// After the runtime ended this call, while the kernel may enter only
    /// the function's quiet calls (see `FnHead::fast`): counts it in the
    /// thread's streak of calls that moved nothing, as the kernel counts
    /// the calls it ends. `moved`: it did move the heap, or is to be timed
    /// again.
    pub(crate) fn count_streak(&self, moved: bool) {
        if self.meta.head.fast.load(Relaxed) != FAST_QUIET {
            return;
        }
        // SAFETY: a non-null aggregate lives as long as this thread.
        if let Some(t) = unsafe { get(&self.state().thread_fn).as_ref() } {
            crate::kernel::call::count_streak(t, moved, !get(&self.state().outermost));
        }
    }
}
