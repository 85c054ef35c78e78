//! A shorter way from the allocator to the calling thread's counters.
//!
//! Library crates are compiled for the general-dynamic TLS model, in which a
//! thread-local is reached through a call to `__tls_get_addr`. The linker
//! rewrites that call into two instructions when it links an executable,
//! but the code around it was generated for a call: the allocator's fast
//! path saves and restores registers that it never needed. That costs about
//! a fifth of a glibc malloc+free pair when memprof is installed as the
//! global allocator by its `global-allocator` feature.
//!
//! A thread-local of the main program lies at the same distance from the
//! thread pointer in every thread: that is what the local-exec model that
//! executables use relies on. So the first thread to allocate measures that
//! distance, checks with `dl_iterate_phdr` that the counters really are in
//! the main program's TLS block, and publishes it; from then on the fast
//! path adds it to the thread pointer, read with one instruction. Where the
//! check fails (memprof inside a shared library, which may have been loaded
//! with `dlopen` and given dynamic TLS) or on other targets, the distance
//! stays unknown and the allocator reaches its counters the usual way.
//!
//! The published distance doubles as the allocator's switch for the whole
//! process: while a process-scope watch is open it is withdrawn (see
//! [`suspend`]), so that every allocation takes the slow path that feeds the
//! watch, and the fast path pays for that with the test of the offset it
//! makes anyway.

use std::sync::atomic::{
    AtomicBool, AtomicIsize, AtomicU8,
    Ordering::{Relaxed, SeqCst},
};

/// What the fast path reads: [`LEARNED`] where the shortcut is usable and not
/// suspended; 0 otherwise.
pub(crate) static OFFSET: AtomicIsize = AtomicIsize::new(0);
/// The counters' distance from the thread pointer, once found to be the same
/// in every thread.
static LEARNED: AtomicIsize = AtomicIsize::new(0);
/// Set while a process-scope watch is open.
static SUSPENDED: AtomicBool = AtomicBool::new(false);

const UNDECIDED: u8 = 0;
const USABLE: u8 = 1;
const UNUSABLE: u8 = 2;
static STATE: AtomicU8 = AtomicU8::new(UNDECIDED);

/// Whether this target has the shortcut: x86-64 and AArch64 Linux.
pub(crate) const SUPPORTED: bool = cfg!(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
));

/// The distance to take, or 0.
#[inline(always)]
pub(crate) fn offset() -> isize {
    OFFSET.load(Relaxed)
}

/// Brings [`OFFSET`] in line with [`STATE`], [`LEARNED`] and [`SUSPENDED`].
/// Called after every change to one of them.
fn publish() {
    let wanted = || {
        if STATE.load(SeqCst) == USABLE && !SUSPENDED.load(SeqCst) {
            LEARNED.load(SeqCst)
        } else {
            0
        }
    };
    // NOTE: two threads publishing at once may store in either order; the
    // one that stores last checks again afterwards, so the final value is
    // what the final inputs want.
    loop {
        let offset = wanted();
        OFFSET.store(offset, SeqCst);
        if wanted() == offset {
            return;
        }
    }
}

/// Withdraws the shortcut while `on`, sending every thread's allocator to
/// its slow path; puts it back, if usable, once called with `false`.
pub(crate) fn suspend(on: bool) {
    SUSPENDED.store(on, SeqCst);
    publish();
}

/// Whether the allocator reaches its counters through the shortcut, outside
/// process-scope watches.
pub fn in_use() -> bool {
    STATE.load(Relaxed) == USABLE
}

/// Stops the allocator from taking the shortcut, for the rest of the
/// process: for tests of the way it goes without one.
pub fn give_up() {
    STATE.store(UNUSABLE, SeqCst);
    publish();
}

pub(crate) use crate::kernel::thread::pointer as thread_pointer;

/// Called by each thread once, from the allocator's slow path, with the
/// address of its counters (`size` bytes): publishes their distance from the
/// thread pointer if it holds for every thread, and withdraws it if this
/// thread finds it wrong.
pub(crate) fn learn(addr: usize, size: usize) {
    let offset = addr.wrapping_sub(thread_pointer()) as isize;
    match STATE.load(Relaxed) {
        UNDECIDED => {
            let usable = SUPPORTED && offset != 0 && in_main_program_tls(addr, size);
            if usable {
                LEARNED.store(offset, SeqCst);
            }
            // Two threads may both get here: the first decision stands.
            let _ = STATE.compare_exchange(
                UNDECIDED,
                if usable { USABLE } else { UNUSABLE },
                SeqCst,
                SeqCst,
            );
            publish();
        }
        // NOTE: cannot happen for the main program's TLS; should it all the
        // same, no thread takes the shortcut from here on.
        USABLE if LEARNED.load(SeqCst) != offset => give_up(),
        _ => {}
    }
}

/// Whether `size` bytes at `addr` lie in the calling thread's TLS block of
/// the main program, the first object `dl_iterate_phdr` reports.
#[cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
fn in_main_program_tls(addr: usize, size: usize) -> bool {
    use libc::{c_int, c_void, dl_phdr_info, size_t};

    struct Query {
        addr: usize,
        size: usize,
        inside: bool,
    }

    unsafe extern "C" fn first_object(
        info: *mut dl_phdr_info,
        info_size: size_t,
        data: *mut c_void,
    ) -> c_int {
        // SAFETY: `data` is the `Query` passed below, alive for the call.
        let query = unsafe { &mut *data.cast::<Query>() };
        let has_tls_fields = info_size >= std::mem::size_of::<dl_phdr_info>();
        // SAFETY: the loader passes a valid `info`; the TLS fields are read
        // only when it says it filled them.
        let info = unsafe { &*info };
        if has_tls_fields && info.dlpi_tls_modid != 0 && !info.dlpi_tls_data.is_null() {
            // SAFETY: `dlpi_phdr` points at `dlpi_phnum` program headers.
            let headers =
                unsafe { std::slice::from_raw_parts(info.dlpi_phdr, usize::from(info.dlpi_phnum)) };
            if let Some(tls) = headers.iter().find(|h| h.p_type == libc::PT_TLS) {
                let start = info.dlpi_tls_data as usize;
                let end = start.saturating_add(tls.p_memsz as usize);
                query.inside = query.addr >= start && query.addr.saturating_add(query.size) <= end;
            }
        }
        // Only the first object, the main program, matters.
        1
    }

    let mut query = Query {
        addr,
        size,
        inside: false,
    };
    // SAFETY: the callback matches the expected signature and only reads
    // what the loader hands it; `query` outlives the call. The loader takes
    // its own lock and does not allocate here.
    unsafe { libc::dl_iterate_phdr(Some(first_object), (&raw mut query).cast()) };
    query.inside
}

/// No main program TLS block to find on this target.
#[cfg(not(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
)))]
fn in_main_program_tls(_addr: usize, _size: usize) -> bool {
    false
}

#[cfg(test)]
#[cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
mod tests {
    #[test]
    fn a_thread_local_of_the_test_binary_is_found_in_its_tls_block() {
        thread_local! {
            static HERE: u64 = const { 7 };
        }
        let addr = HERE.with(|h| h as *const u64 as usize);
        assert!(super::in_main_program_tls(addr, 8));
        // A heap address is not in any TLS block.
        let boxed = Box::new(0u64);
        assert!(!super::in_main_program_tls(
            &*boxed as *const u64 as usize,
            8
        ));
    }

    #[test]
    fn a_watch_withdraws_the_offset_and_its_end_brings_it_back() {
        use super::*;
        // NOTE: no counting allocator is installed in this test binary, so
        // the offset set here leads nowhere.
        LEARNED.store(-4096, SeqCst);
        STATE.store(USABLE, SeqCst);
        publish();
        assert_eq!(offset(), -4096);
        suspend(true);
        assert_eq!(offset(), 0);
        assert!(in_use());
        suspend(false);
        assert_eq!(offset(), -4096);
        give_up();
        assert_eq!(offset(), 0);
        suspend(false);
        assert_eq!(offset(), 0);
        assert!(!in_use());
    }

    #[test]
    fn the_offset_is_the_same_in_every_thread() {
        thread_local! {
            static HERE: u64 = const { 7 };
        }
        let offset = || {
            HERE.with(|h| h as *const u64 as usize)
                .wrapping_sub(super::thread_pointer())
        };
        let main = offset();
        let others: Vec<usize> = (0..4)
            .map(|_| std::thread::spawn(offset).join().unwrap())
            .collect();
        assert_eq!(others, vec![main; 4]);
    }
}
