//! Whether the macros run inside rustdoc. `rustdoc --test` (the doctests
//! of `cargo test`) expands a crate only to find its doc comments: each
//! doctest is then compiled by rustc, against the library that rustc built,
//! whose functions carry their instrumentation. So there `#[profile]` gives
//! the item back as written: instrumenting a crate's every function for
//! rustdoc to read only their doc comments took 0.45 s of pulldown-cmark's
//! doctest run against 0.12 s as written, one process before the doctests
//! start. Documenting (`cargo doc`) reads signatures, not bodies, either.
//! A program started under another name (a wrapper set as `RUSTDOC`) gets
//! the whole expansion, as rustc does.

use std::ffi::OsStr;
use std::sync::OnceLock;

/// Whether this process is rustdoc (the macros are loaded into it).
pub(crate) fn running() -> bool {
    static RUSTDOC: OnceLock<bool> = OnceLock::new();
    *RUSTDOC.get_or_init(|| std::env::args_os().next().is_some_and(|p| is_rustdoc(&p)))
}

/// Whether `program`, a process's first argument, names rustdoc, by
/// either system's separators.
fn is_rustdoc(program: &OsStr) -> bool {
    let program = program.to_string_lossy();
    let name = program.rsplit(['/', '\\']).next().unwrap_or_default();
    name == "rustdoc" || name.eq_ignore_ascii_case("rustdoc.exe")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rustdoc_is_known_by_its_program_name_alone() {
        for program in [
            "rustdoc",
            "/home/u/.rustup/toolchains/stable-x86_64-unknown-linux-gnu/bin/rustdoc",
            "C:\\Users\\u\\.rustup\\toolchains\\stable\\bin\\rustdoc.exe",
        ] {
            assert!(is_rustdoc(OsStr::new(program)), "{program}");
        }
        for program in [
            "rustc",
            "/usr/bin/rustc",
            "clippy-driver",
            "rust-analyzer-proc-macro-srv",
            "/opt/rustdoc-wrapper",
            "rustdoc/rustc",
        ] {
            assert!(!is_rustdoc(OsStr::new(program)), "{program}");
        }
        // The test harness itself is not rustdoc.
        assert!(!running());
    }
}
