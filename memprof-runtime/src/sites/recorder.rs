//! The calling thread's side of sites: which rows are open (pushed and
//! popped by the runtime's statement step), and what the allocator's slow
//! path reports while any is: each allocation's stack, charged to every open
//! row, and each free of a block those rows saw allocated.
//!
//! Nothing here allocates or locks: stacks are taken with the unwinder into
//! a buffer on the stack, and figures go into the thread's [`Tables`].

use super::tables::{COUNT_UNIT, Key, MAX_FRAMES, MAX_OPEN, NO_STACK, Open, Tables};
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// One thread's recorder. No field needs drop: no TLS destructor.
struct Recorder {
    tables: Cell<*const Tables>,
    /// Tables could not be mapped: this thread records no sites.
    failed: Cell<bool>,
    /// Rows open, of which the first `MAX_OPEN` are in `tables.open`.
    depth: Cell<usize>,
    next_exec: Cell<u64>,
    /// Sampling: bytes left before the next sample, and the generator.
    until_sample: Cell<i64>,
    rng: Cell<u64>,
}

thread_local! {
    static RECORDER: Recorder = const {
        Recorder {
            tables: Cell::new(std::ptr::null()),
            failed: Cell::new(false),
            depth: Cell::new(0),
            next_exec: Cell::new(1),
            until_sample: Cell::new(i64::MIN),
            rng: Cell::new(0),
        }
    };
}

impl Recorder {
    fn tables(&self) -> Option<&'static Tables> {
        // SAFETY: null or tables that are never unmapped.
        if let Some(t) = unsafe { self.tables.get().as_ref() } {
            return Some(t);
        }
        if self.failed.get() {
            return None;
        }
        match Tables::create() {
            Some(t) => {
                self.tables.set(t);
                Some(t)
            }
            None => {
                self.failed.set(true);
                None
            }
        }
    }
}

/// A row opens on this thread. Returns whether it is the first open one
/// (the allocator's slow path must then report to [`allocation`] and
/// [`free`]).
pub(crate) fn opened(key: Key) -> bool {
    RECORDER
        .try_with(|r| {
            let Some(t) = r.tables() else {
                return false;
            };
            let depth = r.depth.get();
            if depth < MAX_OPEN {
                let nested = (0..depth).any(|i| t.open[i].get().key == key);
                let exec = r.next_exec.get();
                r.next_exec.set(exec + 1);
                t.open[depth].set(Open { key, exec, nested });
            }
            r.depth.set(depth + 1);
            depth == 0
        })
        .unwrap_or(false)
}

/// The innermost open row closes. Returns whether none is left open.
pub(crate) fn closed() -> bool {
    RECORDER
        .try_with(|r| {
            let depth = r.depth.get();
            if depth == 0 {
                return false;
            }
            r.depth.set(depth - 1);
            if depth == 1 {
                if let Some(t) = r.tables() {
                    t.forget_live();
                }
                return true;
            }
            false
        })
        .unwrap_or(false)
}

/// The weight of one allocation of `size` bytes: the allocations (in
/// `COUNT_UNIT`s) and bytes it stands for, or `None` when sampling leaves
/// it out.
fn weight(r: &Recorder, size: usize) -> Option<(u64, u64)> {
    let Some(mean) = super::sample_mean() else {
        return Some((COUNT_UNIT, size as u64));
    };
    // Poisson sampling by bytes: each byte is sampled with probability
    // 1/mean, so the distance between sampled bytes is exponential. An
    // allocation holding at least one sampled byte is taken, standing for
    // size / p bytes where p = 1 - exp(-size / mean).
    let mut left = r.until_sample.get();
    if left == i64::MIN {
        left = next_distance(r, mean);
    }
    left -= size as i64;
    if left > 0 {
        r.until_sample.set(left);
        return None;
    }
    while left <= 0 {
        left += next_distance(r, mean);
    }
    r.until_sample.set(left);
    let p = 1.0 - (-(size as f64) / mean as f64).exp();
    if p <= 0.0 {
        return Some((COUNT_UNIT, size as u64));
    }
    Some((
        (COUNT_UNIT as f64 / p).round() as u64,
        (size as f64 / p).round() as u64,
    ))
}

/// An exponential distance with the given mean, from the thread's generator.
fn next_distance(r: &Recorder, mean: u64) -> i64 {
    let mut x = r.rng.get();
    if x == 0 {
        // Seeded from the process's seed and the order in which threads
        // first sample, so that threads draw apart but a run repeats.
        static THREADS: AtomicU64 = AtomicU64::new(0);
        let nth = THREADS.fetch_add(1, Relaxed);
        x = (super::sample_seed() ^ nth.wrapping_mul(0x9e37_79b9_7f4a_7c15)) | 1;
    }
    // xorshift64*
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    r.rng.set(x);
    let bits = x.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11;
    let u = (bits as f64 + 1.0) / (1u64 << 53) as f64;
    (-(u.ln()) * mean as f64).ceil().max(1.0) as i64
}

/// An allocation of `size` bytes at `ptr` (null if unknown) while rows are
/// open: charged to each of them, once per row however deep it recurses.
/// Called from the allocator's slow path with counting paused.
#[inline(never)]
pub(crate) fn allocation(ptr: *mut u8, size: usize) {
    let _ = RECORDER.try_with(|r| {
        let depth = r.depth.get().min(MAX_OPEN);
        if depth == 0 {
            return;
        }
        let Some(t) = r.tables() else {
            return;
        };
        let Some((allocations, bytes)) = weight(r, size) else {
            return;
        };
        let mut frames = [0usize; MAX_FRAMES];
        let mut len = 0;
        // SAFETY: no other unwinding runs on this thread meanwhile (a
        // nested allocation finds counting paused and does not come here).
        unsafe {
            backtrace::trace_unsynchronized(|frame| {
                frames[len] = frame.ip() as usize;
                len += 1;
                len < MAX_FRAMES
            });
        }
        let stack = t.intern(&frames[..len]);
        let signed = i64::try_from(bytes).unwrap_or(i64::MAX);
        for i in 0..depth {
            let open = t.open[i].get();
            if !open.nested {
                t.charge(&open.key, stack, allocations, bytes, signed);
            }
        }
        if !ptr.is_null() && stack != NO_STACK {
            t.live_insert(ptr as usize, stack, bytes, t.open[depth - 1].get().exec);
        }
    });
}

/// A free of the block at `ptr` while rows are open: the rows that saw it
/// allocated and are still open no longer hold its bytes.
#[inline(never)]
pub(crate) fn free(ptr: *mut u8) {
    let _ = RECORDER.try_with(|r| {
        let depth = r.depth.get().min(MAX_OPEN);
        if depth == 0 || ptr.is_null() {
            return;
        }
        let Some(t) = r.tables() else {
            return;
        };
        let Some((stack, bytes, exec)) = t.live_remove(ptr as usize) else {
            return;
        };
        let signed = i64::try_from(bytes).unwrap_or(i64::MAX);
        // A row opened after the block was allocated has a later `exec`;
        // one still open from before has an earlier or equal one.
        for i in 0..depth {
            let open = t.open[i].get();
            if open.exec <= exec && !open.nested {
                t.charge(&open.key, stack, 0, 0, -signed);
            }
        }
    });
}
