//! Cargo features and what they pull in: without `gpu`, a build of memprof
//! links no NVML or CUPTI code (nvml-wrapper and its derive tree, libloading).

use std::path::Path;
use std::process::Command;

/// memprof's normal dependencies, one crate name a line, with `features`
/// and no default features.
fn dependencies(features: &str, default_features: bool) -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut cmd = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cmd.args(["tree", "--offline", "--locked", "--manifest-path"])
        .arg(root.join("Cargo.toml"))
        .args(["-p", "memprof", "-e", "normal", "--prefix", "none"])
        .args(["--format", "{p}"]);
    if !default_features {
        cmd.arg("--no-default-features");
    }
    if !features.is_empty() {
        cmd.args(["--features", features]);
    }
    let out = cmd.output().expect("cargo runs");
    assert!(
        out.status.success(),
        "cargo tree failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
        .collect()
}

#[test]
fn without_the_gpu_feature_no_gpu_dependency_is_built() {
    let gpu_crates = ["nvml-wrapper", "nvml-wrapper-sys", "libloading"];
    let lean = dependencies("enabled,global-allocator", false);
    assert!(lean.iter().any(|c| c == "memprof-runtime"), "{lean:?}");
    for name in gpu_crates {
        assert!(!lean.iter().any(|c| c == name), "{name} in {lean:?}");
    }
    // The control: by default they are there.
    let full = dependencies("", true);
    for name in gpu_crates {
        assert!(
            full.iter().any(|c| c == name),
            "{name} missing from {full:?}"
        );
    }
}
