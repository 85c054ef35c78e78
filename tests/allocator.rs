//! The counting allocator as installed by the `global-allocator` feature:
//! the thread-pointer shortcut its fast path takes (see
//! memprof-runtime/src/tls.rs), and exact figures on threads that use it.

#[path = "support/known_pattern.rs"]
mod known_pattern;
use known_pattern::check;
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
