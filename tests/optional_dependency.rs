//! The pattern docs/reference.md gives libraries: memprof as an optional
//! dependency behind a feature of the library's own, and
//! `#[cfg_attr(feature = "profiling", memprof::profile)]` on its functions.
//! Without the feature, no memprof crate (nor syn) is compiled; with it,
//! the same code is profiled.
//!
//! The check builds `tests/crates/optional`, a crate of its own.

#[path = "support/fixture.rs"]
mod fixture;

/// The packages `cargo build` compiles for the fixture, with `features`.
fn compiled(features: &[&str]) -> Vec<String> {
    // Shared with tests/disabled.rs's control build, which has the same
    // memprof features: memprof is built once.
    let mut cargo = fixture::cargo("build", "optional", "disabled");
    cargo
        .args(["--tests", "--message-format=json"])
        .args(features.iter().flat_map(|f| ["--features", f]));
    let out = fixture::succeed(cargo, "building the fixture");
    let mut names: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|m| m["reason"] == "compiler-artifact")
        .map(|m| m["target"]["name"].as_str().unwrap_or_default().to_owned())
        .collect();
    names.sort();
    names.dedup();
    names
}

#[test]
fn a_library_without_its_profiling_feature_compiles_no_memprof_crate() {
    let without = compiled(&[]);
    assert_eq!(without, ["memprof_optional_check"]);
    let with = compiled(&["profiling"]);
    for name in ["memprof", "memprof_macros", "memprof_runtime", "syn"] {
        assert!(with.iter().any(|n| n == name), "{name} not in {with:?}");
    }
}
