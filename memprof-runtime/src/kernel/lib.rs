//! The kernel as a static library: built by `build.rs` with optimization
//! whatever profile the user builds with, and linked into the runtime. See
//! `mod.rs` for why. Not a module of the runtime.

#![no_std]
#![deny(unsafe_op_in_unsafe_fn)]
#![allow(dead_code)]

mod layout;
mod owned;
mod region;
mod thread;

use layout::{CallHead, CursorHead, FnHead, Globals};

/// [`region::step`].
///
/// # Safety
/// As [`region::step`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn memprof_kernel_0_1_0_step(cursor: *const CursorHead, next: u32) -> u32 {
    // SAFETY: as the caller promises.
    unsafe { region::step(cursor, next) }
}

/// [`region::enter`].
///
/// # Safety
/// As [`region::enter`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn memprof_kernel_0_1_0_enter(
    call: *const CallHead,
    meta: *const FnHead,
    g: *const Globals,
) -> u32 {
    // SAFETY: as the caller promises.
    unsafe { region::enter(call, meta, g) }
}

/// [`region::exit`].
///
/// # Safety
/// As [`region::exit`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn memprof_kernel_0_1_0_exit(call: *const CallHead) {
    // SAFETY: as the caller promises.
    unsafe { region::exit(call) }
}

/// Nothing in the kernel panics (no indexing, no arithmetic checks: it is
/// built without them); this only satisfies `no_std`.
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    loop {}
}
