//! `memprof-annotate [--attr PATH] DIR`: puts `#[::memprof::profile]` (or
//! `#[PATH]`) on every non-const function with a body in the `.rs` files
//! under DIR, in place, and prints how many it annotated. Functions inside
//! macro definitions are not visible to it and stay as they are, and so are
//! rstest_reuse templates.
//!
//! The corpus builds each crate twice: with `#[::memprof::profile]`, and
//! with `--attr ::memprof_passthrough::passthrough`, an attribute that
//! returns the function unchanged, as the baseline it times against.
//!
//! The annotator is cargo-memprof's (`annotate_text`), compiled in from
//! mprof's source, so that the corpus checks the code `cargo memprof`
//! runs; this crate stays a workspace of its own so that the corpus does
//! not build mprof's plotting and HTML dependencies.

// NOTE: the file-tree walk (`annotate_crate`) and its types are
// cargo-memprof's, unused here.
#[allow(dead_code)]
#[path = "../../../../mprof/src/cargo_memprof/annotate.rs"]
mod annotate;
// What annotate.rs calls on: the wrapping of an own allocator, the
// names a function calls, and the crate's item-free macros.
#[allow(dead_code)]
#[path = "../../../../mprof/src/cargo_memprof/allocator.rs"]
mod allocator;
#[allow(dead_code)]
#[path = "../../../../mprof/src/cargo_memprof/callers.rs"]
mod callers;
#[path = "../../../../mprof/src/cargo_memprof/expr_macros.rs"]
mod expr_macros;

use std::path::{Path, PathBuf};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            rust_files(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    Ok(())
}

fn annotate(
    path: &Path,
    attr: &str,
    expr_macros: &std::collections::BTreeSet<String>,
) -> Result<usize, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let selection = annotate::Selection::default();
    let found = annotate::annotate_text(&text, "crate", &selection, attr, None, expr_macros)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    if let Some(out) = found.text {
        std::fs::write(path, out).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(found.functions.len())
}

fn usage() -> ! {
    eprintln!("usage: memprof-annotate [--attr PATH] DIR");
    std::process::exit(2);
}

fn main() {
    let mut args = std::env::args_os().skip(1);
    let mut attr = annotate::PROFILE.to_string();
    let mut dir = None;
    while let Some(arg) = args.next() {
        if arg == "--attr" {
            let path = args.next().and_then(|a| a.into_string().ok());
            let path = path.filter(|p| syn::parse_str::<syn::Path>(p).is_ok());
            attr = path.unwrap_or_else(|| usage());
        } else if dir.is_none() {
            dir = Some(arg);
        } else {
            usage();
        }
    }
    let Some(dir) = dir else { usage() };
    let mut files = Vec::new();
    if let Err(e) = rust_files(Path::new(&dir), &mut files) {
        eprintln!("memprof-annotate: {e}");
        std::process::exit(1);
    }
    // As cargo memprof does: the crate's macros that expand to no item.
    let expr_macros = expr_macros::item_free_under(Path::new(&dir));
    let mut total = 0;
    for file in files {
        match annotate(&file, &attr, &expr_macros) {
            Ok(n) => total += n,
            Err(e) => {
                eprintln!("memprof-annotate: {e}");
                std::process::exit(1);
            }
        }
    }
    println!("{total}");
}
