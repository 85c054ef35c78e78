//! Memory for sites' tables: mapped outside the global allocator, zeroed,
//! and never counted in any figure.

use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

/// Maps `size` zeroed bytes; `None` if the memory cannot be had
/// (`RLIMIT_AS`, no `mmap`).
pub(crate) fn map_zeroed(size: usize) -> Option<*mut u8> {
    if !within_address_budget(size) {
        return None;
    }
    // SAFETY: an anonymous private mapping; checked below.
    let ptr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            size,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if ptr == libc::MAP_FAILED || ptr.is_null() {
        MAPPED.fetch_sub(size, Relaxed);
        return None;
    }
    Some(ptr.cast())
}

/// Asks for huge pages under a large table that is probed at random (where
/// the kernel gives them only when asked: transparent huge pages in
/// `madvise` mode): one TLB entry per 2 MiB instead of per 4 KiB, so that
/// a probe into a map of millions of blocks costs the same as into one of
/// thousands. Small tables, and other systems, keep their pages.
pub(crate) fn prefer_huge_pages(ptr: *mut u8, size: usize) {
    #[cfg(target_os = "linux")]
    if size >= 4 << 20 {
        // SAFETY: advice on a mapping of ours; a refusal changes nothing.
        unsafe { libc::madvise(ptr.cast(), size, libc::MADV_HUGEPAGE) };
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (ptr, size);
}

/// Unmaps what [`map_zeroed`] mapped, `size` bytes at `ptr`.
///
/// # Safety
/// Nothing may use the memory any more.
pub(crate) unsafe fn unmap(ptr: *mut u8, size: usize) {
    // SAFETY: the caller's promise; a failure leaves the mapping in place.
    unsafe { libc::munmap(ptr.cast(), size) };
    MAPPED.fetch_sub(size, Relaxed);
}

static MAPPED: AtomicUsize = AtomicUsize::new(0);

/// Whether `size` more bytes of address space may go to sites' tables,
/// counting them as mapped if so: under `RLIMIT_AS` (`ulimit -v`), all
/// tables together take at most a sixteenth of the limit, so that the
/// program keeps the address space it has unprofiled; tables past it are
/// not made (a thread records no sites, a block's use is not followed).
fn within_address_budget(size: usize) -> bool {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: a valid `rlimit` to fill.
    let unlimited = unsafe { libc::getrlimit(libc::RLIMIT_AS, &mut limit) } != 0
        || limit.rlim_cur == libc::RLIM_INFINITY;
    let budget = usize::try_from(limit.rlim_cur / 16).unwrap_or(usize::MAX);
    if unlimited || MAPPED.fetch_add(size, Relaxed) + size <= budget {
        if unlimited {
            MAPPED.fetch_add(size, Relaxed);
        }
        return true;
    }
    MAPPED.fetch_sub(size, Relaxed);
    false
}
