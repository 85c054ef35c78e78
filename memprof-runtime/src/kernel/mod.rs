//! The kernel: the statement step that generated code calls on every
//! statement, with the state it works on, compiled with optimization in
//! every build.
//!
//! PERF: `cargo test` builds the runtime without optimization, where each
//! field access of the step is a dozen instructions. So in unoptimized
//! builds (`opt-level = 0`, the dev profile), and in optimized ones that
//! keep debug assertions (whose overflow and pointer checks would be in
//! every step), the build script compiles these files a
//! second time, on their own, as a `no_std` static library at
//! `-Copt-level=3` (`lib.rs` is its root), and the runtime calls its
//! `extern "C"` functions (generated code calls its statement step itself,
//! see `probe::statement`): the step costs a few nanoseconds in a dev build
//! too. Where that build cannot run (Miri, a target without a prebuilt
//! `core`, `MEMPROF_KERNEL=rust`), the build script says so in one warning
//! and the runtime calls the same functions compiled into itself: the same
//! code, slower in dev builds only. In release builds the runtime always
//! does so: the runtime is optimized then, and the functions are called out
//! of line, as the library's are.
//!
//! Layers: the lowest of the runtime; it imports nothing from it. The one
//! way back is the slow step the runtime hands the library at its first
//! call entry (`memprof_kernel_0_1_0_set_slow` in `lib.rs`), which the
//! library's statement step calls for the calls the kernel leaves to the
//! runtime. Both
//! builds compile `layout` (the `repr(C)` state shared with the runtime),
//! `owned`, `region`, `step`, `call` and `quiet`, so the two sides agree on every field by
//! construction.

pub(crate) mod call;
pub(crate) mod layout;
pub(crate) mod owned;
pub(crate) mod quiet;
pub(crate) mod region;
pub(crate) mod rows_events;
pub(crate) mod step;
pub(crate) mod thread;

// The library's symbols carry the crate version, so that two versions of
// memprof in one program never resolve each other's kernel. NOTE: the
// version and its comparison live inside the assertion, which is their only
// use (Rust 1.88 calls them unused otherwise).
const _: () = {
    const VERSION: &str = "0.1.0";
    const fn same(a: &str, b: &str) -> bool {
        let (a, b) = (a.as_bytes(), b.as_bytes());
        if a.len() != b.len() {
            return false;
        }
        let mut i = 0;
        while i < a.len() {
            if a[i] != b[i] {
                return false;
            }
            i += 1;
        }
        true
    }
    assert!(
        same(VERSION, env!("CARGO_PKG_VERSION")),
        "rename the kernel's symbols (kernel/lib.rs, kernel/mod.rs) for the new version"
    );
};

#[cfg(memprof_kernel)]
mod entry {
    use super::layout::{CursorHead, FnHead, Globals, QuietHead};

    // SAFETY: these are the library's functions built from `lib.rs` with
    // the same signatures.
    unsafe extern "C" {
        /// [`super::step::step`], optimized.
        #[link_name = "memprof_kernel_0_1_0_step"]
        pub(crate) fn step(cursor: *const CursorHead, next: u32) -> u32;
        /// [`super::call::enter`], optimized.
        #[link_name = "memprof_kernel_0_1_0_enter"]
        pub(crate) fn enter(meta: *const FnHead, g: *const Globals, first: u32) -> *mut CursorHead;
        /// [`super::call::exit`], optimized.
        #[link_name = "memprof_kernel_0_1_0_exit"]
        pub(crate) fn exit(top: *const CursorHead) -> u32;
        /// [`super::quiet::enter`], optimized.
        #[link_name = "memprof_kernel_0_1_0_quiet_enter"]
        pub(crate) fn quiet_enter(
            meta: *const FnHead,
            g: *const Globals,
            anchor: usize,
        ) -> *mut QuietHead;
        /// [`super::quiet::exit`], optimized.
        #[link_name = "memprof_kernel_0_1_0_quiet_exit"]
        pub(crate) fn quiet_exit(head: *const QuietHead, g: *const Globals);
        /// [`super::call::cursor`], optimized.
        #[link_name = "memprof_kernel_0_1_0_cursor"]
        pub(crate) fn cursor(top: *const CursorHead, first: u32) -> *mut CursorHead;
        /// [`super::call::cursor_end`], optimized.
        #[link_name = "memprof_kernel_0_1_0_cursor_end"]
        pub(crate) fn cursor_end(cursor: *const CursorHead) -> u32;
    }
}

#[cfg(not(memprof_kernel))]
mod entry {
    //! The same functions compiled into the runtime. PERF: out of line, as
    //! the library's are: inlined into every statement of an optimized
    //! caller, they made memchr's profiled test build (opt-level 3) take
    //! many minutes to compile, for a few nanoseconds a call.
    use super::call;
    use super::layout::{CursorHead, FnHead, Globals, QuietHead};
    use super::quiet;
    use super::step as statement;

    /// [`statement::step`].
    #[inline(never)]
    pub(crate) unsafe fn step(cursor: *const CursorHead, next: u32) -> u32 {
        // SAFETY: as the caller promises.
        unsafe { statement::step(cursor, next) }
    }

    /// [`call::enter`].
    #[inline(never)]
    pub(crate) unsafe fn enter(
        meta: *const FnHead,
        g: *const Globals,
        first: u32,
    ) -> *mut CursorHead {
        // SAFETY: as the caller promises.
        unsafe { call::enter(meta, g, first) }
    }

    /// [`call::exit`].
    #[inline(never)]
    pub(crate) unsafe fn exit(top: *const CursorHead) -> u32 {
        // SAFETY: as the caller promises.
        unsafe { call::exit(top) }
    }

    /// [`quiet::enter`].
    #[inline(never)]
    pub(crate) unsafe fn quiet_enter(
        meta: *const FnHead,
        g: *const Globals,
        anchor: usize,
    ) -> *mut QuietHead {
        // SAFETY: as the caller promises.
        unsafe { quiet::enter(meta, g, anchor) }
    }

    /// [`quiet::exit`].
    #[inline(never)]
    pub(crate) unsafe fn quiet_exit(head: *const QuietHead, g: *const Globals) {
        // SAFETY: as the caller promises.
        unsafe { quiet::exit(head, g) }
    }

    /// [`call::cursor`].
    #[inline(never)]
    pub(crate) unsafe fn cursor(top: *const CursorHead, first: u32) -> *mut CursorHead {
        // SAFETY: as the caller promises.
        unsafe { call::cursor(top, first) }
    }

    /// [`call::cursor_end`].
    #[inline(never)]
    pub(crate) unsafe fn cursor_end(cursor: *const CursorHead) -> u32 {
        // SAFETY: as the caller promises.
        unsafe { call::cursor_end(cursor) }
    }
}

/// Whether the runtime calls the kernel's library (`true`) or the same
/// functions compiled into itself.
pub fn library() -> bool {
    cfg!(memprof_kernel)
}

pub(crate) use entry::{cursor, cursor_end, enter, exit, quiet_enter, quiet_exit, step};
