//! Function names as pprof's readers print them whole.
//!
//! pprof takes a function whose `name` equals its `system_name` for a name
//! not yet demangled, and simplifies it as demangled C++: every `<...>` and
//! `(...)` group goes (google/pprof, `internal/symbolizer`,
//! `demangleSingleFunction`), so that Rust's
//! `<u8 as <[_]>::to_vec_in::ConvertVec>::to_vec::<alloc::alloc::Global>`
//! prints as `::to_vec`. A `name` that differs from `system_name` is kept as
//! it is. memprof writes the full name (its reports') as `system_name` and,
//! as `name`, the same path without angle brackets: generic arguments left
//! out, and a qualified path `<Type as path::Trait>::method` written
//! `Type::Trait::method`, so that the type and the trait stay in the name.

use std::borrow::Cow;

/// `full`, a Rust function's path as memprof names it, as pprof's `name`
/// (see the module's header); `full` itself where it has no angle bracket.
pub(super) fn readable(full: &str) -> Cow<'_, str> {
    if !full.contains('<') {
        return Cow::Borrowed(full);
    }
    let mut out = String::with_capacity(full.len());
    simplify(full, &mut out);
    Cow::Owned(out)
}

/// Appends `path` to `out`: generic arguments left out, qualified paths
/// (`<A as B>`, `<impl A for B>`, `<A>`) as `A::B`, `A`.
fn simplify(path: &str, out: &mut String) {
    let mut at = 0;
    while let Some(offset) = path[at..].find('<') {
        let open = at + offset;
        out.push_str(&path[at..open]);
        // A name cut short ends inside its brackets: the rest is the group.
        let close = matching(path, open).unwrap_or(path.len());
        let inner = &path[(open + 1).min(close)..close];
        at = (close + 1).min(path.len());
        if let Some(of_impl) = inner.strip_prefix("impl ") {
            // Legacy symbols' `alloc::slice::<impl [T]>::to_vec`.
            match split_top(of_impl, " for ") {
                Some((trait_path, self_type)) => qualified(self_type, trait_path, out),
                None => simplify(of_impl, out),
            }
        } else if out.ends_with("::") {
            // A turbofish, `f::<T>`: left out with its `::`.
            out.truncate(out.len() - 2);
        } else if out.ends_with(|c: char| c.is_alphanumeric() || c == '_') {
            // A type's arguments, `Vec<T, A>`: left out.
        } else {
            match split_top(inner, " as ") {
                Some((self_type, trait_path)) => qualified(self_type, trait_path, out),
                None => simplify(inner, out),
            }
        }
    }
    out.push_str(&path[at..]);
}

/// `<self_type as trait_path>` as `SelfType::Trait`: the trait by its last
/// segment, which names it well enough beside the method.
fn qualified(self_type: &str, trait_path: &str, out: &mut String) {
    simplify(self_type, out);
    let mut trait_name = String::with_capacity(trait_path.len());
    simplify(trait_path, &mut trait_name);
    let last = last_segment(&trait_name);
    if !last.is_empty() {
        out.push_str("::");
        out.push_str(last);
    }
}

/// The index of the `>` that closes the `<` at `open`; `->` is an arrow,
/// not a bracket. `None` where the name ends first.
fn matching(path: &str, open: usize) -> Option<usize> {
    let mut depth = 0usize;
    let bytes = path.as_bytes();
    for (i, &b) in bytes.iter().enumerate().skip(open) {
        match b {
            b'<' => depth += 1,
            b'>' if i > 0 && bytes[i - 1] == b'-' => {}
            b'>' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

/// `text` split at the first `separator` outside every bracket.
fn split_top<'t>(text: &'t str, separator: &str) -> Option<(&'t str, &'t str)> {
    let bytes = text.as_bytes();
    let mut depth = 0isize;
    for (i, &b) in bytes.iter().enumerate() {
        match b {
            b'<' | b'(' | b'[' => depth += 1,
            b'>' if i > 0 && bytes[i - 1] == b'-' => {}
            b'>' | b')' | b']' => depth -= 1,
            _ if depth == 0 && text[i..].starts_with(separator) => {
                return Some((&text[..i], &text[i + separator.len()..]));
            }
            _ => {}
        }
    }
    None
}

/// The last `::` segment of `path` outside every bracket.
fn last_segment(path: &str) -> &str {
    let bytes = path.as_bytes();
    let mut depth = 0isize;
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        match b {
            b'(' | b'[' => depth += 1,
            b')' | b']' => depth -= 1,
            b':' if depth == 0 && i > 0 && bytes[i - 1] == b':' => start = i + 1,
            _ => {}
        }
    }
    &path[start..]
}

#[cfg(test)]
mod tests {
    use super::readable;

    #[test]
    fn rust_paths_keep_their_type_and_trait_without_angle_brackets() {
        let cases = [
            (
                "<u8 as <[_]>::to_vec_in::ConvertVec>::to_vec::<alloc::alloc::Global>",
                "u8::ConvertVec::to_vec",
            ),
            (
                "alloc::slice::<impl [T]>::to_vec",
                "alloc::slice::[T]::to_vec",
            ),
            (
                "<alloc::string::String as core::clone::Clone>::clone",
                "alloc::string::String::Clone::clone",
            ),
            ("alloc::vec::Vec<T,A>::push", "alloc::vec::Vec::push"),
            (
                "core::ptr::drop_in_place<alloc::vec::Vec<u8>>",
                "core::ptr::drop_in_place",
            ),
            (
                "<alloc::vec::Vec<T> as alloc::vec::spec_from_iter::SpecFromIter<T,I>>::from_iter",
                "alloc::vec::Vec::SpecFromIter::from_iter",
            ),
            (
                "<&mut W as core::fmt::Write>::write_str",
                "&mut W::Write::write_str",
            ),
            (
                "<fn(u8) -> u8 as app::Apply<u8>>::apply",
                "fn(u8) -> u8::Apply::apply",
            ),
            (
                "<impl app::Shape for app::Square>::area",
                "app::Square::Shape::area",
            ),
            (
                "pulldown_cmark::parse::Parser<'_, _>::new",
                "pulldown_cmark::parse::Parser::new",
            ),
            ("a::b::<T>::c::<Vec<u8>>", "a::b::c"),
            // Cut short inside its arguments.
            ("app::Table<alloc::vec::Vec<u8", "app::Table"),
        ];
        for (full, name) in cases {
            assert_eq!(readable(full), name, "{full}");
        }
    }

    #[test]
    fn names_without_angle_brackets_are_their_own() {
        for name in ["app::build", "app::build::{{closure}}", "main"] {
            assert!(matches!(readable(name), std::borrow::Cow::Borrowed(n) if n == name));
        }
    }
}
