//! The calling thread's thread pointer, read with one instruction: how the
//! kernel (and the allocator, see `tls`) reaches the thread's counters.

/// The calling thread's thread pointer.
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
#[inline(always)]
pub fn pointer() -> usize {
    let tp: usize;
    // SAFETY: on x86-64 Linux (glibc and musl alike) the first word of the
    // thread control block, at %fs:0, holds the thread pointer itself.
    unsafe {
        core::arch::asm!(
            "mov {}, qword ptr fs:[0]",
            out(reg) tp,
            options(nostack, readonly, preserves_flags, pure)
        );
    }
    tp
}

/// The calling thread's thread pointer.
#[cfg(all(target_os = "linux", target_arch = "aarch64"))]
#[inline(always)]
pub fn pointer() -> usize {
    let tp: usize;
    // SAFETY: TPIDR_EL0 holds the thread pointer on AArch64 Linux.
    unsafe {
        core::arch::asm!(
            "mrs {}, tpidr_el0",
            out(reg) tp,
            options(nomem, nostack, preserves_flags, pure)
        );
    }
    tp
}

/// No thread pointer to read on this target: 0, which sends callers to
/// their slow paths.
#[cfg(not(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
)))]
#[inline(always)]
pub fn pointer() -> usize {
    0
}
