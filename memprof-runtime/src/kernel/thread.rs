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

/// A relaxed load of `byte`, which other threads may store to: one
/// instruction where it is compiled without optimization too.
///
/// PERF: `AtomicU8::load` is three calls in an unoptimized build (and
/// `as_ptr` one: the address is a cast here). An `asm!`
/// load is opaque to the compiler and a single aligned byte load is atomic
/// on these targets, so this is a relaxed atomic load.
#[cfg(all(not(miri), any(target_arch = "x86_64", target_arch = "aarch64")))]
#[inline(always)]
pub fn load_relaxed(byte: &core::sync::atomic::AtomicU8) -> u8 {
    let value: u8;
    // SAFETY: a load of one byte from a valid reference.
    unsafe {
        #[cfg(target_arch = "x86_64")]
        core::arch::asm!(
            "mov {}, byte ptr [{}]",
            out(reg_byte) value,
            in(reg) core::ptr::from_ref(byte).cast::<u8>(),
            options(nostack, readonly, preserves_flags)
        );
        #[cfg(target_arch = "aarch64")]
        core::arch::asm!(
            "ldrb {:w}, [{}]",
            out(reg) value,
            in(reg) core::ptr::from_ref(byte).cast::<u8>(),
            options(nostack, readonly, preserves_flags)
        );
    }
    value
}

/// A relaxed load of `byte`, which other threads may store to.
#[cfg(not(all(not(miri), any(target_arch = "x86_64", target_arch = "aarch64"))))]
#[inline(always)]
pub fn load_relaxed(byte: &core::sync::atomic::AtomicU8) -> u8 {
    byte.load(core::sync::atomic::Ordering::Relaxed)
}
