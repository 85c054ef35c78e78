//! `assert_memory!(peak < 10 MiB, increment <= 0, { expr })`: conditions on
//! the figures of one expression, checked when it has been evaluated.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::parse::{Parse, ParseStream};
use syn::spanned::Spanned;
use syn::{Expr, Ident, Token};

use crate::attr::{Scope, scope_option};
use crate::size::{SizeError, parse_size};

struct Condition {
    quantity: Ident,
    comparison: TokenStream,
    op_text: &'static str,
    bound: TokenStream,
    value_text: String,
}

struct AssertMemory {
    conditions: Vec<Condition>,
    scope: Scope,
    expr: Expr,
}

const QUANTITIES: &str = "`peak`, `increment`, `allocations`, `deallocations` or `allocated_bytes`";

fn parse_comparison(input: ParseStream<'_>) -> syn::Result<(TokenStream, &'static str)> {
    let path = |name: &str| {
        let name = Ident::new(name, proc_macro2::Span::call_site());
        quote!(::memprof::__private::Comparison::#name)
    };
    if input.peek(Token![<=]) {
        input.parse::<Token![<=]>()?;
        Ok((path("Le"), "<="))
    } else if input.peek(Token![>=]) {
        input.parse::<Token![>=]>()?;
        Ok((path("Ge"), ">="))
    } else if input.peek(Token![==]) {
        input.parse::<Token![==]>()?;
        Ok((path("Eq"), "=="))
    } else if input.peek(Token![<]) {
        input.parse::<Token![<]>()?;
        Ok((path("Lt"), "<"))
    } else if input.peek(Token![>]) {
        input.parse::<Token![>]>()?;
        Ok((path("Gt"), ">"))
    } else {
        Err(input.error("`assert_memory!` expected a comparison: <, <=, ==, >= or >"))
    }
}

impl Condition {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let quantity: Ident = input.parse()?;
        let is_count = match quantity.to_string().as_str() {
            "peak" | "increment" | "allocated_bytes" => false,
            "allocations" | "deallocations" => true,
            other => {
                return Err(syn::Error::new(
                    quantity.span(),
                    format!("`assert_memory!` cannot bound `{other}`: expected {QUANTITIES}"),
                ));
            }
        };
        let (comparison, op_text) = parse_comparison(input)?;
        let negative = input.parse::<Option<Token![-]>>()?.is_some();
        let lit: syn::Lit = input.parse()?;
        let (size, span) = match &lit {
            syn::Lit::Str(s) => (s.value(), s.span()),
            syn::Lit::Int(i) => (i.base10_digits().to_owned(), i.span()),
            syn::Lit::Float(f) => (f.base10_digits().to_owned(), f.span()),
            other => {
                return Err(syn::Error::new_spanned(
                    other,
                    "`assert_memory!` expected a size such as `10 MiB` or `\"1.5 GB\"`",
                ));
            }
        };
        let unit = if matches!(lit, syn::Lit::Str(_)) || input.peek(Token![,]) || input.is_empty() {
            None
        } else {
            Some(input.parse::<Ident>()?)
        };
        if is_count && (unit.is_some() || matches!(lit, syn::Lit::Str(_) | syn::Lit::Float(_))) {
            return Err(syn::Error::new(
                lit.span(),
                format!(
                    "`assert_memory!`: `{quantity}` is a count, so its bound is a whole number"
                ),
            ));
        }
        let text = match &unit {
            Some(unit) => format!("{size} {unit}"),
            None => size,
        };
        let span = unit
            .as_ref()
            .map_or(span, |u| span.join(u.span()).unwrap_or(span));
        let bytes = if is_count {
            // A whole number, checked above.
            text.parse::<u64>().map_err(|_| {
                syn::Error::new(
                    span,
                    format!("`assert_memory!`: `{quantity}` bound {text} is too large for a count"),
                )
            })?
        } else {
            parse_size(&text).map_err(|err| {
                let hint = if err == SizeError::Negative {
                    "; a negative bound is written `-5 MiB`"
                } else {
                    ""
                };
                let message = err.describe(&text);
                // NOTE: a number and its unit are two tokens, which only
                // nightly can join into one span: point at the part at fault.
                let span = match (&err, &unit) {
                    (SizeError::UnknownUnit(_), Some(unit)) => unit.span(),
                    _ => span,
                };
                syn::Error::new(
                    span,
                    format!("`assert_memory!` bound on `{quantity}`: {message}{hint}"),
                )
            })?
        };
        // Bytes (or a count) as an `i128` literal, negated as written.
        let mut literal = proc_macro2::Literal::i128_suffixed(i128::from(bytes));
        literal.set_span(span);
        let bound = if negative {
            quote!(-#literal)
        } else {
            quote!(#literal)
        };
        Ok(Condition {
            quantity,
            comparison,
            op_text,
            bound,
            value_text: format!("{}{text}", if negative { "-" } else { "" }),
        })
    }
}

impl Parse for AssertMemory {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let mut conditions = Vec::new();
        let mut scope: Option<Scope> = None;
        loop {
            let option = input.fork();
            let is_scope = option.parse::<Ident>().is_ok_and(|i| i == "scope")
                && option.peek(Token![=])
                && !option.peek(Token![==]);
            if is_scope {
                let span = input.span();
                if scope
                    .replace(scope_option(input, "assert_memory!")?)
                    .is_some()
                {
                    return Err(syn::Error::new(
                        span,
                        "`assert_memory!` option `scope` is given twice",
                    ));
                }
                input.parse::<Token![,]>()?;
                continue;
            }
            let fork = input.fork();
            let starts_condition = fork.parse::<Ident>().is_ok()
                && (fork.peek(Token![<]) || fork.peek(Token![>]) || fork.peek(Token![==]));
            if !starts_condition {
                break;
            }
            conditions.push(Condition::parse(input)?);
            input.parse::<Token![,]>()?;
        }
        if conditions.is_empty() {
            return Err(input.error(format!(
                "`assert_memory!` needs at least one condition on {QUANTITIES}, then the \
                 expression: `assert_memory!(peak < 10 MiB, {{ expr }})`"
            )));
        }
        let expr: Expr = input.parse()?;
        input.parse::<Option<Token![,]>>()?;
        if !input.is_empty() {
            return Err(input.error("`assert_memory!` expected the expression to come last"));
        }
        Ok(AssertMemory {
            conditions,
            // NOTE: thread scope unless asked otherwise, as `measure`: tests
            // run side by side in one process.
            scope: scope.unwrap_or(Scope::Thread),
            expr,
        })
    }
}

pub(crate) fn assert_memory(input: TokenStream) -> syn::Result<TokenStream> {
    let AssertMemory {
        conditions,
        scope,
        expr,
    } = syn::parse2(input)?;
    let guard = crate::syntax::local("__memprof_guard");
    let value = crate::syntax::local("__memprof_value");
    let span = expr.span();
    if !cfg!(feature = "enabled") {
        // Nothing is measured, so nothing is checked: the same shape, without
        // the guard and the check.
        return Ok(quote_spanned! {span=>
            {
                let #value = #expr;
                #value
            }
        });
    }
    let conditions = conditions.iter().map(|c| {
        let quantity = Ident::new(
            match c.quantity.to_string().as_str() {
                "peak" => "Peak",
                "increment" => "Increment",
                "allocations" => "Allocations",
                "allocated_bytes" => "AllocatedBytes",
                _ => "Deallocations",
            },
            c.quantity.span(),
        );
        let (comparison, bound) = (&c.comparison, &c.bound);
        let text = format!("{} {} {}", c.quantity, c.op_text, c.value_text);
        quote! {
            ::memprof::__private::Condition {
                quantity: ::memprof::__private::Quantity::#quantity,
                comparison: #comparison,
                bound: #bound,
                text: #text,
            }
        }
    });
    // NOTE: spanned at the macro call, not at the expression: `check_memory`
    // is `#[track_caller]`, so a failure is reported where `assert_memory!`
    // is written, as `assert!`'s is.
    let check = quote! {
        ::memprof::__private::check_memory(&#guard.measurement(), &[#(#conditions),*]);
    };
    Ok(quote_spanned! {span=>
        {
            let #guard = ::memprof::__private::MeasureGuard::start(#scope);
            let #value = #expr;
            #check
            #value
        }
    })
}
