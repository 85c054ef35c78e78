//! An allocation pattern with known exact figures, for the allocator tests.

use memprof::measure;
use std::alloc::{Layout, alloc, dealloc, realloc};
use std::hint::black_box;

/// Allocates `size` bytes, grows them to `2 * size`, frees them, and
/// allocates `size` again: increment `size`, peak `2 * size`, three
/// allocations and two deallocations (a realloc is one of each).
fn known_pattern(size: usize) -> Vec<u8> {
    let layout = Layout::from_size_align(size, 8).unwrap();
    // SAFETY: non-zero layouts; every block is freed with its layout.
    unsafe {
        let p = alloc(layout);
        assert!(!p.is_null());
        let q = realloc(p, layout, 2 * size);
        assert!(!q.is_null());
        black_box(q);
        dealloc(q, Layout::from_size_align(2 * size, 8).unwrap());
    }
    vec![0u8; size]
}

/// Measures [`known_pattern`] and checks every figure.
pub fn check(size: usize) {
    let (kept, m) = measure(|| known_pattern(size));
    assert_eq!(kept.len(), size);
    assert_eq!(m.increment, size as i64);
    assert_eq!(m.peak, 2 * size as u64);
    assert_eq!(m.allocations, 3);
    assert_eq!(m.deallocations, 2);
}
