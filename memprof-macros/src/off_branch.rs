//! Whether `#[profile]` keeps the body as written beside the instrumented
//! one, for `MEMPROF=off`: `if is_off() { body as written } else { ... }`.
//!
//! Emitting the body twice must not change what the program means or make
//! it fail to compile, so it is done only for bodies where both copies are
//! plainly independent:
//! - the return type can be named, so both branches have one type even
//!   when the body makes closures or other unnameable values;
//! - the items the body declares at its top are not copied: the macro moves
//!   them to the function's own block (`expand`), one item in scope of both
//!   copies. Deeper in the body (in an inner block), no item but plain
//!   `fn`s, `const`s, `use`s and `type`s, whose second copy is the same
//!   item in a block of its own: a second copy of an `impl` conflicts, a
//!   `static` would split its state between the copies, a `#[no_mangle]`
//!   `fn` clashes at link time, a `#[profile]` one registers twice, a type
//!   would be two types (so such a `fn` may carry only attributes that
//!   change none of this: `inline`, `cold`, `track_caller`, lint levels,
//!   ...);
//! - no macro call but the standard library's (and memprof's) expression
//!   macros, which define no items (`inventory::submit!` twice would
//!   register twice), and those the attribute's `expr_macros(...)` names
//!   item-free (`cargo memprof` names the crate's own that it reads so);
//! - at most `MAX_CELLS` probed rows, which bounds the extra compile time
//!   (the 2,000-statement function of the compile-cost bench has none);
//! - the function does not call itself by name, or the build is optimized
//!   (`debug_assertions` off) and no argument is `mut`: unoptimized, a frame
//!   holds the locals of both copies, and a recursion would reach less
//!   deep; optimized, the two copies share the frame's slots. (An argument's
//!   `mut` would be needed by one copy and unused in the other build.)
//! - it is not `#[inline(always)]`, or the build is optimized and no
//!   argument is `mut`, as for recursion: unoptimized builds inline it
//!   anyway, with the locals of both copies, into callers that may be such
//!   functions too, so frames would double at each level (aho-corasick's
//!   SIMD searchers reached 2.3 MiB, past a test thread's stack).
//!
//! The copy as written is also what a quiet call runs (see `QuietCall`):
//! a function without it steps every statement of every call, however
//! often it is called and however little it does (lz4_flex's `slice_copy`,
//! which declares a `#[cold]` helper `fn`, profiled too under `cargo
//! memprof`, and its `#[inline(always)]` copy routines: 16 million calls
//! each in a first run).

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
/// `expr_macros` are the user's macros known to define no item (the
/// attribute's `expr_macros(...)`).
pub(crate) fn as_written(
    func: &ItemFn,
    body: &Block,
    cells: usize,
    expr_macros: &[Ident],
) -> AsWritten {
    if cells > MAX_CELLS || crate::syntax::nameable_return(&func.sig.output).is_none() {
        return AsWritten::Not;
    }
    let inline_always = func.attrs.iter().any(is_inline_always);
    let name = &func.sig.ident;
    let mut check = Independent {
        name,
        expr_macros,
        fits: true,
        recursive: false,
    };
    check.visit_block(body);
    match (check.fits, check.recursive || inline_always) {
        (false, _) => AsWritten::Not,
        (true, false) => AsWritten::Kept,
        (true, true) if has_mut_argument(&func.sig) => AsWritten::Not,
        // Its copy is returned from (see `ends_in_return`): a unit
        // function's `#[cfg]`'d last `return` may be the one left out, and
        // then the copy ends without one.
        (true, true) if ends_in_return(body) == Some(true) && unit_return(&func.sig.output) => {
            AsWritten::Not
        }
        (true, true) => AsWritten::KeptOptimized,
    }
}

/// Whether `body` ends in a `return` (its last statement, or its tail): `Some(false)` if that `return`
/// always runs there, `Some(true)` if it carries a `#[cfg]` (serde_json's
/// `Map::remove`: one `return` per feature), `None` if it does not end in
/// one.
///
/// NOTE: a function kept in optimized builds only returns its copy as
/// written from inside a block (`return { ... }`); a copy that ends in a
/// `return` of its own makes ours unreachable code, which rustc reports
/// inside a macro's expansion too. Such a copy is run as it is: it leaves
/// the function itself, the `#[cfg]`'d one too where the function returns
/// a value (its body could not end otherwise), and a unit function's is
/// not kept.
pub(crate) fn ends_in_return(body: &Block) -> Option<bool> {
    match body.stmts.last()? {
        syn::Stmt::Expr(Expr::Return(ret), _) => Some(
            ret.attrs
                .iter()
                .any(|a| a.path().is_ident("cfg") || a.path().is_ident("cfg_attr")),
        ),
        _ => None,
    }
}

/// A function that returns `()`, as written.
fn unit_return(output: &syn::ReturnType) -> bool {
    match output {
        syn::ReturnType::Default => true,
        syn::ReturnType::Type(_, ty) => matches!(&**ty, syn::Type::Tuple(t) if t.elems.is_empty()),
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
        // `&mut self` binds no `mut` (syn's `mutability` is the reference's).
        syn::FnArg::Receiver(receiver) => {
            receiver.reference.is_none() && receiver.mutability.is_some()
        }
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

/// An attribute of a nested item that changes nothing about its being
/// emitted twice: not `no_mangle`, `export_name`, `link_section`, `used`,
/// or anything unknown (a `cfg_attr` may expand to any of them; an
/// attribute macro, to anything).
fn leaves_one_item(attr: &syn::Attribute) -> bool {
    const HARMLESS: &[&str] = &[
        "inline",
        "cold",
        "track_caller",
        "must_use",
        "doc",
        "cfg",
        "allow",
        "expect",
        "warn",
        "deny",
        "forbid",
        "target_feature",
    ];
    let path = attr.path();
    let first = path.segments.first().map(|s| s.ident.to_string());
    matches!(first.as_deref(), Some("rustfmt" | "clippy"))
        || path
            .get_ident()
            .is_some_and(|id| HARMLESS.contains(&id.to_string().as_str()))
}

/// `fits` stays true while nothing in the body would differ or clash when
/// emitted twice; `recursive` is set where the body calls the function
/// `name` itself.
struct Independent<'n> {
    name: &'n Ident,
    expr_macros: &'n [Ident],
    fits: bool,
    recursive: bool,
}

impl<'a> Visit<'a> for Independent<'_> {
    fn visit_item(&mut self, item: &'a syn::Item) {
        use syn::Item;
        match item {
            Item::Fn(f) if f.sig.abi.is_none() && f.attrs.iter().all(leaves_one_item) => {
                // Its body is copied too: the same rules hold in it.
                syn::visit::visit_item_fn(self, f);
            }
            Item::Const(c) if c.attrs.iter().all(leaves_one_item) => {
                syn::visit::visit_item_const(self, c);
            }
            Item::Use(_) | Item::Type(_) => {}
            _ => self.fits = false,
        }
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
        let known = mac.path.segments.last().is_some_and(|s| {
            ITEM_FREE_MACROS.contains(&s.ident.to_string().as_str())
                || self.expr_macros.contains(&s.ident)
        });
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
        as_written(&func, &func.block, 3, &[])
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
        // (In an inner block: those at the body's top move out of it.)
        assert!(!fits_fn("fn f() { { impl S { fn g() {} } } }"));
        assert!(!fits_fn("fn f() { if true { static N: u8 = 0; } }"));
        assert!(!fits_fn("fn f() { { struct S; } }"));
        assert!(!fits_fn("fn f() { { #[no_mangle] fn g() {} } }"));
        assert!(!fits_fn(
            "fn f() { { #[unsafe(export_name = \"g\")] fn g() {} } }"
        ));
        assert!(!fits_fn(
            "fn f() { { #[cfg_attr(x, no_mangle)] fn g() {} } }"
        ));
        assert!(!fits_fn("fn f() { { #[::memprof::profile] fn g() {} } }"));
        assert!(!fits_fn("fn f() { { extern \"C\" fn g() {} } }"));
        // A nested function's body is copied with it.
        assert!(!fits_fn("fn f() { { fn g() { static N: u8 = 0; } } }"));
        assert!(!fits_fn("fn f() { inventory::submit!(X); }"));
        // Two closures of two types behind one `impl Trait`.
        assert!(!fits_fn("fn f() -> impl Fn() { || () }"));
    }

    #[test]
    fn macros_named_item_free_by_the_attribute_keep_both() {
        let body = "fn f(r: Result<u8, ()>) -> Result<u8, ()> { let x = tri!(r); Ok(x) }";
        let func: ItemFn = syn::parse_str(body).unwrap();
        let tri: Ident = syn::parse_quote!(tri);
        let other: Ident = syn::parse_quote!(other);
        assert_eq!(as_written(&func, &func.block, 3, &[]), AsWritten::Not);
        assert_eq!(as_written(&func, &func.block, 3, &[other]), AsWritten::Not);
        assert_eq!(as_written(&func, &func.block, 3, &[tri]), AsWritten::Kept);
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
        // A method that calls its namesake on a field (serde_json's
        // `Deserializer::peek`, `self.read.peek()`): `&mut self` is no `mut`
        // argument.
        assert_eq!(
            kept("fn peek(&mut self) -> Option<u8> { self.read.peek() }"),
            AsWritten::KeptOptimized
        );
        assert_eq!(
            kept("fn f((a, mut b): (u8, u8)) -> u8 { b += a; f((a, b)) }"),
            AsWritten::Not
        );
    }

    #[test]
    fn copies_that_end_in_a_return_are_kept_where_they_leave_the_function() {
        // serde_json's `Map::remove`: one `return` per feature, recursive
        // to the attribute (`self.map.remove(key)`).
        let two_returns = "fn remove(&mut self, k: &str) -> Option<u8> { \
             #[cfg(a)] return self.map.remove(k); #[cfg(not(a))] return self.map.remove(k); }";
        assert_eq!(kept(two_returns), AsWritten::KeptOptimized);
        let body: Block =
            syn::parse_str("{ #[cfg(a)] return 1; #[cfg(not(a))] return 2; }").unwrap();
        assert_eq!(ends_in_return(&body), Some(true));
        let body: Block = syn::parse_str("{ f(); return 2 }").unwrap();
        assert_eq!(ends_in_return(&body), Some(false));
        let body: Block = syn::parse_str("{ if x { return 1; } 2 }").unwrap();
        assert_eq!(ends_in_return(&body), None);
        // A unit function's `#[cfg]`'d `return` may be left out, and its
        // copy then ends without one: one body.
        assert_eq!(
            kept("fn f(&self) { self.f(); #[cfg(a)] return; }"),
            AsWritten::Not
        );
        assert_eq!(
            kept("fn f(&self) -> () { self.f(); #[cfg(a)] return; }"),
            AsWritten::Not
        );
        assert_eq!(
            kept("fn f(&self) { self.f(); return; }"),
            AsWritten::KeptOptimized
        );
    }

    #[test]
    fn plain_nested_items_are_copied_with_the_body() {
        assert!(fits_fn(
            "fn f(x: u8) -> u8 { if x == 0 { #[inline(never)] #[cold] #[track_caller] fn fail() -> ! { panic!() } \
             fail() } { const N: u8 = 3; use core::ops::Add; type T = u8; x.add(N) } }"
        ));
    }

    #[test]
    fn inline_always_keeps_both_in_optimized_builds_only() {
        assert_eq!(
            kept("#[inline(always)] fn f(x: u8) -> u8 { x }"),
            AsWritten::KeptOptimized
        );
        assert_eq!(
            kept("#[inline(always)] fn f(mut x: u8) -> u8 { x += 1; x }"),
            AsWritten::Not
        );
        assert!(fits_fn("#[inline] fn f(x: u8) -> u8 { x }"));
    }

    #[test]
    fn big_bodies_keep_one() {
        let func: ItemFn = syn::parse_str("fn f() {}").unwrap();
        assert_eq!(
            as_written(&func, &func.block, MAX_CELLS, &[]),
            AsWritten::Kept
        );
        assert_eq!(
            as_written(&func, &func.block, MAX_CELLS + 1, &[]),
            AsWritten::Not
        );
    }
}
