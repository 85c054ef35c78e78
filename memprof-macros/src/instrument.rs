//! The statement probes of `#[profile]`: [`Instrumenter`] walks a body's
//! blocks, groups statements by line, gives each group a row (a cell) and
//! puts a cursor step before it, and the scope-end and tail steps after.

use crate::syntax::{close_line_of, line_of, local};
use proc_macro2::Span;
use quote::ToTokens;
use syn::visit_mut::VisitMut;
use syn::{Block, Expr, Ident, Stmt, Type, parse_quote};

pub(crate) struct Instrumenter {
    pub(crate) first_line: u32,
    pub(crate) last_line: u32,
    /// Lines of the statements enclosing the current one (and the `fn` line):
    /// a statement on one of them is already covered by that row.
    pub(crate) ancestors: Vec<u32>,
    /// For each cell, its row. Cell 0 is the `fn` line.
    pub(crate) cell_rows: Vec<u32>,
    /// For each cell, the row of the statement whose block holds it (a
    /// `for`, an `if`, the `fn` line for the body's), whose figures
    /// include its own; `NO_CELL` for cell 0.
    pub(crate) cell_parents: Vec<u32>,
    /// Lines of the enclosing statements that have rows, innermost last,
    /// from the `fn` line.
    enclosing: Vec<u32>,
    pub(crate) frame: Ident,
    pub(crate) cursor: Ident,
    /// A step of the block's cursor to cell 0 (see `step_template`),
    /// cloned for each statement. PERF: parsing it anew for each
    /// of thousands of statements showed in compile times.
    pub(crate) enter_template: Stmt,
    /// The same step of the frame, for the statements of a body that steps
    /// its frame (see `body_on_frame`).
    pub(crate) frame_enter_template: Stmt,
    /// The cursors are an `async fn`'s (`Cursor`), stepped by their methods,
    /// rather than a synchronous call's (see `step_template`).
    pub(crate) async_cursors: bool,
    /// The row that a synchronous function's body opens as the call starts
    /// (see `instrument_block`), or `NO_CELL`.
    pub(crate) body_first: u32,
    /// The next block instrumented is a synchronous function's body, whose
    /// statements step the frame (`SyncCall`) rather than a cursor of their
    /// own.
    pub(crate) body_on_frame: bool,
    /// The next block instrumented, the body, is followed by the drops of
    /// its moved by-value arguments (see `ownership`), which go to its
    /// closing brace's row as its own locals' do.
    pub(crate) args_drop_after: bool,
    /// The next block instrumented is a `for` loop's body, whose pattern
    /// was replaced by this name: the body binds the pattern first (see
    /// `visit_expr_for_loop_mut`).
    loop_item: Option<(syn::Pat, Ident)>,
    /// The pattern of a `for` loop whose body needed no probe, to put back.
    unused_loop_item: Option<syn::Pat>,
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
    /// For a function whose table covers `first_line` to `last_line`, its
    /// `fn` on `fn_line` (cell 0); an `async fn`'s if `is_async`.
    pub(crate) fn new(first_line: u32, last_line: u32, fn_line: u32, is_async: bool) -> Self {
        let (frame, cursor) = (local("__memprof_frame"), local("__memprof_cursor"));
        Instrumenter {
            first_line,
            last_line,
            ancestors: vec![fn_line],
            cell_rows: vec![fn_line - first_line],
            cell_parents: vec![NO_CELL],
            enclosing: vec![fn_line],
            enter_template: step_template(&cursor, is_async),
            frame_enter_template: step_template(&frame, is_async),
            frame,
            cursor,
            async_cursors: is_async,
            body_first: NO_CELL,
            body_on_frame: false,
            args_drop_after: false,
            loop_item: None,
            unused_loop_item: None,
        }
    }

    /// Steps its cursors as an `async fn`'s from now on: for a body that an
    /// attribute above `#[profile]` moved into an `async` block.
    pub(crate) fn use_async_cursors(&mut self) {
        self.enter_template = step_template(&self.cursor, true);
        self.frame_enter_template = step_template(&self.frame, true);
        self.async_cursors = true;
    }

    fn in_table(&self, line: u32) -> bool {
        line >= self.first_line && line <= self.last_line
    }

    fn new_cell(&mut self, line: u32) -> u32 {
        self.cell_rows.push(line - self.first_line);
        let parent = self
            .enclosing
            .last()
            .map_or(NO_CELL, |l| l - self.first_line);
        self.cell_parents.push(parent);
        self.cell_rows.len() as u32 - 1
    }

    pub(crate) fn instrument_block(&mut self, block: &mut Block) {
        let on_frame = std::mem::take(&mut self.body_on_frame);
        let args_drop_after = std::mem::take(&mut self.args_drop_after);
        let loop_item = self.loop_item.take();
        let stmts = std::mem::take(&mut block.stmts);
        let has_tail = matches!(stmts.last(), Some(Stmt::Expr(_, None)));
        let binds_locals = args_drop_after
            || loop_item.is_some()
            || stmts.iter().any(|s| matches!(s, Stmt::Local(_)));

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
            if group.probed {
                self.enclosing.push(group.line);
            }
            for stmt in &mut group.stmts {
                self.visit_stmt_mut(stmt);
            }
            if group.probed {
                self.enclosing.pop();
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
            self.unused_loop_item = loop_item.map(|(pat, _)| pat);
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
        // A block's cursor is declared first, once its first row is known.
        let (cursor, template) = if on_frame {
            (frame.clone(), &self.frame_enter_template)
        } else {
            (self.cursor.clone(), &self.enter_template)
        };
        let mut out: Vec<Stmt> = Vec::new();
        // PERF: a synchronous call's body, or a block, that starts with a
        // statement of its own row opens that row as the call or the cursor
        // starts: one step less.
        let mut first = NO_CELL;
        let template = template.clone();
        let tail_guard = local("__memprof_tail");
        let runs = |g: &Group| g.stmts.iter().any(|s| !matches!(s, Stmt::Item(_)));
        // The block's last statement that runs, or its tail: a guard made
        // before it moves the cursor on to the closing brace's row when it
        // is done. NOTE: not a step after it, which would be unreachable
        // code when it diverges (`return`, `panic!()`, `process::exit`),
        // and a lint level of ours to allow that would clash with a
        // `forbid` in the user's crate.
        let last = groups.iter().rposition(runs);
        // The guard goes before the last statements that `#[cfg]` may take
        // away (`#[cfg(a)] return x; #[cfg(not(a))] return y;`): placed
        // before the last one only, it would follow the first where the
        // last is configured out, unreachable after its `return`.
        let lone_cfg = |g: &Group| match g.stmts.as_slice() {
            [Stmt::Macro(m)] => !cfg_attrs(&m.attrs).is_empty(),
            [Stmt::Expr(e, _)] => !cfg_attrs(expr_attrs(e)).is_empty(),
            _ => false,
        };
        let guard_at = last.map(|last| {
            let mut at = last;
            while at > 0 && lone_cfg(&groups[at]) && lone_cfg(&groups[at - 1]) {
                at -= 1;
            }
            at
        });
        let mut open = false;
        for (i, mut group) in groups.into_iter().enumerate() {
            let takes_guard = Some(i) == guard_at;
            // PERF: a tail's guard moves the cursor on to the closing brace
            // before the block's locals go. Without locals nothing happens
            // between the tail and the cursor's end, which closes the
            // tail's region itself: a plain step does, one local fewer
            // (most one-line functions).
            let guard = takes_guard && (!has_tail || binds_locals || end_cell != NO_CELL);
            if group.probed && is_cfg_choice(&group.stmts) {
                // A tail that `#[cfg]` picks among blocks: each block steps
                // to its own row as it starts, so that the row is the one
                // that ran, not the first candidate's (configured out, it
                // had the figures of the one that was not).
                for stmt in &mut group.stmts {
                    let line = stmt_line(stmt);
                    let cell = match self.in_table(line) && !self.ancestors.contains(&line) {
                        true => self.new_cell(line),
                        false => NO_CELL,
                    };
                    if let Stmt::Expr(Expr::Block(candidate), None) = stmt {
                        candidate
                            .block
                            .stmts
                            .insert(0, step(&template, cell, Vec::new()));
                    }
                }
                open = true;
            } else if group.probed {
                let cell = self.new_cell(group.line);
                // A lone `#[cfg]`-ed statement takes its probe with it.
                let cfgs: Vec<_> = match group.stmts.as_slice() {
                    [Stmt::Local(l)] => cfg_attrs(&l.attrs),
                    [Stmt::Macro(m)] => cfg_attrs(&m.attrs),
                    [Stmt::Expr(e, _)] => cfg_attrs(expr_attrs(e)),
                    _ => Vec::new(),
                };
                if i == 0 && !self.async_cursors && cfgs.is_empty() {
                    first = cell;
                } else {
                    out.push(step(&template, cell, cfgs));
                }
                open = true;
            } else if open && runs(&group) {
                // A statement with no row of its own (it shares an enclosing
                // statement's line) must not count towards the previous one.
                out.push(step(&template, NO_CELL, Vec::new()));
                open = false;
            }
            // The guard must drop before the group's own locals, so it is
            // declared after them. NOTE: a `let` that diverges as a block's
            // last statement (`let x: u8 = panic!();`) then leaves the
            // guard unreachable, which the user's `unreachable_code` reports.
            let after_lets = group
                .stmts
                .iter()
                .rposition(|s| matches!(s, Stmt::Local(_)))
                .map_or(0, |i| i + 1);
            let mut stmts = group.stmts;
            let rest = stmts.split_off(after_lets);
            out.extend(stmts);
            if guard {
                out.push(if self.async_cursors {
                    parse_quote!(let #tail_guard = #cursor.tail(#end_cell);)
                } else {
                    parse_quote! {
                        let #tail_guard = ::memprof::__private::StackTail {
                            probe: &#cursor.probe,
                            end: #end_cell,
                        };
                    }
                });
            }
            out.extend(rest);
        }
        if last.is_none() {
            out.push(step(&template, end_cell, Vec::new()));
        }
        if on_frame {
            self.body_first = first;
        } else if self.async_cursors {
            out.insert(0, parse_quote!(let #cursor = #frame.cursor();));
        } else {
            // PERF: out of line where the function's own code is unoptimized
            // (see `SyncCall::cursor_outlined`); `cfg!` is this crate's, and
            // an unoptimized build drops the other branch before codegen.
            out.insert(
                0,
                parse_quote! {
                    let #cursor = if ::core::cfg!(debug_assertions) {
                        #frame.cursor_outlined(#first)
                    } else {
                        #frame.cursor(#first)
                    };
                },
            );
        }
        if let Some((pat, item)) = loop_item {
            // `{ cursor; let PAT = item; { body } }`: the body's statements
            // step the cursor made before the pattern's bindings, so that
            // what they free at the end of each iteration goes to the
            // body's `}` as its locals' frees do. The body keeps its braces
            // and is our block's last expression, whose braces are ours
            // (this crate's edition): its locals and its tail's temporaries
            // drop by its own edition, then the bindings, as unprofiled.
            let cursor = out.remove(0);
            let body = syn::ExprBlock {
                attrs: Vec::new(),
                label: None,
                block: Block {
                    brace_token: block.brace_token,
                    stmts: out,
                },
            };
            block.brace_token = Default::default();
            block.stmts = vec![
                cursor,
                parse_quote!(let #pat = #item;),
                Stmt::Expr(Expr::Block(body), None),
            ];
        } else {
            block.stmts = out;
        }
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

/// Whether `stmts` are a tail that `#[cfg]` picks among blocks (see
/// [`cfg_tail_start`]): two or more bare blocks, at least one `#[cfg]`-ed.
fn is_cfg_choice(stmts: &[Stmt]) -> bool {
    stmts.len() > 1
        && stmts
            .iter()
            .all(|s| matches!(s, Stmt::Expr(Expr::Block(_), None)))
        && stmts.iter().any(|s| match s {
            Stmt::Expr(e, _) => !cfg_attrs(expr_attrs(e)).is_empty(),
            _ => false,
        })
}

/// No row: the runtime's `u32::MAX`.
pub(crate) const NO_CELL: u32 = u32::MAX;

/// A statement's step into `cursor`, to cell 0 (see [`step`], which sets
/// the cell). NOTE: after a statement that diverges this is unreachable, as
/// is the user's next statement.
///
/// PERF: a synchronous function's cursors are the runtime's `SyncCall` and
/// `StackCursor`, whose steps are calls of `statement`: in unoptimized
/// builds the kernel's own function, with no runtime function between. An
/// `async fn`'s are `Cursor`s, stepped by their method.
fn step_template(cursor: &Ident, is_async: bool) -> Stmt {
    if is_async {
        parse_quote!(#cursor.enter(0);)
    } else {
        parse_quote! {
            ::memprof::__private::statement(&#cursor.probe, 0);
        }
    }
}

/// `template` (see [`step_template`]) stepping to `cell`, under
/// `cfgs`: the cell is the argument after the cursor of `statement`, or the
/// only one of a `Cursor`'s `enter`.
fn step(template: &Stmt, cell: u32, cfgs: Vec<syn::Attribute>) -> Stmt {
    let mut step = template.clone();
    match &mut step {
        Stmt::Expr(Expr::MethodCall(call), _) => {
            call.args[0] = cell_literal(cell);
            call.attrs.extend(cfgs);
        }
        Stmt::Expr(Expr::Call(call), _) => {
            call.args[1] = cell_literal(cell);
            call.attrs.extend(cfgs);
        }
        _ => unreachable!("a step template is a call"),
    }
    step
}

fn cell_literal(cell: u32) -> Expr {
    Expr::Lit(syn::ExprLit {
        attrs: Vec::new(),
        lit: syn::Lit::Int(syn::LitInt::new(&cell.to_string(), Span::call_site())),
    })
}

/// An expression's outer attributes (a statement's `#[cfg]`).
fn expr_attrs(expr: &Expr) -> &[syn::Attribute] {
    match expr {
        Expr::Array(e) => &e.attrs,
        Expr::Assign(e) => &e.attrs,
        Expr::Async(e) => &e.attrs,
        Expr::Await(e) => &e.attrs,
        Expr::Binary(e) => &e.attrs,
        Expr::Block(e) => &e.attrs,
        Expr::Break(e) => &e.attrs,
        Expr::Call(e) => &e.attrs,
        Expr::Cast(e) => &e.attrs,
        Expr::Closure(e) => &e.attrs,
        Expr::Const(e) => &e.attrs,
        Expr::Continue(e) => &e.attrs,
        Expr::Field(e) => &e.attrs,
        Expr::ForLoop(e) => &e.attrs,
        Expr::Group(e) => &e.attrs,
        Expr::If(e) => &e.attrs,
        Expr::Index(e) => &e.attrs,
        Expr::Let(e) => &e.attrs,
        Expr::Lit(e) => &e.attrs,
        Expr::Loop(e) => &e.attrs,
        Expr::Macro(e) => &e.attrs,
        Expr::Match(e) => &e.attrs,
        Expr::MethodCall(e) => &e.attrs,
        Expr::Paren(e) => &e.attrs,
        Expr::Path(e) => &e.attrs,
        Expr::Range(e) => &e.attrs,
        Expr::Reference(e) => &e.attrs,
        Expr::Repeat(e) => &e.attrs,
        Expr::Return(e) => &e.attrs,
        Expr::Struct(e) => &e.attrs,
        Expr::Try(e) => &e.attrs,
        Expr::TryBlock(e) => &e.attrs,
        Expr::Tuple(e) => &e.attrs,
        Expr::Unary(e) => &e.attrs,
        Expr::Unsafe(e) => &e.attrs,
        Expr::While(e) => &e.attrs,
        Expr::Yield(e) => &e.attrs,
        _ => &[],
    }
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

    /// The pattern of a `for` loop is bound in its body, so that what its
    /// bindings free at the end of an iteration goes to the body's `}`
    /// (see `instrument_block`).
    fn visit_expr_for_loop_mut(&mut self, for_loop: &mut syn::ExprForLoop) {
        self.visit_expr_mut(&mut for_loop.expr);
        let item = local("__memprof_item");
        let pat = std::mem::replace(&mut *for_loop.pat, parse_quote!(#item));
        self.loop_item = Some((pat, item));
        self.instrument_block(&mut for_loop.body);
        if let Some(pat) = self.unused_loop_item.take() {
            *for_loop.pat = pat;
        }
    }

    fn visit_expr_repeat_mut(&mut self, repeat: &mut syn::ExprRepeat) {
        // The length is a const context.
        self.visit_expr_mut(&mut repeat.expr);
    }
}
