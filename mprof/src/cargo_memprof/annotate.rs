//! Finds the functions of one crate and puts `#[::memprof::profile]` on
//! them, as text: the attribute goes in front of each function's first
//! token after its outer attributes, on the same line, so that every line
//! keeps its number and the tables name the user's lines.
//!
//! A crate's files are those its root reaches through `mod` declarations
//! (`#[path]` included), not every `.rs` file under its directory: a file
//! that a test reads with `include_str!` stays as written.

use super::callers::Left;
use proc_macro2::{Span, TokenStream, TokenTree};
use quote::ToTokens;
use regex::Regex;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use syn::visit::Visit;

/// The attribute put on each function. NOTE: written `#[::memprof::profile]`
/// in front of the function's first token, it is what memprof-macros leaves
/// out of the rows' text (`INSERTED` in its expand.rs), so that the tables,
/// a failing test's included, show the user's lines.
pub const PROFILE: &str = "::memprof::profile";

/// Which functions get the attribute.
#[derive(Debug, Default)]
pub struct Selection {
    /// Only functions whose path matches (`--fn`).
    pub only: Option<Regex>,
    /// Not functions whose path matches (`--skip-fn`).
    pub skip: Option<Regex>,
    /// Functions the record says moved no heap, as written then: by path
    /// and the hash of their tokens (see `record`). A function changed
    /// since has another hash, and is profiled.
    pub unmoved: std::collections::BTreeSet<(String, u64)>,
    /// Functions the record says were called often and moved the heap
    /// rarely, as written then (see `record::HOT_CALLS`).
    pub rare: std::collections::BTreeSet<(String, u64)>,
}

impl Selection {
    fn wants(&self, path: &str) -> bool {
        self.only.as_ref().is_none_or(|r| r.is_match(path))
            && !self.skip.as_ref().is_some_and(|r| r.is_match(path))
    }
}

/// What annotating found, summed over files.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Tally {
    pub annotated: usize,
    /// Files with at least one annotated function.
    pub files: usize,
    pub const_fn: usize,
    /// `fn` tokens inside `macro_rules!` bodies: not visible as functions.
    pub in_macros: usize,
    pub already: usize,
    /// rstest_reuse `#[template]`s.
    pub templates: usize,
    /// Left out by `--fn` or `--skip-fn`.
    pub deselected: usize,
    /// Left out as the record found them: no heap moved in their calls.
    pub unmoved: usize,
    /// Left out as the record found them called often, rarely moving the
    /// heap: their paths.
    pub rare: Vec<String>,
}

impl Tally {
    pub fn add(&mut self, other: &Tally) {
        self.annotated += other.annotated;
        self.files += other.files;
        self.const_fn += other.const_fn;
        self.in_macros += other.in_macros;
        self.already += other.already;
        self.templates += other.templates;
        self.deselected += other.deselected;
        self.unmoved += other.unmoved;
        self.rare.extend(other.rare.iter().cloned());
    }
}

/// One annotated function: where it starts and its path.
#[derive(Debug, Clone)]
pub struct Annotated {
    pub path: String,
    pub file: PathBuf,
    /// 1-based line of the function's first token, its outer attributes
    /// (and doc comments) included: where its table's `fn` row is.
    pub first_line: usize,
    /// 1-based line of the function's first token after its attributes.
    pub line: usize,
    /// The hash of its tokens as written (see [`token_hash`]).
    pub hash: u64,
}

/// A crate's files: for each, its text with the attributes in.
#[derive(Debug, Default)]
pub struct CrateAnnotation {
    pub files: BTreeMap<PathBuf, String>,
    pub functions: Vec<Annotated>,
    pub tally: Tally,
    /// The files that declare a `#[global_allocator]`, wrapped in
    /// [`ALLOCATOR`](super::allocator::ALLOCATOR) in their text.
    pub allocator_files: std::collections::BTreeSet<PathBuf>,
    /// The functions the record leaves as written.
    pub left: Vec<Left>,
    /// The item-free macros under each crate root's directory, read once:
    /// a package's test targets share `tests/`, its binaries `src/`.
    pub expr_macros: BTreeMap<PathBuf, BTreeSet<String>>,
}

/// Annotates the crate whose root file is `root`, named `krate` in paths;
/// returns whether the crate declares a `#[global_allocator]`. Files in
/// `seen` are not read again (a module shared by two targets).
pub fn annotate_crate(
    root: &Path,
    krate: &str,
    selection: &Selection,
    seen: &mut std::collections::BTreeSet<PathBuf>,
    out: &mut CrateAnnotation,
) -> Result<bool, String> {
    let mut own_allocator = false;
    let dir = root.parent().unwrap_or(Path::new("."));
    let expr_macros = out
        .expr_macros
        .entry(dir.to_path_buf())
        .or_insert_with(|| super::expr_macros::item_free_under(dir))
        .clone();
    let mut pending = vec![(root.to_path_buf(), krate.to_string(), true)];
    while let Some((file, module, mod_rs)) = pending.pop() {
        if !seen.insert(file.clone()) {
            // NOTE: a file read for an earlier target: its own allocator
            // counts, not those of modules only it declares.
            own_allocator |= out.allocator_files.contains(&file);
            continue;
        }
        let text =
            std::fs::read_to_string(&file).map_err(|e| format!("{}: {e}", file.display()))?;
        let found = annotate_text(
            &text,
            &module,
            selection,
            PROFILE,
            Some(super::allocator::ALLOCATOR),
            &expr_macros,
        )
        .map_err(|e| {
            let at = e.span().start();
            format!("{}:{}: {e}", file.display(), at.line)
        })?;
        // The directory that `mod x;` looks in.
        let dir = file.parent().unwrap_or(Path::new(".")).to_path_buf();
        let children = if mod_rs {
            dir.clone()
        } else {
            dir.join(file.file_stem().unwrap_or_default())
        };
        for declared in found.declared {
            let base = declared
                .inline
                .iter()
                .fold(children.clone(), |d, m| d.join(m));
            let (path, child_mod_rs) = match declared.path_attr {
                // NOTE: outside inline modules `#[path]` is relative to the
                // file's own directory; inside them, to the inline path.
                Some(p) if declared.inline.is_empty() => (dir.join(p), true),
                Some(p) => (base.join(p), true),
                None => {
                    let flat = base.join(format!("{}.rs", declared.name));
                    if flat.is_file() {
                        (flat, false)
                    } else {
                        (base.join(&declared.name).join("mod.rs"), true)
                    }
                }
            };
            let path = lexically_normal(&path);
            if path.is_file() {
                pending.push((path, declared.module, child_mod_rs));
            }
        }
        let mut tally = found.tally;
        out.left.extend(found.left);
        if found.global_allocator {
            own_allocator = true;
            out.allocator_files.insert(file.clone());
        }
        if let Some(annotated) = found.text {
            tally.files = usize::from(!found.functions.is_empty());
            out.files.insert(file.clone(), annotated);
            for (first_line, line, path, hash) in found.functions {
                out.functions.push(Annotated {
                    path,
                    file: file.clone(),
                    first_line,
                    line,
                    hash,
                });
            }
        }
        out.tally.add(&tally);
    }
    Ok(own_allocator)
}

/// `path` without `.` and `a/..` components, as the copy's files are
/// named: `#[path = "../work.rs"]` in `src/bin/a.rs` is `src/work.rs`.
/// NOTE: by the text, not the file system: a link stays a link.
pub(crate) fn lexically_normal(path: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir
                if matches!(out.components().next_back(), Some(Component::Normal(_))) =>
            {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// One file's annotation: see [`annotate_text`].
pub struct FileAnnotation {
    /// The text with the attributes in; `None` when no function got one.
    pub text: Option<String>,
    /// (first line, line, path, hash of its tokens) of each annotated
    /// function (see [`Annotated`]).
    pub functions: Vec<(usize, usize, String, u64)>,
    pub tally: Tally,
    /// Whether the file declares a `#[global_allocator]` (wrapped in the
    /// text, when `wrap_allocator` was given).
    pub global_allocator: bool,
    /// The functions the record leaves as written.
    pub left: Vec<Left>,
    declared: Vec<Declared>,
}

/// Puts `#[attr]` on the selected functions of one file's `text`, whose
/// items are in `module` (a path such as `app::format`), and wraps its
/// `#[global_allocator]` static in `wrap_allocator` (a path such as
/// `::memprof::Allocator`) if given. A function that calls some of
/// `expr_macros` (the crate's item-free macros, see `expr_macros`) gets
/// `#[attr(expr_macros(...))]` naming them. The corpus
/// (scripts/corpus/annotate) annotates with this too.
pub fn annotate_text(
    text: &str,
    module: &str,
    selection: &Selection,
    attr: &str,
    wrap_allocator: Option<&str>,
    expr_macros: &BTreeSet<String>,
) -> Result<FileAnnotation, syn::Error> {
    let parsed = syn::parse_file(text)?;
    let mut finder = Finder {
        selection,
        expr_macros,
        module: vec![module.to_string()],
        inline: Vec::new(),
        self_type: Vec::new(),
        at: Vec::new(),
        allocators: Vec::new(),
        left: Vec::new(),
        tally: Tally::default(),
        declared: Vec::new(),
    };
    finder.visit_file(&parsed);
    let mut edits: Vec<(usize, usize, String)> = finder
        .at
        .iter()
        .map(|at| match at.macros.is_empty() {
            true => (at.line, at.column, format!("#[{attr}] ")),
            false => {
                let names = at.macros.join(", ");
                (
                    at.line,
                    at.column,
                    format!("#[{attr}(expr_macros({names}))] "),
                )
            }
        })
        .collect();
    let mut tail = String::new();
    if let Some(wrapper) = wrap_allocator {
        for statik in &finder.allocators {
            edits.extend(super::allocator::wrap_static(statik, wrapper));
        }
        tail = super::allocator::otherwise(&finder.allocators, wrapper);
    }
    let annotated = (!edits.is_empty()).then(|| insert(text, edits) + &tail);
    Ok(FileAnnotation {
        text: annotated,
        functions: finder
            .at
            .into_iter()
            .map(|at| (at.first_line, at.line, at.path, at.hash))
            .collect(),
        tally: finder.tally,
        global_allocator: !finder.allocators.is_empty(),
        left: finder.left,
        declared: finder.declared,
    })
}

/// `text` with each (line, column, text) inserted; line 1-based, column
/// in chars.
fn insert(text: &str, mut at: Vec<(usize, usize, String)>) -> String {
    // Later positions first, so earlier insertions do not move them.
    at.sort_unstable_by_key(|a| std::cmp::Reverse((a.0, a.1)));
    at.dedup();
    let mut lines: Vec<String> = text.split('\n').map(str::to_owned).collect();
    for (line, column, insertion) in at {
        if let Some(row) = lines.get_mut(line - 1) {
            let byte = row.char_indices().nth(column).map_or(row.len(), |(i, _)| i);
            row.insert_str(byte, &insertion);
        }
    }
    lines.join("\n")
}

/// A `mod name;` found in a file.
struct Declared {
    name: String,
    module: String,
    /// Inline modules around the declaration.
    inline: Vec<String>,
    path_attr: Option<String>,
}

/// A function to annotate: where its first token after its attributes is,
/// what the record knows it by, and the crate's item-free macros it calls.
struct At {
    first_line: usize,
    line: usize,
    column: usize,
    path: String,
    hash: u64,
    macros: Vec<String>,
}

struct Finder<'s> {
    selection: &'s Selection,
    expr_macros: &'s BTreeSet<String>,
    module: Vec<String>,
    inline: Vec<String>,
    /// The type of each `impl` or trait around the function.
    self_type: Vec<String>,
    /// Each function to annotate.
    at: Vec<At>,
    /// The `#[global_allocator]` statics.
    allocators: Vec<syn::ItemStatic>,
    /// The functions the record leaves as written.
    left: Vec<Left>,
    tally: Tally,
    declared: Vec<Declared>,
}

impl Finder<'_> {
    fn path(&self, name: &syn::Ident) -> String {
        let mut path = self.module.join("::");
        if let Some(ty) = self.self_type.last() {
            path.push_str("::");
            path.push_str(ty);
        }
        path.push_str("::");
        path.push_str(&name.unraw().to_string());
        path
    }

    fn add(&mut self, item: &impl ToTokens, attrs: &[syn::Attribute], sig: &syn::Signature) {
        if sig.constness.is_some() {
            self.tally.const_fn += 1;
            return;
        }
        if attrs.iter().any(|a| last_segment_is(a.path(), "profile")) {
            self.tally.already += 1;
            return;
        }
        let path = self.path(&sig.ident);
        if !self.selection.wants(&path) {
            self.tally.deselected += 1;
            return;
        }
        // PERF: the item's tokens, built once for its hash, its place and
        // its macro calls.
        let tokens = item.to_token_stream();
        let hash = token_hash(&tokens);
        let key = (path.clone(), hash);
        let unmoved = self.selection.unmoved.contains(&key);
        if unmoved || self.selection.rare.contains(&key) {
            if unmoved {
                self.tally.unmoved += 1;
            } else {
                self.tally.rare.push(path.clone());
            }
            let calls = super::callers::called_names(item);
            self.left.push(Left { path, hash, calls });
            return;
        }
        if let Some(span) = first_token_after_attrs(tokens.clone()) {
            let start = span.start();
            let first_line = tokens
                .clone()
                .into_iter()
                .next()
                .map_or(start.line, |t| t.span().start().line);
            let macros = super::expr_macros::calls(tokens)
                .intersection(self.expr_macros)
                .cloned()
                .collect();
            self.at.push(At {
                first_line,
                line: start.line,
                column: start.column,
                path,
                hash,
                macros,
            });
            self.tally.annotated += 1;
        }
    }
}

use syn::ext::IdentExt;

fn last_segment_is(path: &syn::Path, name: &str) -> bool {
    path.segments.last().is_some_and(|s| s.ident == name)
}

/// A hash of the function's tokens as written (its attributes, signature
/// and body; not its spacing or comments): what tells the record that a
/// function changed. The standard library's default hasher with its fixed
/// keys: the same across runs of one build of cargo-memprof; another Rust
/// release may hash otherwise, which only profiles the functions again.
pub fn token_hash(tokens: &TokenStream) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::hash::DefaultHasher::new();
    tokens.to_string().hash(&mut hasher);
    hasher.finish()
}

/// Where the item's first token after its outer attributes starts.
fn first_token_after_attrs(tokens: TokenStream) -> Option<Span> {
    let mut tokens = tokens.into_iter();
    loop {
        match tokens.next()? {
            TokenTree::Punct(p) if p.as_char() == '#' => {
                tokens.next();
            }
            t => return Some(t.span()),
        }
    }
}

/// The last identifier of a type's path: `Foo` for `Foo<T>` and `a::Foo`.
fn type_name(ty: &syn::Type) -> String {
    match ty {
        syn::Type::Path(p) => p
            .path
            .segments
            .last()
            .map_or_else(|| "_".to_string(), |s| s.ident.unraw().to_string()),
        syn::Type::Reference(r) => type_name(&r.elem),
        _ => "_".to_string(),
    }
}

fn count_fn_tokens(tokens: TokenStream) -> usize {
    tokens
        .into_iter()
        .map(|t| match t {
            TokenTree::Ident(i) if i == "fn" => 1,
            TokenTree::Group(g) => count_fn_tokens(g.stream()),
            _ => 0,
        })
        .sum()
}

/// rstest_reuse's `#[template]`: never compiled itself, its attributes are
/// pasted above every function that `#[apply]`s it; annotated, those would
/// carry the attribute twice.
fn is_template(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| last_segment_is(a.path(), "template"))
}

fn path_attr(attrs: &[syn::Attribute]) -> Option<String> {
    attrs.iter().find_map(|a| match &a.meta {
        syn::Meta::NameValue(nv) if nv.path.is_ident("path") => match &nv.value {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(s),
                ..
            }) => Some(s.value()),
            _ => None,
        },
        _ => None,
    })
}

impl<'a> Visit<'a> for Finder<'_> {
    fn visit_item_static(&mut self, s: &'a syn::ItemStatic) {
        if s.attrs
            .iter()
            .any(|a| a.path().is_ident("global_allocator"))
        {
            self.allocators.push(s.clone());
        }
        syn::visit::visit_item_static(self, s);
    }

    fn visit_item_fn(&mut self, f: &'a syn::ItemFn) {
        if is_template(&f.attrs) {
            self.tally.templates += 1;
        } else {
            self.add(f, &f.attrs, &f.sig);
        }
        syn::visit::visit_item_fn(self, f);
    }

    fn visit_impl_item_fn(&mut self, f: &'a syn::ImplItemFn) {
        self.add(f, &f.attrs, &f.sig);
        syn::visit::visit_impl_item_fn(self, f);
    }

    fn visit_trait_item_fn(&mut self, f: &'a syn::TraitItemFn) {
        if f.default.is_some() {
            self.add(f, &f.attrs, &f.sig);
        }
        syn::visit::visit_trait_item_fn(self, f);
    }

    fn visit_item_impl(&mut self, i: &'a syn::ItemImpl) {
        self.self_type.push(type_name(&i.self_ty));
        syn::visit::visit_item_impl(self, i);
        self.self_type.pop();
    }

    fn visit_item_trait(&mut self, t: &'a syn::ItemTrait) {
        self.self_type.push(t.ident.unraw().to_string());
        syn::visit::visit_item_trait(self, t);
        self.self_type.pop();
    }

    fn visit_item_macro(&mut self, m: &'a syn::ItemMacro) {
        if last_segment_is(&m.mac.path, "macro_rules") {
            self.tally.in_macros += count_fn_tokens(m.mac.tokens.clone());
        }
        syn::visit::visit_item_macro(self, m);
    }

    fn visit_item_mod(&mut self, m: &'a syn::ItemMod) {
        let name = m.ident.unraw().to_string();
        let mut module = self.module.join("::");
        module.push_str("::");
        module.push_str(&name);
        match &m.content {
            None => self.declared.push(Declared {
                name,
                module,
                inline: self.inline.clone(),
                path_attr: path_attr(&m.attrs),
            }),
            Some(_) => {
                self.module.push(name.clone());
                self.inline.push(name);
                syn::visit::visit_item_mod(self, m);
                self.inline.pop();
                self.module.pop();
            }
        }
    }
}

#[cfg(test)]
mod tests;
