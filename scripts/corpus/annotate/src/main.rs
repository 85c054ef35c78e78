//! `memprof-annotate [--attr PATH] DIR`: puts `#[::memprof::profile]` (or
//! `#[PATH]`) on every non-const function with a body in the `.rs` files
//! under DIR, in place, and prints how many it annotated. Functions inside
//! macro definitions are not visible to it and stay as they are, and so are
//! rstest_reuse templates (see `is_template`).
//!
//! The corpus builds each crate twice: with `#[::memprof::profile]`, and
//! with `--attr ::memprof_passthrough::passthrough`, an attribute that
//! returns the function unchanged, as the baseline it times against.

use proc_macro2::{Span, TokenTree};
use quote::ToTokens;
use std::path::{Path, PathBuf};
use syn::visit::Visit;

/// Where the item's first token after its outer attributes starts.
fn first_token_after_attrs(item: &impl ToTokens) -> Option<Span> {
    let mut tokens = item.to_token_stream().into_iter();
    loop {
        match tokens.next()? {
            TokenTree::Punct(p) if p.as_char() == '#' => {
                tokens.next();
            }
            t => return Some(t.span()),
        }
    }
}

#[derive(Default)]
struct Finder {
    /// (line, column) of each function to annotate; line 1-based, column in chars.
    at: Vec<(usize, usize)>,
}

impl Finder {
    fn add(&mut self, item: &impl ToTokens, sig: &syn::Signature) {
        if sig.constness.is_some() {
            return;
        }
        if let Some(span) = first_token_after_attrs(item) {
            let start = span.start();
            self.at.push((start.line, start.column));
        }
    }
}

/// rstest_reuse's `#[template]`: the function is never compiled, its
/// attributes from `#[rstest]` on are pasted above every function that
/// `#[apply]`s it. Annotated, those would carry the attribute twice, which
/// `#[profile]` rejects (base64's engine tests).
fn is_template(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path()
            .segments
            .last()
            .is_some_and(|s| s.ident == "template")
    })
}

impl<'a> Visit<'a> for Finder {
    fn visit_item_fn(&mut self, f: &'a syn::ItemFn) {
        if !is_template(&f.attrs) {
            self.add(f, &f.sig);
        }
        syn::visit::visit_item_fn(self, f);
    }

    fn visit_impl_item_fn(&mut self, f: &'a syn::ImplItemFn) {
        self.add(f, &f.sig);
        syn::visit::visit_impl_item_fn(self, f);
    }

    fn visit_trait_item_fn(&mut self, f: &'a syn::TraitItemFn) {
        if f.default.is_some() {
            self.add(f, &f.sig);
        }
        syn::visit::visit_trait_item_fn(self, f);
    }
}

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

/// The attribute put on each function, by default memprof's.
const PROFILE: &str = "::memprof::profile";

fn annotate(path: &Path, attr: &str) -> Result<usize, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let file = syn::parse_file(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut finder = Finder::default();
    finder.visit_file(&file);
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    // Later positions first, so earlier insertions do not move them.
    finder.at.sort_unstable_by(|a, b| b.cmp(a));
    finder.at.dedup();
    for &(line, column) in &finder.at {
        let row = &mut lines[line - 1];
        let byte = row.char_indices().nth(column).map_or(row.len(), |(i, _)| i);
        row.insert_str(byte, &format!("#[{attr}] "));
    }
    let mut out = lines.join("\n");
    if text.ends_with('\n') {
        out.push('\n');
    }
    std::fs::write(path, out).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(finder.at.len())
}

fn usage() -> ! {
    eprintln!("usage: memprof-annotate [--attr PATH] DIR");
    std::process::exit(2);
}

fn main() {
    let mut args = std::env::args_os().skip(1);
    let mut attr = PROFILE.to_string();
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
    let mut total = 0;
    for file in files {
        match annotate(&file, &attr) {
            Ok(n) => total += n,
            Err(e) => {
                eprintln!("memprof-annotate: {e}");
                std::process::exit(1);
            }
        }
    }
    println!("{total}");
}
