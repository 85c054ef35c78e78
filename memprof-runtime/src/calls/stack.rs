//! Each thread's side stack: where its synchronous profiled calls keep their
//! frames and statement cursors, so that a profiled frame on the thread's
//! own stack holds a pointer per call and per block, and deep recursion
//! keeps working.
//!
//! Records are taken and given back in the order calls and blocks begin and
//! end (last in, first out), by the kernel for the calls it enters and by
//! the runtime for the rest, both through the thread's `stack_top`. The
//! memory is mapped apart from the heap, so it never shows in a figure.
//! Where the side stack is full (or gone, as the thread ends), the runtime
//! puts a record on the heap instead, outside every figure.

use crate::alloc::{self, untracked};
use std::alloc::Layout;

/// Bytes of address space for each thread's side stack; pages are used only
/// as deep as the calls go.
///
/// NOTE: small, because address space is what `RLIMIT_AS` (`ulimit -v`)
/// limits, reserved or not: 64 MiB a thread took 12.8 GiB for 200 threads,
/// and the program's own large allocations failed. 320 KiB holds 2,048
/// nested calls the kernel enters (160 bytes each, with the body's
/// cursor); records past it go on the heap, outside every figure, at the
/// price of an allocation each.
const SIZE: usize = 320 << 10;

/// The thread's side stack that records are on: its first byte and the
/// end of its last record; `None` before its first record or once gone.
pub(crate) fn extent(t: &crate::kernel::layout::Counters) -> Option<(usize, usize)> {
    let (top, end) = (t.stack_top.get() as usize, t.stack_end.get() as usize);
    (top != 0 && end >= SIZE && top >= end - SIZE && top <= end).then(|| (end - SIZE, top))
}

/// Where a record lies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Place {
    Stack,
    Heap,
}

/// Room for a record of `layout` (at most 16-aligned): on the side stack if
/// it has room, else on the heap.
pub(crate) fn push(layout: Layout) -> (*mut u8, Place) {
    let size = layout.size().next_multiple_of(16);
    // SAFETY: null or this thread's counters.
    if let Some(t) = unsafe { alloc::thread_counters().as_ref() } {
        if t.stack_top.get().is_null() && !map(t) {
            return heap(layout);
        }
        let top = t.stack_top.get();
        if (t.stack_end.get() as usize).wrapping_sub(top as usize) >= size {
            t.stack_top.set(top.wrapping_add(size));
            return (top, Place::Stack);
        }
    }
    heap(layout)
}

/// Gives back a record that [`push`] made, once its contents are dropped.
///
/// # Safety
/// `record` came from `push(layout)` on this thread, and every record made
/// after it on this thread's side stack has been given back.
pub(crate) unsafe fn pop(record: *mut u8, place: Place, layout: Layout) {
    match place {
        Place::Stack => {
            // SAFETY: the side stack is this thread's, so its counters are.
            if let Some(t) = unsafe { alloc::thread_counters().as_ref() } {
                t.stack_top.set(record);
            }
        }
        // SAFETY: allocated with this layout in `heap`.
        Place::Heap => untracked(|| unsafe { std::alloc::dealloc(record, layout) }),
    }
}

fn heap(layout: Layout) -> (*mut u8, Place) {
    // SAFETY: records are never zero-sized.
    let record = untracked(|| unsafe { std::alloc::alloc(layout) });
    if record.is_null() {
        std::alloc::handle_alloc_error(layout);
    }
    (record, Place::Heap)
}

/// Sends the thread's later records to the heap and unmaps its side stack:
/// the thread is ending. Only once its open calls have ended.
pub(crate) fn release() {
    // SAFETY: null or this thread's counters.
    let Some(t) = (unsafe { alloc::thread_counters().as_ref() }) else {
        return;
    };
    let (top, end) = (t.stack_top.get(), t.stack_end.get());
    // No room from now on (and not null, which would map anew).
    t.stack_top.set(std::ptr::dangling_mut());
    t.stack_end.set(std::ptr::dangling_mut());
    if !top.is_null() && end as usize > SIZE {
        unmap(end.wrapping_sub(SIZE));
    }
}

#[cfg(unix)]
fn map(t: &crate::kernel::layout::Counters) -> bool {
    // SAFETY: a fresh private anonymous mapping; nothing else is touched.
    let base = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            SIZE,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if base == libc::MAP_FAILED {
        t.stack_top.set(std::ptr::dangling_mut());
        t.stack_end.set(std::ptr::dangling_mut());
        return false;
    }
    let base = base.cast::<u8>();
    t.stack_top.set(base);
    t.stack_end.set(base.wrapping_add(SIZE));
    true
}

#[cfg(unix)]
fn unmap(base: *mut u8) {
    // SAFETY: the mapping `map` made, which no record uses any more.
    unsafe { libc::munmap(base.cast(), SIZE) };
}

/// No side stack here: every record goes on the heap.
#[cfg(not(unix))]
fn map(t: &crate::kernel::layout::Counters) -> bool {
    t.stack_top.set(std::ptr::dangling_mut());
    t.stack_end.set(std::ptr::dangling_mut());
    false
}

#[cfg(not(unix))]
fn unmap(_: *mut u8) {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::call::{CALL_ROOM, CURSOR_ROOM};

    #[test]
    fn the_side_stack_holds_2048_kernel_calls() {
        // The figure in `SIZE`'s documentation.
        assert_eq!(CALL_ROOM + CURSOR_ROOM, 160);
        assert_eq!(SIZE / (CALL_ROOM + CURSOR_ROOM), 2048);
    }
}
