//! Per-thread buffers of `FUNC` lines, which the sampler writes out.

use super::*;

/// Threads that can buffer their lines at once; others write their own.
pub(super) const RINGS: usize = 64;
/// Bytes of one ring: a few hundred lines, where one interval brings at
/// most ten calls a level deep.
pub(super) const RING_BYTES: usize = 32 * 1024;

pub(super) const FREE: u8 = 0;
pub(super) const LEASED: u8 = 1;
/// Its thread has ended: free once written out.
pub(super) const RETURNED: u8 = 2;

/// One thread's `FUNC` lines, from the thread (which adds at `head`) to
/// the sampler (which writes out from `tail`). Both count bytes since the
/// ring was first used; the bytes live at their positions modulo
/// `RING_BYTES`.
pub(super) struct Ring {
    state: AtomicU8,
    head: AtomicUsize,
    tail: AtomicUsize,
    bytes: UnsafeCell<[u8; RING_BYTES]>,
}

// SAFETY: `bytes` is shared by one writer (the leasing thread, outside
// `tail..head`) and one reader (the holder of `Drain`, inside it), which
// hand the bytes over through `head` and `tail` with Release/Acquire.
unsafe impl Sync for Ring {}

impl Ring {
    pub(super) const fn new() -> Self {
        Ring {
            state: AtomicU8::new(FREE),
            head: AtomicUsize::new(0),
            tail: AtomicUsize::new(0),
            bytes: UnsafeCell::new([0; RING_BYTES]),
        }
    }

    /// Adds a line; `false` if it does not fit. Only the leasing thread
    /// calls it.
    pub(super) fn push(&self, line: &[u8]) -> bool {
        let head = self.head.load(Relaxed);
        let tail = self.tail.load(Acquire);
        if RING_BYTES - (head - tail) < line.len() {
            return false;
        }
        let at = head % RING_BYTES;
        let first = line.len().min(RING_BYTES - at);
        let base = self.bytes.get().cast::<u8>();
        // SAFETY: `at..at + first` and `0..line.len() - first` lie in the
        // ring and outside `tail..head`, which the sampler alone reads;
        // the check above keeps them from reaching into it.
        unsafe {
            std::ptr::copy_nonoverlapping(line.as_ptr(), base.add(at), first);
            std::ptr::copy_nonoverlapping(line.as_ptr().add(first), base, line.len() - first);
        }
        self.head.store(head + line.len(), Release);
        true
    }

    /// Writes out the lines added so far, in one `writev`. Only the
    /// holder of `Drain` calls it.
    pub(super) fn write_out(&self, _drain: &Drain, fd: i32) {
        let tail = self.tail.load(Relaxed);
        let head = self.head.load(Acquire);
        if head == tail {
            return;
        }
        let at = tail % RING_BYTES;
        let len = head - tail;
        let first = len.min(RING_BYTES - at);
        let base = self.bytes.get().cast::<u8>();
        // SAFETY: `tail..head` holds whole lines that the thread will not
        // touch until `tail` moves past them; both pieces lie in the ring.
        unsafe {
            let parts = [
                libc::iovec {
                    iov_base: base.add(at).cast(),
                    iov_len: first,
                },
                libc::iovec {
                    iov_base: base.cast(),
                    iov_len: len - first,
                },
            ];
            libc::writev(fd, parts.as_ptr(), if first == len { 1 } else { 2 });
        }
        self.tail.store(head, Release);
    }
}

pub(super) static RING_POOL: [Ring; RINGS] = [const { Ring::new() }; RINGS];

/// The ring a thread leased, returned when the thread ends.
pub(super) struct Lease(Cell<usize>);

pub(super) const NOT_LEASED: usize = usize::MAX;
/// Every ring was leased when the thread asked: it writes its own lines.
pub(super) const NONE_FREE: usize = usize::MAX - 1;

impl Drop for Lease {
    fn drop(&mut self) {
        if let Some(ring) = RING_POOL.get(self.0.get()) {
            ring.state.store(RETURNED, Release);
        }
    }
}

thread_local! {
    static LEASE: Lease = const { Lease(Cell::new(NOT_LEASED)) };
}

/// Adds the line to this thread's ring, leasing one first if needed;
/// `false` if the line is to be written straight away.
pub(super) fn push_to_thread_ring(line: &[u8]) -> bool {
    if EXITED.load(Acquire) {
        return false;
    }
    LEASE
        .try_with(|lease| {
            if lease.0.get() == NOT_LEASED {
                lease.0.set(lease_ring());
            }
            RING_POOL.get(lease.0.get()).is_some_and(|r| r.push(line))
        })
        .unwrap_or(false)
}

pub(super) fn lease_ring() -> usize {
    RING_POOL
        .iter()
        .position(|r| {
            r.state
                .compare_exchange(FREE, LEASED, Acquire, Relaxed)
                .is_ok()
        })
        .unwrap_or(NONE_FREE)
}

/// Writes every ring out, and frees those whose thread has ended.
pub(super) fn write_rings(drain: &Drain) {
    let fd = FD.load(Relaxed);
    for ring in &RING_POOL {
        match ring.state.load(Acquire) {
            FREE => {}
            LEASED => ring.write_out(drain, fd),
            _ => {
                ring.write_out(drain, fd);
                ring.state.store(FREE, Release);
            }
        }
    }
}
