//! `#[profile]` on an `impl` block: every method with a body is profiled as
//! if `#[profile(..)]`, with the block's arguments, were written on it.
//!
//! Each method gets the attribute itself, `#[::memprof::profile(..)]`, so
//! that it expands exactly as one written by hand: same table, same checks.
//! Left as written: `const fn`s (which cannot be instrumented), methods that
//! carry a `#[profile]` of their own (whose arguments win), and every other
//! item of the block.

use crate::attr::is_profile;
use proc_macro2::TokenStream;
use quote::ToTokens;
use syn::{ImplItem, ItemImpl};

pub(crate) fn profile_methods(args: &TokenStream, mut block: ItemImpl) -> syn::Result<TokenStream> {
    let mut profiled = 0;
    for item in &mut block.items {
        let ImplItem::Fn(method) = item else {
            continue;
        };
        if method.sig.constness.is_some() {
            continue;
        }
        profiled += 1;
        if method.attrs.iter().any(is_profile) {
            continue;
        }
        // NOTE: spanned at the `fn` token: the nested expansion takes its
        // call site for the attribute's line, and the method's table starts
        // at its own attributes or `fn` line, not at the block's. Last among
        // the attributes, as if written just above `fn`, so that `#[cfg]`
        // and other attributes apply first.
        let span = method.sig.fn_token.span;
        method
            .attrs
            .push(syn::parse_quote_spanned!(span=> #[::memprof::profile(#args)]));
    }
    if profiled == 0 {
        return Err(syn::Error::new_spanned(
            block.impl_token,
            "`#[profile]` found no method to instrument in this `impl` block \
             (a `const fn` cannot be instrumented)",
        ));
    }
    Ok(block.into_token_stream())
}
