//! The counting allocator where it cannot take the thread-pointer shortcut
//! (memprof inside a shared library, or a target without one): every
//! allocation takes the out-of-line path, and the figures stay exact. Its
//! own test binary, because giving up the shortcut is for the whole process.

#[path = "support/known_pattern.rs"]
mod known_pattern;

#[test]
fn figures_are_exact_without_the_shortcut() {
    memprof::__private::give_up_tls_shortcut();
    assert!(!memprof::__private::tls_shortcut_in_use());
    known_pattern::check(4096);
    let threads: Vec<_> = (1..=8usize)
        .map(|i| std::thread::spawn(move || known_pattern::check(1000 * i)))
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert!(!memprof::__private::tls_shortcut_in_use());
}
