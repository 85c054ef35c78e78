//! Builds one of the fake libraries of this repo (`tests/fake-nvml`,
//! `tests/fake-cupti`), for `fake_nvml.rs` and `fake_cupti.rs`.

use std::path::PathBuf;
use std::process::Command;

/// Builds the cdylib package `package` (whose library is `lib<crate_name>`)
/// and returns the library's path. Panics with cargo's output if it fails.
pub fn build(package: &str, crate_name: &str) -> PathBuf {
    let workspace = env!("CARGO_MANIFEST_DIR");
    // NOTE: a target dir of its own, because the `cargo test` that runs us
    // holds the lock on the main one until the tests finish.
    let target_dir = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(workspace).join("target"))
        .join(package.trim_start_matches("memprof-"));
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let output = Command::new(&cargo)
        .arg("build")
        .arg("--manifest-path")
        .arg(PathBuf::from(workspace).join("Cargo.toml"))
        .args(["-p", package, "--target-dir"])
        .arg(&target_dir)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cargo:?} to build {package}: {e}"));
    assert!(
        output.status.success(),
        "building {package} failed ({}):\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr),
    );
    let name = format!(
        "{}{crate_name}{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    );
    let path = target_dir.join("debug").join(name);
    assert!(
        path.is_file(),
        "cargo built {package} but {} is missing",
        path.display()
    );
    path
}
