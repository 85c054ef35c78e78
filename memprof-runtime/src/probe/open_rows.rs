//! The profiled rows open on the calling thread, read from its side stack
//! for allocation sites (`MEMPROF_SITES`): statements and calls record as
//! they do without sites, and only an allocation that sites records walks
//! the records, outermost first.
//!
//! The side stack holds, in the order calls and blocks begin, four kinds of
//! record: a call the kernel entered (its head, `CALL_ROOM` bytes) and its
//! cursors (`CURSOR_ROOM`), a call the runtime entered (a [`CallRecord`],
//! with its body's cursor inside) and its cursors (a [`CursorRecord`]).
//! A call's head starts with the thread's counters; a cursor, with its
//! call, a head below it. Anything else ends the walk: a record being
//! written, or one on the heap (a full side stack) leaves the rows above
//! it unread.

use super::{CallRecord, CursorRecord};
use crate::kernel::call::{CALL_ROOM, CURSOR_ROOM};
use crate::kernel::layout::{CALL_KERNEL, CALL_RUNTIME, CallHead, CursorHead, NO_CELL};
use crate::owned::get;
use crate::sites::{Key, MAX_OPEN, OpenRow, Rows};
use std::mem::MaybeUninit;

/// Fills `rows` with the rows open on this thread, outermost first: each
/// call's `fn` row and each block's current statement, each once (a
/// recursion's outermost execution of it). Returns how many. Past
/// `MAX_OPEN` distinct rows, the innermost takes the last place: the
/// statement that allocates is always charged.
pub(super) fn walk(rows: &mut Rows) -> usize {
    // SAFETY: null or this thread's counters.
    let Some(t) = (unsafe { crate::alloc::thread_counters().as_ref() }) else {
        return 0;
    };
    let counters = std::ptr::from_ref(t) as usize;
    let mut n = 0;
    // NOTE: each key once as the walk goes, not the first `MAX_OPEN` rows
    // then each once: a recursion 10,000 deep opens the same few rows at
    // every depth, and its innermost statement, the one that allocates,
    // was past the first 256.
    let mut push = |key: Option<Key>, start: u64| {
        let Some(key) = key else {
            return;
        };
        // SAFETY: the first `n` are written.
        if rows[..n]
            .iter()
            .any(|r| unsafe { r.assume_init_ref() }.key == key)
        {
            return;
        }
        let at = n.min(MAX_OPEN - 1);
        rows[at] = MaybeUninit::new(OpenRow { key, start });
        n = at + 1;
    };
    if let Some((base, top)) = crate::calls::stack::extent(t) {
        walk_side_stack(counters, base, top, &mut push);
    }
    // `async fn` calls keep their rows in their futures.
    crate::calls::polled_rows::open_rows(&mut push);
    n
}

/// The side stack's part of [`walk`], from `base` to `top`.
fn walk_side_stack(
    counters: usize,
    base: usize,
    top: usize,
    push: &mut dyn FnMut(Option<Key>, u64),
) {
    let call_room = std::mem::size_of::<CallRecord>().next_multiple_of(16);
    let cursor_room = std::mem::size_of::<CursorRecord>().next_multiple_of(16);
    let mut at = base;
    while at + 16 <= top {
        // SAFETY: inside the side stack's records, which this thread
        // alone writes; every record starts 16-aligned with a pointer.
        let first = unsafe { *(at as *const usize) };
        if first == counters {
            // SAFETY: a call's head, whole once its counters are set.
            let head = unsafe { &*(at as *const CallHead) };
            match get(&head.mode) {
                CALL_KERNEL if at + CALL_ROOM <= top => {
                    // SAFETY: an open kernel-entered call of this thread.
                    push(
                        unsafe { crate::calls::kernel_call_key(head, 0) },
                        get(&head.start_allocs),
                    );
                    at += CALL_ROOM;
                }
                CALL_RUNTIME if at + call_room <= top => {
                    // SAFETY: a runtime-entered call's record, begun and
                    // entered (its mode is set after its state is).
                    let record = unsafe { &*(at as *const CallRecord) };
                    push(record.frame.site_key(0), get(&head.start_allocs));
                    let cursor = record.top.head();
                    if get(&cursor.cell) != NO_CELL {
                        push(
                            record.frame.site_key(get(&cursor.cell)),
                            get(&cursor.start_allocs),
                        );
                    }
                    at += call_room;
                }
                _ => break,
            }
            continue;
        }
        // A cursor, whose call is a head below it.
        if first < base || first >= at || first % 16 != 0 {
            break;
        }
        // SAFETY: inside the records below this one.
        if unsafe { *(first as *const usize) } != counters {
            break;
        }
        // SAFETY: checked to be a call's head.
        let head = unsafe { &*(first as *const CallHead) };
        // SAFETY: a cursor's head starts its record.
        let cursor = unsafe { &*(at as *const CursorHead) };
        let cell = get(&cursor.cell);
        match get(&head.mode) {
            CALL_KERNEL => {
                if cell != NO_CELL {
                    // SAFETY: an open kernel-entered call of this thread.
                    push(
                        unsafe { crate::calls::kernel_call_key(head, cell) },
                        get(&cursor.start_allocs),
                    );
                }
                at += CURSOR_ROOM;
            }
            CALL_RUNTIME => {
                if cell != NO_CELL {
                    // SAFETY: the frame of a call the runtime entered.
                    let frame = unsafe { &*(first as *const crate::calls::Frame) };
                    push(frame.site_key(cell), get(&cursor.start_allocs));
                }
                // The kernel makes the cursors of every call it steps (its
                // counters are set), whoever entered the call; the runtime
                // makes a whole record on the side stack only for the rest
                // (see `probe::cursor_slowly`).
                at += if get(&cursor.counters).is_null() {
                    cursor_room
                } else {
                    CURSOR_ROOM
                };
            }
            _ => break,
        }
    }
}
