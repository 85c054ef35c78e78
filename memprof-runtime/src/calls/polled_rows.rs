//! The rows open in the `async fn` calls polled on this thread (see
//! `polling`), for the walker of open rows (`probe::open_rows`): each
//! call's `fn` row, then its cursors' rows, from the chain each frame keeps
//! from its innermost open cursor out (see `Cursor::follow`).

use super::Frame;
use super::polling::{MAX_POLLS, polled};
use crate::kernel::layout::{CursorHead, NO_CELL};
use crate::owned::get;
use crate::sites::Key;

/// Hands each row open in the `async fn` calls polled on this thread to
/// `push`, outermost first: each call's `fn` row, then its cursors' rows
/// from the outermost block in.
pub(crate) fn open_rows(push: &mut dyn FnMut(Option<Key>, u64)) {
    let mut frames = [std::ptr::null(); MAX_POLLS];
    let n = polled(&mut frames);
    for &frame in &frames[..n] {
        // SAFETY: a registered frame (a `Frame`), which unregisters before
        // it ends.
        let frame = unsafe { &*frame.cast::<Frame>() };
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
