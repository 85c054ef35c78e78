//! Which kernel a build uses: the optimized library in unoptimized builds
//! (the dev profile, where `cargo test` runs), unless
//! `MEMPROF_KERNEL=rust` chose the pure-Rust one, as CI does for a second
//! run of the tests of the hot path; the pure-Rust one, inlined, in
//! optimized builds.

#[test]
fn the_build_uses_the_kernel_it_should() {
    let forced_rust = std::env::var("MEMPROF_KERNEL").is_ok_and(|v| v == "rust");
    // The dev profile is unoptimized and the release one optimized; in
    // either, this test and the runtime are built alike.
    let unoptimized = cfg!(debug_assertions);
    let expected = unoptimized && !forced_rust;
    assert_eq!(memprof::__private::kernel_library(), expected);
}
