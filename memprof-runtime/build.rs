//! Builds the kernel (`src/kernel/lib.rs`) as a static library optimized in
//! every profile; see `src/kernel/mod.rs`. Falls back to the pure-Rust
//! kernel, with one warning, where that build cannot run.

use std::path::PathBuf;
use std::process::Command;

/// The library's name: versioned, like its symbols.
const LIB: &str = "memprof_kernel_0_1_0";

fn main() {
    println!("cargo::rerun-if-changed=src/kernel");
    println!("cargo::rerun-if-env-changed=MEMPROF_KERNEL");
    println!("cargo::rustc-check-cfg=cfg(memprof_kernel)");
    println!("cargo::rustc-check-cfg=cfg(memprof_unoptimized)");
    println!("cargo::rustc-check-cfg=cfg(memprof_frame_pointers)");
    // Allocation sites walk the frame pointers where the crates are built
    // with them (see `src/sites/frames.rs`): the flags reach every crate.
    if frame_pointers() {
        println!("cargo::rustc-cfg=memprof_frame_pointers");
    }
    // PERF: an optimized build without debug assertions (release) compiles
    // the same kernel into the runtime, its calls direct rather than
    // through the GOT. An unoptimized one (the dev profile of `cargo
    // test`), and an optimized one that keeps debug assertions (a test
    // profile at opt-level 3, as memchr's and base64's are), take the
    // library: there the kernel would carry the profile's overflow checks
    // and the compiler's pointer checks on every load. A recent cargo tells
    // a build script whether the profile keeps debug assertions
    // (`CARGO_CFG_DEBUG_ASSERTIONS`: 1.95 does, 1.88 does not); with one
    // that does not, such a build keeps the compiled-in kernel.
    let optimized = std::env::var("OPT_LEVEL").is_ok_and(|level| level != "0");
    let checked = std::env::var_os("CARGO_CFG_DEBUG_ASSERTIONS").is_some();
    if optimized && !checked {
        return;
    }
    if !optimized {
        println!("cargo::rustc-cfg=memprof_unoptimized");
    }
    match build() {
        Ok(dir) => {
            println!("cargo::rustc-link-search=native={}", dir.display());
            // NOTE: not bundled into the rlib: a bundled archive breaks
            // downstream LTO. The search path reaches the final link.
            println!("cargo::rustc-link-lib=static:-bundle={LIB}");
            println!("cargo::rustc-cfg=memprof_kernel");
        }
        Err(why) => println!(
            "cargo::warning=memprof: {why}; using the pure-Rust kernel (same figures, slower profiled calls in unoptimized builds)"
        ),
    }
}

/// Whether the crate is built with `-C force-frame-pointers` on (its last
/// word wins, as rustc's does).
fn frame_pointers() -> bool {
    let flags = std::env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    let mut on = false;
    let mut after_c = false;
    for flag in flags.split('\x1f') {
        let option = match flag.strip_prefix("-C") {
            Some("") => {
                after_c = true;
                continue;
            }
            Some(option) => option,
            None if after_c => flag,
            None => "",
        };
        after_c = false;
        match option.split_once('=') {
            Some(("force-frame-pointers", value)) => {
                on = matches!(value, "yes" | "y" | "on" | "true");
            }
            None if option == "force-frame-pointers" => on = true,
            _ => {}
        }
    }
    on
}

fn build() -> Result<PathBuf, String> {
    let var = |name: &str| std::env::var(name).map_err(|_| format!("{name} is not set"));
    if std::env::var("MEMPROF_KERNEL").is_ok_and(|v| v == "rust") {
        return Err("MEMPROF_KERNEL=rust".into());
    }
    if std::env::var_os("CARGO_CFG_MIRI").is_some() {
        return Err("Miri runs Rust only".into());
    }
    let out = PathBuf::from(var("OUT_DIR")?);
    let rustc = var("RUSTC")?;
    let target = var("TARGET")?;
    let manifest = PathBuf::from(var("CARGO_MANIFEST_DIR")?);
    // The name the target's linker looks for: MSVC's link.exe takes
    // `NAME.lib` and no other; every other linker finds `libNAME.a`.
    let archive = match std::env::var("CARGO_CFG_TARGET_ENV").as_deref() {
        Ok("msvc") => out.join(format!("{LIB}.lib")),
        _ => out.join(format!("lib{LIB}.a")),
    };
    let output = Command::new(&rustc)
        .arg(manifest.join("src/kernel/lib.rs"))
        .args([
            "--crate-type=staticlib",
            "--crate-name",
            LIB,
            "--edition=2024",
        ])
        .args(["--target", &target])
        .args([
            "-Copt-level=3",
            "-Cpanic=abort",
            "-Ccodegen-units=1",
            "-Clto=fat",
            "-Cdebug-assertions=off",
            "-Coverflow-checks=off",
            "-Cdebuginfo=0",
        ])
        .arg("-o")
        .arg(&archive)
        .output()
        .map_err(|e| format!("could not run {rustc}: {e}"))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let first = stderr.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
        return Err(format!(
            "the optimized kernel did not build for {target} ({first})"
        ));
    }
    Ok(out)
}
