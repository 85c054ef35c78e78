//! Each thread's side stack: where its synchronous profiled calls keep their
//! frames and statement cursors, so that a profiled frame on the thread's
//! own stack holds a pointer per call and per block, and deep recursion
//! keeps working.
//!
//! Records are taken and given back in the order calls and blocks begin and
//! end (last in, first out), by the kernel for the calls it enters and by
//! the runtime for the rest, both through the thread's `stack_top`. The
//! memory is mapped apart from the heap, so it never shows in a figure, and
//! an ended thread's goes to the next thread (up to 16 kept).
//! Where the side stack is full (or gone, as the thread ends), the runtime
//! puts a record on the heap instead, outside every figure.

use crate::alloc::{self, untracked};
use std::alloc::Layout;

/// Bytes of address space for each thread's side stack; pages are used only
/// as deep as the calls go.
///
/// NOTE: small, because address space is what `RLIMIT_AS` (`ulimit -v`)
/// limits, reserved or not: 64 MiB a thread took 12.8 GiB for 200 threads,
/// and the program's own large allocations failed. 352 KiB holds 2,048
/// nested calls the kernel enters (176 bytes each, with the body's
/// cursor); records past it go on the heap, outside every figure, at the
/// price of an allocation each.
const SIZE: usize = 352 << 10;

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

/// Side stacks of threads that ended, kept for the next threads (their base
/// addresses; 0: none), so that a program that starts a thread per task (a
/// test harness: one per test) does not map and unmap one each time, nor
/// fault its first pages in again.
///
/// NOTE: at most this many, 5 MiB of address space with no thread; the
/// rest are unmapped, so `RLIMIT_AS` sees what it would without the pool.
#[cfg(unix)]
static SPARE: [std::sync::atomic::AtomicUsize; 16] =
    [const { std::sync::atomic::AtomicUsize::new(0) }; 16];

#[cfg(unix)]
fn map(t: &crate::kernel::layout::Counters) -> bool {
    let base = match take(&SPARE) {
        Some(base) => base as *mut libc::c_void,
        // SAFETY: a fresh private anonymous mapping; nothing else is touched.
        None => unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                SIZE,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        },
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
    if !keep(&SPARE, base as usize) {
        // SAFETY: the mapping `map` made, which no record uses any more.
        unsafe { libc::munmap(base.cast(), SIZE) };
    }
}

/// A spare side stack's base from `pool`, if it holds one.
#[cfg_attr(not(unix), allow(dead_code))]
fn take(pool: &[std::sync::atomic::AtomicUsize]) -> Option<usize> {
    use std::sync::atomic::Ordering::Acquire;
    pool.iter().map(|s| s.swap(0, Acquire)).find(|&b| b != 0)
}

/// Puts a side stack's base into `pool`; false when it is full.
#[cfg_attr(not(unix), allow(dead_code))]
fn keep(pool: &[std::sync::atomic::AtomicUsize], base: usize) -> bool {
    use std::sync::atomic::Ordering::{Relaxed, Release};
    pool.iter()
        .any(|s| s.compare_exchange(0, base, Release, Relaxed).is_ok())
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
    fn a_pool_of_spare_side_stacks_holds_its_size_and_gives_each_back_once() {
        use std::sync::atomic::AtomicUsize;
        let pool = [const { AtomicUsize::new(0) }; 2];
        assert_eq!(take(&pool), None);
        assert!(keep(&pool, 0x1000));
        assert!(keep(&pool, 0x2000));
        assert!(!keep(&pool, 0x3000), "full: the caller unmaps it");
        let mut taken = [take(&pool), take(&pool)];
        taken.sort();
        assert_eq!(taken, [Some(0x1000), Some(0x2000)]);
        assert_eq!(take(&pool), None);
        assert!(keep(&pool, 0x3000));
        assert_eq!(take(&pool), Some(0x3000));
    }

    #[test]
    fn the_side_stack_holds_2048_kernel_calls() {
        // The figure in `SIZE`'s documentation.
        assert_eq!(CALL_ROOM + CURSOR_ROOM, 176);
        assert_eq!(SIZE / (CALL_ROOM + CURSOR_ROOM), 2048);
    }
}
