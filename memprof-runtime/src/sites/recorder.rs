//! What the allocator's slow path reports while sites are recorded: each
//! allocation (its stack, charged to the profiled rows open on the thread)
//! and each free of a block those rows saw allocated.
//!
//! The open rows are read when needed, from the thread's side stack, by the
//! walker the runtime registers (see `probe::open_rows`): statements and
//! calls run as they do without sites. A row was open when a block was
//! allocated if it is open now and started before it, by the thread's
//! allocation count (`clock`), which each row keeps at its start.
//!
//! Nothing here allocates: stacks are taken (see `frames`) into a buffer
//! on the stack, figures go into the thread's [`Tables`], and each block
//! into `in_use`, under one of its shards' spin locks.

use super::left_out::{self, Kind};
use super::tables::{COUNT_UNIT, Key, MAX_FRAMES, MAX_OPEN, NO_STACK, Tables};
use std::cell::Cell;
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};

/// One profiled row open on the thread: what it is charged to, and the
/// thread's allocation count when it started.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct OpenRow {
    pub(crate) key: Key,
    pub(crate) start: u64,
}

/// Writes the rows open on the calling thread into the buffer, outermost
/// first, each key once (a recursion's outermost execution), and returns
/// how many it wrote (from the start).
pub(crate) type Walker = fn(&mut Rows) -> usize;

/// Room for the open rows. PERF: uninitialized, as it is made at each
/// recorded allocation and its size is many times a walk's usual output.
pub(crate) type Rows = [MaybeUninit<OpenRow>; MAX_OPEN];

fn no_rows() -> Rows {
    [const { MaybeUninit::uninit() }; MAX_OPEN]
}

static WALKER: AtomicUsize = AtomicUsize::new(0);

/// Registers the function that reads the open rows.
pub(crate) fn set_walker(walker: Walker) {
    WALKER.store(walker as usize, Relaxed);
}

/// The rows open on this thread, outermost first, each key once (a
/// recursion's outermost execution), at the start of `rows`.
fn open_rows(rows: &mut Rows) -> &[OpenRow] {
    let walker = WALKER.load(Relaxed);
    if walker == 0 {
        return &[];
    }
    // SAFETY: only `set_walker` stores here, a `Walker`.
    let walker: Walker = unsafe { std::mem::transmute::<usize, Walker>(walker) };
    let n = walker(rows).min(MAX_OPEN);
    // SAFETY: the walker wrote the first `n`, and `MaybeUninit<T>` has
    // `T`'s layout.
    unsafe { std::slice::from_raw_parts(rows.as_ptr().cast::<OpenRow>(), n) }
}

/// One thread's recorder. No field needs drop: no TLS destructor.
struct Recorder {
    tables: Cell<*const Tables>,
    /// Tables could not be mapped: this thread records no sites.
    failed: Cell<bool>,
    /// Sampling's generator, 0 before the thread's first draw (the
    /// countdown it feeds is the allocator's, see [`allocation`]).
    rng: Cell<u64>,
}

thread_local! {
    static RECORDER: Recorder = const {
        Recorder {
            tables: Cell::new(std::ptr::null()),
            failed: Cell::new(false),
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

/// The calling thread ends: it records no more sites, and its tables go
/// to the next thread (see `tables::retire`). The caller allocates outside
/// every figure.
pub(crate) fn thread_ends() {
    let _ = RECORDER.try_with(|r| {
        r.failed.set(true);
        let tables = r.tables.replace(std::ptr::null());
        // SAFETY: null or this thread's tables, which it no longer uses.
        if let Some(t) = unsafe { tables.as_ref() } {
            super::tables::retire(t);
        }
    });
}

/// The weight of one allocation of `size` bytes: the allocations (in
/// `COUNT_UNIT`s) and bytes it stands for, or `None` when sampling leaves
/// it out. `until_sample`: the bytes the thread may allocate before its
/// next sample, which the allocator's fast path counts down too (without
/// calling here while it stays above 0).
fn weight(r: &Recorder, size: usize, until_sample: &Cell<i64>) -> Option<(u64, u64)> {
    let Some(mean) = super::sample_mean() else {
        return Some((COUNT_UNIT, size as u64));
    };
    // Poisson sampling by bytes: each byte is sampled with probability
    // 1/mean, so the distance between sampled bytes is exponential. An
    // allocation holding at least one sampled byte is taken, standing for
    // size / p bytes where p = 1 - exp(-size / mean).
    let mut left = until_sample.get();
    if r.rng.get() == 0 {
        left = next_distance(r, mean);
    }
    left -= size as i64;
    if left > 0 {
        until_sample.set(left);
        return None;
    }
    while left <= 0 {
        left += next_distance(r, mean);
    }
    until_sample.set(left);
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

/// An allocation of `size` bytes at `ptr` (null if unknown), the thread's
/// `clock`-th: charged to each profiled row open on the thread, once per
/// row however deep it recurses. Called from the allocator's slow path
/// with counting paused, with the thread's sampling countdown (see
/// [`weight`]).
#[inline(never)]
pub(crate) fn allocation(ptr: *mut u8, size: usize, clock: u64, until_sample: &Cell<i64>) {
    // A thread follows sites before they are configured (see
    // `follow_every_thread`), and after a bad `MEMPROF_SITES` turned them off.
    if !super::enabled() {
        return;
    }
    let _ = RECORDER.try_with(|r| {
        let Some((allocations, bytes)) = weight(r, size, until_sample) else {
            return;
        };
        record(r, ptr, clock, allocations, bytes);
    });
}

/// [`allocation`] for one taken (every one with exact sites, a sample's
/// otherwise): standing for `allocations` and `bytes`.
///
/// PERF: a function of its own, whose frame (the open rows, the stack's
/// frames: about 12 KiB, touched page by page on entry) only a recorded
/// allocation pays; with sampled sites most allocations return before it.
#[inline(never)]
fn record(r: &Recorder, ptr: *mut u8, clock: u64, allocations: u64, bytes: u64) {
    let mut room = no_rows();
    let rows = open_rows(&mut room);
    if rows.is_empty() {
        return;
    }
    let Some(t) = r.tables() else {
        return;
    };
    let mut frames = [0usize; MAX_FRAMES];
    let len = super::frames::take(&mut frames);
    let stack = t.intern(&frames[..len]);
    let signed = i64::try_from(bytes).unwrap_or(i64::MAX);
    // The functions of the rows a table had no room for, each said
    // once (see `left_out`). PERF: uninitialized, as `Rows` is: written
    // only when a table is full.
    let mut unsited = [const { MaybeUninit::<usize>::uninit() }; MAX_OPEN];
    let mut n = 0;
    for row in rows {
        if !t.charge(&row.key, stack, allocations, bytes, signed) {
            unsited[n].write(row.key.meta);
            n += 1;
        }
    }
    if n > 0 {
        // SAFETY: the first `n` were written above, and `MaybeUninit<T>`
        // has `T`'s layout.
        let metas = unsafe { std::slice::from_raw_parts(unsited.as_ptr().cast::<usize>(), n) };
        left_out::add_each(metas, Kind::Sites, allocations, bytes);
    }
    if ptr.is_null() {
        return;
    }
    // Blocks no open row can be charged for again make room.
    let mut paired =
        stack != NO_STACK && t.live_insert(ptr as usize, stack, bytes, clock, rows[0].start);
    let open = rows.iter().map(|row| super::in_use::Row {
        meta: row.key.meta,
        cell: row.key.cell,
    });
    let in_use = super::in_use::allocated(ptr as usize, open, &frames[..len], allocations, bytes);
    // With sampled sites a free reaches `free` only where the in-use
    // filter knows its block (see `alloc::record`): a block it does not
    // hold cannot be paired with its free either.
    if paired && !in_use && super::sample_mean().is_some() {
        t.live_remove(ptr as usize);
        paired = false;
    }
    if !paired {
        unpaired(rows, allocations, bytes);
    }
}

/// The block just allocated while `rows` were open cannot be paired with
/// its free: said once for each of their functions.
#[cold]
#[inline(never)]
fn unpaired(rows: &[OpenRow], allocations: u64, bytes: u64) {
    let mut metas = [0usize; MAX_OPEN];
    for (meta, row) in metas.iter_mut().zip(rows) {
        *meta = row.key.meta;
    }
    left_out::add_each(&metas[..rows.len()], Kind::LineEnd, allocations, bytes);
}

/// A free of the block at `ptr`, on any thread: the rows that saw it
/// allocated and are still open no longer hold its bytes, and its origin
/// no longer has it in use.
#[inline(never)]
pub(crate) fn free(ptr: *mut u8) {
    if ptr.is_null() {
        return;
    }
    super::in_use::freed(ptr as usize);
    let _ = RECORDER.try_with(|r| {
        // SAFETY: null or tables that are never unmapped.
        let Some(t) = (unsafe { r.tables.get().as_ref() }) else {
            return;
        };
        let Some((stack, bytes, clock)) = t.live_remove(ptr as usize) else {
            return;
        };
        freed_while_open(t, stack, bytes, clock);
    });
}

/// [`free`] of a block this thread recorded: the rows open since before
/// it was allocated no longer hold its bytes.
///
/// PERF: a function of its own, whose frame (the open rows) only such a
/// free pays, not every free that [`free`] looks up.
#[inline(never)]
fn freed_while_open(t: &Tables, stack: u32, bytes: u64, clock: u64) {
    let mut room = no_rows();
    let signed = i64::try_from(bytes).unwrap_or(i64::MAX);
    for row in open_rows(&mut room).iter().filter(|row| row.start < clock) {
        t.charge(&row.key, stack, 0, 0, -signed);
    }
}
