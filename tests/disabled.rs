//! With the `enabled` feature off, memprof leaves the program as written:
//! `#[profile]` hands the function back unchanged, nothing is printed, and no
//! allocator is installed.
//!
//! The check builds `tests/crates/disabled`, a crate of its own outside this
//! workspace (inside it, feature unification would turn `enabled` back on),
//! twice: with memprof's default features off, and with them on as the
//! control that shows the same checks do see memprof when it is there.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Builds the fixture with `features` and returns its binary.
fn build(features: &[&str]) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let target = Path::new(env!("CARGO_TARGET_TMPDIR")).join("disabled");
    let fixture = root.join("tests/crates/disabled");
    // The workspace's exact dependency versions, with nothing to resolve.
    std::fs::copy(root.join("Cargo.lock"), fixture.join("Cargo.lock"))
        .expect("fixture is writable");
    let out = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
        .args(["build", "--quiet", "--manifest-path"])
        .arg(fixture.join("Cargo.toml"))
        .args(features.iter().flat_map(|f| ["--features", f]))
        .env("CARGO_TARGET_DIR", &target)
        .output()
        .expect("cargo runs");
    assert!(
        out.status.success(),
        "building the fixture failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Both builds write the same path: copy each one out before the next.
    let name = if features.is_empty() { "off" } else { "on" };
    let bin = target.join(name);
    std::fs::copy(target.join("debug/memprof-disabled-check"), &bin).expect("binary was built");
    bin
}

/// The size in bytes of the code of each named function, from `nm`.
fn symbol_sizes(bin: &Path, names: &[&str]) -> Vec<u64> {
    let out = Command::new("nm")
        .args(["--defined-only", "--print-size"])
        .arg(bin)
        .output()
        .expect("nm (binutils) is installed");
    let listing = String::from_utf8_lossy(&out.stdout);
    names
        .iter()
        .map(|name| {
            listing
                .lines()
                .find_map(
                    |line| match line.split_whitespace().collect::<Vec<_>>()[..] {
                        [_, size, _, symbol] if symbol == *name => {
                            u64::from_str_radix(size, 16).ok()
                        }
                        _ => None,
                    },
                )
                .unwrap_or_else(|| panic!("no symbol {name} in {}", bin.display()))
        })
        .collect()
}

fn run(bin: &Path) -> (String, String) {
    let Output {
        status,
        stdout,
        stderr,
    } = Command::new(bin)
        .env_remove("MEMPROF_REPORT")
        .env_remove("MEMPROF_OUTPUT")
        .output()
        .expect("the fixture runs");
    let stderr = String::from_utf8(stderr).unwrap();
    assert!(status.success(), "{stderr}");
    (String::from_utf8(stdout).unwrap(), stderr)
}

#[test]
fn feature_off_leaves_the_program_as_written() {
    let off = build(&[]);
    let on = build(&["on"]);
    let twins = ["profiled_build", "plain_build"];

    // Off: the profiled function compiles to the same code as its plain twin,
    // nothing is printed, no allocator counts, `assert_memory!` checks
    // nothing (it would fail on zero figures), `measure` gives zeros, and
    // `memprof::ENABLED` says so.
    let sizes = symbol_sizes(&off, &twins);
    assert_eq!(
        sizes[0], sizes[1],
        "profiled and plain twins differ in size"
    );
    let (stdout, stderr) = run(&off);
    assert_eq!(stdout, "");
    assert_eq!(
        stderr,
        "enabled: false, len 1000 10, heap counted: false, measured peak: 0, profiled functions: 0\n"
    );

    // On (the control): the same checks see memprof.
    let sizes = symbol_sizes(&on, &twins);
    assert!(
        sizes[0] > sizes[1],
        "profiled twin is not instrumented: {sizes:?}"
    );
    let (stdout, stderr) = run(&on);
    assert!(
        stdout.contains("Function: memprof_disabled_check::profiled_build"),
        "{stdout}"
    );
    assert!(stdout.contains("peak memory: "), "{stdout}");
    assert!(stdout.contains("At src/main.rs:"), "{stdout}");
    assert_eq!(
        stderr,
        "enabled: true, len 1000 10, heap counted: true, measured peak: 4096, profiled functions: 1\n"
    );
}
