//! The counting allocator's rule for failed requests (see `Allocator`'s
//! "Failed allocations"): a request whose size plus alignment reaches
//! `COUNT_FIRST_BELOW` bytes, and every realloc, is counted only once the
//! inner allocator succeeds; a smaller request is counted before it runs,
//! so that `alloc` can leave through a tail call.

use memprof::{Allocator, Measurement, measure};
use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;

const THRESHOLD: usize = Allocator::<System>::COUNT_FIRST_BELOW;

/// System, except that it refuses requests of the size it holds, as an
/// allocator out of memory would.
struct Refusing(usize);

// SAFETY: forwards to System, or returns null, which `GlobalAlloc` allows.
unsafe impl GlobalAlloc for Refusing {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if layout.size() == self.0 {
            return std::ptr::null_mut();
        }
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if layout.size() == self.0 {
            return std::ptr::null_mut();
        }
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size == self.0 {
            return std::ptr::null_mut();
        }
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// Refuses the smallest request counted after the call.
static REFUSES_LARGE: Allocator<Refusing> = Allocator::new(Refusing(THRESHOLD));
/// Refuses a request counted before the call.
static REFUSES_SMALL: Allocator<Refusing> = Allocator::new(Refusing(48));

fn layout(size: usize) -> Layout {
    Layout::from_size_align(size, 8).unwrap()
}

fn unchanged(m: Measurement) {
    assert_eq!(
        (m.increment, m.peak, m.allocations, m.deallocations),
        (0, 0, 0, 0)
    );
}

#[test]
fn a_failed_large_allocation_leaves_every_counter_unchanged() {
    let (ptr, m) = measure(|| {
        // SAFETY: a non-zero layout.
        black_box(unsafe { REFUSES_LARGE.alloc(layout(THRESHOLD)) })
    });
    assert!(ptr.is_null());
    unchanged(m);
    let (ptr, m) = measure(|| {
        // SAFETY: a non-zero layout.
        black_box(unsafe { REFUSES_LARGE.alloc_zeroed(layout(THRESHOLD)) })
    });
    assert!(ptr.is_null());
    unchanged(m);
}

#[test]
fn the_same_allocator_counts_a_large_allocation_it_grants() {
    // The refusal above is the only thing that kept the figures at zero.
    let size = THRESHOLD + 8;
    let ((), m) = measure(|| {
        // SAFETY: a non-zero layout, freed with the same layout.
        unsafe {
            let ptr = REFUSES_LARGE.alloc(layout(size));
            assert!(!ptr.is_null());
            REFUSES_LARGE.dealloc(black_box(ptr), layout(size));
        }
    });
    assert_eq!(
        (m.increment, m.peak, m.allocations, m.deallocations),
        (0, size as u64, 1, 1)
    );
}

#[test]
fn a_failed_realloc_of_any_size_leaves_every_counter_unchanged() {
    for (allocator, new_size) in [(&REFUSES_LARGE, THRESHOLD), (&REFUSES_SMALL, 48)] {
        // SAFETY: a non-zero layout.
        let old = unsafe { allocator.alloc(layout(16)) };
        assert!(!old.is_null());
        let (new, m) = measure(|| {
            // SAFETY: `old` is live with this layout; a failed realloc
            // leaves it so.
            black_box(unsafe { allocator.realloc(old, layout(16), new_size) })
        });
        assert!(new.is_null());
        unchanged(m);
        // SAFETY: still live, with the layout it was allocated with.
        unsafe { allocator.dealloc(old, layout(16)) };
    }
}

#[test]
fn a_failed_small_allocation_stays_counted() {
    // The documented price of the tail call: counted before the inner
    // allocator refuses it.
    let (ptr, m) = measure(|| {
        // SAFETY: a non-zero layout.
        black_box(unsafe { REFUSES_SMALL.alloc(layout(48)) })
    });
    assert!(ptr.is_null());
    assert_eq!(
        (m.increment, m.peak, m.allocations, m.deallocations),
        (48, 48, 1, 0)
    );
}

#[test]
fn an_impossible_alignment_leaves_every_counter_unchanged() {
    // 8 bytes aligned to 1 TiB: the system allocator refuses it with memory
    // to spare, so it must not stay counted as a small request would.
    let impossible = Layout::from_size_align(8, 1 << 40).unwrap();
    for zeroed in [false, true] {
        let (ptr, m) = measure(|| {
            // SAFETY: a non-zero layout.
            black_box(unsafe {
                if zeroed {
                    std::alloc::alloc_zeroed(impossible)
                } else {
                    std::alloc::alloc(impossible)
                }
            })
        });
        assert!(ptr.is_null());
        unchanged(m);
    }
}

/// Whether `try_reserve` failed in the allocator, not in its size check.
fn refused_by_the_allocator(err: std::collections::TryReserveError) -> bool {
    err.to_string().contains("allocator returned an error")
}

#[test]
fn try_reserve_of_an_impossible_size_leaves_every_counter_unchanged() {
    // From nothing: an allocation of isize::MAX bytes.
    let mut empty: Vec<u8> = Vec::new();
    let (result, m) = measure(|| empty.try_reserve_exact(isize::MAX as usize));
    assert!(refused_by_the_allocator(result.unwrap_err()));
    unchanged(m);
    // Growing a live vector: a realloc to isize::MAX bytes.
    let mut live = vec![1u8; 100];
    let (result, m) = measure(|| live.try_reserve_exact(isize::MAX as usize - 100));
    assert!(refused_by_the_allocator(result.unwrap_err()));
    unchanged(m);
    assert_eq!(live, [1u8; 100]);
    // And through the global allocator, past the size check.
    let (ptr, m) = measure(|| {
        // SAFETY: a non-zero layout.
        black_box(unsafe { std::alloc::alloc(layout(isize::MAX as usize - 7)) })
    });
    assert!(ptr.is_null());
    unchanged(m);
}
