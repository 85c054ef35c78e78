//! What `#[profile]` emits when the `memprof` crate's `enabled` feature is
//! off: the function as written, so that release builds can keep their
//! annotations at no cost.
//!
//! Arguments are still parsed and checked by the caller, so misuse is the
//! same error either way. (`memit!` and `assert_memory!` then expand to their
//! expression; see `expand.rs` and `assert.rs`.)

use crate::attr::ProfileArgs;
use proc_macro2::TokenStream;
use quote::{ToTokens, quote_spanned};
use syn::ItemFn;

/// `item` unchanged, or, if it sets sizes, the same function with one
/// `const _` item per size at the top of its body: a malformed size still
/// fails the build, and an item adds no code to the function.
pub(crate) fn profile(args: &ProfileArgs, mut func: ItemFn, item: TokenStream) -> TokenStream {
    let sizes: Vec<_> = [&args.limit, &args.max_retained]
        .into_iter()
        .flatten()
        .collect();
    if sizes.is_empty() {
        return item;
    }
    for lit in sizes.into_iter().rev() {
        let check = quote_spanned! {lit.span()=>
            const _: ::core::primitive::u64 = ::memprof::__private::size_or_panic(#lit);
        };
        match syn::parse2(check) {
            Ok(stmt) => func.block.stmts.insert(0, stmt),
            Err(err) => return err.into_compile_error(),
        }
    }
    func.into_token_stream()
}
