//! The [`Allocator`] type: the `GlobalAlloc` hooks, which count through
//! `record` (the fast path) or the slow paths here, and call the inner
//! allocator.

use super::{THREAD, record, record_slow, routed_to_sites};
use std::alloc::{GlobalAlloc, Layout, System};

/// A global allocator that counts every byte it hands out, wrapping `A`.
///
/// Install it as the global allocator to make memprof's figures available:
///
/// ```
/// # use memprof_runtime as memprof; // The facade re-exports it.
/// #[global_allocator]
/// static ALLOC: memprof::Allocator = memprof::Allocator::system();
/// # fn main() {
/// #     let (_, m) = memprof::measure(|| vec![0u8; 100]);
/// #     assert_eq!(m.peak, 100);
/// # }
/// ```
///
/// The default `global-allocator` feature of the `memprof` crate does this for
/// you. To count on top of another allocator, keep only its `enabled` feature
/// (`default-features = false, features = ["enabled"]`) and wrap yours:
/// `memprof::Allocator::new(mimalloc::MiMalloc)`. An allocator installed this
/// way counts whatever the features say: gate it on your own feature to
/// leave it out of release builds.
///
/// ```
/// # use memprof_runtime as memprof;
/// use std::alloc::{GlobalAlloc, Layout, System};
///
/// /// Stands for an allocator of your own.
/// struct MyAllocator;
///
/// // SAFETY: passes every call on to the system allocator unchanged.
/// unsafe impl GlobalAlloc for MyAllocator {
///     unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
///         // SAFETY: the caller upholds `GlobalAlloc::alloc`'s contract.
///         unsafe { System.alloc(layout) }
///     }
///     unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
///         // SAFETY: the caller upholds `GlobalAlloc::dealloc`'s contract.
///         unsafe { System.dealloc(ptr, layout) }
///     }
/// }
///
/// #[global_allocator]
/// static ALLOC: memprof::Allocator<MyAllocator> = memprof::Allocator::new(MyAllocator);
/// # fn main() {
/// #     let (_, m) = memprof::measure(|| vec![0u8; 100]);
/// #     assert_eq!((m.peak, m.allocations), (100, 1));
/// # }
/// ```
///
/// # Failed allocations
///
/// A request whose size plus alignment reaches
/// [`COUNT_FIRST_BELOW`](Self::COUNT_FIRST_BELOW) bytes is counted only once
/// the inner allocator has returned memory: a failed large allocation, one
/// with an alignment no allocator can meet, or a `try_reserve` that fails,
/// changes no figure. A smaller request is counted before the inner
/// allocator runs and stays counted if it fails. A small request fails only
/// when the process is out of memory, and Rust's infallible APIs then abort
/// through `handle_alloc_error`, so no figure is left to read.
#[derive(Debug, Default, Clone, Copy)]
pub struct Allocator<A = System> {
    inner: A,
}

impl Allocator<System> {
    /// A counting allocator over the system allocator.
    pub const fn system() -> Self {
        Allocator { inner: System }
    }
}

impl<A> Allocator<A> {
    /// A counting allocator over `inner`.
    pub const fn new(inner: A) -> Self {
        Allocator { inner }
    }

    /// Requests whose size plus alignment stays below this many bytes are
    /// counted before the inner allocator runs (see
    /// [Failed allocations](Self#failed-allocations)).
    ///
    /// PERF: counting first lets `alloc` leave through a tail call into the
    /// inner allocator, with no stack frame, as `dealloc` does. Above this
    /// size the allocation itself costs microseconds (glibc maps blocks from
    /// 128 KiB), so the call and null check that keep failures uncounted are
    /// lost in it.
    pub const COUNT_FIRST_BELOW: usize = 64 << 10;
}

/// The allocator it wraps, so that code written for a static of type `A`
/// still compiles when the static becomes an `Allocator<A>` (as `cargo
/// memprof` rewrites a crate's own `#[global_allocator]`): `GLOBAL.stats()`
/// reaches `A::stats`.
impl<A> std::ops::Deref for Allocator<A> {
    type Target = A;

    fn deref(&self) -> &A {
        &self.inner
    }
}

// SAFETY: every method forwards to `inner` with the caller's arguments
// unchanged; counting never touches the memory.
unsafe impl<A: GlobalAlloc> GlobalAlloc for Allocator<A> {
    // PERF: on the fast path `alloc` and `dealloc` count, then jump to the
    // inner allocator: leaves with no frame and no saved register, as
    // System's own are. Everything else leaves through a tail call too.

    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if counts_after(layout) {
            // SAFETY: forwarded with the caller's guarantees.
            return unsafe { alloc_then_count(&self.inner, layout, false) };
        }
        if !record::<1, 0>(layout.size(), 0, std::ptr::null_mut()) {
            // SAFETY: forwarded with the caller's guarantees.
            return unsafe { alloc_slowly(&self.inner, layout, false) };
        }
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { self.inner.alloc(layout) }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if counts_after(layout) {
            // SAFETY: forwarded with the caller's guarantees.
            return unsafe { alloc_then_count(&self.inner, layout, true) };
        }
        if !record::<1, 0>(layout.size(), 0, std::ptr::null_mut()) {
            // SAFETY: forwarded with the caller's guarantees.
            return unsafe { alloc_slowly(&self.inner, layout, true) };
        }
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { self.inner.alloc_zeroed(layout) }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // A free cannot fail: always counted first.
        if !record::<0, 1>(0, layout.size(), ptr) {
            // SAFETY: forwarded with the caller's guarantees.
            return unsafe { dealloc_slowly(ptr, layout, &self.inner) };
        }
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { self.inner.dealloc(ptr, layout) };
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // NOTE: counted after the call, whatever the size: a failed realloc
        // leaves the old block in place, and `try_reserve` on a vector of
        // any size may meet one.
        // SAFETY: forwarded with the caller's guarantees.
        let new = unsafe { self.inner.realloc(ptr, layout, new_size) };
        // NOTE: a realloc counts as one allocation and one deallocation,
        // and moves the byte count by the size difference only.
        if !new.is_null() && !record::<1, 1>(new_size, layout.size(), ptr) {
            return counted_slowly((new, new_size, 1), (ptr, layout.size(), 1));
        }
        new
    }
}

/// Whether an `alloc` of `layout` is counted only once the inner allocator
/// has succeeded: a large request, or one with a large alignment, which an
/// allocator may refuse without being out of memory (an impossible
/// alignment). One addition: `Layout` keeps the sum below `isize::MAX`.
#[inline(always)]
fn counts_after(layout: Layout) -> bool {
    layout.size() + layout.align() >= Allocator::<System>::COUNT_FIRST_BELOW
}

/// `alloc` or `alloc_zeroed` that [`counts_after`]: counted only if the
/// inner allocator succeeds.
///
/// # Safety
/// As [`GlobalAlloc::alloc`].
#[inline(never)]
unsafe fn alloc_then_count<A: GlobalAlloc>(inner: &A, layout: Layout, zeroed: bool) -> *mut u8 {
    // SAFETY: forwarded with the caller's guarantees.
    let ptr = unsafe {
        if zeroed {
            inner.alloc_zeroed(layout)
        } else {
            inner.alloc(layout)
        }
    };
    if !ptr.is_null() && !record::<1, 0>(layout.size(), 0, std::ptr::null_mut()) {
        return counted_slowly((ptr, layout.size(), 1), NOTHING_FREED);
    }
    ptr
}

/// A small `alloc` or `alloc_zeroed` that [`record`] left to the slow path:
/// counted first, like the fast path, so that both follow one rule.
///
/// # Safety
/// As [`GlobalAlloc::alloc`].
#[inline(never)]
unsafe fn alloc_slowly<A: GlobalAlloc>(inner: &A, layout: Layout, zeroed: bool) -> *mut u8 {
    let allocate = || {
        // SAFETY: forwarded with the caller's guarantees.
        unsafe {
            if zeroed {
                inner.alloc_zeroed(layout)
            } else {
                inner.alloc(layout)
            }
        }
    };
    // PERF: a static first: process-scope watches send every allocation
    // here, and without sites no thread-local need be read.
    if crate::sites::enabled() && routed_to_sites() {
        // `sites` needs the address, to follow the block to its free; the
        // figures count it whether or not it is null, as below.
        let ptr = allocate();
        return counted_slowly((ptr, layout.size(), 1), NOTHING_FREED);
    }
    counted_slowly((std::ptr::null_mut(), layout.size(), 1), NOTHING_FREED);
    allocate()
}

/// `counted_slowly`'s second argument for an allocation.
const NOTHING_FREED: (*mut u8, usize, u64) = (std::ptr::null_mut(), 0, 0);

/// Counts what [`record`] left to the slow path: `(address, bytes,
/// count)` allocated and freed; returns the allocated address so that the
/// allocator can leave through this call.
#[inline(never)]
fn counted_slowly(allocated: (*mut u8, usize, u64), freed: (*mut u8, usize, u64)) -> *mut u8 {
    let _ = THREAD.try_with(|t| record_slow(t, allocated, freed));
    allocated.0
}

/// `dealloc` when [`record`] left the counting to the slow path. The
/// arguments come in the order `dealloc` receives them.
///
/// # Safety
/// As [`GlobalAlloc::dealloc`].
#[inline(never)]
unsafe fn dealloc_slowly<A: GlobalAlloc>(ptr: *mut u8, layout: Layout, inner: &A) {
    counted_slowly(NOTHING_FREED, (ptr, layout.size(), 1));
    // SAFETY: forwarded with the caller's guarantees.
    unsafe { inner.dealloc(ptr, layout) };
}
