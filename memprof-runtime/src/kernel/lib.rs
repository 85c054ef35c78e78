//! The kernel as a static library: built by `build.rs` with optimization
//! whatever profile the user builds with, and linked into the runtime. See
//! `mod.rs` for why. Not a module of the runtime.

#![no_std]
#![deny(unsafe_op_in_unsafe_fn)]
#![allow(dead_code)]

mod call;
mod layout;
mod owned;
mod quiet;
mod region;
mod rows_events;
mod step;
mod thread;

use core::sync::atomic::{AtomicPtr, Ordering};
use layout::{CursorHead, FnHead, Globals, QuietHead};

/// [`step::step`].
///
/// # Safety
/// As [`step::step`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn memprof_kernel_0_1_0_step(cursor: *const CursorHead, next: u32) -> u32 {
    // SAFETY: as the caller promises.
    unsafe { step::step(cursor, next) }
}

/// The runtime's step for the calls the kernel leaves to it, as the
/// runtime hands it over (`memprof_kernel_0_1_0_set_slow`) before the first
/// such call: it takes the cursor, whose `pending` row the kernel wrote.
type SlowStep = unsafe extern "C" fn(*const CursorHead);

/// The [`SlowStep`], or null before the runtime's first call entry.
static SLOW: AtomicPtr<()> = AtomicPtr::new(core::ptr::null_mut());

/// Hands the kernel the runtime's slow step. The runtime calls it as it
/// enters a call itself, before any statement of that call (the only calls
/// whose statements take the slow step) runs.
#[unsafe(no_mangle)]
pub extern "C" fn memprof_kernel_0_1_0_set_slow(step: SlowStep) {
    SLOW.store(step as *mut (), Ordering::Relaxed);
}

/// [`step::step`], and the runtime's step where the kernel leaves it.
///
/// # Safety
/// `cursor` is a live cursor as [`step::step`] takes it.
#[inline(always)]
unsafe fn step_or_slow(cursor: *const CursorHead, next: u32) {
    // SAFETY: as the caller promises.
    if unsafe { step::step(cursor, next) } != 0 {
        let slow = SLOW.load(Ordering::Relaxed);
        if !slow.is_null() {
            // SAFETY: only `memprof_kernel_0_1_0_set_slow` stores here, a
            // `SlowStep`; the cursor is live.
            unsafe { core::mem::transmute::<*mut (), SlowStep>(slow)(cursor) };
        }
    }
}

/// [`step::step`] as generated code calls it in unoptimized builds, with
/// no runtime function between: from the place that holds the cursor
/// pointer, null under `MEMPROF=off` (the runtime's `Probe`).
///
/// # Safety
/// `probe` points at a cursor pointer as [`step::step`] takes it.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn memprof_kernel_0_1_0_statement(probe: *const *const CursorHead, next: u32) {
    // SAFETY: as the caller promises.
    let cursor = unsafe { *probe };
    if !cursor.is_null() {
        // SAFETY: as the caller promises.
        unsafe { step_or_slow(cursor, next) };
    }
}

/// [`call::enter`].
///
/// # Safety
/// As [`call::enter`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn memprof_kernel_0_1_0_enter(
    meta: *const FnHead,
    g: *const Globals,
    first: u32,
) -> *mut CursorHead {
    // SAFETY: as the caller promises.
    unsafe { call::enter(meta, g, first) }
}

/// [`call::exit`].
///
/// # Safety
/// As [`call::exit`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn memprof_kernel_0_1_0_exit(top: *const CursorHead) -> u32 {
    // SAFETY: as the caller promises.
    unsafe { call::exit(top) }
}

/// [`quiet::enter`].
///
/// # Safety
/// As [`quiet::enter`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn memprof_kernel_0_1_0_quiet_enter(
    meta: *const FnHead,
    g: *const Globals,
    anchor: usize,
) -> *mut QuietHead {
    // SAFETY: as the caller promises.
    unsafe { quiet::enter(meta, g, anchor) }
}

/// [`quiet::exit`].
///
/// # Safety
/// As [`quiet::exit`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn memprof_kernel_0_1_0_quiet_exit(head: *const QuietHead, g: *const Globals) {
    // SAFETY: as the caller promises.
    unsafe { quiet::exit(head, g) }
}

/// [`call::cursor`].
///
/// # Safety
/// As [`call::cursor`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn memprof_kernel_0_1_0_cursor(
    top: *const CursorHead,
    first: u32,
) -> *mut CursorHead {
    // SAFETY: as the caller promises.
    unsafe { call::cursor(top, first) }
}

/// [`call::cursor_end`].
///
/// # Safety
/// As [`call::cursor_end`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn memprof_kernel_0_1_0_cursor_end(cursor: *const CursorHead) -> u32 {
    // SAFETY: as the caller promises.
    unsafe { call::cursor_end(cursor) }
}

/// Nothing in the kernel panics (no indexing, no arithmetic checks: it is
/// built without them); this only satisfies `no_std`.
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    loop {}
}
