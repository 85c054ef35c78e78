//! Arguments of `#[profile(...)]`.

use proc_macro2::Span;
use syn::parse::{Parse, ParseStream};
use syn::{LitStr, Token};

mod kw {
    syn::custom_keyword!(scope);
}

/// Whose allocations the statements count.
#[derive(Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum Scope {
    #[default]
    Thread,
    Process,
}

#[derive(Default)]
pub(crate) struct ProfileArgs {
    pub(crate) scope: Scope,
}

const EXPECTED: &str = "expected `scope = \"thread\"` or `scope = \"process\"`";

impl Parse for ProfileArgs {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let mut args = ProfileArgs::default();
        let mut seen_scope: Option<Span> = None;
        while !input.is_empty() {
            let lookahead = input.lookahead1();
            if lookahead.peek(kw::scope) {
                let key = input.parse::<kw::scope>()?;
                if seen_scope.replace(key.span).is_some() {
                    return Err(syn::Error::new(
                        key.span,
                        "`#[profile]` argument `scope` is given twice",
                    ));
                }
                input.parse::<Token![=]>()?;
                let value: syn::Lit = input.parse()?;
                let syn::Lit::Str(value) = value else {
                    return Err(syn::Error::new_spanned(
                        value,
                        format!("`#[profile]` argument `scope` takes a string: {EXPECTED}"),
                    ));
                };
                args.scope = parse_scope(&value)?;
            } else {
                let token: proc_macro2::TokenTree = input.parse()?;
                return Err(syn::Error::new_spanned(
                    &token,
                    format!("unknown `#[profile]` argument `{token}`: {EXPECTED}"),
                ));
            }
            if !input.is_empty() {
                input.parse::<Token![,]>()?;
            }
        }
        Ok(args)
    }
}

fn parse_scope(value: &LitStr) -> syn::Result<Scope> {
    match value.value().as_str() {
        "thread" => Ok(Scope::Thread),
        "process" => Ok(Scope::Process),
        other => Err(syn::Error::new_spanned(
            value,
            format!("unknown `#[profile]` scope {other:?}: {EXPECTED}"),
        )),
    }
}
