//! Code generation for `memit!`.

use crate::attr::Scope;
use crate::syntax::local;
use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::Expr;

pub(crate) fn memit(input: TokenStream) -> syn::Result<TokenStream> {
    if input.is_empty() {
        return Err(syn::Error::new(
            Span::call_site(),
            "`memit!` needs an expression to measure, as in `memit!(build())`",
        ));
    }
    let Memit { expr, scope } = syn::parse2(input)?;
    let value = local("__memprof_value");
    if !cfg!(feature = "enabled") {
        // The same shape without the measuring: the value, temporaries and
        // lints are those of the enabled build.
        return Ok(quote!({
            let #value = #expr;
            #value
        }));
    }
    let guard = local("__memprof_memit");
    // NOTE: process scope unless asked otherwise: `%memit` reads the
    // process's memory, and the expression's work may run on a pool.
    let scope = scope.unwrap_or(Scope::Process);
    // A `let`, not a `match`: the expression's temporaries are freed before
    // the figures are read, in either edition, and `memit!(&temp())` still
    // extends its temporary as `let x = &temp();` does.
    Ok(quote! {
        {
            let #guard = ::memprof::__private::MeasureGuard::start_memit(#scope);
            let #value = #expr;
            #guard.finish_memit();
            #value
        }
    })
}

/// `memit!(expr)` or `memit!(expr, scope = "thread" | "process")`.
struct Memit {
    expr: Expr,
    scope: Option<Scope>,
}

impl syn::parse::Parse for Memit {
    fn parse(input: syn::parse::ParseStream<'_>) -> syn::Result<Self> {
        let expr: Expr = input.parse()?;
        let mut scope = None;
        if input.parse::<Option<syn::Token![,]>>()?.is_some() && !input.is_empty() {
            scope = Some(crate::attr::scope_option(input, "memit!")?);
            input.parse::<Option<syn::Token![,]>>()?;
        }
        if !input.is_empty() {
            return Err(input.error(
                "`memit!` takes an expression, then optionally `scope = \"thread\"` or \
                 `scope = \"process\"`",
            ));
        }
        Ok(Memit { expr, scope })
    }
}
