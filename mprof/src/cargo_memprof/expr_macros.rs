//! The crate's own `macro_rules!` that expand to expressions and statements
//! only, never to an item that two copies of a body would break: named to
//! `#[profile]` in `expr_macros(...)` on the functions that call them, so
//! that such a function keeps its copy as written, and its quiet calls, as
//! one that calls `format!` does (memprof-macros' `off_branch`). serde_json's
//! `tri!`, its own `?`, is in most functions of its parser.
//!
//! Conservative: a name is item-free only if every definition of it under
//! the crate's root directory is, and a definition is item-free only if no
//! transcriber holds a keyword that starts an item whose second copy would
//! differ or clash (`impl`, `static`, `struct`, ...), an attribute but the
//! harmless ones (`inline`, lint levels, ...), or a call of a macro that is not itself one of the
//! crate's item-free macros (the standard library's included: this side
//! does not know which of its macros a transcriber's path names). What a
//! caller passes in its call's tokens is the caller's, as for `format!`.

use proc_macro2::{Delimiter, TokenStream, TokenTree};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use syn::visit::Visit;

/// Identifiers that, in a transcriber, may start an item whose second copy
/// would not be the same item: a second `impl` conflicts, a `static` splits
/// its state, a type would be two types, a `macro_rules!` two macros. (An
/// exported symbol's attribute is not harmless: see `HARMLESS_ATTRIBUTES`.)
const ITEM_WORDS: &[&str] = &[
    "impl",
    "static",
    "struct",
    "enum",
    "union",
    "trait",
    "mod",
    "extern",
    "macro_rules",
];

/// The names of the item-free `macro_rules!` defined in the `.rs` files
/// under `dir`; a file that does not parse is left out (its macros then
/// are not known, and are not item-free). NOTE: a linked directory is not
/// entered: a link to a directory above it would be followed for ever
/// (`cargo_memprof_copy.rs`'s symlink loop); a linked file is read.
pub fn item_free_under(dir: &Path) -> BTreeSet<String> {
    let mut definitions = Definitions::default();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                pending.push(path);
            } else if (kind.is_file() || path.is_file())
                && path.extension().is_some_and(|e| e == "rs")
                && let Ok(text) = std::fs::read_to_string(&path)
                // PERF: a file that never spells `macro_rules` defines
                // none, and most files are never parsed here.
                && text.contains("macro_rules")
                && let Ok(file) = syn::parse_file(&text)
            {
                definitions.visit_file(&file);
            }
        }
    }
    definitions.item_free()
}

/// The macros a function's tokens call, by their last path segment.
pub fn calls(tokens: TokenStream) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    macro_calls(tokens, &mut out);
    out
}

/// Every `macro_rules!` found: name → the tokens of each definition.
#[derive(Default)]
struct Definitions(BTreeMap<String, Vec<TokenStream>>);

impl<'a> Visit<'a> for Definitions {
    fn visit_item_macro(&mut self, item: &'a syn::ItemMacro) {
        if let Some(name) = &item.ident
            && item.mac.path.is_ident("macro_rules")
        {
            self.0
                .entry(name.to_string())
                .or_default()
                .push(item.mac.tokens.clone());
        }
        syn::visit::visit_item_macro(self, item);
    }
}

impl Definitions {
    /// The names whose every definition is item-free, found to a fixed
    /// point: a macro that calls another of the crate's is item-free once
    /// that one is.
    fn item_free(&self) -> BTreeSet<String> {
        let mut free = BTreeSet::new();
        loop {
            let before = free.len();
            for (name, bodies) in &self.0 {
                if !free.contains(name) && bodies.iter().all(|b| transcribes_no_item(b, &free)) {
                    free.insert(name.clone());
                }
            }
            if free.len() == before {
                return free;
            }
        }
    }
}

/// Whether the rules `body` (`(matcher) => { transcriber } ; ...`) expand
/// to no item, given the macros known `free` so far.
fn transcribes_no_item(body: &TokenStream, free: &BTreeSet<String>) -> bool {
    let tokens: Vec<TokenTree> = body.clone().into_iter().collect();
    // Each transcriber is the group after a `=>`.
    let mut transcribers = tokens.windows(3).filter_map(|w| match w {
        [
            TokenTree::Punct(eq),
            TokenTree::Punct(gt),
            TokenTree::Group(g),
        ] if eq.as_char() == '=' && gt.as_char() == '>' => Some(g.stream()),
        _ => None,
    });
    transcribers.all(|t| {
        let mut called = BTreeSet::new();
        macro_calls(t.clone(), &mut called);
        !holds_item_word(t) && called.iter().all(|m| free.contains(m))
    })
}

/// Attributes that change nothing about an item's being emitted twice;
/// any other (an attribute macro's, `#[profile]`'s) may.
const HARMLESS_ATTRIBUTES: &[&str] = &[
    "inline",
    "cold",
    "track_caller",
    "must_use",
    "doc",
    "cfg",
    "allow",
    "expect",
    "warn",
    "deny",
    "forbid",
];

fn holds_item_word(tokens: TokenStream) -> bool {
    let mut after_quote = false;
    let mut after_pound = false;
    tokens.into_iter().any(|t| {
        let found = match &t {
            // `'static` is a lifetime, not the keyword.
            TokenTree::Ident(i) => !after_quote && ITEM_WORDS.contains(&i.to_string().as_str()),
            // An attribute, `#[name ...]` (or `#![...]`, whose `!` comes
            // between): a harmless one, or an item is made.
            TokenTree::Group(g) if after_pound && g.delimiter() == Delimiter::Bracket => {
                let name = g.stream().into_iter().next().map(|t| t.to_string());
                !name.is_some_and(|n| HARMLESS_ATTRIBUTES.contains(&n.as_str()))
                    || holds_item_word(g.stream())
            }
            TokenTree::Group(g) => holds_item_word(g.stream()),
            _ => false,
        };
        after_quote = matches!(&t, TokenTree::Punct(p) if p.as_char() == '\'');
        after_pound = match &t {
            TokenTree::Punct(p) => p.as_char() == '#' || (after_pound && p.as_char() == '!'),
            _ => false,
        };
        found
    })
}

/// Adds to `out` the name of every `name!(...)`, `name![...]` or
/// `name! {...}` in `tokens`, at any depth. A keyword before a `!` (`if
/// !(x)`) is not a macro's name.
fn macro_calls(tokens: TokenStream, out: &mut BTreeSet<String>) {
    let tokens: Vec<TokenTree> = tokens.into_iter().collect();
    for (i, t) in tokens.iter().enumerate() {
        match t {
            TokenTree::Group(g) => macro_calls(g.stream(), out),
            TokenTree::Ident(name) => {
                let bang = matches!(tokens.get(i + 1),
                    Some(TokenTree::Punct(p)) if p.as_char() == '!'
                        && p.spacing() == proc_macro2::Spacing::Alone);
                let args = matches!(tokens.get(i + 2),
                    Some(TokenTree::Group(g)) if g.delimiter() != Delimiter::None);
                let name = name.to_string();
                if bang && args && !is_keyword(&name) {
                    out.insert(name);
                }
            }
            _ => {}
        }
    }
}

fn is_keyword(word: &str) -> bool {
    matches!(
        word,
        "if" | "while"
            | "match"
            | "return"
            | "in"
            | "else"
            | "let"
            | "break"
            | "loop"
            | "yield"
            | "move"
            | "mut"
            | "ref"
            | "as"
            | "box"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn free(source: &str) -> BTreeSet<String> {
        let mut definitions = Definitions::default();
        definitions.visit_file(&syn::parse_file(source).unwrap());
        definitions.item_free()
    }

    fn names(list: &[&str]) -> BTreeSet<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn an_expression_macro_is_item_free_and_an_item_macro_is_not() {
        // serde_json's `tri!`.
        let tri = "macro_rules! tri { ($e:expr $(,)?) => { match $e { \
                   core::result::Result::Ok(val) => val, \
                   core::result::Result::Err(err) => return core::result::Result::Err(core::convert::From::from(err)), \
                   } }; }";
        assert_eq!(free(tri), names(&["tri"]));
        for item in [
            "macro_rules! m { () => { impl S {} }; }",
            "macro_rules! m { () => { static N: u8 = 0; }; }",
            "macro_rules! m { ($t:ty) => { struct W($t); }; }",
            "macro_rules! m { () => { #[no_mangle] fn f() {} }; }",
            "macro_rules! m { () => { thread_local!(static X: u8 = 0); }; }",
            "macro_rules! m { () => { 1 }; ($x:expr) => { macro_rules! n { () => {} } }; }",
            "macro_rules! m { () => { { #[memprof::profile] fn f() {} f() } }; }",
            "macro_rules! m { () => { { #[unsafe(no_mangle)] fn f() {} f() } }; }",
        ] {
            assert_eq!(free(item), BTreeSet::new(), "{item}");
        }
    }

    #[test]
    fn lifetimes_keywords_before_a_bang_and_nested_crate_macros() {
        let ok = "macro_rules! a { ($x:expr) => { { #[allow(unused)] let s: &'static str = \"\"; if !($x) { s } else { b!() } } }; } \
                  macro_rules! b { () => { \"b\" }; }";
        assert_eq!(free(ok), names(&["a", "b"]));
        // A macro calling one that is not the crate's, or not item-free.
        let calls_std = "macro_rules! c { () => { format!(\"x\") }; }";
        assert_eq!(free(calls_std), BTreeSet::new());
        let calls_bad =
            "macro_rules! d { () => { e!() }; } macro_rules! e { () => { impl S {} }; }";
        assert_eq!(free(calls_bad), BTreeSet::new());
    }

    #[test]
    fn a_name_defined_twice_is_item_free_only_if_both_are() {
        let twice = "mod a { macro_rules! m { () => { 1 }; } } mod b { macro_rules! m { () => { static X: u8 = 1; }; } }";
        assert_eq!(free(twice), BTreeSet::new());
    }

    #[test]
    fn calls_finds_macro_names_at_any_depth() {
        let f: syn::ItemFn = syn::parse_str(
            "fn f() { let x = tri!(g()); if !(x != 1) { println!(\"{}\", a::b!(x)); } }",
        )
        .unwrap();
        assert_eq!(
            calls(quote::ToTokens::to_token_stream(&f)),
            names(&["b", "println", "tri"])
        );
    }
}
