//! Which kernel a build uses: the optimized library in builds with debug
//! assertions (the dev profile, where `cargo test` runs, and optimized
//! test profiles that keep them), unless `MEMPROF_KERNEL=rust` chose the
//! pure-Rust one, as CI does for a second run of the tests of the hot path;
//! the pure-Rust one, compiled in, in release builds.

#[test]
fn the_build_uses_the_kernel_it_should() {
    let forced_rust = std::env::var("MEMPROF_KERNEL").is_ok_and(|v| v == "rust");
    // The dev profile keeps debug assertions and the release one does not;
    // in either, this test and the runtime are built alike.
    let expected = cfg!(debug_assertions) && !forced_rust;
    assert_eq!(memprof::__private::kernel_library(), expected);
}
