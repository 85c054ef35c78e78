//! Rust's function names as pprof's own reader prints them: `go tool pprof
//! -top` read `<u8 as <[_]>::to_vec_in::ConvertVec>::to_vec::<..>` as
//! demangled C++ and printed `::to_vec::`. Runs Go's pprof where `go` is
//! installed (scripts/install-peers installs Debian's golang-go); checks the
//! names memprof reads back everywhere.

use memprof::{HeapProfile, HeapValues, SiteFrame};
use std::path::Path;
use std::process::Command;

fn frame(function: &str, file: &str, line: u32) -> SiteFrame {
    SiteFrame {
        function: function.to_owned(),
        file: Some(file.to_owned()),
        line: Some(line),
    }
}

fn in_use(bytes: i64) -> HeapValues {
    HeapValues {
        alloc_objects: 1,
        alloc_space: bytes,
        inuse_objects: 1,
        inuse_space: bytes,
    }
}

/// Stacks as memprof's sites record them, innermost first, the profiled
/// line last: generic impls, trait-qualified paths, a closure.
fn profile() -> HeapProfile {
    let slice = "/rustc/library/alloc/src/slice.rs";
    let mut profile = HeapProfile::default();
    profile.samples.insert(
        vec![
            frame(
                "<u8 as <[_]>::to_vec_in::ConvertVec>::to_vec::<alloc::alloc::Global>",
                slice,
                446,
            ),
            frame("alloc::slice::<impl [T]>::to_vec", slice, 411),
            frame("app::load::{{closure}}", "src/app.rs", 14),
            frame("app::load", "src/app.rs", 12),
        ],
        in_use(4096),
    );
    profile.samples.insert(
        vec![
            frame(
                "<alloc::string::String as core::fmt::Write>::write_str",
                "/rustc/library/alloc/src/string.rs",
                2900,
            ),
            frame("app::Table<'_, u8>::render", "src/table.rs", 30),
            frame("app::load", "src/app.rs", 13),
        ],
        in_use(1024),
    );
    profile
}

/// What `go tool pprof ARGS` prints, or `None` where Go is not installed.
/// Go's caches and module settings point into `dir`: it never writes to
/// the home directory nor reaches for the network.
fn go_pprof(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("go")
        .args(["tool", "pprof"])
        .args(args)
        .env("GOCACHE", dir.join("gocache"))
        .env("GOPATH", dir.join("gopath"))
        .env("HOME", dir)
        .env("PPROF_TMPDIR", dir)
        .env("GOTOOLCHAIN", "local")
        .env("GOFLAGS", "-mod=mod")
        .env("GOPROXY", "off")
        .output()
        .ok()?;
    assert!(
        out.status.success(),
        "go tool pprof {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(String::from_utf8(out.stdout).unwrap())
}

#[test]
fn go_tool_pprof_top_prints_rust_names_with_their_type_and_trait() {
    let dir = std::env::temp_dir().join(format!("memprof-pprof-names-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("heap.pb.gz");
    let profile = profile();
    std::fs::write(&file, profile.to_pprof()).unwrap();

    // memprof's own reader (mprof flamegraph, mprof diff) reads the full
    // names back, as the reports show them.
    assert_eq!(
        HeapProfile::from_pprof(&std::fs::read(&file).unwrap()).unwrap(),
        profile
    );

    let file = file.to_str().unwrap();
    let Some(top) = go_pprof(&dir, &["-top", "-sample_index=inuse_space", file]) else {
        println!(
            "go is not on PATH: go tool pprof's names not checked (scripts/install-peers \
             installs Debian's golang-go)"
        );
        std::fs::remove_dir_all(&dir).unwrap();
        return;
    };
    // Each row (its flat figure first) ends with the name.
    let names: Vec<&str> = top
        .lines()
        .filter(|l| l.trim_start().starts_with(|c: char| c.is_ascii_digit()))
        .filter_map(|l| l.split_whitespace().nth(5))
        .collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(
        sorted,
        [
            "alloc::slice::[T]::to_vec",
            "alloc::string::String::Write::write_str",
            "app::Table::render",
            "app::load",
            "app::load::{{closure}}",
            "u8::ConvertVec::to_vec",
        ],
        "{top}"
    );
    // The heaviest first, as pprof ranks them.
    assert_eq!(names[0], "u8::ConvertVec::to_vec", "{top}");

    // A stack reads leaf to root, memprof's profiled line last.
    let traces = go_pprof(&dir, &["-traces", "-sample_index=inuse_space", file]).unwrap();
    let stack: Vec<&str> = traces
        .lines()
        .skip_while(|l| !l.contains("u8::ConvertVec::to_vec"))
        .take(4)
        .map(|l| l.split_whitespace().last().unwrap())
        .collect();
    assert_eq!(
        stack,
        [
            "u8::ConvertVec::to_vec",
            "alloc::slice::[T]::to_vec",
            "app::load::{{closure}}",
            "app::load",
        ],
        "{traces}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
