//! Taking the calling thread's stack for an allocation site: return
//! addresses, innermost first.
//!
//! Where every crate of the program was built with frame pointers (`-C
//! force-frame-pointers=yes`, which `cargo memprof` passes; the build
//! script sees it in the crate's flags and sets `memprof_frame_pointers`),
//! the stack is walked through them: each frame holds the caller's frame
//! pointer and the return address, a few loads a frame. The standard
//! library is built with them. Elsewhere the unwinder reads the
//! debugging information, microseconds a stack.
//!
//! PERF: the walk reads only inside the thread's stack, whose bounds it
//! takes once per thread; a frame pointer outside them, misaligned or not
//! above the one before ends the walk, so code built without frame
//! pointers can shorten a stack but never make the walk read elsewhere.

/// Writes the calling thread's return addresses into `frames`, innermost
/// first; returns how many.
#[inline(never)]
pub(crate) fn take(frames: &mut [usize]) -> usize {
    #[cfg(all(
        memprof_frame_pointers,
        target_os = "linux",
        any(target_arch = "x86_64", target_arch = "aarch64")
    ))]
    if let Some(bounds) = walk::bounds() {
        return walk::frame_pointers(frames, bounds);
    }
    unwind(frames)
}

/// Whether this build keeps frame pointers that [`anchor`] and
/// [`returns_into`] read (`cargo memprof` builds with them).
pub(crate) const ANCHORS: bool = cfg!(all(
    memprof_frame_pointers,
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
));

/// The frame pointer of the function this is inlined into, for
/// [`returns_into`]; 0 where [`ANCHORS`] is false.
#[inline(always)]
pub(crate) fn anchor() -> usize {
    #[cfg(all(
        memprof_frame_pointers,
        target_os = "linux",
        any(target_arch = "x86_64", target_arch = "aarch64")
    ))]
    return walk::frame_pointer();
    #[cfg(not(all(
        memprof_frame_pointers,
        target_os = "linux",
        any(target_arch = "x86_64", target_arch = "aarch64")
    )))]
    0
}

/// The frame pointer of the caller of the function this is inlined into
/// (which must keep a frame of its own: `#[inline(never)]`), read from its
/// frame, for [`returns_into`]; 0 where [`ANCHORS`] is false or the frame
/// is not on the thread's stack.
#[inline(always)]
pub(crate) fn caller_anchor() -> usize {
    #[cfg(all(
        memprof_frame_pointers,
        target_os = "linux",
        any(target_arch = "x86_64", target_arch = "aarch64")
    ))]
    if let Some((low, high)) = walk::bounds() {
        let fp = walk::frame_pointer();
        let word = std::mem::size_of::<usize>();
        if fp < low || fp > high.saturating_sub(2 * word) || !fp.is_multiple_of(word) {
            return 0;
        }
        // SAFETY: an aligned word inside the thread's stack, which is
        // mapped: the frame's saved frame pointer.
        let caller = unsafe { *(fp as *const usize) };
        return if caller > fp && caller < high {
            caller
        } else {
            0
        };
    }
    0
}

/// For each frame pointer in `anchors` (innermost first, each at or above
/// the one before), the return address into the function whose frame it
/// is, from the frame of its callee on the calling thread's stack; 0 for
/// those the walk does not reach (a frame without a frame pointer in
/// between, or no frame pointers at all).
#[inline(never)]
pub(crate) fn returns_into(anchors: &[usize], rets: &mut [usize]) {
    rets.iter_mut().for_each(|r| *r = 0);
    #[cfg(all(
        memprof_frame_pointers,
        target_os = "linux",
        any(target_arch = "x86_64", target_arch = "aarch64")
    ))]
    if let Some(bounds) = walk::bounds() {
        let fp = walk::frame_pointer();
        // SAFETY: `bounds` are the calling thread's stack, which is mapped.
        unsafe { returns_from(fp, anchors, rets, bounds) };
    }
    #[cfg(not(all(
        memprof_frame_pointers,
        target_os = "linux",
        any(target_arch = "x86_64", target_arch = "aarch64")
    )))]
    let _ = anchors;
}

/// [`returns_into`] from the frame pointer `fp`, under [`walk_from`]'s
/// rules: the frame at `fp` holds its caller's frame pointer `next` and
/// the return address into that caller, which is each anchor's function
/// where `fp < anchor <= next`.
///
/// # Safety
/// `low..high` is readable memory.
#[cfg_attr(
    not(all(memprof_frame_pointers, target_os = "linux")),
    allow(dead_code)
)]
unsafe fn returns_from(
    mut fp: usize,
    anchors: &[usize],
    rets: &mut [usize],
    (low, high): (usize, usize),
) {
    let word = std::mem::size_of::<usize>();
    let mut i = 0;
    while i < anchors.len().min(rets.len()) {
        if fp < low || fp > high.saturating_sub(2 * word) || !fp.is_multiple_of(word) {
            return;
        }
        // SAFETY: two aligned words inside `low..high`, as the caller
        // promises is readable.
        let (next, ret) = unsafe { (*(fp as *const usize), *((fp + word) as *const usize)) };
        while i < anchors.len().min(rets.len()) && fp < anchors[i] && anchors[i] <= next {
            rets[i] = ret;
            i += 1;
        }
        if next <= fp {
            return;
        }
        fp = next;
    }
}

/// Through the unwinder.
fn unwind(frames: &mut [usize]) -> usize {
    let mut len = 0;
    if frames.is_empty() {
        return 0;
    }
    // SAFETY: no other unwinding runs on this thread meanwhile (the caller
    // runs with counting paused, so a nested allocation does not come
    // here).
    unsafe {
        backtrace::trace_unsynchronized(|frame| {
            frames[len] = frame.ip() as usize;
            len += 1;
            len < frames.len()
        });
    }
    len
}

#[cfg(all(
    memprof_frame_pointers,
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
mod walk {
    use std::cell::Cell;

    thread_local! {
        /// The thread's stack, `(lowest, highest)` address; (0, 0) until
        /// taken, (1, 0) where it could not be.
        static BOUNDS: Cell<(usize, usize)> = const { Cell::new((0, 0)) };
    }

    /// The calling thread's stack bounds, taken at its first walk.
    pub(super) fn bounds() -> Option<(usize, usize)> {
        let known = BOUNDS.try_with(Cell::get).ok()?;
        let (low, high) = if known == (0, 0) {
            let taken = read_bounds().unwrap_or((1, 0));
            let _ = BOUNDS.try_with(|b| b.set(taken));
            taken
        } else {
            known
        };
        (low < high).then_some((low, high))
    }

    /// NOTE: glibc reads `/proc/self/maps` for the main thread, allocating:
    /// the recorder runs with counting paused, so that counts nowhere.
    fn read_bounds() -> Option<(usize, usize)> {
        let mut attr = std::mem::MaybeUninit::<libc::pthread_attr_t>::uninit();
        // SAFETY: `attr` is initialized by `pthread_getattr_np` when it
        // returns 0, and destroyed after use.
        unsafe {
            if libc::pthread_getattr_np(libc::pthread_self(), attr.as_mut_ptr()) != 0 {
                return None;
            }
            let mut base = std::ptr::null_mut();
            let mut size = 0;
            let got = libc::pthread_attr_getstack(attr.as_ptr(), &mut base, &mut size);
            libc::pthread_attr_destroy(attr.as_mut_ptr());
            (got == 0 && !base.is_null()).then(|| (base as usize, base as usize + size))
        }
    }

    /// The walk through the frame pointers, from the caller's frame, within
    /// `bounds`, the thread's stack.
    #[inline(always)]
    pub(super) fn frame_pointers(frames: &mut [usize], bounds: (usize, usize)) -> usize {
        // SAFETY: `bounds` are the calling thread's stack, which is mapped.
        unsafe { super::walk_from(frame_pointer(), frames, bounds) }
    }

    /// The frame pointer register: the frame of the function this is
    /// inlined into.
    #[inline(always)]
    pub(super) fn frame_pointer() -> usize {
        let fp: usize;
        // SAFETY: reads the frame pointer register.
        unsafe {
            #[cfg(target_arch = "x86_64")]
            std::arch::asm!("mov {}, rbp", out(reg) fp, options(nomem, nostack, preserves_flags));
            #[cfg(target_arch = "aarch64")]
            std::arch::asm!("mov {}, x29", out(reg) fp, options(nomem, nostack, preserves_flags));
        }
        fp
    }
}

/// Follows the chain of frames from the frame pointer `fp`: each frame
/// holds its caller's frame pointer, then a return address. Stops at a
/// pointer outside `(low, high)`, misaligned or not above the last, or a
/// null return address.
///
/// # Safety
/// `low..high` is readable memory.
#[cfg_attr(
    not(all(
        memprof_frame_pointers,
        target_os = "linux",
        any(target_arch = "x86_64", target_arch = "aarch64")
    )),
    allow(dead_code)
)]
unsafe fn walk_from(mut fp: usize, frames: &mut [usize], (low, high): (usize, usize)) -> usize {
    let word = std::mem::size_of::<usize>();
    let mut len = 0;
    while len < frames.len() {
        if fp < low || fp > high.saturating_sub(2 * word) || !fp.is_multiple_of(word) {
            break;
        }
        // SAFETY: two aligned words inside `low..high`, as the caller
        // promises is readable.
        let (next, ret) = unsafe { (*(fp as *const usize), *((fp + word) as *const usize)) };
        if ret == 0 {
            break;
        }
        frames[len] = ret;
        len += 1;
        if next <= fp {
            break;
        }
        fp = next;
    }
    len
}

#[cfg(test)]
mod tests {
    use super::walk_from;

    #[test]
    fn the_walk_follows_the_chain_and_stops_at_what_no_stack_holds() {
        // Three frames in a stand-in stack: (caller's frame pointer, return
        // address) pairs, each caller's above its callee's.
        let mut stack = [0usize; 8];
        let base = stack.as_mut_ptr().expose_provenance();
        let word = std::mem::size_of::<usize>();
        let at = |i: usize| base + i * word;
        stack[0] = at(2);
        stack[1] = 0x1111;
        stack[2] = at(4);
        stack[3] = 0x2222;
        stack[4] = at(6);
        stack[5] = 0x3333;
        // The outermost: a frame pointer past the stack ends the walk.
        stack[6] = base + 4096;
        stack[7] = 0x4444;
        let bounds = (base, base + 8 * word);
        // The walk reads through addresses: the stores must happen.
        std::hint::black_box(&mut stack);
        let mut frames = [0usize; 8];
        // SAFETY: `bounds` is `stack`.
        let n = unsafe { walk_from(at(0), &mut frames, bounds) };
        assert_eq!(&frames[..n], [0x1111, 0x2222, 0x3333, 0x4444]);
        // A chain that turns back down, or a start outside the stack.
        stack[2] = at(0);
        std::hint::black_box(&mut stack);
        // SAFETY: as above.
        let n = unsafe { walk_from(at(0), &mut frames, bounds) };
        assert_eq!(&frames[..n], [0x1111, 0x2222]);
        // SAFETY: as above.
        assert_eq!(unsafe { walk_from(base + 1, &mut frames, bounds) }, 0);
        // SAFETY: as above.
        assert_eq!(
            unsafe { walk_from(base + 64 * word, &mut frames, bounds) },
            0
        );
        // The buffer's end ends it too.
        stack[2] = at(4);
        std::hint::black_box(&mut stack);
        let mut two = [0usize; 2];
        // SAFETY: as above.
        assert_eq!(unsafe { walk_from(at(0), &mut two, bounds) }, 2);
    }
}
