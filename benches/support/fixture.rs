//! A fixture crate of `benches/crates` built the ways the whole-program
//! benches compare, shared by `whole_crate`, `registry_crates`,
//! `live_service` and `sites_scale` (and its tool build and `median` by
//! `test_suite`): as written,
//! with a feature (dhat's), and through `cargo memprof run --release`, each
//! into its own directory under the bench's `CARGO_TARGET_TMPDIR`.

// Each bench that includes this file uses a different part of it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// `benches/crates/NAME`, whose package and binary are `memprof-NAME`.
pub struct Fixture {
    pub name: &'static str,
}

impl Fixture {
    /// The fixture's directory, holding a copy of the workspace's lock: its
    /// exact dependency versions, with nothing to resolve but dhat's.
    pub fn dir(&self) -> PathBuf {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let dir = root.join("benches/crates").join(self.name);
        std::fs::copy(root.join("Cargo.lock"), dir.join("Cargo.lock"))
            .expect("fixture is writable");
        dir
    }

    /// Where its builds and its runs' files go.
    pub fn target(&self) -> PathBuf {
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(self.name)
    }

    fn binary(&self) -> String {
        format!("memprof-{}", self.name)
    }

    /// Builds it in release, with `features`, into `dir` under its target.
    pub fn build(&self, dir: &str, features: &[&str]) -> PathBuf {
        let target = self.target().join(dir);
        let status = cargo()
            .args(["build", "--quiet", "--release", "--manifest-path"])
            .arg(self.dir().join("Cargo.toml"))
            .args(features.iter().flat_map(|f| ["--features", f]))
            .env("CARGO_TARGET_DIR", &target)
            .status()
            .expect("cargo runs");
        assert!(status.success(), "building {} ({dir}) failed", self.name);
        target.join("release").join(self.binary())
    }

    /// Builds it through `cargo memprof run --release` (which runs it once,
    /// with `args`) and returns the profiled binary.
    pub fn build_profiled(&self, args: &[&str]) -> PathBuf {
        self.build_profiled_with(&[], args)
    }

    /// The same, with cargo-memprof's `flags` (`--dep NAME`). A second call
    /// builds from the record the first one left (`target/memprof`).
    pub fn build_profiled_with(&self, flags: &[&str], args: &[&str]) -> PathBuf {
        let cargo_memprof = build_tools(&self.target().join("tools"));
        let target = self.target().join("profiled");
        let out = Command::new(cargo_memprof)
            .args(["memprof", "run", "--release"])
            .args(flags)
            .arg("--")
            .args(args)
            .current_dir(self.dir())
            .env("CARGO_TARGET_DIR", &target)
            .output()
            .expect("cargo-memprof runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        // cargo-memprof builds its copy of the crate under the target directory.
        let found = find(&target.join("memprof"), &self.binary());
        found.expect("the profiled binary")
    }

    /// `mprof`, built beside cargo-memprof by [`Fixture::build_profiled`].
    pub fn mprof(&self) -> PathBuf {
        self.target().join("tools/release/mprof")
    }
}

/// Builds cargo-memprof and mprof from this workspace, in release, into
/// the target directory `tools`; returns cargo-memprof.
pub fn build_tools(tools: &Path) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let status = cargo()
        .args([
            "build",
            "--quiet",
            "--release",
            "-p",
            "mprof",
            "--bin",
            "cargo-memprof",
            "--bin",
            "mprof",
        ])
        .current_dir(root)
        .env("CARGO_TARGET_DIR", tools)
        .status()
        .expect("cargo runs");
    assert!(status.success(), "building cargo-memprof failed");
    tools.join("release/cargo-memprof")
}

/// The cargo that runs this bench (`CARGO`), else the one on `PATH`.
pub fn cargo() -> Command {
    Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
}

fn find(dir: &Path, name: &str) -> Option<PathBuf> {
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let path = entry.path();
        if path.is_dir() {
            if let Some(found) = find(&path, name) {
                return Some(found);
            }
        } else if path.file_name().is_some_and(|n| n == name)
            && path.parent().is_some_and(|p| p.ends_with("target/release"))
        {
            return Some(path);
        }
    }
    None
}

/// Whether `tool --version` runs: a peer (heaptrack) is installed.
pub fn installed(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}
