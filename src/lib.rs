//! memprof: a line-level memory profiler for Rust.
//!
//! Put `#[memprof::profile]` on a function and, after each call, memprof
//! prints a table of exact heap bytes per source line: memory in use after
//! the line, its increment, its peak, and how often it ran.
//!
//! ```
//! use memprof::profile;
//!
//! #[profile]
//! fn build() -> Vec<u64> {
//!     let a = vec![1u64; 1024];
//!     a
//! }
//! # build();
//! ```
//!
//! Figures come from [`Allocator`], a counting global allocator that the
//! default `global-allocator` feature installs.
//!
//! # Features
//! - `enabled` (default): profiling. Without it, `#[profile]` hands the
//!   function back as written (still checking its arguments), `memit!(e)` and
//!   `assert_memory!(.., e)` become `e`, `track!()` does nothing, [`measure`]
//!   runs its closure and returns zero figures, and [`report`] is empty. Release
//!   builds can so keep the annotations and pay nothing:
//!   `memprof = { version = "..", default-features = false }`, plus a feature of
//!   your own that turns `memprof/enabled` and `memprof/global-allocator` on.
//! - `global-allocator` (default; implies `enabled`): installs
//!   [`Allocator::system()`] as the global allocator. To wrap an allocator of
//!   your own instead, use `default-features = false, features = ["enabled"]`.
//! - `gpu` (default): GPU columns, with NVML and CUPTI loaded at run time
//!   (see the README's GPU section). A program that profiles CPU code only
//!   turns it off for a leaner build without nvml-wrapper:
//!   `default-features = false, features = ["global-allocator"]`.

#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

/// Instruments every statement of a function and prints a line table after
/// each outermost call.
///
/// Each statement, in every nested block, is measured on the thread (or
/// async task) running the call: Mem usage (heap in use after the line),
/// Increment (Σ of allocated − freed over executions), Peak (highest rise
/// above the line's start) and Occurrences. The `fn` line carries the whole
/// call. Closures, async blocks and nested items are left as written, but
/// for the `async` block that holds the body when `#[tokio::test]` (or
/// `#[tokio::main]`) is written above `#[profile]`: it is instrumented as an
/// `async fn` body is, so either order gives the same table.
///
/// # Options
/// - `scope = "thread"` (default): count the calling thread or task only.
/// - `scope = "process"`: count every thread, for code that fans out.
///
/// Without the `enabled` feature the function is left as written; the
/// arguments are still checked.
///
/// # Examples
/// ```
/// #[memprof::profile]
/// fn addition() -> Vec<u64> {
///     let a = vec![1u64; 10];
///     let b = vec![2u64; 300];
///     [a, b].concat()
/// }
/// assert_eq!(addition().len(), 310);
/// ```
///
/// Misuse is a compile error:
/// ```compile_fail
/// #[memprof::profile]
/// const fn answer() -> u32 { 42 }
/// ```
/// ```compile_fail
/// #[memprof::profile(scopes = "thread")]
/// fn f() {}
/// ```
#[doc(inline)]
pub use memprof_macros::profile;

/// Evaluates an expression, prints `peak memory: X, increment: Y (net Z
/// kept)` as IPython's `%memit` does, and returns its value.
///
/// X is the process heap at the highest point during the expression, Y is X
/// minus the heap before it, from memprof's exact counts. Z is the net
/// change, which tables and [`measure`] call the increment (`freed` instead
/// of `kept` when it is negative).
///
/// # Options
/// - `scope = "process"` (default): count every thread, as `%memit` reads
///   the whole process: work the expression hands to a thread pool counts.
///   So do other threads that allocate meanwhile, such as tests running
///   beside it.
/// - `scope = "thread"`: count the calling thread (or async task) only.
///   When other threads changed the process's figures meanwhile, a line
///   under the figures says so: `note: other threads allocated meanwhile,
///   which thread scope does not count: process-wide, increment: Y (net Z
///   kept); memit!(.., scope = "process") counts them`.
///
/// Without the `enabled` feature, `memit!(e)` is `e` and prints nothing.
///
/// # Examples
/// ```
/// let v = memprof::memit!(vec![0u8; 1 << 20]);
/// assert_eq!(v.len(), 1 << 20);
/// let n = memprof::memit!(vec![0u8; 4096].len(), scope = "thread");
/// assert_eq!(n, 4096);
/// ```
/// ```compile_fail
/// memprof::memit!(vec![0u8; 10], scope = "everywhere");
/// ```
#[doc(inline)]
pub use memprof_macros::memit;

/// Fails (panics) unless the memory figures of an expression meet every
/// condition, and returns the expression's value otherwise.
///
/// Conditions bound `peak`, `increment` (bytes; units B, KB, MB, GB, KiB,
/// MiB, GiB, where MB means MiB as in pytest-memray), `allocations` or
/// `deallocations` (counts), with `<`, `<=`, `==`, `>=` or `>`.
///
/// # Options
/// - `scope = "thread"` (default): the calling thread's figures, as
///   [`measure`] gives them, so that tests running in parallel do not
///   disturb each other. Work handed to other threads is not counted.
/// - `scope = "process"`: every thread's, as [`measure_in`] with
///   [`Scope::Process`]; for code that fans out, in a test that runs alone.
///
/// Written among the conditions: `assert_memory!(scope = "process", peak <
/// 10 MiB, { expr })`.
///
/// Without the `enabled` feature nothing is measured, so nothing is checked:
/// `assert_memory!(.., e)` is `e`.
///
/// # Examples
/// ```
/// let n = memprof::assert_memory!(peak < 2 MiB, increment <= 0, {
///     let scratch = vec![0u8; 1 << 20];
///     scratch.len()
/// });
/// assert_eq!(n, 1 << 20);
/// ```
/// ```
/// let v = memprof::assert_memory!(scope = "process", increment >= 4 KiB, {
///     std::thread::scope(|s| s.spawn(|| vec![0u8; 4096]).join().unwrap())
/// });
/// # drop(v);
/// ```
/// ```should_panic
/// // memory assertion failed: `peak < 1 KiB`, but peak was 4.0 KiB (4096 B)
/// memprof::assert_memory!(peak < 1 KiB, { vec![0u8; 4096] });
/// ```
#[doc(inline)]
pub use memprof_macros::assert_memory;

/// A checkpoint, like Pytorch-Memory-Utils' `MemTracker.track()`: prints
/// the process heap here, this thread's net change since its previous
/// checkpoint, and what it allocated (`+`) and freed (`-`) since then,
/// grouped by power-of-two size class:
///
/// ```text
/// At src/main.rs:12 app::load: heap 3.2 MiB (+3.0 MiB since last)
/// + 3 × [1 MiB, 2 MiB) = 3.0 MiB
/// - 1 × [256 KiB, 512 KiB) = 300.0 KiB
/// ```
///
/// `track!(to = "memory.log")` appends to a file instead. Counting by size
/// class starts at a thread's first checkpoint: it costs one array increment
/// per allocation on that thread, and nothing anywhere else.
///
/// Without the `enabled` feature it does nothing; a `to` path is type-checked
/// but not evaluated.
///
/// ```
/// memprof::track!();
/// let v = vec![0u8; 3 << 20];
/// memprof::track!();
/// # drop(v);
/// ```
#[macro_export]
macro_rules! track {
    () => {
        $crate::track!(@at ::core::option::Option::None)
    };
    (to = $path:expr $(,)?) => {
        $crate::track!(@at ::core::option::Option::Some(::core::convert::AsRef::<str>::as_ref(&$path)))
    };
    (@at $to:expr) => {
        // NOTE: a constant from this crate, not a `cfg` here: a `cfg` in the
        // expansion would test the user's crate's features.
        if $crate::__private::ENABLED {
            $crate::__private::track(::core::file!(), ::core::line!(), {
                fn __memprof_here() {}
                ::core::any::type_name_of_val(&__memprof_here)
            }, $to)
        }
    };
}

pub use memprof_runtime::config::{Output, RenderSettings, ReportMode, Unit};
/// Runs `f` and measures the heap it used on the calling thread (or async
/// task), without printing anything.
///
/// [`Measurement::increment`] is the net change, [`Measurement::peak`] the
/// highest rise above the start, both in exact bytes. What other threads
/// allocate meanwhile, a pool's workers included, is not counted: see
/// [`measure_in`].
///
/// ```
/// let (v, m) = memprof::measure(|| vec![0u8; 1024]);
/// assert_eq!((m.increment, m.peak, m.allocations), (1024, 1024, 1));
///
/// let (_, m) = memprof::measure(|| vec![0u8; 4096].len());
/// assert_eq!((m.increment, m.peak), (0, 4096));
/// # drop(v);
/// ```
///
/// Without the `enabled` feature it runs `f` and returns all-zero figures.
pub fn measure<R>(f: impl FnOnce() -> R) -> (R, Measurement) {
    measure_in(Scope::Thread, f)
}

/// [`measure`] in `scope`: [`Scope::Process`] counts every thread of the
/// process (allocation counts included), for code that fans out; other
/// threads that allocate meanwhile count too.
///
/// ```
/// use memprof::Scope;
/// let work = || std::thread::scope(|s| s.spawn(|| vec![0u8; 1 << 20]).join().unwrap());
/// let (v, m) = memprof::measure_in(Scope::Process, work);
/// assert!(m.increment >= 1 << 20);
/// let (w, m) = memprof::measure_in(Scope::Thread, work);
/// assert!(m.increment < 1 << 20);
/// # drop((v, w));
/// ```
pub fn measure_in<R>(scope: Scope, f: impl FnOnce() -> R) -> (R, Measurement) {
    if cfg!(feature = "enabled") {
        memprof_runtime::measure_in(scope, f)
    } else {
        (f(), Measurement::default())
    }
}

pub use memprof_runtime::{
    Allocator, FunctionReport, LineReport, Measurement, Report, Scope, process_heap, report, reset,
};

#[cfg(feature = "global-allocator")]
#[global_allocator]
static GLOBAL: Allocator = Allocator::system();

// Not public API. Used by generated code.
#[doc(hidden)]
pub mod __private {
    pub use memprof_runtime::__private::*;

    /// Whether this crate's `enabled` feature is on.
    pub const ENABLED: bool = cfg!(feature = "enabled");
}
