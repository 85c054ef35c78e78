//! `async fn`: each poll of the body counts as the task's own, whichever
//! thread runs it, and its lines are the callers of what they call while
//! it is polled (see `calls::edges`).

use super::Frame;
use super::edges::PollChain;
use crate::alloc::THREAD;
use crate::region::with_thread;
use std::future::Future;
use std::mem::ManuallyDrop;
use std::pin::Pin;
use std::task::{Context, Poll};

/// A task's own counters, carried between polls.
#[derive(Debug, Clone, Copy)]
struct TaskCounters {
    net: i64,
    allocs: u64,
    deallocs: u64,
    allocated: u64,
    watermark: i64,
}

/// What a poll replaced in the thread's context, restored when it ends.
#[derive(Default)]
struct PollScope {
    adjust_net: i64,
    adjust_allocs: u64,
    adjust_deallocs: u64,
    adjust_allocated: u64,
    outer_watermark: i64,
    outer_hi: i64,
}

fn poll_enter(task: &TaskCounters) -> PollScope {
    with_thread(|t| {
        let outer = PollScope {
            adjust_net: t.adjust_net.get(),
            adjust_allocs: t.adjust_allocs.get(),
            adjust_deallocs: t.adjust_deallocs.get(),
            adjust_allocated: t.adjust_allocated.get(),
            outer_watermark: (t.peak.get() + t.adjust_net.get()).max(t.carry.get()),
            outer_hi: t.hi.get().max(t.peak.get()),
        };
        t.adjust_net.set(task.net - t.net());
        t.adjust_allocs
            .set(task.allocs.wrapping_sub(t.allocs.get()));
        t.adjust_deallocs
            .set(task.deallocs.wrapping_sub(t.deallocs.get()));
        t.adjust_allocated
            .set(task.allocated.wrapping_sub(t.allocated.get()));
        t.peak.set(t.net());
        t.hi.set(t.net());
        t.carry.set(task.watermark);
        outer
    })
}

fn poll_exit(task: &mut TaskCounters, outer: PollScope) {
    let _ = THREAD.try_with(|t| {
        task.net = t.net() + t.adjust_net.get();
        task.allocs = t.allocs.get().wrapping_add(t.adjust_allocs.get());
        task.deallocs = t.deallocs.get().wrapping_add(t.adjust_deallocs.get());
        task.allocated = t.allocated.get().wrapping_add(t.adjust_allocated.get());
        task.watermark = (t.peak.get() + t.adjust_net.get()).max(t.carry.get());
        // The highest the thread really went during this poll, which the
        // context we return to must see as part of its own watermark.
        let real = t.hi.get().max(t.peak.get());
        t.adjust_net.set(outer.adjust_net);
        t.adjust_allocs.set(outer.adjust_allocs);
        t.adjust_deallocs.set(outer.adjust_deallocs);
        t.adjust_allocated.set(outer.adjust_allocated);
        t.carry
            .set(outer.outer_watermark.max(real + outer.adjust_net));
        t.hi.set(outer.outer_hi.max(real));
        t.peak.set(t.net());
    });
}

/// Wraps an `async fn` body so that each poll counts as the task's own,
/// whichever thread runs it.
#[derive(Debug)]
pub struct Instrumented<F> {
    inner: ManuallyDrop<F>,
    task: TaskCounters,
    /// The call's frame, once its first poll made it, for allocation
    /// sites (see `calls::polling`).
    frame: super::polling::Slot,
}

impl<F> Instrumented<F> {
    /// Wraps `inner`.
    pub fn new(inner: F) -> Self {
        Instrumented {
            inner: ManuallyDrop::new(inner),
            task: TaskCounters {
                net: 0,
                allocs: 0,
                deallocs: 0,
                allocated: 0,
                watermark: i64::MIN,
            },
            frame: super::polling::Slot::new(),
        }
    }
}

/// Puts the innermost cursor with a row open of the call whose frame
/// registered in `slot` in the thread's chain until the value drops, its
/// cursors stepping with this thread's counters: at its first poll, the
/// call enters and names its caller from the poller's.
fn chain(slot: &super::polling::Slot) -> PollChain {
    let frame = slot.get().cast::<Frame>();
    // SAFETY: null or the frame of the call running in `inner`, which
    // leaves the slot before it ends.
    let innermost = match unsafe { frame.as_ref() } {
        Some(frame) => {
            let innermost = frame.polled_here();
            // SAFETY: the call's innermost linked cursor, open.
            unsafe { super::cursor::rebind(innermost) };
            innermost
        }
        None => std::ptr::null(),
    };
    PollChain::enter(innermost)
}

struct PollExit<'a> {
    task: &'a mut TaskCounters,
    outer: Option<PollScope>,
}

impl Drop for PollExit<'_> {
    fn drop(&mut self) {
        if let Some(outer) = self.outer.take() {
            poll_exit(self.task, outer);
        }
    }
}

impl<F: Future> Future for Instrumented<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        // SAFETY: `inner` is never moved out of the pinned `self`; `task` is
        // plain data that is not structurally pinned.
        let this = unsafe { self.get_unchecked_mut() };
        let outer = poll_enter(&this.task);
        let _exit = PollExit {
            task: &mut this.task,
            outer: Some(outer),
        };
        let _chain = chain(&this.frame);
        // SAFETY: projection of the pinning of `self` onto `inner`, which
        // stays in place until `Drop`.
        let inner = unsafe { Pin::new_unchecked(&mut *this.inner) };
        super::polling::polling(&this.frame, || inner.poll(cx))
    }
}

impl<F> Drop for Instrumented<F> {
    fn drop(&mut self) {
        // A future dropped before completion closes its open regions here, so
        // do it in the task's own context, as a poll would.
        let outer = poll_enter(&self.task);
        let _exit = PollExit {
            task: &mut self.task,
            outer: Some(outer),
        };
        // Its cursors close here: the thread's chain comes back after.
        let _chain = chain(&self.frame);
        // SAFETY: `inner` is dropped exactly once, here, and never used again.
        unsafe { ManuallyDrop::drop(&mut self.inner) };
    }
}
