//! The pattern docs/reference.md gives libraries: memprof as an optional
//! dependency behind a feature of the library's own, and
//! `#[cfg_attr(feature = "profiling", memprof::profile)]` on its functions.
//! Without the feature, no memprof crate (nor syn) is compiled; with it,
//! the same code is profiled.
//!
//! The check builds `tests/crates/optional`, a crate of its own.

use std::path::Path;
use std::process::Command;

/// The packages `cargo build` compiles for the fixture, with `features`.
fn compiled(features: &[&str]) -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let fixture = root.join("tests/crates/optional");
    // The workspace's exact dependency versions, with nothing to resolve.
    std::fs::copy(root.join("Cargo.lock"), fixture.join("Cargo.lock"))
        .expect("fixture is writable");
    let out = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
        .args([
            "build",
            "--tests",
            "--message-format=json",
            "--manifest-path",
        ])
        .arg(fixture.join("Cargo.toml"))
        .args(features.iter().flat_map(|f| ["--features", f]))
        // Shared with tests/disabled.rs's control build, which has the same
        // memprof features: memprof is built once.
        .env(
            "CARGO_TARGET_DIR",
            Path::new(env!("CARGO_TARGET_TMPDIR")).join("disabled"),
        )
        .output()
        .expect("cargo runs");
    assert!(
        out.status.success(),
        "building the fixture failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
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
