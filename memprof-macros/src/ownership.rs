//! Arguments taken by value are dropped inside the call.
//!
//! Rust drops a function's arguments after the locals of its body, so after
//! the call's guard, itself a local of the body, has closed the call: what a
//! consumed `Vec` or `self` frees would be missing from the function's
//! figures and charged to its caller instead. So each argument that may own
//! memory is moved, in argument order, into a local declared right after the
//! call's start and before the body (`let v = v;`): the body, with its own
//! braces, is the last expression of the block that holds them. Its locals
//! and its tail's temporaries (by its own edition's rules) drop first, then
//! the moved arguments in reverse order, as unprofiled, and then the call
//! ends. A body's tail may borrow an argument, as it may unprofiled.
//!
//! An argument bound by a pattern other than a plain name (`_`, `ref x`,
//! `(a, _)`, `S { a, .. }`) takes a generated name in the signature, and is
//! moved under that name and then bound by its pattern, so that its unbound
//! parts drop right after its bindings, in its place among the arguments.
//!
//! `self` cannot be bound again by a `let`: it is moved into
//! `__memprof_self`, and the body's uses of `self` take that name. Where that
//! could change what the body means (a format string that names `{self}`, a
//! macro other than the standard library's that is given `self`), `self` is
//! left where it is: as the first argument it drops last either way, after
//! the call has ended, so what it frees goes to the caller.
//!
//! Left as they are: references, raw pointers and primitives, which free
//! nothing.

use crate::syntax::local;
use proc_macro2::{Ident, TokenStream, TokenTree};
use syn::visit_mut::VisitMut;
use syn::{Block, FnArg, Pat, Signature, Stmt, Type, parse_quote};

/// The moves for one function: the `let`s that come before its body, and
/// how the signature's `mut`s must follow them.
pub(crate) struct MovedArgs {
    /// `let v = v;` for each moved argument, in argument order.
    pub(crate) lets: Vec<Stmt>,
    /// Whether `self` is moved, so that the body must be renamed.
    moves_self: bool,
    /// Whether an argument's pattern was replaced by a generated name in the
    /// signature: the body as written no longer sees its bindings.
    pub(crate) renamed: bool,
}

/// The name `self` takes in the body once moved, at the span of the `self`
/// it stands for.
fn self_local(span: proc_macro2::Span) -> Ident {
    Ident::new("__memprof_self", span)
}

impl MovedArgs {
    /// The moves for `sig`'s arguments and `body`. Arguments bound by a
    /// pattern other than a plain name take a generated one in `sig`.
    pub(crate) fn plan(sig: &mut Signature, body: &Block) -> Self {
        let mut lets = Vec::new();
        let mut moves_self = false;
        let mut renamed = false;
        for (index, arg) in sig.inputs.iter_mut().enumerate() {
            match arg {
                FnArg::Receiver(receiver) => {
                    let by_value = receiver.reference.is_none()
                        && !matches!(*receiver.ty, Type::Reference(_) | Type::Ptr(_));
                    if by_value && self_can_move(body) {
                        let token = receiver.self_token;
                        let name = self_local(token.span);
                        let mutability = receiver.mutability;
                        let attrs = cfg_attrs(&receiver.attrs);
                        lets.push(parse_quote!(#(#attrs)* let #mutability #name = #token;));
                        moves_self = true;
                    }
                }
                FnArg::Typed(typed) => {
                    if frees_nothing(&typed.ty) {
                        continue;
                    }
                    let attrs: Vec<_> = cfg_attrs(&typed.attrs).into_iter().cloned().collect();
                    if let Pat::Ident(p) = &*typed.pat
                        && p.by_ref.is_none()
                        && p.subpat.is_none()
                    {
                        let (mutability, name) = (p.mutability, &p.ident);
                        lets.push(parse_quote!(#(#attrs)* let #mutability #name = #name;));
                        continue;
                    }
                    let name = local(&format!("__memprof_arg{index}"));
                    let pat = std::mem::replace(&mut *typed.pat, parse_quote!(#name));
                    lets.push(parse_quote!(#(#attrs)* let #name = #name;));
                    if !matches!(pat, Pat::Wild(_)) {
                        lets.push(parse_quote!(#(#attrs)* let #pat = #name;));
                    }
                    renamed = true;
                }
            }
        }
        MovedArgs {
            lets,
            moves_self,
            renamed,
        }
    }

    /// Renames `self` in `body` if it is moved.
    pub(crate) fn rename_self(&self, body: &mut Block) {
        if self.moves_self {
            RenameSelf.visit_block_mut(body);
        }
    }

    /// The signature once its arguments are moved: a `mut` is needed by the
    /// `let` that moved the argument, not by the argument, unless the body
    /// is also kept as written (`MEMPROF=off`), which mutates the argument
    /// itself. (A needless `mut` is then reported once: the argument's and
    /// the `let`'s are the same token.)
    pub(crate) fn adjust(&self, sig: &mut Signature, kept_as_written: bool) {
        if self.lets.is_empty() || kept_as_written {
            return;
        }
        for arg in &mut sig.inputs {
            match arg {
                FnArg::Receiver(receiver) if self.moves_self => receiver.mutability = None,
                FnArg::Typed(typed) if !frees_nothing(&typed.ty) => strip_mut(&mut typed.pat),
                _ => {}
            }
        }
    }
}

/// Types whose values free nothing when dropped: references, raw and
/// function pointers, primitives, and tuples and arrays of them.
fn frees_nothing(ty: &Type) -> bool {
    const PRIMITIVES: &[&str] = &[
        "bool", "char", "f32", "f64", "i8", "i16", "i32", "i64", "i128", "isize", "u8", "u16",
        "u32", "u64", "u128", "usize",
    ];
    match ty {
        Type::Reference(_) | Type::Ptr(_) | Type::BareFn(_) | Type::Never(_) => true,
        Type::Paren(t) => frees_nothing(&t.elem),
        Type::Group(t) => frees_nothing(&t.elem),
        Type::Tuple(t) => t.elems.iter().all(frees_nothing),
        Type::Array(t) => frees_nothing(&t.elem),
        Type::Path(p) => {
            p.qself.is_none()
                && p.path
                    .get_ident()
                    .is_some_and(|id| PRIMITIVES.contains(&id.to_string().as_str()))
        }
        _ => false,
    }
}

/// Removes `mut` from every binding of `pat` that is moved.
fn strip_mut(pat: &mut Pat) {
    struct Strip;
    impl VisitMut for Strip {
        fn visit_pat_ident_mut(&mut self, p: &mut syn::PatIdent) {
            if p.by_ref.is_none() {
                p.mutability = None;
            }
            syn::visit_mut::visit_pat_ident_mut(self, p);
        }
    }
    Strip.visit_pat_mut(pat);
}

fn cfg_attrs(attrs: &[syn::Attribute]) -> Vec<&syn::Attribute> {
    attrs
        .iter()
        .filter(|a| a.path().is_ident("cfg") || a.path().is_ident("cfg_attr"))
        .collect()
}

/// Macros whose arguments are expressions, where `self` is a value and can
/// be renamed as in code.
const EXPRESSION_MACROS: &[&str] = &[
    "assert",
    "assert_eq",
    "assert_ne",
    "dbg",
    "debug_assert",
    "debug_assert_eq",
    "debug_assert_ne",
    "eprint",
    "eprintln",
    "format",
    "format_args",
    "matches",
    "panic",
    "print",
    "println",
    "todo",
    "unimplemented",
    "unreachable",
    "vec",
    "write",
    "writeln",
];

/// Whether every `self` of the body can be renamed without changing what it
/// means: none is named inside a string (a format string's `{self}`), and
/// none is given to a macro other than the standard library's.
fn self_can_move(body: &Block) -> bool {
    struct Check(bool);
    impl<'a> syn::visit::Visit<'a> for Check {
        fn visit_macro(&mut self, mac: &'a syn::Macro) {
            let known = mac
                .path
                .segments
                .last()
                .is_some_and(|s| EXPRESSION_MACROS.contains(&s.ident.to_string().as_str()));
            if mentions_self(mac.tokens.clone()) && !known || names_self_in_string(&mac.tokens) {
                self.0 = false;
            }
        }
        fn visit_item(&mut self, _: &'a syn::Item) {}
    }
    let mut check = Check(true);
    syn::visit::Visit::visit_block(&mut check, body);
    check.0
}

fn mentions_self(tokens: TokenStream) -> bool {
    tokens.into_iter().any(|t| match t {
        TokenTree::Ident(id) => id == "self",
        TokenTree::Group(g) => mentions_self(g.stream()),
        _ => false,
    })
}

fn names_self_in_string(tokens: &TokenStream) -> bool {
    tokens.clone().into_iter().any(|t| match t {
        TokenTree::Literal(lit) => {
            let text = lit.to_string();
            text.contains("{self}") || text.contains("{self:")
        }
        TokenTree::Group(g) => names_self_in_string(&g.stream()),
        _ => false,
    })
}

/// `self` → `__memprof_self` in expressions and in the standard macros'
/// arguments, but not in items (their own `self`) or paths (`self::f`).
struct RenameSelf;

impl VisitMut for RenameSelf {
    fn visit_expr_path_mut(&mut self, expr: &mut syn::ExprPath) {
        let path = &mut expr.path;
        if expr.qself.is_none() && path.leading_colon.is_none() && path.segments.len() == 1 {
            let segment = &mut path.segments[0];
            if segment.ident == "self" && segment.arguments.is_none() {
                segment.ident = self_local(segment.ident.span());
            }
        }
    }

    fn visit_macro_mut(&mut self, mac: &mut syn::Macro) {
        mac.tokens = rename_in_tokens(std::mem::take(&mut mac.tokens));
    }

    fn visit_item_mut(&mut self, _: &mut syn::Item) {}
}

fn rename_in_tokens(tokens: TokenStream) -> TokenStream {
    let mut out: Vec<TokenTree> = Vec::new();
    let mut iter = tokens.into_iter().peekable();
    while let Some(token) = iter.next() {
        match token {
            TokenTree::Ident(id) if id == "self" => {
                let is_path =
                    matches!(iter.peek(), Some(TokenTree::Punct(p)) if p.as_char() == ':');
                let after_path =
                    matches!(out.last(), Some(TokenTree::Punct(p)) if p.as_char() == ':');
                out.push(if is_path || after_path {
                    TokenTree::Ident(id)
                } else {
                    TokenTree::Ident(self_local(id.span()))
                });
            }
            TokenTree::Group(g) => {
                let mut renamed =
                    proc_macro2::Group::new(g.delimiter(), rename_in_tokens(g.stream()));
                renamed.set_span(g.span());
                out.push(TokenTree::Group(renamed));
            }
            other => out.push(other),
        }
    }
    out.into_iter().collect()
}
