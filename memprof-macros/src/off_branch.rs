//! Whether `#[profile]` keeps the body as written beside the instrumented
//! one, for `MEMPROF=off`: `if is_off() { body as written } else { ... }`.
//!
//! Emitting the body twice must not change what the program means or make
//! it fail to compile, so it is done only for bodies where both copies are
//! plainly independent:
//! - the return type can be named, so both branches have one type even
//!   when the body makes closures or other unnameable values;
//! - no item (`fn`, `impl`, `static`, ...) anywhere in the body: a second
//!   copy of an `impl` conflicts, a `#[no_mangle]` one clashes at link time;
//! - no macro call but the standard library's (and memprof's) expression
//!   macros, which define no items (`inventory::submit!` twice would
//!   register twice);
//! - at most `MAX_CELLS` probed rows, which bounds the extra compile time
//!   (the 2,000-statement function of the compile-cost bench has none);
//! - the function does not call itself by name: unoptimized, a frame holds
//!   the locals of both copies, and a recursion would reach less deep.

use syn::visit::Visit;
use syn::{Block, Expr, Ident, ReturnType};

/// Rows above which a function keeps one body: its statements then cost
/// more than the per-call test saves.
const MAX_CELLS: usize = 64;

/// Macros known to expand to expressions or statements only.
const ITEM_FREE_MACROS: &[&str] = &[
    "assert",
    "assert_eq",
    "assert_ne",
    "assert_memory",
    "cfg",
    "column",
    "concat",
    "dbg",
    "debug_assert",
    "debug_assert_eq",
    "debug_assert_ne",
    "env",
    "eprint",
    "eprintln",
    "file",
    "format",
    "format_args",
    "line",
    "matches",
    "memit",
    "module_path",
    "option_env",
    "panic",
    "print",
    "println",
    "stringify",
    "todo",
    "track",
    "unimplemented",
    "unreachable",
    "vec",
    "write",
    "writeln",
];

/// Whether a function with this return type, body and number of rows gets
/// the `MEMPROF=off` branch.
pub(crate) fn fits(name: &Ident, output: &ReturnType, body: &Block, cells: usize) -> bool {
    if cells > MAX_CELLS || crate::expand::nameable_return(output).is_none() {
        return false;
    }
    let mut check = Independent { name, fits: true };
    check.visit_block(body);
    check.fits
}

/// Stays true while nothing in the body would differ or clash when emitted
/// twice, and the body does not call the function `name` itself.
struct Independent<'n> {
    name: &'n Ident,
    fits: bool,
}

impl<'a> Visit<'a> for Independent<'_> {
    fn visit_item(&mut self, _: &'a syn::Item) {
        self.fits = false;
    }

    fn visit_expr_call(&mut self, call: &'a syn::ExprCall) {
        if let Expr::Path(path) = &*call.func
            && path
                .path
                .segments
                .last()
                .is_some_and(|s| s.ident == *self.name)
        {
            self.fits = false;
        }
        syn::visit::visit_expr_call(self, call);
    }

    fn visit_expr_method_call(&mut self, call: &'a syn::ExprMethodCall) {
        if call.method == *self.name {
            self.fits = false;
        }
        syn::visit::visit_expr_method_call(self, call);
    }

    fn visit_macro(&mut self, mac: &'a syn::Macro) {
        let known = mac
            .path
            .segments
            .last()
            .is_some_and(|s| ITEM_FREE_MACROS.contains(&s.ident.to_string().as_str()));
        if !known {
            self.fits = false;
        }
    }
}
