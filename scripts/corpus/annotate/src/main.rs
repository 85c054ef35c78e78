//! `memprof-annotate DIR`: puts `#[::memprof::profile]` on every non-const
//! function with a body in the `.rs` files under DIR, in place, and prints
//! how many it annotated. Functions inside macro definitions are not visible
//! to it and stay as they are.

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

impl<'a> Visit<'a> for Finder {
    fn visit_item_fn(&mut self, f: &'a syn::ItemFn) {
        self.add(f, &f.sig);
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

fn annotate(path: &Path) -> Result<usize, String> {
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
        row.insert_str(byte, "#[::memprof::profile] ");
    }
    let mut out = lines.join("\n");
    if text.ends_with('\n') {
        out.push('\n');
    }
    std::fs::write(path, out).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(finder.at.len())
}

fn main() {
    let Some(dir) = std::env::args_os().nth(1) else {
        eprintln!("usage: memprof-annotate DIR");
        std::process::exit(2);
    };
    let mut files = Vec::new();
    if let Err(e) = rust_files(Path::new(&dir), &mut files) {
        eprintln!("memprof-annotate: {e}");
        std::process::exit(1);
    }
    let mut total = 0;
    for file in files {
        match annotate(&file) {
            Ok(n) => total += n,
            Err(e) => {
                eprintln!("memprof-annotate: {e}");
                std::process::exit(1);
            }
        }
    }
    println!("{total}");
}
