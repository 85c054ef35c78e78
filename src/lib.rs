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
//! # Set-up
//! memprof has no registry release yet: depend on a checkout of its
//! repository, by path. `memprof` is the only crate to name; it brings its
//! macros and runtime at the matching version.
//!
//! ```toml
//! [dependencies]
//! memprof = { path = "../memprof" }
//! ```
//!
//! The default features profile and install the counting allocator; the
//! features below trim that.
//!
//! # Features
//! - `enabled` (default): profiling. Without it, `#[profile]` hands the
//!   function back as written (still checking its arguments), `memit!(e)` and
//!   `assert_memory!(.., e)` become `e`, `track!()` does nothing, [`measure`]
//!   runs its closure and returns zero figures, and [`report`] is empty. Release
//!   builds can so keep the annotations and pay nothing:
//!   `memprof = { path = "../memprof", default-features = false }`, plus a
//!   feature of your own that turns `memprof/enabled` and
//!   `memprof/global-allocator` on.
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
/// It goes on a function with a body (free, method, trait default,
/// `async`, `unsafe`, `extern`), or on an `impl` block: see [below](#on-an-impl-block).
///
/// # Options
/// Options are `key = value` pairs, separated by commas, each given at most
/// once. An unknown key, a missing value or a malformed one is a compile
/// error at that token.
///
/// - `scope = "thread"` (default): count the calling thread or async task
///   only, so that tests running in parallel do not disturb each other.
/// - `scope = "process"`: count every thread, for code that fans out.
/// - `limit = "<size>"`: the highest a call's heap may rise above its start
///   (its Peak). A call over it panics after it returns, with its table in
///   the message, as pytest-memray's `limit_memory` fails a test.
/// - `max_retained = "<size>"`: the net bytes a call may leave allocated
///   (its Increment), like pytest-memray's `limit_leaks`. Over it, the call
///   panics likewise.
/// - `gpu = false`: no GPU columns for this function (`gpu = true`, the
///   default, leaves them to the `MEMPROF_GPU` settings).
///
/// A `<size>` is a string: a number, decimals allowed, then a unit among B,
/// KB, MB, GB, KiB, MiB and GiB, in any case; no unit means bytes. KB, MB and
/// GB are binary, as in pytest-memray: `"1.5 MB"` is 1.5 × 2^20 bytes. The
/// same unit names go in `MEMPROF_UNIT`.
///
/// A budget's panic (`limit`, `max_retained`) is raised as the call's guard
/// is dropped, so the location the panic prints is inside memprof
/// (`#[track_caller]` does not reach through `Drop`): the message's first
/// line names the function's own file and line, as in
/// `memory limit exceeded in app::parse (src/parse.rs:10): peak 30.0 MiB > limit 24.0 MiB`.
///
/// Without the `enabled` feature the function is left as written; the
/// options are still checked.
///
/// # On an `impl` block
/// `#[profile(..)]` on an `impl` block (inherent, trait or generic) profiles
/// every method with a body as if the attribute, with the same options,
/// were written on it: one table per method, named by its path
/// (`app::Cache::insert`, `<app::Square as app::Shape>::area`), starting at
/// the method's own attributes. Left as written: `const fn`s, which cannot
/// be instrumented; methods that carry their own `#[profile(..)]`, whose
/// options win; and the block's other items. A block with no method to
/// profile is an error.
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
/// Every thread's allocations, for work spread over threads:
/// ```
/// #[memprof::profile(scope = "process")]
/// fn fan_out() -> usize {
///     let handles: Vec<_> = (0..4)
///         .map(|i| std::thread::spawn(move || vec![0u8; 1024 * i].len()))
///         .collect();
///     handles.into_iter().map(|h| h.join().unwrap()).sum()
/// }
/// assert_eq!(fan_out(), 6 * 1024);
/// ```
///
/// Budgets: a call within them passes, one over them panics.
/// ```
/// #[memprof::profile(limit = "1 MiB", max_retained = "0 B", gpu = false)]
/// fn checksum(n: usize) -> u64 {
///     let scratch = vec![1u8; n];
///     scratch.iter().map(|&b| u64::from(b)).sum()
/// }
/// assert_eq!(checksum(512 * 1024), 512 * 1024);
///
/// let over = std::panic::catch_unwind(|| checksum(2 << 20));
/// let message = *over.unwrap_err().downcast::<String>().unwrap();
/// assert!(message.starts_with("memory limit exceeded in "), "{message}");
/// assert!(message.lines().next().unwrap().ends_with("peak 2.0 MiB > limit 1.0 MiB"));
/// ```
///
/// On an `impl` block:
/// ```
/// pub struct Cache {
///     entries: Vec<String>,
/// }
///
/// #[memprof::profile]
/// impl Cache {
///     pub fn new() -> Self {
///         Cache { entries: Vec::new() }
///     }
///
///     pub fn insert(&mut self, key: &str) {
///         self.entries.push(key.to_owned());
///     }
///
///     // Its own options win.
///     #[memprof::profile(max_retained = "1 KiB")]
///     pub fn snapshot(&self) -> Vec<String> {
///         self.entries.clone()
///     }
///
///     // Left as written.
///     pub const fn shards() -> usize {
///         1
///     }
/// }
///
/// let mut cache = Cache::new();
/// cache.insert("key");
/// assert_eq!(cache.snapshot(), ["key"]);
/// let report = memprof::report();
/// assert_eq!(report.function("Cache::insert").unwrap().calls, 1);
/// assert!(report.function("Cache::shards").is_none());
/// ```
///
/// Misuse is a compile error, pointing at the token at fault:
/// ```compile_fail
/// #[memprof::profile]
/// const fn answer() -> u32 { 42 }
/// ```
/// ```compile_fail
/// // unknown `#[profile]` argument `scopes`
/// #[memprof::profile(scopes = "thread")]
/// fn f() {}
/// ```
/// ```compile_fail
/// // `#[profile]` argument `max_retained` needs a size, as in
/// // `#[profile(max_retained = "1 MiB")]`
/// #[memprof::profile(max_retained)]
/// fn f() {}
/// ```
/// ```compile_fail
/// // size "1 parsec" has an unknown unit `parsec`
/// #[memprof::profile(limit = "1 parsec")]
/// fn f() {}
/// ```
/// ```compile_fail
/// // `#[profile]` argument `gpu` takes `true` or `false`
/// #[memprof::profile(gpu = "off")]
/// fn f() {}
/// ```
/// ```compile_fail
/// // `#[profile]` cannot be applied to a trait: put it on the trait's
/// // `impl` blocks, or on a method that has a default body
/// #[memprof::profile]
/// trait Store {
///     fn get(&self) -> u32;
/// }
/// ```
#[doc(inline)]
pub use memprof_macros::profile;

/// Evaluates an expression, prints `peak memory: X, increment: Y (net Z
/// kept)` as IPython's `%memit` does, and returns its value.
///
/// X is the process heap at the highest point during the expression, Y is X
/// minus the heap before it, from memprof's exact counts. Z is the net
/// change, which tables and [`measure`] call the increment (`freed` instead
/// of `kept` when it is negative). The line goes where `MEMPROF_OUTPUT` says
/// (stdout by default), in `MEMPROF_UNIT`'s unit. Any expression works, a
/// block included; its temporaries are freed before the figures are read,
/// and `memit!(&temp())` extends its temporary as `let x = &temp();` does.
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
///
/// // Any expression, a block included.
/// let n = memprof::memit!({
///     let scratch = vec![0u64; 1024];
///     scratch.len()
/// });
/// assert_eq!(n, 1024);
///
/// // The calling thread only.
/// let n = memprof::memit!(vec![0u8; 4096].len(), scope = "thread");
/// assert_eq!(n, 4096);
/// ```
///
/// ```compile_fail
/// // `memit!` needs an expression to measure, as in `memit!(build())`
/// memprof::memit!();
/// ```
/// ```compile_fail
/// memprof::memit!(vec![0u8; 10], scope = "everywhere");
/// ```
#[doc(inline)]
pub use memprof_macros::memit;

/// Fails (panics) unless the memory figures of an expression meet every
/// condition, and returns the expression's value otherwise.
///
/// `assert_memory!(condition, condition, .., expression)`: one or more
/// conditions, then the expression, last. A failure panics at the
/// `assert_memory!` line, as `assert!` does, naming each failed condition
/// with the figure measured.
///
/// # Options
/// Each condition is `<quantity> <comparison> <bound>`:
/// - quantity: `peak`, `increment` or `allocated_bytes` (bytes, as
///   [`Measurement::peak`], [`Measurement::increment`] and
///   [`Measurement::allocated_bytes`], the churn), `allocations` or
///   `deallocations` (counts);
/// - comparison: `<`, `<=`, `==`, `>=` or `>`;
/// - bound, for bytes: a number and a unit (`10 MiB`, `1.5 GB`, `-100 B`) or
///   a string (`"10 MiB"`); units B, KB, MB, GB, KiB, MiB, GiB, in any case,
///   where MB means MiB as in pytest-memray; no unit means bytes. A negative
///   bound is written `-5 MiB`, for an increment that frees.
/// - bound, for counts: a whole number.
///
/// And, written among the conditions, the scope:
/// - `scope = "thread"` (default): the calling thread's figures, as
///   [`measure`] gives them, so that tests running in parallel do not
///   disturb each other. Work handed to other threads is not counted.
/// - `scope = "process"`: every thread's, as [`measure_in`] with
///   [`Scope::Process`]; for code that fans out, in a test that runs alone:
///   `assert_memory!(scope = "process", peak < 10 MiB, { expr })`.
///
/// Without the `enabled` feature nothing is measured, so nothing is checked:
/// `assert_memory!(.., e)` is `e`, and passes whatever `e` allocates. A test
/// whose point is the check can tell from [`ENABLED`]:
/// `assert!(memprof::ENABLED, "built without memprof's `enabled` feature")`.
///
/// # Examples
/// ```
/// let n = memprof::assert_memory!(peak < 2 MiB, increment <= 0, {
///     let scratch = vec![0u8; 1 << 20];
///     scratch.len()
/// });
/// assert_eq!(n, 1 << 20);
///
/// let kept = memprof::assert_memory!(increment >= "4 KiB", allocations == 1, vec![0u8; 4096]);
/// memprof::assert_memory!(increment == -4096 B, deallocations == 1, drop(kept));
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
///
/// Misuse is a compile error:
/// ```compile_fail
/// // `assert_memory!` cannot bound `heap`: expected `peak`, `increment`,
/// // `allocations`, `deallocations` or `allocated_bytes`
/// memprof::assert_memory!(heap < 1 MiB, vec![0u8; 16]);
/// ```
/// ```compile_fail
/// // `assert_memory!`: `allocations` is a count, so its bound is a whole number
/// memprof::assert_memory!(allocations < 2 KiB, vec![0u8; 16]);
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
/// Counting by size class starts at a thread's first checkpoint: it costs
/// one array increment per allocation on that thread, and nothing anywhere
/// else.
///
/// # Options
/// - `track!()`: prints where `MEMPROF_OUTPUT` says (stdout by default).
/// - `track!(to = path)`: appends to the file `path`, any expression that is
///   `AsRef<str>`, such as `"memory.log"` or a `String`.
///
/// Without the `enabled` feature it does nothing; a `to` path is type-checked
/// but not evaluated.
///
/// # Examples
/// ```
/// memprof::track!();
/// let v = vec![0u8; 3 << 20];
/// memprof::track!();
/// # drop(v);
/// ```
/// ```no_run
/// let log = std::env::temp_dir().join("memory.log");
/// memprof::track!(to = log.to_str().unwrap());
/// ```
/// ```compile_fail
/// // `to` takes text
/// memprof::track!(to = 42);
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
/// Without the `enabled` feature it runs `f` and returns all-zero figures
/// (`Measurement::default()`), whatever `f` allocates: a test that compares
/// them can tell from [`ENABLED`].
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
///
/// Without the `enabled` feature it runs `f` and returns all-zero figures,
/// as [`measure`] does.
pub fn measure_in<R>(scope: Scope, f: impl FnOnce() -> R) -> (R, Measurement) {
    if cfg!(feature = "enabled") {
        memprof_runtime::measure_in(scope, f)
    } else {
        (f(), Measurement::default())
    }
}

/// Whether this build of memprof profiles: `true` iff its `enabled` feature
/// (on by default) is on.
///
/// Without it, [`measure`] returns zero figures and `assert_memory!` checks
/// nothing, so a test whose point is a figure passes without looking: such a
/// test can skip, or fail, on this.
///
/// ```
/// let (_, m) = memprof::measure(|| vec![0u8; 4096]);
/// if memprof::ENABLED {
///     assert_eq!(m.peak, 4096);
/// } else {
///     assert_eq!(m, memprof::Measurement::default());
/// }
/// ```
pub const ENABLED: bool = cfg!(feature = "enabled");

pub use memprof_runtime::{
    Allocator, DecodeError, FunctionReport, FunctionSummary, HeapProfile, HeapValues, LineCall,
    LineReport, Measurement, PoolUsage, Report, Scope, Site, SiteFrame, SitesLeftOut, Summary,
    TopLine, TopSite, heap_profile, process_heap, report, reset, unwatch_pool,
};

/// Reads a training framework's own memory pool at every statement of the
/// profiled calls that watch the GPU, from the next call on: their tables
/// gain `Pool allocated` (bytes in live tensors, after the line: PyTorch's
/// `torch.cuda.memory_allocated`), `Pool increment` and `Pool reserved`
/// (bytes the framework's pools hold from the driver: `memory_reserved`),
/// and the JSON `pool_allocated`, `pool_increment` and `pool_reserved`.
///
/// CUPTI's `GPU alloc` counts what a pool takes from the driver, which for
/// a framework that pools its memory (burn and cubecl; PyTorch) is the
/// reserve: only the framework knows what its tensors hold. `read` is
/// called at each statement boundary of such calls (they take the
/// runtime's step, as NVML sampling does), untracked; it answers `None`
/// when it cannot read. One reader at a time: a second call replaces the
/// first; [`unwatch_pool`] removes it. The figures are the framework's for
/// the whole process, whatever the call's `scope`. See docs/deep-learning.md
/// for burn's reader.
///
/// ```
/// use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
/// static IN_USE: AtomicU64 = AtomicU64::new(0);
/// memprof::watch_pool("my framework", || {
///     Some(memprof::PoolUsage { allocated: IN_USE.load(Relaxed), reserved: 64 << 20 })
/// });
/// memprof::unwatch_pool();
/// ```
pub fn watch_pool(
    name: impl Into<String>,
    read: impl Fn() -> Option<PoolUsage> + Send + Sync + 'static,
) {
    memprof_runtime::watch_pool(name, read);
}

#[cfg(feature = "global-allocator")]
#[global_allocator]
static GLOBAL: Allocator = Allocator::system();

// Not public API. Used by generated code.
#[doc(hidden)]
pub mod __private {
    pub use memprof_runtime::__private::*;

    /// Whether this crate's `enabled` feature is on: [`crate::ENABLED`].
    pub const ENABLED: bool = crate::ENABLED;
}
