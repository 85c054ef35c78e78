//! A crate's own `#[global_allocator]`, as the copy holds it: wrapped in
//! memprof's counting allocator ([`ALLOCATOR`]), on its own lines, and,
//! where every one of a file's is under `#[cfg]`, memprof's for the
//! builds without one. Which programs get memprof's own is
//! [`shadow`](super::shadow)'s.

use proc_macro2::TokenTree;
use quote::ToTokens;

/// What a crate's own `#[global_allocator]` is wrapped in: memprof's
/// counting allocator, over the user's.
pub const ALLOCATOR: &str = "::memprof::Allocator";

/// The insertions that turn `static NAME: T = EXPR;` into `static NAME:
/// W<T> = W::new(EXPR);`, each on the line of the token it touches, so
/// that no line moves.
pub(super) fn wrap_static(statik: &syn::ItemStatic, wrapper: &str) -> Vec<(usize, usize, String)> {
    let (ty, expr) = (span_of(&statik.ty), span_of(&statik.expr));
    vec![
        (ty.0.line, ty.0.column, format!("{wrapper}<")),
        (ty.1.line, ty.1.column, ">".to_owned()),
        (expr.0.line, expr.0.column, format!("{wrapper}::new(")),
        (expr.1.line, expr.1.column, ")".to_owned()),
    ]
}

/// Where every `#[global_allocator]` static of a file is under `#[cfg]`
/// (dhat's `#[cfg(feature = "dhat")]`), memprof's own for the builds
/// where none is, to go at the file's end (no line moves): under the
/// negation of their conditions, so that the crate has exactly one in
/// every build.
pub(super) fn otherwise(allocators: &[syn::ItemStatic], wrapper: &str) -> String {
    let mut conditions = Vec::new();
    for statik in allocators {
        let cfgs: Vec<String> = statik
            .attrs
            .iter()
            .filter(|a| a.path().is_ident("cfg"))
            .filter_map(|a| a.meta.require_list().ok())
            .map(|list| list.tokens.to_string())
            .collect();
        if cfgs.is_empty() {
            return String::new();
        }
        conditions.push(format!("all({})", cfgs.join(", ")));
    }
    if conditions.is_empty() {
        return String::new();
    }
    format!(
        "\n#[cfg(not(any({})))] #[global_allocator] static __MEMPROF_ALLOCATOR: {wrapper} = \
         {wrapper}::system();\n",
        conditions.join(", ")
    )
}

/// Where a syntax node's first token starts and its last token ends.
fn span_of(node: &impl ToTokens) -> (proc_macro2::LineColumn, proc_macro2::LineColumn) {
    let tokens: Vec<TokenTree> = node.to_token_stream().into_iter().collect();
    let start = tokens.first().map(|t| t.span().start());
    let end = tokens.last().map(|t| t.span().end());
    let zero = proc_macro2::LineColumn { line: 1, column: 0 };
    (start.unwrap_or(zero), end.unwrap_or(zero))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn statik(text: &str) -> syn::ItemStatic {
        syn::parse_str(text).unwrap()
    }

    #[test]
    fn the_static_is_wrapped_where_its_tokens_are() {
        let dhat = statik("#[global_allocator]\nstatic ALLOC: dhat::Alloc = dhat::Alloc;");
        assert_eq!(
            wrap_static(&dhat, ALLOCATOR),
            [
                (2, 14, "::memprof::Allocator<".to_owned()),
                (2, 25, ">".to_owned()),
                (2, 28, "::memprof::Allocator::new(".to_owned()),
                (2, 39, ")".to_owned()),
            ]
        );
    }

    #[test]
    fn an_allocator_under_cfg_gets_memprofs_for_the_other_builds() {
        let dhat = statik(
            "#[cfg(feature = \"dhat\")]\n#[global_allocator]\nstatic ALLOC: dhat::Alloc = dhat::Alloc;",
        );
        let mi = statik(
            "#[cfg(feature = \"mi\")]\n#[cfg(unix)]\n#[global_allocator]\nstatic MI: Mi = Mi;",
        );
        assert_eq!(
            otherwise(&[dhat.clone(), mi], ALLOCATOR),
            "\n#[cfg(not(any(all(feature = \"dhat\"), all(feature = \"mi\", unix))))] \
             #[global_allocator] static __MEMPROF_ALLOCATOR: ::memprof::Allocator = \
             ::memprof::Allocator::system();\n"
        );
        // One without a condition: nothing added.
        let plain =
            statik("#[global_allocator]\nstatic A: std::alloc::System = std::alloc::System;");
        assert_eq!(otherwise(&[dhat, plain], ALLOCATOR), "");
    }
}
