//! Code generation for `#[profile]` and `memit!`.
//!
//! `#[profile]` keeps the function's signature and attributes as written and
//! rewrites its body: a call frame and a call guard first; then, in every
//! nested block (not in closures, async blocks, const contexts or items), a
//! cursor declared first and a `cursor.enter(cell)` before each group of
//! statements that start on the same line. The cursor and the call guard
//! close their regions when dropped, so early `return`, `?`, `break` and
//! panics are recorded without special cases.
//!
//! An `async fn` body runs in a wrapped future, counted per poll. So does a
//! body that an attribute expanded first (`#[tokio::test]` above
//! `#[profile]`) moved into an `async` block: see [`MovedBody`].

use crate::attr::{ProfileArgs, Scope};
use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, quote};
use syn::visit_mut::VisitMut;
use syn::{Block, Expr, Ident, ItemFn, ReturnType, Stmt, Type, parse_quote};

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

fn line_of(span: Span) -> u32 {
    span.unwrap().line() as u32
}

/// The line of a block's closing brace. NOTE: braces that another macro
/// re-emitted around new tokens (as `#[tokio::test]` does) may carry one span
/// for the whole group: its end is still the closing brace.
fn close_line_of(braces: &proc_macro2::extra::DelimSpan) -> u32 {
    braces.close().unwrap().end().line() as u32
}

pub(crate) fn local(name: &str) -> Ident {
    Ident::new(name, Span::mixed_site())
}

fn expand_fn(args: &ProfileArgs, mut func: ItemFn) -> TokenStream {
    let fn_line = line_of(func.sig.fn_token.span);
    let attr_line = line_of(Span::call_site());
    let first_attr_line = func
        .attrs
        .first()
        .map(|a| line_of(a.pound_token.span))
        .unwrap_or(fn_line);
    let first_line = attr_line.min(first_attr_line).min(fn_line);
    let close_line = close_line_of(&func.block.brace_token.span).max(fn_line);
    let rows = source_rows(&func, first_line, close_line);

    let mut instrumenter = Instrumenter {
        first_line,
        last_line: close_line,
        ancestors: vec![fn_line],
        cell_rows: vec![fn_line - first_line],
        frame: local("__memprof_frame"),
        cursor: local("__memprof_cursor"),
        enter_template: {
            let cursor = local("__memprof_cursor");
            // NOTE: after a statement that diverges this is unreachable, as is
            // the user's next statement.
            parse_quote!(#[allow(unreachable_code)] #cursor.enter(0);)
        },
        frame_enter_template: {
            let frame = local("__memprof_frame");
            parse_quote!(#[allow(unreachable_code)] #frame.enter(0);)
        },
        body_on_frame: false,
    };
    // Kept as written for the `MEMPROF=off` branch, if the function has one.
    let as_written = func.block.clone();
    let frame = instrumenter.frame.clone();
    let call = local("__memprof_call");
    let ret = local("__memprof_ret");
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
    if !moved {
        // PERF: a synchronous call's frame is its body's cursor too: one
        // pointer less on the user's stack per call.
        instrumenter.body_on_frame = func.sig.asyncness.is_none();
        instrumenter.instrument_block(&mut func.block);
    }
    let cell_rows = &instrumenter.cell_rows;
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
    let is_async = func.sig.asyncness.is_some();
    // A synchronous call keeps its state on the thread's side stack, with a
    // pointer here; an `async fn` call, in its future, as it may move.
    let entry = if is_async {
        quote! {
            let #frame = ::memprof::__private::CallFrame::<#ncells>::new(&__MEMPROF_META);
            let #call = #frame.enter_async();
        }
    } else {
        quote! {
            let #frame = ::memprof::__private::SyncCall::start(&__MEMPROF_META);
        }
    };
    let block = &func.block;
    let body = match nameable_return(&func.sig.output) {
        _ if moved => {
            let stmts = &block.stmts;
            quote!(#(#stmts)*)
        }
        // Binding the value first frees the body's temporaries while the call
        // is still open, whatever the edition's tail-expression rules.
        Some(ty) => quote! {
            #entry
            let #ret: #ty = #block;
            #[allow(unreachable_code)]
            {
                #ret
            }
        },
        None => {
            let stmts = &block.stmts;
            quote! {
                #entry
                #(#stmts)*
            }
        }
    };
    let body = if is_async {
        quote!(::memprof::__private::Instrumented::new(async move { #body }).await)
    } else if !moved
        && crate::off_branch::fits(&func.sig.ident, &func.sig.output, &as_written, ncells)
    {
        // PERF: under `MEMPROF=off` a call costs one load and a branch,
        // in unoptimized builds too.
        quote! {
            if ::memprof::__private::is_off() #as_written else { #body }
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
        .with_limits(#limit, #max_retained)#without_gpu;
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
        instrumenter.instrument_block(&mut body.block);
        let ncells = instrumenter.cell_rows.len();
        let frame = &instrumenter.frame;
        let (call, ret) = (local("__memprof_call"), local("__memprof_ret"));
        let block = &body.block;
        // The block's output is the body's, which the rewritten signature
        // may no longer name: bound untyped, to the same effect as in
        // `expand_fn` (temporaries freed while the call is open).
        body.block = parse_quote!({
            let #frame = ::memprof::__private::CallFrame::<#ncells>::new(&__MEMPROF_META);
            let #call = #frame.enter_async();
            let #ret = #block;
            #[allow(unreachable_code)]
            {
                #ret
            }
        });
        *expr = parse_quote!(::memprof::__private::Instrumented::new(#body));
    }

    // The body is not inside a closure or an item.
    fn visit_expr_closure_mut(&mut self, _: &mut syn::ExprClosure) {}
    fn visit_item_mut(&mut self, _: &mut syn::Item) {}
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
        let rows: Vec<String> = text
            .lines()
            .skip(first as usize - 1)
            .take(count)
            .map(str::to_owned)
            .collect();
        if rows.len() == count {
            return rows;
        }
    }
    let mut rows = vec![String::new(); count];
    let fn_row = (line_of(func.sig.fn_token.span) - first) as usize;
    rows[fn_row] = func.sig.to_token_stream().to_string();
    rows
}

struct Instrumenter {
    first_line: u32,
    last_line: u32,
    /// Lines of the statements enclosing the current one (and the `fn` line):
    /// a statement on one of them is already covered by that row.
    ancestors: Vec<u32>,
    /// For each cell, its row. Cell 0 is the `fn` line.
    cell_rows: Vec<u32>,
    frame: Ident,
    cursor: Ident,
    /// `cursor.enter(0);`, cloned for each statement. PERF: parsing it anew
    /// for each of thousands of statements showed in compile times.
    enter_template: Stmt,
    /// `frame.enter(0);`, for the statements of a body that steps its
    /// frame (see `body_on_frame`).
    frame_enter_template: Stmt,
    /// The next block instrumented is a synchronous function's body, whose
    /// statements step the frame (`SyncCall`) rather than a cursor of their
    /// own.
    body_on_frame: bool,
}

fn stmt_line(stmt: &Stmt) -> u32 {
    let span = match stmt {
        Stmt::Local(local) => local.let_token.span,
        Stmt::Item(_) => return 0,
        Stmt::Expr(expr, _) => first_span(expr),
        Stmt::Macro(mac) => mac
            .mac
            .path
            .segments
            .first()
            .map_or_else(Span::call_site, |s| s.ident.span()),
    };
    line_of(span)
}

/// The span of an expression's first token, found by walking down its left
/// edge. PERF: converting whole expressions to tokens for this made the macro
/// quadratic in nesting depth.
fn first_span(expr: &Expr) -> Span {
    fn label(label: &Option<syn::Label>, otherwise: Span) -> Span {
        label.as_ref().map_or(otherwise, |l| l.name.apostrophe)
    }
    fn path(path: &syn::Path) -> Span {
        match (&path.leading_colon, path.segments.first()) {
            (Some(colon), _) => colon.spans[0],
            (None, Some(segment)) => segment.ident.span(),
            (None, None) => Span::call_site(),
        }
    }
    match expr {
        Expr::Array(e) if e.attrs.is_empty() => e.bracket_token.span.open(),
        Expr::Assign(e) if e.attrs.is_empty() => first_span(&e.left),
        Expr::Await(e) if e.attrs.is_empty() => first_span(&e.base),
        Expr::Binary(e) if e.attrs.is_empty() => first_span(&e.left),
        Expr::Block(e) if e.attrs.is_empty() => label(&e.label, e.block.brace_token.span.open()),
        Expr::Break(e) if e.attrs.is_empty() => e.break_token.span,
        Expr::Call(e) if e.attrs.is_empty() => first_span(&e.func),
        Expr::Cast(e) if e.attrs.is_empty() => first_span(&e.expr),
        Expr::Continue(e) if e.attrs.is_empty() => e.continue_token.span,
        Expr::Field(e) if e.attrs.is_empty() => first_span(&e.base),
        Expr::ForLoop(e) if e.attrs.is_empty() => label(&e.label, e.for_token.span),
        Expr::Group(e) if e.attrs.is_empty() => first_span(&e.expr),
        Expr::If(e) if e.attrs.is_empty() => e.if_token.span,
        Expr::Index(e) if e.attrs.is_empty() => first_span(&e.expr),
        Expr::Let(e) if e.attrs.is_empty() => e.let_token.span,
        Expr::Lit(e) if e.attrs.is_empty() => e.lit.span(),
        Expr::Loop(e) if e.attrs.is_empty() => label(&e.label, e.loop_token.span),
        Expr::Macro(e) if e.attrs.is_empty() => path(&e.mac.path),
        Expr::Match(e) if e.attrs.is_empty() => e.match_token.span,
        Expr::MethodCall(e) if e.attrs.is_empty() => first_span(&e.receiver),
        Expr::Paren(e) if e.attrs.is_empty() => e.paren_token.span.open(),
        Expr::Path(e) if e.attrs.is_empty() && e.qself.is_none() => path(&e.path),
        Expr::Reference(e) if e.attrs.is_empty() => e.and_token.span,
        Expr::Return(e) if e.attrs.is_empty() => e.return_token.span,
        Expr::Struct(e) if e.attrs.is_empty() && e.qself.is_none() => path(&e.path),
        Expr::Try(e) if e.attrs.is_empty() => first_span(&e.expr),
        Expr::Tuple(e) if e.attrs.is_empty() => e.paren_token.span.open(),
        Expr::Unsafe(e) if e.attrs.is_empty() => e.unsafe_token.span,
        Expr::While(e) if e.attrs.is_empty() => label(&e.label, e.while_token.span),
        // Rarer shapes, and anything with attributes: the first token.
        _ => {
            let mut tokens = expr.to_token_stream().into_iter().peekable();
            while let Some(proc_macro2::TokenTree::Punct(p)) = tokens.peek() {
                if p.as_char() != '#' {
                    break;
                }
                tokens.next();
                tokens.next();
            }
            tokens.next().map_or_else(Span::call_site, |t| t.span())
        }
    }
}

/// Statements of a block that start on one line and share one row.
struct Group {
    line: u32,
    stmts: Vec<Stmt>,
    probed: bool,
}

impl Instrumenter {
    fn in_table(&self, line: u32) -> bool {
        line >= self.first_line && line <= self.last_line
    }

    fn new_cell(&mut self, line: u32) -> u32 {
        self.cell_rows.push(line - self.first_line);
        self.cell_rows.len() as u32 - 1
    }

    fn instrument_block(&mut self, block: &mut Block) {
        let on_frame = std::mem::take(&mut self.body_on_frame);
        let stmts = std::mem::take(&mut block.stmts);
        let has_tail = matches!(stmts.last(), Some(Stmt::Expr(_, None)));
        let binds_locals = stmts.iter().any(|s| matches!(s, Stmt::Local(_)));

        let tail_from = cfg_tail_start(&stmts);
        let mut groups: Vec<Group> = Vec::new();
        for (i, stmt) in stmts.into_iter().enumerate() {
            let line = stmt_line(&stmt);
            match groups.last_mut() {
                // A tail that `#[cfg]` picks among blocks is one group: no
                // probe may stand between the candidates (see
                // `cfg_tail_start`).
                Some(group) if i > tail_from => group.stmts.push(stmt),
                Some(group) if line != 0 && group.line == line && i != tail_from => {
                    group.stmts.push(stmt)
                }
                _ => groups.push(Group {
                    line,
                    stmts: vec![stmt],
                    probed: false,
                }),
            }
        }
        for group in &mut groups {
            group.probed = self.in_table(group.line)
                && !self.ancestors.contains(&group.line)
                && group.stmts.iter().any(|s| match s {
                    Stmt::Item(_) => false,
                    Stmt::Local(local) => local.init.is_some(),
                    _ => true,
                });
            self.ancestors.push(group.line);
            for stmt in &mut group.stmts {
                self.visit_stmt_mut(stmt);
            }
            self.ancestors.pop();
        }

        // What the block's locals free as it ends goes to its closing brace,
        // if that line has a row of its own.
        let close_line = close_line_of(&block.brace_token.span);
        let scope_end = binds_locals
            && self.in_table(close_line)
            && !self.ancestors.contains(&close_line)
            && groups.iter().all(|g| g.line != close_line);
        if !scope_end && groups.iter().all(|g| !g.probed) {
            block.stmts = groups.into_iter().flat_map(|g| g.stmts).collect();
            return;
        }
        let end_cell = if scope_end {
            self.new_cell(close_line)
        } else {
            NO_CELL
        };

        // PERF: one cursor per block, one call per statement: no local, drop
        // or unwind path per statement. (A guard `let` per statement nested
        // so many scopes that rustc's debug-info builder overflowed its stack
        // on a 2,000-statement function.)
        let frame = self.frame.clone();
        let (cursor, mut out, template): (_, Vec<Stmt>, _) = if on_frame {
            (frame, Vec::new(), &self.frame_enter_template)
        } else {
            let cursor = self.cursor.clone();
            let declared = parse_quote!(let #cursor = #frame.cursor(););
            (cursor, vec![declared], &self.enter_template)
        };
        let template = template.clone();
        let tail_guard = local("__memprof_tail");
        let count = groups.len();
        let mut open = false;
        for (i, group) in groups.into_iter().enumerate() {
            let is_tail = has_tail && i + 1 == count;
            let runs = group.stmts.iter().any(|s| !matches!(s, Stmt::Item(_)));
            if group.probed {
                let cell = self.new_cell(group.line);
                // A lone `#[cfg]`-ed statement takes its probe with it.
                let cfgs: Vec<_> = match group.stmts.as_slice() {
                    [Stmt::Local(l)] => cfg_attrs(&l.attrs),
                    [Stmt::Macro(m)] => cfg_attrs(&m.attrs),
                    _ => Vec::new(),
                };
                if is_tail {
                    out.push(parse_quote!(let #tail_guard = #cursor.tail(#cell, #end_cell);));
                } else {
                    let mut enter = template.clone();
                    if let Stmt::Expr(Expr::MethodCall(call), _) = &mut enter {
                        call.args[0] = cell_literal(cell);
                        call.attrs.extend(cfgs);
                    }
                    out.push(enter);
                    open = true;
                }
            } else if open && runs {
                // A statement with no row of its own (it shares an enclosing
                // statement's line) must not count towards the previous one.
                out.push(parse_quote!(#[allow(unreachable_code)] #cursor.leave(#NO_CELL);));
                open = false;
            }
            out.extend(group.stmts);
        }
        if !has_tail {
            out.push(parse_quote!(#[allow(unreachable_code)] #cursor.leave(#end_cell);));
        }
        block.stmts = out;
    }
}

/// Where a block's tail begins when `#[cfg]` chooses it: in
/// `{ Some(x) } #[cfg(feature = "a")] { None }` the first block is the tail
/// once the second is configured out, which happens after this macro runs.
/// The trailing expression statements without semicolons, the last of them
/// `#[cfg]`-ed, are then one tail: the ones with a `#[cfg]` and the one
/// before them. `usize::MAX` when the block's tail is a plain one.
fn cfg_tail_start(stmts: &[Stmt]) -> usize {
    let is_bare_expr = |s: &Stmt| matches!(s, Stmt::Expr(_, None));
    let has_cfg = |s: &Stmt| {
        let mut tokens = s.to_token_stream().into_iter();
        matches!(tokens.next(), Some(proc_macro2::TokenTree::Punct(p)) if p.as_char() == '#')
            && matches!(tokens.next(), Some(proc_macro2::TokenTree::Group(g))
                if g.stream().into_iter().next().is_some_and(|t| t.to_string() == "cfg"))
    };
    match stmts.last() {
        Some(last) if is_bare_expr(last) && has_cfg(last) => {}
        _ => return usize::MAX,
    }
    let mut start = stmts.len() - 1;
    while start > 0 && is_bare_expr(&stmts[start - 1]) && has_cfg(&stmts[start - 1]) {
        start -= 1;
    }
    if start > 0 && is_bare_expr(&stmts[start - 1]) {
        start -= 1;
    }
    start
}

/// No row: the runtime's `u32::MAX`.
const NO_CELL: u32 = u32::MAX;

fn cell_literal(cell: u32) -> Expr {
    Expr::Lit(syn::ExprLit {
        attrs: Vec::new(),
        lit: syn::Lit::Int(syn::LitInt::new(&cell.to_string(), Span::call_site())),
    })
}

fn cfg_attrs(attrs: &[syn::Attribute]) -> Vec<syn::Attribute> {
    attrs
        .iter()
        .filter(|a| a.path().is_ident("cfg"))
        .cloned()
        .collect()
}

impl VisitMut for Instrumenter {
    fn visit_block_mut(&mut self, block: &mut Block) {
        self.instrument_block(block);
    }

    // Left as written: they run at another time (closures, async blocks), at
    // compile time (const contexts, types), or are separate functions (items).
    fn visit_expr_closure_mut(&mut self, _: &mut syn::ExprClosure) {}
    fn visit_expr_async_mut(&mut self, _: &mut syn::ExprAsync) {}
    fn visit_expr_const_mut(&mut self, _: &mut syn::ExprConst) {}
    fn visit_item_mut(&mut self, _: &mut syn::Item) {}
    fn visit_type_mut(&mut self, _: &mut Type) {}
    fn visit_pat_mut(&mut self, _: &mut syn::Pat) {}
    fn visit_generic_argument_mut(&mut self, _: &mut syn::GenericArgument) {}

    fn visit_expr_repeat_mut(&mut self, repeat: &mut syn::ExprRepeat) {
        // The length is a const context.
        self.visit_expr_mut(&mut repeat.expr);
    }
}

pub(crate) fn memit(input: TokenStream) -> syn::Result<TokenStream> {
    if input.is_empty() {
        return Err(syn::Error::new(
            Span::call_site(),
            "`memit!` needs an expression to measure, as in `memit!(build())`",
        ));
    }
    let Memit { expr, scope } = syn::parse2(input)?;
    let value = local("__memprof_value");
    if !cfg!(feature = "enabled") {
        // The same shape without the measuring: the value, temporaries and
        // lints are those of the enabled build.
        return Ok(quote!({
            let #value = #expr;
            #value
        }));
    }
    let guard = local("__memprof_memit");
    // NOTE: process scope unless asked otherwise: `%memit` reads the
    // process's memory, and the expression's work may run on a pool.
    let scope = scope.unwrap_or(Scope::Process);
    // A `let`, not a `match`: the expression's temporaries are freed before
    // the figures are read, in either edition, and `memit!(&temp())` still
    // extends its temporary as `let x = &temp();` does.
    Ok(quote! {
        {
            let #guard = ::memprof::__private::MeasureGuard::start_memit(#scope);
            let #value = #expr;
            #guard.finish_memit();
            #value
        }
    })
}

/// `memit!(expr)` or `memit!(expr, scope = "thread" | "process")`.
struct Memit {
    expr: Expr,
    scope: Option<Scope>,
}

impl syn::parse::Parse for Memit {
    fn parse(input: syn::parse::ParseStream<'_>) -> syn::Result<Self> {
        let expr: Expr = input.parse()?;
        let mut scope = None;
        if input.parse::<Option<syn::Token![,]>>()?.is_some() && !input.is_empty() {
            scope = Some(crate::attr::scope_option(input, "memit!")?);
            input.parse::<Option<syn::Token![,]>>()?;
        }
        if !input.is_empty() {
            return Err(input.error(
                "`memit!` takes an expression, then optionally `scope = \"thread\"` or \
                 `scope = \"process\"`",
            ));
        }
        Ok(Memit { expr, scope })
    }
}
