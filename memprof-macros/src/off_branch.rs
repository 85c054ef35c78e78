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
//! - the function does not call itself by name, or the build is optimized
//!   (`debug_assertions` off) and no argument is `mut`: unoptimized, a frame
//!   holds the locals of both copies, and a recursion would reach less
//!   deep; optimized, the two copies share the frame's slots. (An argument's
//!   `mut` would be needed by one copy and unused in the other build.)
//! - it is not `#[inline(always)]`: unoptimized builds inline it anyway,
//!   with the locals of both copies, into callers that may be such
//!   functions too, so frames would double at each level (aho-corasick's
//!   SIMD searchers reached 2.3 MiB, past a test thread's stack).

use syn::visit::Visit;
use syn::{Block, Expr, Ident, ItemFn};

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

/// Whether a function keeps its body as written for `MEMPROF=off`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AsWritten {
    /// In every build.
    Kept,
    /// In optimized builds (`debug_assertions` off): a recursive function.
    KeptOptimized,
    /// One body only.
    Not,
}

/// Whether a function with this return type, body and number of rows gets
/// the `MEMPROF=off` branch, and in which builds.
pub(crate) fn as_written(func: &ItemFn, body: &Block, cells: usize) -> AsWritten {
    if cells > MAX_CELLS
        || crate::syntax::nameable_return(&func.sig.output).is_none()
        || func.attrs.iter().any(is_inline_always)
    {
        return AsWritten::Not;
    }
    let name = &func.sig.ident;
    let mut check = Independent {
        name,
        fits: true,
        recursive: false,
    };
    check.visit_block(body);
    match (check.fits, check.recursive) {
        (false, _) => AsWritten::Not,
        (true, false) => AsWritten::Kept,
        (true, true) if has_mut_argument(&func.sig) => AsWritten::Not,
        (true, true) => AsWritten::KeptOptimized,
    }
}

/// An argument declared `mut` (`mut self`, `mut v: T`, or a `mut` inside a
/// pattern).
fn has_mut_argument(sig: &syn::Signature) -> bool {
    struct FindMut(bool);
    impl<'a> Visit<'a> for FindMut {
        fn visit_pat_ident(&mut self, pat: &'a syn::PatIdent) {
            self.0 |= pat.mutability.is_some();
            syn::visit::visit_pat_ident(self, pat);
        }
    }
    sig.inputs.iter().any(|arg| match arg {
        syn::FnArg::Receiver(receiver) => receiver.mutability.is_some(),
        syn::FnArg::Typed(typed) => {
            let mut find = FindMut(false);
            find.visit_pat(&typed.pat);
            find.0
        }
    })
}

/// `#[inline(always)]`.
fn is_inline_always(attr: &syn::Attribute) -> bool {
    attr.path().is_ident("inline") && attr.parse_args::<Ident>().is_ok_and(|arg| arg == "always")
}

/// `fits` stays true while nothing in the body would differ or clash when
/// emitted twice; `recursive` is set where the body calls the function
/// `name` itself.
struct Independent<'n> {
    name: &'n Ident,
    fits: bool,
    recursive: bool,
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
            self.recursive = true;
        }
        syn::visit::visit_expr_call(self, call);
    }

    fn visit_expr_method_call(&mut self, call: &'a syn::ExprMethodCall) {
        if call.method == *self.name {
            self.recursive = true;
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

#[cfg(test)]
mod tests {
    use super::*;

    fn kept(source: &str) -> AsWritten {
        let func: ItemFn = syn::parse_str(source).unwrap();
        as_written(&func, &func.block, 3)
    }

    fn fits_fn(source: &str) -> bool {
        kept(source) == AsWritten::Kept
    }

    #[test]
    fn a_plain_body_gets_the_off_branch() {
        assert!(fits_fn(
            "fn f(x: u64) -> u64 { let a = x * 3; println!(\"{a}\"); a + 1 }"
        ));
    }

    #[test]
    fn bodies_that_two_copies_could_break_keep_one() {
        // Two copies of an item, or of a macro that may define one.
        assert!(!fits_fn("fn f() { impl S { fn g() {} } }"));
        assert!(!fits_fn("fn f() { inventory::submit!(X); }"));
        // Two closures of two types behind one `impl Trait`.
        assert!(!fits_fn("fn f() -> impl Fn() { || () }"));
    }

    #[test]
    fn recursion_keeps_both_in_optimized_builds_only() {
        assert_eq!(
            kept("fn f(n: u32) -> u32 { if n == 0 { 0 } else { f(n - 1) } }"),
            AsWritten::KeptOptimized
        );
        assert_eq!(
            kept("fn f(&self) -> u32 { self.f() }"),
            AsWritten::KeptOptimized
        );
        // A `mut` argument: one body, so that its `mut` is used in every build.
        assert_eq!(
            kept("fn f(mut n: u32) -> u32 { n -= 1; if n == 0 { 0 } else { f(n) } }"),
            AsWritten::Not
        );
        assert_eq!(kept("fn f(mut self) -> u32 { self.f() }"), AsWritten::Not);
        assert_eq!(
            kept("fn f((a, mut b): (u8, u8)) -> u8 { b += a; f((a, b)) }"),
            AsWritten::Not
        );
    }

    #[test]
    fn inline_always_keeps_one_body() {
        assert!(!fits_fn("#[inline(always)] fn f(x: u8) -> u8 { x }"));
        assert!(fits_fn("#[inline] fn f(x: u8) -> u8 { x }"));
    }

    #[test]
    fn big_bodies_keep_one() {
        let func: ItemFn = syn::parse_str("fn f() {}").unwrap();
        assert_eq!(as_written(&func, &func.block, MAX_CELLS), AsWritten::Kept);
        assert_eq!(
            as_written(&func, &func.block, MAX_CELLS + 1),
            AsWritten::Not
        );
    }
}
