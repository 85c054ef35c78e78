//! What generated code calls for a profiled function: [`CallFrame`] and the
//! [`CallGuard`] that ends a call. The top layer: it wires a call's end to
//! the budgets, the `mprof run` timeline and the printed tables.

use crate::calls::{Cursor, FnMeta, Frame};
use crate::timeline::CallMark;
use std::marker::PhantomData;

/// One call of a profiled function, declared first in its body. `N`, the
/// number of rows the function records, is kept for the generated code's
/// shape: the rows live in the thread's aggregate, not in the frame.
#[derive(Debug)]
pub struct CallFrame<const N: usize> {
    frame: Frame,
    _rows: PhantomData<[(); N]>,
}

impl<const N: usize> CallFrame<N> {
    /// An empty frame for `meta`.
    #[inline]
    pub fn new(meta: &'static FnMeta) -> Self {
        CallFrame {
            frame: Frame::new(meta),
            _rows: PhantomData,
        }
    }

    /// Starts a synchronous call: it can be recursive, and prints once.
    #[inline]
    pub fn enter(&self) -> CallGuard<'_> {
        self.frame.enter();
        CallGuard::new(&self.frame, true)
    }

    /// Starts an `async fn` call: printed under the same rules as a
    /// synchronous call.
    #[inline]
    pub fn enter_async(&self) -> CallGuard<'_> {
        self.frame.enter_async();
        CallGuard::new(&self.frame, false)
    }

    /// The statement cursor of one block: see [`Cursor`].
    #[inline]
    pub fn cursor(&self) -> Cursor<'_> {
        // `enter` ran before any block of the body: `gpu` and the rows are
        // set, or the call records nothing.
        Cursor::new(self.frame.is_recording().then_some(&self.frame))
    }
}

/// Closes a call when dropped: records the `fn` row, checks the budgets,
/// writes the `FUNC` line, and prints the call's table if it has one.
#[derive(Debug)]
#[must_use]
pub struct CallGuard<'a> {
    frame: &'a Frame,
    /// The call's start, for its `FUNC` line under `mprof run`.
    mark: CallMark,
}

impl<'a> CallGuard<'a> {
    #[inline(always)]
    fn new(frame: &'a Frame, nests: bool) -> Self {
        let mark = if frame.is_runtime_entered() {
            crate::output::at_first_call();
            crate::timeline::call_start(nests)
        } else {
            CallMark::none()
        };
        CallGuard { frame, mark }
    }
}

impl Drop for CallGuard<'_> {
    #[inline(always)]
    fn drop(&mut self) {
        if !self.frame.exit_in_kernel() && self.frame.is_recording() {
            finish(self.frame, &self.mark);
        }
    }
}

/// Ends a recording call: see [`CallGuard`].
#[inline(never)]
fn finish(frame: &Frame, mark: &CallMark) {
    let meta = frame.meta;
    crate::timeline::call_end(mark, meta);
    let exit = frame.exit();
    let over_budget = if meta.has_budget() {
        crate::budget::Budget::check(meta, &exit.stats)
    } else {
        None
    };
    // The call's own table, for a budget message, before it is merged.
    let message = over_budget
        .filter(|_| !std::thread::panicking())
        .map(|budget| budget.message(meta, frame.cells(), &exit.facts));
    if let Some((table, nth)) = exit.table
        && message.is_none()
    {
        // A failed call's table is in its message, and printed only there.
        crate::output::call_finished(meta, table.cells(), nth, &exit.facts);
    }
    if let Some(message) = message {
        // A budget is an assertion: the call fails after it returns, as
        // pytest-memray's `limit_memory` fails a test. NOTE: the panic's
        // location is this line (`#[track_caller]` does not reach through
        // `Drop`), so the message names the function's own.
        panic!("{message}");
    }
}
