//! The `async fn` calls being polled on this thread, for allocation sites
//! (`MEMPROF_SITES`): an `async fn` call keeps its frame and cursors in its
//! future, not on the side stack, so the walker of open rows (see
//! `probe::open_rows`) finds them here.
//!
//! Each poll of an [`Instrumented`](super::Instrumented) future links a
//! [`Link`] on the poll's own stack into the thread's list; the call's
//! frame, made in its first poll, registers in the future's slot, which
//! outlives it. The frame keeps its innermost open cursor, and each cursor
//! the one it encloses (see `Cursor::step`): a chain from the innermost
//! statement out to the call.

use super::Frame;
use crate::kernel::layout::{CursorHead, NO_CELL};
use crate::owned::get;
use crate::sites::Key;
use std::cell::Cell;

/// Where a polled future's frame registers: null until its first poll
/// makes it, and again once it ends.
#[derive(Debug, Default)]
pub(crate) struct Slot(Cell<*const Frame>);

impl Slot {
    pub(crate) const fn new() -> Slot {
        Slot(Cell::new(std::ptr::null()))
    }

    pub(super) fn set(&self, frame: *const Frame) {
        self.0.set(frame);
    }

    fn get(&self) -> *const Frame {
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
pub(crate) fn register(frame: &Frame) -> *const Slot {
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

/// Hands each row open in the `async fn` calls polled on this thread to
/// `push`, outermost first: each call's `fn` row, then its cursors' rows
/// from the outermost block in.
pub(crate) fn open_rows(push: &mut dyn FnMut(Option<Key>, u64)) {
    const MAX_POLLS: usize = 64;
    let Ok(mut link) = POLLING.try_with(Cell::get) else {
        return;
    };
    let mut frames: [*const Frame; MAX_POLLS] = [std::ptr::null(); MAX_POLLS];
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
    for &frame in frames[..n].iter().rev() {
        // SAFETY: a registered frame, which unregisters before it ends.
        let frame = unsafe { &*frame };
        push(frame.site_key(0), get(&frame.head.start_allocs));
        let mut cursors: [*const CursorHead; MAX_POLLS] = [std::ptr::null(); MAX_POLLS];
        let mut m = 0;
        let mut cursor = frame.innermost_cursor();
        while !cursor.is_null() && m < MAX_POLLS {
            cursors[m] = cursor;
            m += 1;
            // SAFETY: a linked cursor of this frame, still open.
            cursor = unsafe { super::cursor::enclosing(cursor) };
        }
        for &cursor in cursors[..m].iter().rev() {
            // SAFETY: as above.
            let head = unsafe { &*cursor };
            let cell = get(&head.cell);
            if cell != NO_CELL {
                push(frame.site_key(cell), get(&head.start_allocs));
            }
        }
    }
}
