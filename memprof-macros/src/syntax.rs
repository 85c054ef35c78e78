//! Facts about the input's syntax that every generator needs: which line a
//! span starts on, hygienic names for generated locals, and whether a return
//! type can be written in a `let`.

use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, quote};
use syn::{Ident, ReturnType, Type};

/// The line a span starts on.
pub(crate) fn line_of(span: Span) -> u32 {
    span.unwrap().line() as u32
}

/// The line of a block's closing brace. NOTE: braces that another macro
/// re-emitted around new tokens (as `#[tokio::test]` does) may carry one span
/// for the whole group: its end is still the closing brace.
pub(crate) fn close_line_of(braces: &proc_macro2::extra::DelimSpan) -> u32 {
    braces.close().unwrap().end().line() as u32
}

/// A generated local, out of the user's reach (`Span::mixed_site`).
pub(crate) fn local(name: &str) -> Ident {
    Ident::new(name, Span::mixed_site())
}

/// The return type, if it can be written in a `let` (no `impl Trait`, `!` or
/// `_`).
pub(crate) fn nameable_return(output: &ReturnType) -> Option<TokenStream> {
    let ty = match output {
        ReturnType::Default => return Some(quote!(())),
        ReturnType::Type(_, ty) => ty,
    };
    struct Unnameable(bool);
    impl<'a> syn::visit::Visit<'a> for Unnameable {
        fn visit_type(&mut self, ty: &'a Type) {
            match ty {
                Type::ImplTrait(_) | Type::Never(_) | Type::Infer(_) | Type::Macro(_) => {
                    self.0 = true
                }
                _ => syn::visit::visit_type(self, ty),
            }
        }
    }
    let mut check = Unnameable(false);
    syn::visit::Visit::visit_type(&mut check, ty);
    (!check.0).then(|| ty.to_token_stream())
}
