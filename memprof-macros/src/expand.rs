//! Code generation for `#[profile]` on a function.
//!
//! `#[profile]` keeps the function's signature and attributes as written and
//! rewrites its body: the call first (a `SyncCall`, whose state lives on the
//! thread's side stack and which steps the body's statements itself); then,
//! in every nested block (not in closures, async blocks, const contexts or
//! items), a cursor declared first and a `cursor.enter(cell)` before each
//! group of statements that start on the same line (see `instrument`). The
//! cursors and the call close their regions when dropped, so early `return`,
//! `?`, `break` and panics are recorded without special cases. Where it
//! cannot change the program (see `off_branch`), the body is also kept as
//! written, for `MEMPROF=off`.
//!
//! An `async fn` body runs in a wrapped future, counted per poll. So does a
//! body that an attribute expanded first (`#[tokio::test]` above
//! `#[profile]`) moved into an `async` block: see [`MovedBody`].

use crate::attr::{ProfileArgs, Scope, is_profile};
use crate::instrument::Instrumenter;
use crate::ownership::MovedArgs;
use crate::syntax::{close_line_of, line_of, local};
use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, quote};
use syn::visit_mut::VisitMut;
use syn::{Expr, ItemFn, parse_quote};

pub(crate) fn profile(args: TokenStream, item: TokenStream) -> TokenStream {
    let arg_tokens = args.clone();
    let args = match syn::parse2::<ProfileArgs>(args) {
        Ok(args) => args,
        Err(err) => return with_item(err, item),
    };
    let func = match syn::parse2::<ItemFn>(item.clone()) {
        Ok(func) => func,
        Err(_) => return reject(&arg_tokens, item),
    };
    if let Some(constness) = func.sig.constness {
        let err = syn::Error::new_spanned(constness, "`#[profile]` cannot instrument a `const fn`");
        return with_item(err, item);
    }
    if let Some(again) = func.attrs.iter().find(|a| is_profile(a)) {
        let err = syn::Error::new_spanned(
            again,
            "`#[profile]` is applied to this function twice: remove one",
        );
        return with_item(err, item);
    }
    if !cfg!(feature = "enabled") {
        // The function as written, at no cost: its arguments, sizes included,
        // were checked above, so misuse is the same error either way.
        return item;
    }
    expand_fn(&args, func)
}

/// The error plus the item untouched, so the user sees one error rather than
/// a cascade about a missing function.
fn with_item(err: syn::Error, item: TokenStream) -> TokenStream {
    let err = err.into_compile_error();
    quote!(#err #item)
}

/// `item` is not a function with a body: profile the methods of an `impl`
/// block, else say why, or, if it does not parse at all, hand it back
/// unchanged so that rustc reports the user's own error.
fn reject(args: &TokenStream, item: TokenStream) -> TokenStream {
    if let Ok(f) = syn::parse2::<syn::TraitItemFn>(item.clone())
        && f.default.is_none()
    {
        let err =
            syn::Error::new_spanned(&f.sig, "`#[profile]` needs a function body to instrument");
        return with_item(err, item);
    }
    if let Ok(f) = syn::parse2::<syn::ForeignItemFn>(item.clone()) {
        let err =
            syn::Error::new_spanned(&f.sig, "`#[profile]` needs a function body to instrument");
        return with_item(err, item);
    }
    let err = match syn::parse2::<syn::Item>(item.clone()) {
        Ok(syn::Item::Impl(block)) => match crate::impl_block::profile_methods(args, block) {
            // The methods, arguments and all, are checked as they expand.
            Ok(_) if !cfg!(feature = "enabled") => return item,
            Ok(block) => return block,
            Err(err) => err,
        },
        Ok(syn::Item::Trait(t)) => syn::Error::new_spanned(
            t.trait_token,
            "`#[profile]` cannot be applied to a trait: put it on the trait's `impl` \
             blocks, or on a method that has a default body",
        ),
        Ok(syn::Item::Mod(m)) => syn::Error::new_spanned(
            m.mod_token,
            "`#[profile]` cannot be applied to a module: put it on the functions or \
             `impl` blocks inside it",
        ),
        Ok(other) => syn::Error::new(
            first_token_span(&other),
            "`#[profile]` can only be applied to functions and `impl` blocks",
        ),
        Err(_) => return item,
    };
    with_item(err, item)
}

fn first_token_span(item: &syn::Item) -> Span {
    let mut tokens = item.to_token_stream().into_iter();
    // Skip outer attributes (`#` and its bracket group).
    loop {
        match tokens.next() {
            Some(proc_macro2::TokenTree::Punct(p)) if p.as_char() == '#' => {
                tokens.next();
            }
            Some(t) => return t.span(),
            None => return Span::call_site(),
        }
    }
}

fn expand_fn(args: &ProfileArgs, mut func: ItemFn) -> TokenStream {
    let fn_line = line_of(func.sig.fn_token.span);
    let attr_line = line_of(Span::call_site());
    // NOTE: doc comments are left out: a table starts at the attributes
    // and the signature, not at a page of rustdoc above them.
    let first_attr_line = func
        .attrs
        .iter()
        .find(|a| !a.path().is_ident("doc"))
        .map(|a| line_of(a.pound_token.span))
        .unwrap_or(fn_line);
    let first_line = attr_line.min(first_attr_line).min(fn_line);
    let close_line = close_line_of(&func.block.brace_token.span).max(fn_line);
    let rows = source_rows(&func, first_line, close_line);

    let is_async = func.sig.asyncness.is_some();
    let mut instrumenter = Instrumenter::new(first_line, close_line, fn_line, is_async);
    // The items the body declares at its top (a helper `fn`, a `static`,
    // an `impl`) move out of it, to the function's own block, where they
    // are in scope as before: one item whichever copy of the body runs (see
    // `off_branch`), and not a statement for the instrumenter. Not where the
    // body holds a `macro_rules!` or another item macro: a macro's scope is
    // textual, from its definition on, so moving one above the statements
    // (or an item away from one it calls) would change which macro a call
    // names; such a body keeps its items, and one body (see `off_branch`).
    let holds_item_macro = func
        .block
        .stmts
        .iter()
        .any(|s| matches!(s, syn::Stmt::Item(syn::Item::Macro(_))));
    let (items, stmts): (Vec<_>, Vec<_>) = std::mem::take(&mut func.block.stmts)
        .into_iter()
        .partition(|s| matches!(s, syn::Stmt::Item(_)) && !holds_item_macro);
    func.block.stmts = stmts;
    // Kept as written for the `MEMPROF=off` branch, if the function has one.
    let as_written = func.block.clone();
    let frame = instrumenter.frame.clone();
    let call = local("__memprof_call");
    // A body that another attribute moved into an `async` block is
    // instrumented there, and that block is the call, as an `async fn`'s
    // body is; the code around it is the other attribute's.
    let mut moved = MovedBody {
        braces: braces_position(&func.block.brace_token.span),
        instrumenter: &mut instrumenter,
        found: false,
    };
    moved.visit_block_mut(&mut func.block);
    let moved = moved.found;
    // What the arguments free is counted in the call: they are moved into
    // locals of its own (see `ownership`). (A body moved by another
    // attribute has no arguments.)
    let moved_args = (!moved).then(|| MovedArgs::plan(&mut func.sig, &func.block));
    if let Some(args) = &moved_args {
        args.rename_self(&mut func.block);
        instrumenter.args_drop_after = !args.lets.is_empty();
        // PERF: a synchronous call's frame is its body's cursor too: one
        // pointer less on the user's stack per call.
        instrumenter.body_on_frame = func.sig.asyncness.is_none();
        instrumenter.instrument_block(&mut func.block);
    }
    let cell_rows = &instrumenter.cell_rows;
    let cell_parents = &instrumenter.cell_parents;
    let ncells = cell_rows.len();

    let scope = match args.scope {
        Scope::Thread => quote!(::memprof::__private::Scope::Thread),
        Scope::Process => quote!(::memprof::__private::Scope::Process),
    };
    // Sizes were parsed with the arguments; they arrive here as bytes.
    let size = |size: &Option<crate::size::Size>| match size {
        Some(size) => size.to_token_stream(),
        None => quote!(::core::primitive::u64::MAX),
    };
    let (limit, max_retained) = (size(&args.limit), size(&args.max_retained));
    // A synchronous call keeps its state on the thread's side stack, with a
    // pointer here; an `async fn` call, in its future, as it may move.
    let first = instrumenter.body_first;
    let entry = if is_async {
        quote! {
            let #frame = ::memprof::__private::CallFrame::<#ncells>::new(&__MEMPROF_META);
            let #call = #frame.enter_async();
        }
    } else {
        // PERF: out of line where the function's own code is unoptimized
        // (see `SyncCall::start_outlined`).
        quote! {
            let #frame = if ::core::cfg!(debug_assertions) {
                ::memprof::__private::SyncCall::start_outlined(&__MEMPROF_META, #first)
            } else {
                ::memprof::__private::SyncCall::start(&__MEMPROF_META, #first)
            };
        }
    };
    use crate::off_branch::AsWritten;
    let kept = if is_async || moved || moved_args.as_ref().is_some_and(|a| a.renamed) {
        AsWritten::Not
    } else {
        crate::off_branch::as_written(&func, &as_written, ncells, &args.expr_macros)
    };
    if let Some(args) = &moved_args {
        args.adjust(&mut func.sig, kept != AsWritten::Not);
    }
    let block = &func.block;
    let lets = moved_args.as_ref().map_or(&[][..], |a| &a.lets[..]);
    // The body, with its own braces, is the last expression of a block of
    // ours: its locals and its tail's temporaries drop by its own edition's
    // rules, before the arguments (which the tail may borrow) and the call,
    // and its value meets the return type as written (coercions, closures'
    // signatures) without a `let` that would name it.
    let body = match block.stmts.as_slice() {
        _ if moved => {
            let stmts = &block.stmts;
            quote!(#(#stmts)*)
        }
        // A body that is one expression and nothing else is that expression:
        // no locals drop before its temporaries in any edition, and braces
        // around it would be `unused_braces` in the user's crate.
        [syn::Stmt::Expr(tail, None)] => quote! {
            #entry
            #(#lets)*
            #tail
        },
        _ => quote! {
            #entry
            #(#lets)*
            #block
        },
    };
    let body = if is_async {
        quote!(::memprof::__private::Instrumented::new(async move { #body }).await)
    } else if kept == AsWritten::Kept {
        // PERF: under `MEMPROF=off` a call costs one load and a branch,
        // in unoptimized builds too (no guard to drop, hence the body's
        // second copy); a quiet call (see `QuietCall`), one call into the
        // kernel on the way in and one on the way out. The binding ends
        // the quiet call where `SyncCall` ends a call with rows: after the
        // body's locals, before the arguments.
        quote! {
            if ::memprof::__private::is_off() #as_written
            else if let ::core::option::Option::Some(__memprof_quiet) =
                ::memprof::__private::QuietCall::start(&__MEMPROF_META)
            #as_written else { #body }
        }
    } else if kept == AsWritten::KeptOptimized {
        // The same, in optimized builds only (see `off_branch`): a recursive
        // or `#[inline(always)]` function. The quiet call's binding ends
        // as the `return` leaves its block, after the body's locals. A copy
        // that ends in a `return` of its own runs as it is (see
        // `off_branch::ends_in_return`).
        let leave = if crate::off_branch::ends_in_return(&as_written).is_some() {
            quote!(#as_written)
        } else {
            quote!({ return #as_written; })
        };
        quote! {
            #[cfg(not(debug_assertions))]
            {
                if ::memprof::__private::is_off() #leave
                if let ::core::option::Option::Some(__memprof_quiet) =
                    ::memprof::__private::QuietCall::start(&__MEMPROF_META)
                #leave
            }
            #body
        }
    } else {
        body
    };
    let without_gpu = match &args.gpu {
        Some(gpu) if !gpu.value => quote!(.without_gpu()),
        _ => TokenStream::new(),
    };
    let meta = quote! {
        static __MEMPROF_CELLS: [::memprof::__private::LineCell; #ncells] =
            [const { ::memprof::__private::LineCell::new() }; #ncells];
        fn __memprof_path() -> &'static str {
            ::core::any::type_name_of_val(&__memprof_path)
        }
        static __MEMPROF_META: ::memprof::__private::FnMeta = ::memprof::__private::FnMeta::new(
            __memprof_path,
            ::core::file!(),
            #first_line,
            &[#(#rows),*],
            &[#(#cell_rows),*],
            &__MEMPROF_CELLS,
            #scope,
        )
        .with_limits(#limit, #max_retained)
        .with_parents(&[#(#cell_parents),*])#without_gpu;
        ::memprof::__private::inventory::submit! {
            ::memprof::__private::Registration(&__MEMPROF_META)
        }
    };
    let attrs = &func.attrs;
    let vis = &func.vis;
    let sig = &func.sig;
    quote! {
        #(#attrs)*
        #vis #sig {
            #meta
            #(#items)*
            #body
        }
    }
}

/// Finds the `async` block that holds the function's body when an attribute
/// expanded before `#[profile]` moved it there: `#[tokio::test]` or
/// `#[tokio::main]` written above `#[profile]` turn `async fn f() { body }`
/// into `fn f() { let body = async { body }; ... block_on(body) }`. The block
/// is known by its braces, which are the body's own. It becomes what an
/// `async fn` body becomes: a call, counted per poll.
struct MovedBody<'a> {
    braces: Position,
    instrumenter: &'a mut Instrumenter,
    found: bool,
}

/// Where a pair of braces is: file, then line and column of both ends.
type Position = (String, [usize; 4]);

fn braces_position(braces: &proc_macro2::extra::DelimSpan) -> Position {
    let span = braces.join().unwrap();
    let (start, end) = (span.start(), span.end());
    (
        span.file(),
        [start.line(), start.column(), end.line(), end.column()],
    )
}

impl VisitMut for MovedBody<'_> {
    fn visit_expr_mut(&mut self, expr: &mut Expr) {
        if self.found {
            return;
        }
        let Expr::Async(body) = expr else {
            return syn::visit_mut::visit_expr_mut(self, expr);
        };
        if braces_position(&body.block.brace_token.span) != self.braces {
            return syn::visit_mut::visit_expr_mut(self, expr);
        }
        self.found = true;
        let instrumenter = &mut *self.instrumenter;
        // Its cursors are an `async fn`'s.
        instrumenter.use_async_cursors();
        instrumenter.instrument_block(&mut body.block);
        let ncells = instrumenter.cell_rows.len();
        let frame = &instrumenter.frame;
        let call = local("__memprof_call");
        let block = &body.block;
        // As in `expand_fn`: the block, with its own braces, is the last
        // expression of ours.
        body.block = parse_quote!({
            let #frame = ::memprof::__private::CallFrame::<#ncells>::new(&__MEMPROF_META);
            let #call = #frame.enter_async();
            #block
        });
        *expr = parse_quote!(::memprof::__private::Instrumented::new(#body));
    }

    // The body is not inside a closure or an item.
    fn visit_expr_closure_mut(&mut self, _: &mut syn::ExprClosure) {}
    fn visit_item_mut(&mut self, _: &mut syn::Item) {}
}

/// Source text of lines `first..=last`, read at compile time so the binary
/// needs no source files. Falls back to the signature alone when the file
/// cannot be read (code generated by other macros, say).
fn source_rows(func: &ItemFn, first: u32, last: u32) -> Vec<String> {
    let count = (last - first + 1) as usize;
    let file = func
        .sig
        .fn_token
        .span
        .unwrap()
        .local_file()
        .and_then(|path| std::fs::read_to_string(path).ok());
    if let Some(text) = file {
        let mut rows: Vec<String> = text
            .lines()
            .skip(first as usize - 1)
            .take(count)
            .map(str::to_owned)
            .collect();
        if rows.len() == count {
            leave_out_inserted_attributes(&mut rows);
            return rows;
        }
    }
    let mut rows = vec![String::new(); count];
    let fn_row = (line_of(func.sig.fn_token.span) - first) as usize;
    rows[fn_row] = func.sig.to_token_stream().to_string();
    rows
}

/// The attribute as tools write it in front of a function, on the
/// function's own first line so that every line keeps its number: `cargo
/// memprof` in its copy of a workspace, `scripts/corpus`.
const INSERTED: &str = "#[::memprof::profile";

/// Leaves [`INSERTED`] out of each row where it stands as tools insert it
/// (`#[::memprof::profile]`, or with `(expr_macros(a, b))`): after nothing
/// but indentation or other attributes, before more of the row. What
/// remains is the user's line (`#[test] fn check() {`), on the function's
/// first row and on the row of each function nested in it.
fn leave_out_inserted_attributes(rows: &mut [String]) {
    for row in rows {
        let Some(at) = row.find(INSERTED) else {
            continue;
        };
        let rest = &row[at + INSERTED.len()..];
        let Some(len) = inserted_arguments(rest) else {
            continue;
        };
        let before = row[..at].trim_end();
        let after = rest[len..].trim_start();
        if (before.is_empty() || before.ends_with(']')) && !after.is_empty() {
            *row = format!("{}{after}", &row[..at]);
        }
    }
}

/// The length of what closes an inserted attribute at the start of
/// `rest`: `]`, or `(expr_macros(NAMES))]` with names and commas only.
fn inserted_arguments(rest: &str) -> Option<usize> {
    if rest.starts_with(']') {
        return Some(1);
    }
    let names = rest.strip_prefix("(expr_macros(")?;
    let end = names.find("))]")?;
    let plain = names[..end]
        .chars()
        .all(|c| c.is_alphanumeric() || c == '_' || c == ',' || c == ' ');
    plain.then_some("(expr_macros(".len() + end + "))]".len())
}
