//! A stack as a report shows it: symbolized (once per address, through
//! the `backtrace` crate's DWARF reader) and trimmed to the frames between
//! the allocation and the profiled line, files named as the profiled
//! function's is.

use super::SiteFrame;
use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

/// Where a profiled function is, to know its frame in a stack.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Span<'a> {
    /// Its path, as `FnMeta::name` gives it.
    pub(crate) name: &'a str,
    /// `file!()` of its source.
    pub(crate) file: &'a str,
    pub(crate) first_line: u32,
    pub(crate) last_line: u32,
}

/// The frames of a raw stack between its allocation and `span`'s function,
/// their files named as `span`'s is (see [`shown_path`]).
pub(super) fn trimmed(raw: &[usize], span: &Span<'_>) -> Vec<SiteFrame> {
    let (mut frames, root) = below_function(raw, span);
    for frame in &mut frames {
        if let Some(file) = &mut frame.file {
            *file = shown_path(file, root.as_ref());
        }
    }
    frames
}

/// The frames of a raw stack between its allocation and `span`'s function,
/// with their files as debug information gives them, and the root that
/// `span`'s `file!()` is relative to, where the function's frame was
/// found with its file.
fn below_function(raw: &[usize], span: &Span<'_>) -> (Vec<SiteFrame>, Option<Root>) {
    let symbols: Vec<SiteFrame> = raw.iter().flat_map(|&ip| symbols(ip)).collect();
    let mut frames = Vec::new();
    for frame in from_the_allocation(symbols) {
        if is_profiled(&frame, span) {
            let root = frame.file.as_deref().and_then(|f| Root::of(f, span.file));
            return (frames, root);
        }
        frames.push(frame);
    }
    // The function's frame was not found (a stack deeper than the frames
    // kept, or no symbols): what was seen, marked.
    frames.push(SiteFrame {
        function: "(stack cut: the profiled function's frame was not found)".to_owned(),
        file: None,
        line: None,
    });
    (frames, None)
}

/// A stack's frames from the code that allocated on, innermost first. The
/// stack starts in memprof's recorder, called from the allocator:
/// everything up to the allocator's entry is left out, then the machinery
/// that called it (`alloc`'s frames, memprof's, the thread-local access
/// around the recorder). Where the entry has no frame of its own (inlined,
/// or a shim without a frame pointer), the machinery alone is left out.
fn from_the_allocation(symbols: Vec<SiteFrame>) -> impl Iterator<Item = SiteFrame> {
    let entry = symbols
        .iter()
        .position(|f| is_allocator_entry(&f.function))
        .map_or(0, |i| i + 1);
    symbols.into_iter().skip(entry).skip_while(|f| {
        is_machinery(&f.function)
            || is_thread_local_access(&f.function)
            || f.file.as_deref().is_some_and(is_machinery_file)
    })
}

/// Whether a frame's file is memprof's runtime, `alloc`'s or the standard
/// library's allocator or thread-local access: where debug information
/// names inlined frames by their last segment only (`{closure#0}`, as
/// `debug = "line-tables-only"` does), the file still says what they are.
fn is_machinery_file(file: &str) -> bool {
    // NOTE: `file!()` and debug information name the runtime's files the
    // same way: relative to where cargo ran the compiler, or whole.
    let own = file!()
        .strip_suffix("sites/resolve.rs")
        .unwrap_or("memprof-runtime/src/");
    const LIBRARY: [&str; 3] = [
        "library/alloc/src/",
        "library/std/src/thread/local.rs",
        "library/std/src/sys/alloc/",
    ];
    file.starts_with(own) || LIBRARY.iter().any(|l| file.contains(l))
}

/// `std::thread::local::LocalKey<T>::try_with` and its kin: the recorder's
/// own access to its thread's state, below the allocator's entry.
fn is_thread_local_access(function: &str) -> bool {
    function.starts_with("std::thread::local::") || function.starts_with("<std::thread::local::")
}

/// How the tables name the profiled function's file (`file!()`), and so
/// the frames' files.
#[derive(Debug, PartialEq, Eq)]
enum Root {
    /// Relative to this directory (with its trailing separator): where
    /// cargo ran the compiler, the workspace's root.
    Directory(String),
    /// As a whole path: `file!()` is absolute (a path dependency outside
    /// the workspace).
    Absolute,
}

impl Root {
    /// The root of `wanted`, `file!()` of a function whose frame's file
    /// is `found`.
    fn of(found: &str, wanted: &str) -> Option<Root> {
        if is_absolute(wanted) {
            return Some(Root::Absolute);
        }
        let wanted = wanted.trim_start_matches("./");
        let head = found.strip_suffix(wanted)?;
        (head.ends_with('/') || head.ends_with('\\')).then(|| Root::Directory(head.to_owned()))
    }
}

fn is_absolute(path: &str) -> bool {
    std::path::Path::new(path).is_absolute()
}

/// The global allocator's entry: the shim `__rust_alloc` (and its kin),
/// or memprof's `GlobalAlloc` methods where debug information shows them.
fn is_allocator_entry(function: &str) -> bool {
    ["__rust_alloc", "__rust_realloc", "__rg_", "__rdl_"]
        .iter()
        .any(|p| function.starts_with(p) || function.starts_with(&format!("__rustc::{p}")))
        || (function.starts_with("<memprof_runtime::")
            && function.contains(" as core::alloc::global::GlobalAlloc>::"))
}

/// memprof's own frames, the unwinder's, the allocator's and `alloc`'s:
/// the machinery between a line's code and the allocation.
fn is_machinery(function: &str) -> bool {
    const PREFIXES: [&str; 15] = [
        "backtrace::",
        "memprof_runtime::",
        "<memprof_runtime::",
        "alloc::",
        "<alloc::",
        "core::alloc::",
        "<core::alloc::",
        "std::alloc::",
        "<std::alloc::",
        "__rust",
        "__rdl_",
        "__rg_",
        "_Unwind",
        "__rustc::",
        "std::sys::alloc",
    ];
    PREFIXES.iter().any(|p| function.starts_with(p))
        || (function.starts_with('<') && function.contains(" as alloc::"))
}

/// Whether `frame` is the profiled function itself (or a closure in it).
fn is_profiled(frame: &SiteFrame, span: &Span<'_>) -> bool {
    let in_file = frame
        .file
        .as_deref()
        .is_some_and(|f| same_file(f, span.file))
        && frame
            .line
            .is_some_and(|l| (span.first_line..=span.last_line).contains(&l));
    let name = without_generics(&frame.function);
    let wanted = without_generics(span.name);
    in_file
        || name == wanted
        || name
            .strip_prefix(&wanted)
            .is_some_and(|rest| rest.starts_with("::{{closure}}"))
}

/// The line of `span`'s function that the return address `ip` returns to:
/// its frame's line, the innermost of the frames inlined at `ip` that is
/// the function's (or a closure's in it) with a line inside `span`; `None`
/// without debug information that says so.
pub(crate) fn line_of(ip: usize, span: &Span<'_>) -> Option<u32> {
    symbols(ip)
        .iter()
        .filter(|frame| is_profiled(frame, span))
        .filter_map(|frame| frame.line)
        .find(|line| (span.first_line..=span.last_line).contains(line))
}

/// Whether the return address `ip` is in `span`'s function itself: the
/// function is among the frames inlined at `ip` (a closure of it, which
/// may run after its call has returned, is not).
pub(crate) fn in_own_frame(ip: usize, span: &Span<'_>) -> bool {
    functions_at(ip).contains(&function_key(span.name))
}

/// The functions inlined at the return address `ip`, innermost first, each
/// named as [`function_key`] names one.
pub(crate) fn functions_at(ip: usize) -> Vec<String> {
    symbols(ip)
        .iter()
        .map(|frame| without_generics(&frame.function))
        .collect()
}

/// A function's name as [`functions_at`] gives it (its generic arguments
/// left out, as debug information and memprof spell them differently).
pub(crate) fn function_key(name: &str) -> String {
    without_generics(name)
}

/// Whether the debug-info path `found` is the `file!()` path `wanted`
/// (relative to the workspace, or absolute).
fn same_file(found: &str, wanted: &str) -> bool {
    let wanted = wanted.trim_start_matches("./");
    found == wanted
        || found
            .strip_suffix(wanted)
            .is_some_and(|head| head.ends_with('/') || head.ends_with('\\'))
}

/// `a::b::<T>::c::<U>` as `a::b::c`, and `a::B<'_, T>::c` (memprof's name
/// of a method of a generic type) as `a::B<F>::c` (the symbol's) are:
/// `a::B::c`. The angle brackets of a qualified path (`<a::B as c::D>::e`)
/// stay, those inside them go.
fn without_generics(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    // Nesting inside the generic arguments being left out; 0 outside.
    let mut depth = 0usize;
    let mut chars = name.chars().peekable();
    while let Some(c) = chars.next() {
        if depth > 0 {
            match c {
                // `fn() -> T` inside the arguments: not a closing bracket.
                '-' if chars.peek() == Some(&'>') => {
                    chars.next();
                }
                '<' => depth += 1,
                '>' => depth -= 1,
                _ => {}
            }
            continue;
        }
        let opens_arguments = c == '<'
            && (out.ends_with("::")
                || out
                    .chars()
                    .last()
                    .is_some_and(|p| p.is_alphanumeric() || p == '_'));
        if opens_arguments {
            if out.ends_with("::") {
                out.truncate(out.len() - 2);
            }
            depth = 1;
            continue;
        }
        out.push(c);
    }
    out
}

/// Symbolized return addresses: once each for the process's life, as the
/// same few thousand recur in every report. Bounded by the addresses the
/// tables hold (names and files, a few hundred bytes each). Held while
/// symbolizing, and across `fork` (see [`hold_for_fork`]).
pub(crate) type Symbols = Option<HashMap<usize, Vec<SiteFrame>>>;
static CACHE: Mutex<Symbols> = Mutex::new(None);

/// The `backtrace` crate holds debug information it read (see
/// [`let_go_of_debug_information`]).
static DEBUG_INFORMATION_HELD: AtomicBool = AtomicBool::new(false);

/// Frees the debug information that symbolizing read, if it read any
/// since the last call: the `backtrace` crate's parsed DWARF and its
/// mapping of the binary, tens of MB for a service (issue 60: 34 MB
/// resident, then 117 MB after one snapshot, for a 17 MB heap), which it
/// would keep for the process's life. Then gives the freed memory back to
/// the system. The live thread calls it a while after its last snapshot,
/// `heap_profile()` once its profile is built; the next report reads the
/// debug information again only for addresses never seen (see
/// docs/live.md for what that costs).
///
/// To be called inside `alloc::untracked`, where the symbols were made.
pub(crate) fn let_go_of_debug_information() {
    if DEBUG_INFORMATION_HELD.swap(false, Relaxed) {
        // NOTE: under the cache's lock, which `fork` waits for (see
        // `hold_symbols`), as `symbols` calls the crate under it: a child
        // never inherits the crate's own lock held.
        let cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
        backtrace::clear_symbol_cache();
        drop(cache);
        crate::os::give_back_freed_memory();
    }
}

/// Keeps every thread out of the symbolizer until the guard drops (see
/// `sites::hold_for_fork`).
#[cfg(unix)]
pub(crate) fn hold_symbols() -> std::sync::MutexGuard<'static, Symbols> {
    CACHE.lock().unwrap_or_else(|e| e.into_inner())
}

/// The frames at return address `ip`, innermost (inlined) first, with
/// their files as debug information gives them; cached, as symbolizing
/// reads the binary's debug information, which a snapshot then lets go
/// of.
fn symbols(ip: usize) -> Vec<SiteFrame> {
    let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    let cache = cache.get_or_insert_with(HashMap::new);
    if let Some(frames) = cache.get(&ip) {
        return frames.clone();
    }
    let mut frames = Vec::new();
    DEBUG_INFORMATION_HELD.store(true, Relaxed);
    // NOTE: `resolve` looks up the instruction before a return address.
    backtrace::resolve(ip as *mut std::ffi::c_void, |symbol| {
        let function = symbol
            .name()
            .map(|n| format!("{n:#}"))
            .unwrap_or_else(|| format!("{ip:#x}"));
        frames.push(SiteFrame {
            function,
            file: symbol.filename().map(|p| p.to_string_lossy().into_owned()),
            line: symbol.lineno(),
        });
    });
    if frames.is_empty() {
        frames.push(SiteFrame {
            function: format!("{ip:#x}"),
            file: None,
            line: None,
        });
    }
    cache.insert(ip, frames.clone());
    frames
}

/// A source path as a table shows it: from `library/` for the standard
/// library's, from the package folder for a registry dependency's, else as
/// the tables name the profiled function's file (`root`): relative to the
/// workspace's root where it is under it, as a whole path where `file!()`
/// is one. NOTE: not the working directory, which is a member's own under
/// its `cargo test`, and not the compiled copy's root under `cargo
/// memprof`. Where the function's frame was not found, that is all there
/// is: relative to the working directory.
fn shown_path(path: &str, root: Option<&Root>) -> String {
    if let Some((_, rest)) = path.split_once("/registry/src/")
        && let Some((_, package)) = rest.split_once('/')
    {
        return package.to_owned();
    }
    if let Some(rest) = path.strip_prefix("/rustc/")
        && let Some((_, library)) = rest.split_once('/')
    {
        return library.to_owned();
    }
    match root {
        Some(Root::Directory(dir)) => path.strip_prefix(dir.as_str()).unwrap_or(path).to_owned(),
        Some(Root::Absolute) => path.to_owned(),
        None => {
            if let Ok(dir) = std::env::current_dir()
                && let Some(rest) = path.strip_prefix(&*dir.to_string_lossy())
                && let Some(rest) = rest.strip_prefix('/')
            {
                return rest.to_owned();
            }
            path.to_owned()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generics_are_left_out_of_names() {
        assert_eq!(without_generics("a::b::<T>::c::<Vec<u8>>"), "a::b::c");
        assert_eq!(without_generics("<a::B as c::D>::e"), "<a::B as c::D>::e");
        assert_eq!(
            without_generics("<a::B<T, fn() -> u8> as c::D<u8>>::e::<Vec<u8>>"),
            "<a::B as c::D>::e"
        );
    }

    /// A release build has no debug information: the profiled function's
    /// frame is known by its name alone, and a generic type's method is
    /// named by its symbol with the impl's parameters (`Parser<F>`), by
    /// memprof with the type's (`Parser<'_, _>`). Its stacks ran on into
    /// `main` and were marked cut.
    #[test]
    fn a_generic_types_method_is_found_by_its_name_without_debug_information() {
        let span = Span {
            name: "pulldown_cmark::parse::Parser<'_, _>::new_with_broken_link_callback",
            file: "src/parse.rs",
            first_line: 10,
            last_line: 20,
        };
        let frame = |function: &str| SiteFrame {
            function: function.to_owned(),
            file: None,
            line: None,
        };
        for symbol in [
            "pulldown_cmark::parse::Parser<F>::new_with_broken_link_callback",
            "pulldown_cmark::parse::Parser<F>::new_with_broken_link_callback::{{closure}}",
        ] {
            assert!(is_profiled(&frame(symbol), &span), "{symbol}");
        }
        assert!(!is_profiled(
            &frame("pulldown_cmark::parse::Parser<F>::new"),
            &span
        ));
    }

    /// A sampled stack from an async service (issue 53): no frame of the
    /// allocator's entry, the recorder's thread-local access innermost.
    /// Its sites showed memprof's frames, and the summary "~81 %
    /// allocated in std::thread::local::LocalKey<T>::try_with".
    #[test]
    fn a_stack_without_the_allocators_entry_starts_at_the_users_code() {
        let frame = |function: &str| SiteFrame {
            function: function.to_owned(),
            file: None,
            line: None,
        };
        let stack = [
            "std::thread::local::LocalKey<T>::try_with",
            "memprof_runtime::sites::recorder::allocation",
            "memprof_runtime::alloc::report_to_sites",
            "memprof_runtime::alloc::allocator::counted_slowly",
            "alloc::raw_vec::finish_grow",
            "alloc::raw_vec::RawVecInner<A>::reserve::do_reserve_and_handle",
            "service::orders::remember",
            "service::orders::handle::{{closure}}",
        ];
        let kept: Vec<String> = from_the_allocation(stack.iter().map(|f| frame(f)).collect())
            .map(|f| f.function)
            .collect();
        assert_eq!(
            kept,
            [
                "service::orders::remember",
                "service::orders::handle::{{closure}}"
            ]
        );
        // A thread-local access of the user's, above their code, stays.
        let stack = [
            "app::fill",
            "std::thread::local::LocalKey<T>::with",
            "app::main",
        ];
        let kept: Vec<String> = from_the_allocation(stack.iter().map(|f| frame(f)).collect())
            .map(|f| f.function)
            .collect();
        assert_eq!(kept, stack);
    }

    /// Under `debug = "line-tables-only"`, inlined frames have their last
    /// segment for a name: their files tell memprof's and `alloc`'s apart.
    #[test]
    fn machinery_is_known_by_its_file_where_its_name_is_cut() {
        let frame = |function: &str, file: &str| SiteFrame {
            function: function.to_owned(),
            file: Some(file.to_owned()),
            line: Some(1),
        };
        let own = file!().replace("sites/resolve.rs", "sites/recorder.rs");
        let stack = vec![
            frame("{closure#0}", &own),
            frame("try_with", "/rustc/0a1b/library/std/src/thread/local.rs"),
            frame("finish_grow", "/rustc/0a1b/library/alloc/src/raw_vec.rs"),
            frame(
                "collect",
                "/rustc/0a1b/library/core/src/iter/traits/iterator.rs",
            ),
            frame("squares", "helper/src/lib.rs"),
        ];
        let kept: Vec<String> = from_the_allocation(stack).map(|f| f.function).collect();
        assert_eq!(kept, ["collect", "squares"]);
    }

    #[test]
    fn machinery_is_memprofs_the_allocators_and_allocs() {
        for name in [
            "alloc::raw_vec::finish_grow",
            "<alloc::vec::Vec<T> as core::clone::Clone>::clone",
            "<str as alloc::string::ToString>::to_string",
            "__rustc::__rust_alloc",
            "memprof_runtime::sites::recorder::allocation",
        ] {
            assert!(is_machinery(name), "{name}");
        }
        for name in [
            "core::iter::traits::iterator::Iterator::collect",
            "app::parse",
            "std::io::read_to_string",
        ] {
            assert!(!is_machinery(name), "{name}");
        }
    }

    #[test]
    fn paths_are_shown_from_the_package_or_the_library() {
        let root = Root::of("/w/app/src/main.rs", "app/src/main.rs");
        for root in [None, root.as_ref()] {
            assert_eq!(
                shown_path(
                    "/home/u/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/serde_json-1.0.145/src/de.rs",
                    root
                ),
                "serde_json-1.0.145/src/de.rs"
            );
            assert_eq!(
                shown_path(
                    "/rustc/17067e9ac6d7e98f18d4f3ff5e8b7a1b6a1a9b0c/library/alloc/src/vec/mod.rs",
                    root
                ),
                "library/alloc/src/vec/mod.rs"
            );
        }
        assert!(same_file("/w/app/src/main.rs", "src/main.rs"));
        assert!(!same_file("/w/app/xsrc/main.rs", "src/main.rs"));
    }

    /// A workspace member's test runs in the member's directory, and
    /// `cargo memprof` compiles a copy of the workspace: either way the
    /// working directory is not the root that `file!()` is relative to.
    #[test]
    fn paths_are_named_as_the_profiled_functions_file() {
        let root = Root::of("/w/target/memprof/tree/app/src/main.rs", "app/src/main.rs");
        assert_eq!(
            root,
            Some(Root::Directory("/w/target/memprof/tree/".to_owned()))
        );
        assert_eq!(
            shown_path("/w/target/memprof/tree/helper/src/lib.rs", root.as_ref()),
            "helper/src/lib.rs"
        );
        assert_eq!(
            shown_path("/elsewhere/shared/src/lib.rs", root.as_ref()),
            "/elsewhere/shared/src/lib.rs"
        );
        let absolute = Root::of(
            "/elsewhere/shared/src/lib.rs",
            "/elsewhere/shared/src/lib.rs",
        );
        assert_eq!(absolute, Some(Root::Absolute));
        assert_eq!(
            shown_path("/elsewhere/shared/src/io.rs", absolute.as_ref()),
            "/elsewhere/shared/src/io.rs"
        );
        assert_eq!(Root::of("/w/app/xsrc/main.rs", "src/main.rs"), None);
    }
}
