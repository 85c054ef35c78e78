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
    // PERF: in optimized builds the user's crate is optimized too (a
    // profile's opt-level applies to every package unless the user set one
    // per package), and the pure-Rust kernel inlined into it beats a call
    // into the library: consecutive steps share their loads. Only
    // `opt-level = 0` (the dev profile of `cargo test`) takes the library.
    if std::env::var("OPT_LEVEL").is_ok_and(|level| level != "0") {
        return;
    }
    println!("cargo::rustc-cfg=memprof_unoptimized");
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
    let archive = out.join(format!("lib{LIB}.a"));
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
