//! Procedural macros of memprof. Use them through the `memprof` crate, which
//! documents them, options and examples: `#[memprof::profile]`,
//! `memprof::memit!` and `memprof::assert_memory!`.
//!
//! This crate only parses, checks and emits; everything that runs lives in
//! `memprof-runtime`, reached through `::memprof::__private`.
//!
//! Without its `enabled` feature (which `memprof`'s own `enabled` feature
//! turns on), every macro still checks its input but emits the user's code
//! unchanged. Inside rustdoc, `#[profile]` gives the item back as written,
//! unchecked: rustc, which builds the library, checks and instruments it.

mod assert;
mod attr;
mod expand;
mod impl_block;
mod instrument;
mod memit;
mod off_branch;
mod ownership;
mod rustdoc;
mod size;
mod syntax;

use proc_macro::TokenStream;

/// Instruments every statement of a function, or of each method of an
/// `impl` block; see `memprof::profile`.
#[proc_macro_attribute]
pub fn profile(args: TokenStream, item: TokenStream) -> TokenStream {
    // Rustdoc reads doc comments, not bodies (see `rustdoc`).
    if rustdoc::running() {
        return item;
    }
    expand::profile(args.into(), item.into()).into()
}

/// Prints the peak and increment of one expression; see `memprof::memit`.
#[proc_macro]
pub fn memit(input: TokenStream) -> TokenStream {
    memit::memit(input.into())
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// Fails unless an expression's memory figures meet every condition; see
/// `memprof::assert_memory`.
#[proc_macro]
pub fn assert_memory(input: TokenStream) -> TokenStream {
    assert::assert_memory(input.into())
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}
