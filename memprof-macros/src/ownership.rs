//! Arguments taken by value are dropped inside the call.
//!
//! Rust drops a function's arguments after the locals of its body, so after
//! the call's guard, itself a local of the body, has closed the call: what a
//! consumed `Vec` or `self` frees would be missing from the function's
//! figures and charged to its caller instead. So each argument that may own
//! memory is moved into the body as its first local (`let v = v;`) and drops
//! with the other locals, at the closing brace's row and inside the call.
//!
//! `self` cannot be bound again by a `let`: it is moved into
//! `__memprof_self`, and the body's uses of `self` take that name. Where that
//! could change what the body means (a format string that names `{self}`, a
//! macro other than the standard library's that is given `self`), `self` is
//! left where it is.
//!
//! Left as they are: references, raw pointers and primitives, which free
//! nothing; `ref` bindings; and `_` patterns, which have no name to move.

use proc_macro2::{Ident, TokenStream, TokenTree};
use syn::visit_mut::VisitMut;
use syn::{Block, FnArg, Pat, Signature, Stmt, Type, parse_quote};

/// The moves for one function: the `let`s that start its body, and how the
/// signature's `mut`s must follow them.
pub(crate) struct MovedArgs {
    /// `let v = v;` for each moved binding, in argument order.
    pub(crate) lets: Vec<Stmt>,
    /// Whether `self` is moved, so that the body must be renamed.
    moves_self: bool,
}

/// The name `self` takes in the body once moved, at the span of the `self`
/// it stands for.
fn self_local(span: proc_macro2::Span) -> Ident {
    Ident::new("__memprof_self", span)
}

impl MovedArgs {
    /// The moves for `sig`'s arguments and `body`.
    pub(crate) fn plan(sig: &Signature, body: &Block) -> Self {
        let mut lets = Vec::new();
        let mut moves_self = false;
        for arg in &sig.inputs {
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
                    let attrs = cfg_attrs(&typed.attrs);
                    for (mutability, name) in bindings(&typed.pat) {
                        lets.push(parse_quote!(#(#attrs)* let #mutability #name = #name;));
                    }
                }
            }
        }
        MovedArgs { lets, moves_self }
    }

    /// Renames `self` in `body` if it is moved.
    pub(crate) fn rename_self(&self, body: &mut Block) {
        if self.moves_self {
            RenameSelf.visit_block_mut(body);
        }
    }

    /// The signature once its bindings are moved: a `mut` is needed by the
    /// `let` that moved the binding, not by the argument, unless the body is
    /// also kept as written (`MEMPROF=off`), which mutates the argument
    /// itself. Then the moving `let`s allow an unused `mut`, which the
    /// argument's own lint reports.
    /// The moving `let`s start `body`, which steps its call itself (see
    /// `Instrumenter::prelude`).
    pub(crate) fn adjust(&self, sig: &mut Signature, body: &mut Block, kept_as_written: bool) {
        if self.lets.is_empty() {
            return;
        }
        if kept_as_written {
            for stmt in &mut body.stmts[..self.lets.len()] {
                if let Stmt::Local(local) = stmt {
                    local.attrs.push(parse_quote!(#[allow(unused_mut)]));
                }
            }
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

/// The names a pattern binds by value, with their `mut`. Of an `|`
/// pattern, the first alternative's: every alternative binds the same names.
fn bindings(pat: &Pat) -> Vec<(Option<syn::token::Mut>, Ident)> {
    let mut found = Vec::new();
    collect(pat, &mut found);
    found
}

fn collect(pat: &Pat, found: &mut Vec<(Option<syn::token::Mut>, Ident)>) {
    match pat {
        Pat::Ident(p) => {
            if p.by_ref.is_none() {
                found.push((p.mutability, p.ident.clone()));
            }
            if let Some((_, sub)) = &p.subpat {
                collect(sub, found);
            }
        }
        Pat::Or(p) => {
            if let Some(first) = p.cases.first() {
                collect(first, found);
            }
        }
        Pat::Paren(p) => collect(&p.pat, found),
        Pat::Reference(p) => collect(&p.pat, found),
        Pat::Slice(p) => p.elems.iter().for_each(|p| collect(p, found)),
        Pat::Struct(p) => p.fields.iter().for_each(|f| collect(&f.pat, found)),
        Pat::Tuple(p) => p.elems.iter().for_each(|p| collect(p, found)),
        Pat::TupleStruct(p) => p.elems.iter().for_each(|p| collect(p, found)),
        Pat::Type(p) => collect(&p.pat, found),
        _ => {}
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
