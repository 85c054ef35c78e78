//! `cargo memprof`'s copy of the workspace (issue 50, item 1): symbolic
//! links that close a loop, dangling links, a stale target directory,
//! paths that climb out of the workspace, and links to files and
//! directories elsewhere. Each test builds a one-crate workspace of its
//! own name (the builds share one target directory) under a temporary
//! directory, runs `cargo memprof test` in it and checks the copy.

#[path = "common/cargo_memprof.rs"]
mod support;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};
use support::*;

/// A package `name` at `base/ws` whose src/lib.rs is `lib`, with
/// `#[test] fn check` in it.
fn workspace(base: &Path, name: &str, lib: &str) -> PathBuf {
    let ws = base.join("ws");
    std::fs::create_dir_all(ws.join("src")).unwrap();
    let manifest = format!(
        "[package]\nname = \"{name}\"\nversion = \"0.1.0\"\nedition = \"2021\"\npublish = false\n\n[workspace]\n"
    );
    std::fs::write(ws.join("Cargo.toml"), manifest).unwrap();
    std::fs::write(ws.join("src/lib.rs"), lib).unwrap();
    ws
}

/// A library whose one test passes when `words()` is `["a", "b"]`.
const LIB: &str = "pub fn words() -> Vec<String> {\n    \"a b\".split(' ').map(str::to_owned).collect()\n}\n\n#[test]\nfn check() {\n    assert_eq!(words(), [\"a\", \"b\"]);\n}\n";

/// Asserts that `run` passed its one test and profiled `krate::words`.
fn assert_passed(run: &Run, krate: &str) {
    assert_eq!(run.code, 0, "{}\n{}", run.stderr, run.stdout);
    assert!(
        run.stdout.contains("test result: ok. 1 passed"),
        "{}",
        run.stdout
    );
    let row = format!("Filename: src/lib.rs   Function: {krate}::words   Calls: 1");
    assert!(run.stdout.contains(&row), "{}", run.stdout);
}

fn symlink(target: &str, link: &Path) {
    std::os::unix::fs::symlink(target, link).unwrap();
}

/// Entries under `dir`, links not followed, counting stopped past `limit`.
fn entries(dir: &Path, limit: usize) -> usize {
    let mut count = 0;
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let Ok(read) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in read.flatten() {
            count += 1;
            if count > limit {
                return count;
            }
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                pending.push(entry.path());
            }
        }
    }
    count
}

/// The copy of a workspace under `memprof` (a `<target-dir>/memprof`):
/// the one directory there, links not followed, holding src/lib.rs.
fn copy_in(memprof: &Path) -> PathBuf {
    let mut found = Vec::new();
    let mut pending = vec![memprof.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let entry = entry.unwrap();
            if entry.file_type().unwrap().is_dir() {
                pending.push(entry.path());
            }
        }
        if dir
            .join("src/lib.rs")
            .symlink_metadata()
            .is_ok_and(|m| m.is_file())
        {
            found.push(dir);
        }
    }
    assert_eq!(found.len(), 1, "{found:?}");
    found.pop().unwrap()
}

/// `run`, killed when the memprof directory holds more than 20,000
/// entries or after 120 s: the copy that followed a loop filled the disk.
fn run_bounded(dir: &Path, args: &[&str]) -> Run {
    run_bounded_with(dir, args, &[], &dir.join("target/memprof"))
}

/// `run_bounded` with the environment variables `env` set, watching
/// `shadow` (cargo-memprof's directory under the target directory).
fn run_bounded_with(dir: &Path, args: &[&str], env: &[(&str, &str)], shadow: &Path) -> Run {
    use std::io::Read;
    const LIMIT: usize = 20_000;
    let _turn = turn();
    let before = snapshot(dir);
    let mut child = command(dir, args)
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut pipes = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let stdout = std::thread::spawn(move || {
        let mut text = String::new();
        pipes.0.read_to_string(&mut text).unwrap();
        text
    });
    let stderr = std::thread::spawn(move || {
        let mut text = String::new();
        pipes.1.read_to_string(&mut text).unwrap();
        text
    });
    let deadline = Instant::now() + Duration::from_secs(120);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        let held = entries(shadow, LIMIT);
        if held > LIMIT || Instant::now() > deadline {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!(
                "killed: the copy holds more than {LIMIT} entries, or ran past 120 s ({held} entries)"
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(before == snapshot(dir), "the user's tree changed");
    Run {
        code: status.code().unwrap_or(-1),
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
    }
}

#[test]
fn a_symlink_loop_is_linked_again_in_the_copy_not_followed_until_the_disk_is_full() {
    let base = TempDir::new("copy-loop");
    let ws = workspace(&base, "copy_loop", LIB);
    // `ln -s . loop`, a link to an ancestor deeper down, and one to the
    // directory above the workspace (which holds it).
    symlink(".", &ws.join("loop"));
    symlink("..", &ws.join("src/up"));
    symlink("..", &ws.join("above"));
    let run = run_bounded(&ws, &["test", "--offline"]);
    assert_passed(&run, "copy_loop");
    let tree = copy_in(&ws.join("target/memprof"));
    let link = |path: &str| std::fs::read_link(tree.join(path)).unwrap();
    assert_eq!(link("loop"), Path::new("."));
    assert_eq!(link("src/up"), Path::new(".."));
    assert_eq!(link("above"), Path::new(".."));
    // Each reaches what it reaches in the original.
    assert!(tree.join("loop/loop/src/lib.rs").is_file());
    assert!(tree.join("above/ws/src/up/Cargo.toml").is_file());
    assert_eq!(
        tree.join("above").canonicalize().unwrap(),
        tree.parent().unwrap().canonicalize().unwrap()
    );
}

#[test]
fn a_dangling_link_is_left_out_as_cargo_leaves_it() {
    let base = TempDir::new("copy-dangling");
    let ws = workspace(&base, "copy_dangling", LIB);
    // An editor's lock file, a link to itself, and a dangling directory.
    symlink("user@host.4242:1700000000", &ws.join("src/.#lib.rs"));
    symlink("itself", &ws.join("itself"));
    symlink("../gone", &ws.join("assets"));
    let run = run(&ws, &["test", "--offline"]);
    assert_passed(&run, "copy_dangling");
    let tree = copy_in(&ws.join("target/memprof"));
    for left_out in ["src/.#lib.rs", "itself", "assets"] {
        assert!(
            tree.join(left_out).symlink_metadata().is_err(),
            "{left_out}"
        );
    }
    assert!(tree.join("src/lib.rs").is_file());
}

/// cargo's CACHEDIR.TAG.
const CACHEDIR_TAG: &str = "Signature: 8a477f597d28d172789f06886806bc55\n# This file is a cache directory tag created by cargo.\n# For information about cache directory tags see https://bford.info/cachedir/\n";

#[test]
fn a_stale_target_beside_a_cargo_target_dir_elsewhere_is_not_copied() {
    let base = TempDir::new("copy-stale-target");
    let ws = workspace(&base, "copy_stale_target", LIB);
    let elsewhere = base.join("elsewhere");
    // A target directory from before CARGO_TARGET_DIR, one in a directory
    // below, and a directory whose CACHEDIR.TAG lacks the signature.
    for dir in ["target/debug", "tools/gen/target/debug", "notes"] {
        std::fs::create_dir_all(ws.join(dir)).unwrap();
    }
    std::fs::write(ws.join("target/CACHEDIR.TAG"), CACHEDIR_TAG).unwrap();
    std::fs::write(ws.join("target/debug/stale.bin"), [0; 4096]).unwrap();
    std::fs::write(ws.join("tools/gen/target/CACHEDIR.TAG"), CACHEDIR_TAG).unwrap();
    std::fs::write(ws.join("tools/gen/target/debug/stale.bin"), [0; 4096]).unwrap();
    std::fs::write(ws.join("tools/gen/README"), "kept\n").unwrap();
    std::fs::write(ws.join("notes/CACHEDIR.TAG"), "not a tag\n").unwrap();
    let run = run_with(
        &ws,
        &["test", "--offline"],
        &[("CARGO_TARGET_DIR", elsewhere.to_str().unwrap())],
    );
    assert_passed(&run, "copy_stale_target");
    let tree = copy_in(&elsewhere.join("memprof"));
    assert!(!tree.join("target").exists());
    assert!(!tree.join("tools/gen/target").exists());
    assert_eq!(
        std::fs::read_to_string(tree.join("tools/gen/README")).unwrap(),
        "kept\n"
    );
    assert_eq!(
        std::fs::read_to_string(tree.join("notes/CACHEDIR.TAG")).unwrap(),
        "not a tag\n"
    );
}

#[test]
fn a_target_only_cargo_memprof_used_is_not_copied_once_cargo_target_dir_moves_it() {
    let base = TempDir::new("copy-own-target");
    let ws = workspace(&base, "copy_own_target", LIB);
    let run = run(&ws, &["test", "--offline"]);
    assert_passed(&run, "copy_own_target");
    // Only cargo-memprof wrote ./target (cargo built under target/memprof):
    // no cargo tag there, and its copy's mirror of the directories above
    // the workspace links to the root's (`/proc` among them).
    assert!(!ws.join("target/CACHEDIR.TAG").exists());
    assert!(ws.join("target/memprof/CACHEDIR.TAG").is_file());
    let elsewhere = base.join("elsewhere");
    let env = [("CARGO_TARGET_DIR", elsewhere.to_str().unwrap())];
    let run = run_bounded_with(&ws, &["test", "--offline"], &env, &elsewhere);
    assert_passed(&run, "copy_own_target");
    let tree = copy_in(&elsewhere.join("memprof"));
    assert!(tree.join("target").is_dir());
    assert!(!tree.join("target/memprof").exists());
}

#[test]
fn include_str_reaching_outside_the_workspace_builds_in_the_copy() {
    let base = TempDir::new("copy-outside");
    let lib = "const DATA: &str = include_str!(\"../../outside/data.txt\");\n\npub fn words() -> Vec<String> {\n    DATA.split_whitespace().map(str::to_owned).collect()\n}\n\n#[test]\nfn check() {\n    assert_eq!(words(), [\"a\", \"b\"]);\n}\n";
    let ws = workspace(&base, "copy_outside", lib);
    std::fs::create_dir_all(base.join("outside")).unwrap();
    std::fs::write(base.join("outside/data.txt"), "a b\n").unwrap();
    let outside = snapshot(&base.join("outside"));
    let run = run(&ws, &["test", "--offline"]);
    assert_passed(&run, "copy_outside");
    assert!(outside == snapshot(&base.join("outside")));
    // The directory above the copy links to the real one's entries.
    let above = copy_in(&ws.join("target/memprof"))
        .parent()
        .unwrap()
        .join("outside");
    assert_eq!(
        std::fs::read_link(&above).unwrap(),
        base.canonicalize().unwrap().join("outside")
    );
}

#[test]
fn links_to_files_and_directories_elsewhere_are_copied_as_what_they_point_to() {
    let base = TempDir::new("copy-links");
    let lib = "mod linked;\n\nconst DATA: &str = include_str!(\"../assets/data.txt\");\n\npub fn words() -> Vec<String> {\n    linked::split(DATA)\n}\n\n#[test]\nfn check() {\n    assert_eq!(words(), [\"a\", \"b\"]);\n}\n";
    let ws = workspace(&base, "copy_links", lib);
    std::fs::create_dir_all(base.join("elsewhere/assets")).unwrap();
    std::fs::write(base.join("elsewhere/assets/data.txt"), "a b\n").unwrap();
    let split = "pub fn split(text: &str) -> Vec<String> {\n    text.split_whitespace().map(str::to_owned).collect()\n}\n";
    std::fs::write(base.join("elsewhere/linked.rs"), split).unwrap();
    symlink("../../elsewhere/linked.rs", &ws.join("src/linked.rs"));
    symlink("../elsewhere/assets", &ws.join("assets"));
    let run = run(&ws, &["test", "--offline"]);
    assert_passed(&run, "copy_links");
    assert!(
        run.stdout
            .contains("Filename: src/linked.rs   Function: copy_links::linked::split   Calls: 1"),
        "{}",
        run.stdout
    );
    // Copies, the linked module annotated.
    let tree = copy_in(&ws.join("target/memprof"));
    let module = tree.join("src/linked.rs");
    assert!(module.symlink_metadata().unwrap().is_file());
    assert!(
        std::fs::read_to_string(&module)
            .unwrap()
            .starts_with("#[::memprof::profile] pub fn split(")
    );
    assert!(tree.join("assets").symlink_metadata().unwrap().is_dir());
    assert_eq!(
        std::fs::read_to_string(tree.join("assets/data.txt")).unwrap(),
        "a b\n"
    );
}
