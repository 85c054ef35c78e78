//! Cargo on a fixture crate of `tests/crates/`, a crate of its own outside
//! the workspace, as a user's crate is. Include it with
//! `#[path = "support/fixture.rs"] mod fixture;`.

// Each test crate that includes this file uses a different part of it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// `cargo SUBCOMMAND --manifest-path tests/crates/NAME/Cargo.toml`, building
/// under the test target directory's `target` folder, with the workspace's
/// exact dependency versions (nothing to resolve).
pub fn cargo(subcommand: &str, name: &str, target: &str) -> Command {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let fixture = root.join("tests/crates").join(name);
    std::fs::copy(root.join("Cargo.lock"), fixture.join("Cargo.lock"))
        .expect("fixture is writable");
    let mut cargo = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cargo
        .args([subcommand, "--manifest-path"])
        .arg(fixture.join("Cargo.toml"))
        .env("CARGO_TARGET_DIR", target_dir(target));
    cargo
}

/// Where [`cargo`] builds for `target`.
pub fn target_dir(target: &str) -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join(target)
}

/// Runs `command`; its output, or a panic with cargo's stderr if it failed.
pub fn succeed(mut command: Command, what: &str) -> Output {
    let out = command.output().expect("cargo runs");
    assert!(
        out.status.success(),
        "{what} failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}
