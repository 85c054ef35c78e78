//! Memory for sites' tables: mapped outside the global allocator, zeroed,
//! and never counted in any figure.

use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

/// Maps `size` zeroed bytes; `None` if the memory cannot be had
/// (`RLIMIT_AS`, no `mmap`; `VirtualAlloc` on Windows, see `os`).
pub(crate) fn map_zeroed(size: usize) -> Option<*mut u8> {
    if !within_address_budget(size) {
        return None;
    }
    let Some(ptr) = crate::os::map_zeroed(size) else {
        MAPPED.fetch_sub(size, Relaxed);
        return None;
    };
    Some(ptr)
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
    // SAFETY: the caller's promise, passed on.
    unsafe { crate::os::unmap(ptr, size) };
    MAPPED.fetch_sub(size, Relaxed);
}

static MAPPED: AtomicUsize = AtomicUsize::new(0);

/// Bytes mapped for sites now: every thread's tables, the maps of blocks
/// and of functions' shortfalls. An upper bound of what sites keep
/// resident (a page is resident once written).
pub fn mapped_bytes() -> usize {
    MAPPED.load(Relaxed)
}

/// Whether `size` more bytes of address space may go to sites' tables,
/// counting them as mapped if so: under `RLIMIT_AS` (`ulimit -v`), all
/// tables together take at most a sixteenth of the limit, so that the
/// program keeps the address space it has unprofiled; tables past it are
/// not made (a thread records no sites, a block's use is not followed).
/// Windows has no such limit.
fn within_address_budget(size: usize) -> bool {
    let limit = crate::os::address_space_limit();
    let unlimited = limit.is_none();
    let budget = limit.map_or(usize::MAX, |limit| {
        usize::try_from(limit / 16).unwrap_or(usize::MAX)
    });
    if unlimited || MAPPED.fetch_add(size, Relaxed) + size <= budget {
        if unlimited {
            MAPPED.fetch_add(size, Relaxed);
        }
        return true;
    }
    MAPPED.fetch_sub(size, Relaxed);
    false
}
