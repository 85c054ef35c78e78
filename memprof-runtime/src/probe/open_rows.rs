//! The profiled rows open on the calling thread, read from its side stack
//! for allocation sites (`MEMPROF_SITES`): statements and calls record as
//! they do without sites, and only an allocation that sites records walks
//! the records, outermost first.
//!
//! The side stack holds, in the order calls and blocks begin, five kinds of
//! record: a call the kernel entered (its head, `CALL_ROOM` bytes) and its
//! cursors (`CURSOR_ROOM`), a call the runtime entered (a [`CallRecord`],
//! with its body's cursor inside) and its cursors (a [`CursorRecord`]),
//! and a quiet call (`QUIET_ROOM`, no rows). A call's head, quiet or not,
//! starts with the thread's counters, its mode where `CallHead::mode` is;
//! a cursor, with its call, a head below it. Anything else ends the walk: a record being
//! written, or one on the heap (a full side stack) leaves the rows above
//! it unread.

use super::{CallRecord, CursorRecord};
use crate::kernel::call::{CALL_ROOM, CURSOR_ROOM};
use crate::kernel::layout::{CALL_KERNEL, CALL_QUIET, CALL_RUNTIME, CallHead, CursorHead, NO_CELL};
use crate::kernel::quiet::QUIET_ROOM;
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
                // A quiet call has no rows; calls with rows may run inside.
                CALL_QUIET if at + QUIET_ROOM <= top => at += QUIET_ROOM,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::layout::{CALL_QUIET, Counters, QuietHead};
    use std::cell::Cell;

    #[repr(C, align(16))]
    struct SideStack([u8; 512]);

    /// A quiet call's record, then a kernel-entered call's above it: the
    /// walk passes the quiet one and reads the call. Its bytes where a
    /// call's mode is read to be CALL_KERNEL under the layout before the
    /// mode field (the enclosing region's watermark there: 0x101 bytes and
    /// the like), which took the quiet record for a call and read a
    /// pointer out of its figures (serde_json's binary crashed with sites).
    #[test]
    fn a_quiet_calls_record_is_passed_over_whatever_its_figures() {
        let counters = 0x1000usize;
        let mut stack = SideStack([0; 512]);
        let base = stack.0.as_mut_ptr() as usize;
        let ones = i64::from_ne_bytes([1; 8]);
        // SAFETY: room for both records, aligned to 16.
        unsafe {
            (base as *mut QuietHead).write(QuietHead {
                counters: counters as *const Counters,
                thread_fn: std::ptr::null(),
                start: ones,
                flags: 0,
                mode: CALL_QUIET,
                saved: ones,
                start_allocs: 5,
                start_allocated: ones as u64,
                anchor: 0,
                outer: std::ptr::null(),
            });
            ((base + QUIET_ROOM) as *mut CallHead).write(CallHead {
                counters: Cell::new(counters as *const Counters),
                cells: Cell::new(std::ptr::null()),
                base: Cell::new(0),
                flags: Cell::new(0),
                mode: Cell::new(CALL_KERNEL),
                outermost: Cell::new(true),
                turns: Cell::new(0),
                thread_fn: Cell::new(std::ptr::null()),
                start: Cell::new(0),
                saved: Cell::new(0),
                start_allocs: Cell::new(77),
                start_allocated: Cell::new(0),
            });
        }
        let mut pushed = Vec::new();
        let top = base + QUIET_ROOM + CALL_ROOM;
        walk_side_stack(counters, base, top, &mut |key, start| {
            pushed.push((key.is_some(), start));
        });
        assert_eq!(pushed, [(false, 77)]);
    }
}
