//! The `async fn` calls being polled on this thread, for allocation sites
//! (`MEMPROF_SITES`): an `async fn` call keeps its frame and cursors in its
//! future, not on the side stack, so the walker of open rows (see
//! `probe::open_rows`) finds them through here (`polled_rows` reads them).
//!
//! Each poll of an [`Instrumented`](super::Instrumented) future links a
//! [`Link`] on the poll's own stack into the thread's list; the call's
//! frame, made in its first poll, registers in the future's slot, which
//! outlives it. Frames are held here by address only.

use std::cell::Cell;

/// A registered call's frame, by address (a `calls::Frame`).
pub(crate) type FramePtr = *const ();

/// Where a polled future's frame registers: null until its first poll
/// makes it, and again once it ends.
#[derive(Debug, Default)]
pub(crate) struct Slot(Cell<FramePtr>);

impl Slot {
    pub(crate) const fn new() -> Slot {
        Slot(Cell::new(std::ptr::null()))
    }

    pub(super) fn set(&self, frame: FramePtr) {
        self.0.set(frame);
    }

    pub(super) fn get(&self) -> FramePtr {
        self.0.get()
    }
}

// SAFETY: only the thread polling the future touches its slot, as with the
// frame it points at (see `Frame`'s own `Send`).
unsafe impl Send for Slot {}
// SAFETY: as for `Send`.
unsafe impl Sync for Slot {}

/// One poll under way on this thread.
pub(crate) struct Link {
    slot: *const Slot,
    outer: *const Link,
}

thread_local! {
    /// The innermost poll under way. NOTE: no destructor, as the
    /// allocator's walker reads it at any point of the thread's life.
    static POLLING: Cell<*const Link> = const { Cell::new(std::ptr::null()) };
}

/// Runs `poll` as a poll of the future whose frame registers in `slot`.
pub(crate) fn polling<R>(slot: &Slot, poll: impl FnOnce() -> R) -> R {
    struct Unlink(*const Link);
    impl Drop for Unlink {
        fn drop(&mut self) {
            let _ = POLLING.try_with(|p| p.set(self.0));
        }
    }
    let Ok(outer) = POLLING.try_with(Cell::get) else {
        return poll();
    };
    let link = Link { slot, outer };
    let _ = POLLING.try_with(|p| p.set(&link));
    let _unlink = Unlink(outer);
    poll()
}

/// Registers a starting `async fn` call's frame in the future being
/// polled, and returns its slot (null if none is).
pub(crate) fn register(frame: FramePtr) -> *const Slot {
    POLLING
        .try_with(|p| {
            // SAFETY: null or a link on the stack of a poll still running.
            let Some(link) = (unsafe { p.get().as_ref() }) else {
                return std::ptr::null();
            };
            // SAFETY: the future's slot, which outlives its poll.
            let slot = unsafe { &*link.slot };
            if !slot.get().is_null() {
                // Not this call's future (a frame of its own is already
                // there): leave it.
                return std::ptr::null();
            }
            slot.set(frame);
            link.slot
        })
        .unwrap_or(std::ptr::null())
}

/// The frames registered in the futures polled on this thread, outermost
/// first, at most `MAX_POLLS`; how many were written to `frames`.
pub(crate) const MAX_POLLS: usize = 64;

pub(crate) fn polled(frames: &mut [FramePtr; MAX_POLLS]) -> usize {
    let Ok(mut link) = POLLING.try_with(Cell::get) else {
        return 0;
    };
    let mut n = 0;
    // SAFETY: links on the stacks of polls still running, innermost first.
    while let Some(l) = unsafe { link.as_ref() } {
        // SAFETY: the slot of a future being polled.
        let frame = unsafe { (*l.slot).get() };
        if !frame.is_null() && n < MAX_POLLS {
            frames[n] = frame;
            n += 1;
        }
        link = l.outer;
    }
    frames[..n].reverse();
    n
}
