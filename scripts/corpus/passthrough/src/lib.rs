//! `#[memprof_passthrough::passthrough]`: an attribute macro that returns the
//! function it is put on unchanged. The corpus times each crate's test suite
//! with it on every function, so that what it compares with
//! `#[::memprof::profile]` is the cost of profiling alone: both builds pay
//! for running a proc-macro attribute over every function.

use proc_macro::TokenStream;

/// Returns the item as written.
#[proc_macro_attribute]
pub fn passthrough(_args: TokenStream, item: TokenStream) -> TokenStream {
    item
}
