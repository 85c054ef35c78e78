//! Callers of what changed: a function the record leaves as written (its
//! calls moved no heap when last profiled) is profiled again when it calls
//! a function that is new or changed since, directly or through another
//! such caller, as its calls may now move the heap through it. Calls are
//! known by name (the last segment of a path or a method's name, also
//! inside macro invocations): a name two functions share profiles both
//! callers, never neither.

use proc_macro2::{TokenStream, TokenTree};
use quote::ToTokens;
use std::collections::{BTreeMap, BTreeSet};
use syn::visit::Visit;

/// A function left as written: its path, hash and the names it calls.
#[derive(Debug, Clone)]
pub struct Left {
    pub path: String,
    pub hash: u64,
    pub calls: BTreeSet<String>,
}

/// The names a function's body calls or refers to: each path expression's
/// last segment, each method call's name, every identifier inside a macro
/// invocation.
pub fn called_names(item: &impl ToTokens) -> BTreeSet<String> {
    let mut names = Names::default();
    if let Ok(file) = syn::parse2::<syn::Item>(item.to_token_stream()) {
        names.visit_item(&file);
    } else if let Ok(f) = syn::parse2::<syn::ImplItemFn>(item.to_token_stream()) {
        names.visit_impl_item_fn(&f);
    } else if let Ok(f) = syn::parse2::<syn::TraitItemFn>(item.to_token_stream()) {
        names.visit_trait_item_fn(&f);
    }
    names.0
}

#[derive(Default)]
struct Names(BTreeSet<String>);

impl Names {
    fn tokens(&mut self, tokens: TokenStream) {
        for token in tokens {
            match token {
                TokenTree::Ident(i) => {
                    self.0.insert(i.to_string());
                }
                TokenTree::Group(g) => self.tokens(g.stream()),
                _ => {}
            }
        }
    }
}

impl<'a> Visit<'a> for Names {
    fn visit_expr_path(&mut self, p: &'a syn::ExprPath) {
        if let Some(last) = p.path.segments.last() {
            self.0.insert(last.ident.to_string());
        }
        syn::visit::visit_expr_path(self, p);
    }

    fn visit_expr_method_call(&mut self, m: &'a syn::ExprMethodCall) {
        self.0.insert(m.method.to_string());
        syn::visit::visit_expr_method_call(self, m);
    }

    fn visit_macro(&mut self, m: &'a syn::Macro) {
        self.tokens(m.tokens.clone());
    }
}

/// The paths of the functions in `left` to profile after all: those that
/// call, by name, one of `changed` (the last segments of the paths of
/// functions new or changed since the record), or one of the callers
/// found so, until none is left to add.
pub fn to_profile(left: &[Left], changed: BTreeSet<String>) -> BTreeMap<String, u64> {
    let mut names = changed;
    let mut out = BTreeMap::new();
    loop {
        let more: Vec<&Left> = left
            .iter()
            .filter(|l| !out.contains_key(&l.path))
            .filter(|l| l.calls.iter().any(|c| names.contains(c)))
            .collect();
        if more.is_empty() {
            return out;
        }
        for l in more {
            names.insert(last_segment(&l.path).to_owned());
            out.insert(l.path.clone(), l.hash);
        }
    }
}

/// `b` of `a::T::b`.
pub fn last_segment(path: &str) -> &str {
    path.rsplit("::").next().unwrap_or(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_are_found_in_paths_methods_and_macros() {
        let item: syn::ItemFn = syn::parse_quote! {
            fn f(v: &[u8]) -> usize {
                let n = helper::offset(v.len());
                println!("{}", shifted(n));
                v.iter().map(Self::scale).count()
            }
        };
        let names = called_names(&item);
        for name in ["offset", "len", "shifted", "iter", "map", "scale", "count"] {
            assert!(names.contains(name), "{name}: {names:?}");
        }
    }

    #[test]
    fn callers_of_what_changed_are_profiled_up_the_chain() {
        let left = |path: &str, hash: u64, calls: &[&str]| Left {
            path: path.to_owned(),
            hash,
            calls: calls.iter().map(|c| c.to_string()).collect(),
        };
        let left = [
            left("app::a", 1, &["b"]),
            left("app::b", 2, &["offset"]),
            left("app::c", 3, &["len"]),
        ];
        let changed = BTreeSet::from(["offset".to_owned()]);
        let profiled = to_profile(&left, changed);
        assert_eq!(
            profiled.into_iter().collect::<Vec<_>>(),
            [("app::a".to_owned(), 1), ("app::b".to_owned(), 2)]
        );
        assert!(to_profile(&left, BTreeSet::new()).is_empty());
    }
}
