//! The counting allocator as installed by the `global-allocator` feature:
//! the thread-pointer shortcut its fast path takes (see
//! memprof-runtime/src/tls.rs), and exact figures on threads that use it.

#[path = "support/known_pattern.rs"]
mod known_pattern;
use known_pattern::check;
use memprof::measure;
use std::hint::black_box;

#[test]
#[cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
fn a_test_binary_takes_the_thread_pointer_shortcut() {
    // Any allocation has run by now; the first one decided.
    black_box(Box::new(1u8));
    assert!(memprof::__private::tls_shortcut_in_use());
}

#[test]
fn figures_are_exact_on_the_first_thread_and_on_new_ones() {
    check(4096);
    // Each new thread's first allocation claims its slot through the slow
    // path and later ones take the fast path; all of them count exactly.
    let threads: Vec<_> = (1..=8usize)
        .map(|i| std::thread::spawn(move || check(1000 * i)))
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    #[cfg(all(
        target_os = "linux",
        any(target_arch = "x86_64", target_arch = "aarch64")
    ))]
    assert!(memprof::__private::tls_shortcut_in_use());
}

/// `PAIRS` small allocations and frees of sizes 1 to 4096 bytes, then `KEPT`
/// blocks of 1000 bytes kept: figures known exactly.
fn small_pairs_then_kept() -> Vec<*mut u8> {
    use std::alloc::{Layout, alloc, dealloc};
    const PAIRS: usize = 20_000;
    const KEPT: usize = 10;
    let measured = measure(|| {
        let mut kept = [std::ptr::null_mut(); KEPT];
        // SAFETY: non-zero layouts; each freed block with its own layout.
        unsafe {
            for i in 0..PAIRS {
                let layout = Layout::from_size_align(1 + i % 4096, 8).unwrap();
                let p = alloc(layout);
                assert!(!p.is_null());
                dealloc(black_box(p), layout);
            }
            for p in &mut kept {
                *p = alloc(Layout::from_size_align(1000, 8).unwrap());
                assert!(!p.is_null());
            }
        }
        kept
    });
    let (kept, m) = measured;
    assert_eq!(m.increment, 10_000);
    assert_eq!(m.peak, 10_000);
    assert_eq!(m.allocations, (PAIRS + KEPT) as u64);
    assert_eq!(m.deallocations, PAIRS as u64);
    kept.to_vec()
}

#[test]
fn small_allocations_and_frees_are_exact_on_eight_threads_at_once() {
    use std::sync::Barrier;
    static START: Barrier = Barrier::new(8);
    let threads: Vec<_> = (0..8)
        .map(|_| {
            std::thread::spawn(|| {
                START.wait();
                small_pairs_then_kept()
                    .into_iter()
                    .map(|p| p as usize)
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    for t in threads {
        for p in t.join().unwrap() {
            // SAFETY: allocated by `small_pairs_then_kept` with this layout.
            unsafe {
                std::alloc::dealloc(
                    p as *mut u8,
                    std::alloc::Layout::from_size_align(1000, 8).unwrap(),
                )
            };
        }
    }
}
