//! Arguments of `#[profile(...)]`.

use crate::size::Size;
use proc_macro2::Span;
use syn::parse::{Parse, ParseStream};
use syn::{LitStr, Token};

mod kw {
    syn::custom_keyword!(scope);
    syn::custom_keyword!(limit);
    syn::custom_keyword!(max_retained);
    syn::custom_keyword!(gpu);
    syn::custom_keyword!(expr_macros);
}

/// Whose allocations the statements count.
#[derive(Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum Scope {
    #[default]
    Thread,
    Process,
}

impl quote::ToTokens for Scope {
    fn to_tokens(&self, tokens: &mut proc_macro2::TokenStream) {
        tokens.extend(match self {
            Scope::Thread => quote::quote!(::memprof::__private::Scope::Thread),
            Scope::Process => quote::quote!(::memprof::__private::Scope::Process),
        });
    }
}

/// `scope = "thread" | "process"`, an option of `memit!` and
/// `assert_memory!` (named `what` in errors).
pub(crate) fn scope_option(input: ParseStream<'_>, what: &str) -> syn::Result<Scope> {
    let key: syn::Ident = input.parse()?;
    if key != "scope" {
        return Err(syn::Error::new(
            key.span(),
            format!("unknown `{what}` option `{key}`: {EXPECTED}"),
        ));
    }
    input.parse::<Token![=]>()?;
    let value: syn::Lit = input.parse()?;
    let syn::Lit::Str(value) = value else {
        return Err(syn::Error::new_spanned(
            value,
            format!("`{what}` option `scope` takes a string: {EXPECTED}"),
        ));
    };
    match value.value().as_str() {
        "thread" => Ok(Scope::Thread),
        "process" => Ok(Scope::Process),
        other => Err(syn::Error::new_spanned(
            &value,
            format!("unknown `{what}` scope {other:?}: {EXPECTED}"),
        )),
    }
}

#[derive(Default)]
pub(crate) struct ProfileArgs {
    pub(crate) scope: Scope,
    /// Highest rise a call may reach (`limit = "24 MiB"`).
    pub(crate) limit: Option<Size>,
    /// Net bytes a call may leave allocated (`max_retained = "1 MiB"`).
    pub(crate) max_retained: Option<Size>,
    /// `gpu = false` turns GPU sampling off for the function.
    pub(crate) gpu: Option<syn::LitBool>,
    /// `expr_macros(tri, ...)`: macros of the user's crate that the body
    /// calls and that expand to expressions or statements only, never an
    /// item, as the standard library's `format!` does: such a body may
    /// still keep its copy as written (see `off_branch`). `cargo memprof`
    /// writes it for the crate's own `macro_rules!` that it finds item-free.
    pub(crate) expr_macros: Vec<syn::Ident>,
}

const EXPECTED: &str = "expected `scope = \"thread\"` or `scope = \"process\"`";
// What each key needs, as `expect_eq` shows it.
const FORM_SCOPE: &str =
    "a value, as in `#[profile(scope = \"thread\")]` or `#[profile(scope = \"process\")]`";
const FORM_LIMIT: &str = "a size, as in `#[profile(limit = \"24 MiB\")]`";
const FORM_MAX_RETAINED: &str = "a size, as in `#[profile(max_retained = \"1 MiB\")]`";
const FORM_GPU: &str = "`true` or `false`, as in `#[profile(gpu = false)]`";
const ARGUMENTS: &str = "expected `scope = \"thread\" | \"process\"`, `limit = \"<size>\"`, `max_retained = \"<size>\"`, `gpu = false` or `expr_macros(name, ...)`";

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
                expect_eq(input, "scope", key.span, FORM_SCOPE)?;
                args.scope = parse_scope(&string_value(input, "scope", EXPECTED)?)?;
            } else if lookahead.peek(kw::limit) {
                let key = input.parse::<kw::limit>()?;
                expect_eq(input, "limit", key.span, FORM_LIMIT)?;
                let value = size_value(input, "limit", "`\"24 MiB\"`")?;
                set_once(&mut args.limit, value, "limit", key.span)?;
            } else if lookahead.peek(kw::max_retained) {
                let key = input.parse::<kw::max_retained>()?;
                expect_eq(input, "max_retained", key.span, FORM_MAX_RETAINED)?;
                let value = size_value(input, "max_retained", "`\"1 MiB\"`")?;
                set_once(&mut args.max_retained, value, "max_retained", key.span)?;
            } else if lookahead.peek(kw::gpu) {
                let key = input.parse::<kw::gpu>()?;
                expect_eq(input, "gpu", key.span, FORM_GPU)?;
                let value: syn::Lit = input.parse()?;
                let syn::Lit::Bool(value) = value else {
                    return Err(syn::Error::new_spanned(
                        value,
                        "`#[profile]` argument `gpu` takes `true` or `false`",
                    ));
                };
                if args.gpu.replace(value).is_some() {
                    return Err(syn::Error::new(
                        key.span,
                        "`#[profile]` argument `gpu` is given twice",
                    ));
                }
            } else if lookahead.peek(kw::expr_macros) {
                input.parse::<kw::expr_macros>()?;
                let names;
                syn::parenthesized!(names in input);
                let names = names.parse_terminated(syn::Ident::parse, Token![,])?;
                args.expr_macros.extend(names);
            } else {
                let token: proc_macro2::TokenTree = input.parse()?;
                return Err(syn::Error::new_spanned(
                    &token,
                    format!("unknown `#[profile]` argument `{token}`: {ARGUMENTS}"),
                ));
            }
            if !input.is_empty() {
                input.parse::<Token![,]>()?;
            }
        }
        Ok(args)
    }
}

/// The `=` after the key `name`. Without it, the error points at the key and
/// shows the whole form: syn's own "expected `=`" would point at the end of
/// the input, which rustc shows as the whole attribute.
fn expect_eq(input: ParseStream<'_>, name: &str, key: Span, form: &str) -> syn::Result<()> {
    // `key = ,` and `key =` at the end are the same slip as `key` alone.
    let fork = input.fork();
    if fork.parse::<Token![=]>().is_ok() && !fork.is_empty() && !fork.peek(Token![,]) {
        input.parse::<Token![=]>()?;
        return Ok(());
    }
    Err(syn::Error::new(
        key,
        format!("`#[profile]` argument `{name}` needs {form}"),
    ))
}

/// The string literal after `name =`.
fn string_value(input: ParseStream<'_>, name: &str, expected: &str) -> syn::Result<LitStr> {
    let value: syn::Lit = input.parse()?;
    match value {
        syn::Lit::Str(value) => Ok(value),
        other => Err(syn::Error::new_spanned(
            other,
            format!("`#[profile]` argument `{name}` takes a string: {expected}"),
        )),
    }
}

/// The size after `name =`, parsed now: a bad one is an error at its string.
fn size_value(input: ParseStream<'_>, name: &str, example: &str) -> syn::Result<Size> {
    let lit = string_value(input, name, &format!("a size such as {example}"))?;
    Size::parse(
        &lit.value(),
        lit.span(),
        &format!("`#[profile]` argument `{name}`"),
    )
}

fn set_once(slot: &mut Option<Size>, value: Size, name: &str, key: Span) -> syn::Result<()> {
    if slot.replace(value).is_some() {
        return Err(syn::Error::new(
            key,
            format!("`#[profile]` argument `{name}` is given twice"),
        ));
    }
    Ok(())
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

/// `#[profile]`, `#[memprof::profile]` or `#[::memprof::profile]`, with or
/// without arguments.
pub(crate) fn is_profile(attr: &syn::Attribute) -> bool {
    let path = attr.path();
    let names: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
    match names.as_slice() {
        [name] => path.leading_colon.is_none() && name == "profile",
        [krate, name] => krate == "memprof" && name == "profile",
        _ => false,
    }
}
