//! What the `cargo memprof` tests share: copies of the fixture workspace
//! (tests/fixtures/cargo-memprof) and of registry crates, snapshots that
//! show a copy unchanged, and runs of the cargo-memprof binary, one at a
//! time per test binary. Include it with
//! `#[path = "common/cargo_memprof.rs"] mod support;`.

// Each test binary that includes this file uses a different part of it.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/cargo-memprof");

pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let dest = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            if entry.file_name() != "target" {
                copy_dir(&entry.path(), &dest);
            }
        } else {
            std::fs::copy(entry.path(), &dest).unwrap();
        }
    }
}

/// A directory of a test's own under the system's temporary directory,
/// removed when the test ends.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(name: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!("cargo-memprof-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
}

impl std::ops::Deref for TempDir {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A fresh copy of `from` named after the test.
pub fn copy_of(from: &Path, name: &str) -> TempDir {
    let dir = TempDir::new(name);
    copy_dir(from, &dir);
    // Registry sources are read-only.
    Command::new("chmod")
        .arg("-R")
        .arg("u+w")
        .arg(&*dir)
        .status()
        .unwrap();
    dir
}

/// Every file outside target/, with its bytes, and every link, with what
/// it points to (not followed: a tree may hold a loop).
pub fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<PathBuf, Vec<u8>>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let kind = path.symlink_metadata().unwrap().file_type();
            if kind.is_symlink() {
                let target = std::fs::read_link(&path).unwrap();
                out.insert(path, format!("link to {}", target.display()).into_bytes());
            } else if kind.is_dir() {
                if path != root.join("target") {
                    walk(root, &path, out);
                }
            } else {
                out.insert(path.clone(), std::fs::read(&path).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

/// The copy of the workspace at `dir` (target directory `dir/target`):
/// under `target/memprof/tree`, at the workspace's own path.
pub fn shadow_tree(dir: &Path) -> PathBuf {
    let real = dir.canonicalize().unwrap();
    dir.join("target/memprof/tree")
        .join(real.strip_prefix("/").unwrap())
}

/// The tests take turns: they share a target directory, where `cargo run`
/// puts each copy's `app` at the same path.
pub static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

pub fn turn() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// `--dep` reads `cargo metadata` of the copy, which depends on memprof:
/// that takes every package of memprof's dependency tree, for every
/// platform, and with `--offline` fails on one not downloaded (Windows'
/// windows-link: a first `cargo test` in a new cargo home downloads only
/// this platform's). Fetches memprof's locked packages, once per test binary.
fn fetch_every_platforms_packages() {
    static FETCHED: std::sync::Once = std::sync::Once::new();
    FETCHED.call_once(|| {
        let manifest = concat!(env!("CARGO_MANIFEST_DIR"), "/../Cargo.toml");
        let fetch = Command::new(env!("CARGO"))
            .args(["fetch", "--locked", "--manifest-path", manifest])
            .output()
            .unwrap();
        assert!(
            fetch.status.success(),
            "cargo fetch failed:\n{}",
            String::from_utf8_lossy(&fetch.stderr)
        );
    });
}

pub fn command(dir: &Path, args: &[&str]) -> Command {
    if args
        .iter()
        .any(|a| *a == "--dep" || a.starts_with("--dep="))
    {
        fetch_every_platforms_packages();
    }
    let mut command = Command::new(env!("CARGO_BIN_EXE_cargo-memprof"));
    command
        .arg("memprof")
        .args(args)
        .current_dir(dir)
        .env(
            "CARGO_MEMPROF_TARGET_DIR",
            Path::new(env!("CARGO_TARGET_TMPDIR")).join("cargo-memprof-target"),
        )
        // NOTE: the copy is read under the fixture's own target/, where it
        // is only if the `cargo test` running these has no CARGO_TARGET_DIR
        // for cargo-memprof to take as the fixture's.
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("MEMPROF_JSON")
        .env_remove("MEMPROF_REPORT")
        .env_remove("MEMPROF_SITES");
    command
}

pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

pub fn run(dir: &Path, args: &[&str]) -> Run {
    run_with(dir, args, &[])
}

/// `run` with the environment variables `env` set.
pub fn run_with(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Run {
    let _turn = turn();
    let before = snapshot(dir);
    let Output {
        status,
        stdout,
        stderr,
    } = command(dir, args)
        .envs(env.iter().copied())
        .output()
        .unwrap();
    assert!(before == snapshot(dir), "the user's tree changed");
    Run {
        code: status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&stdout).into_owned(),
        stderr: String::from_utf8_lossy(&stderr).into_owned(),
    }
}

/// Asserts that each of `shown` (a document's excerpt, `...` lines left
/// out by the caller) is one of `printed`, in the same order; `source`
/// names the document in the failure, with `stdout` in full.
pub fn assert_printed_in_order<S: AsRef<str>>(
    shown: &[S],
    printed: &[S],
    source: &str,
    stdout: &str,
) {
    let mut at = 0;
    for line in shown {
        let line = line.as_ref();
        match printed[at..].iter().position(|p| p.as_ref() == line) {
            Some(i) => at += i + 1,
            None => panic!("{source} shows a line not printed (in order):\n{line}\n\n{stdout}"),
        }
    }
}

/// A copy of the fixture whose packages have a version of their own
/// (0.3.`patch`): cargo names a workspace member's build by its name and
/// version, not its path, so copies that share a target directory and a
/// version would take each other's builds as fresh.
pub fn fixture(name: &str, patch: u32) -> TempDir {
    let dir = copy_of(Path::new(FIXTURE), name);
    let manifest = dir.join("Cargo.toml");
    let text = std::fs::read_to_string(&manifest).unwrap();
    let text = text.replace("version = \"0.3.0\"", &format!("version = \"0.3.{patch}\""));
    std::fs::write(&manifest, text).unwrap();
    dir
}
