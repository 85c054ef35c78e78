//! One thread's site tables: fixed-capacity, in memory mapped for them
//! outside the global allocator, written by their thread alone and read by
//! any thread that takes a report.
//!
//! Three tables, each open-addressed:
//! - `stacks`: each distinct call stack once (raw return addresses);
//! - `entries`: figures per (row, stack), rows named by [`Key`];
//! - `live`: the thread's blocks allocated while rows were open and not yet
//!   freed, so that a free can take its bytes off the rows still open that
//!   saw it allocated. Only the owner reads it; it grows with the blocks
//!   (an [`AddrMap`]), and forgets those that no open row can be charged
//!   for again before it grows.
//!
//! Every table set stays mapped for the process's life, listed in one
//! lock-free list that reports read. When a thread ends, its figures move
//! into one shared map of ended threads' (keyed by raw stack), and its
//! tables, emptied, go to the next thread that needs some: a program that
//! starts threads without end keeps as many table sets as it has threads
//! at once.

use super::addr_map::{AddrMap, Zeroed, full, mix, probe};
use std::cell::{Cell, UnsafeCell};
use std::collections::HashMap;
use std::sync::atomic::{
    AtomicPtr, AtomicU64, AtomicUsize, Ordering::Acquire, Ordering::Relaxed, Ordering::Release,
};
use std::sync::{Mutex, RwLock};

/// Frames kept per stack, innermost first.
pub(crate) const MAX_FRAMES: usize = 48;
/// Open rows read per allocation; deeper ones are not charged.
pub(crate) const MAX_OPEN: usize = 256;
const STACKS: usize = 1 << 12;
const ENTRIES: usize = 1 << 15;
const MAYBE_WORDS: usize = 1 << 10;
/// Allocation counts are kept in these units, so that sampled estimates
/// (a fraction of an allocation's weight each) add up without rounding.
pub(crate) const COUNT_UNIT: u64 = 1024;
/// No stack: the stack table was full.
pub(crate) const NO_STACK: u32 = u32::MAX;

/// Which rows an allocation is charged to: one cell of one function, in the
/// table it records into (`serial` 0: the thread's aggregate; otherwise one
/// call's own table) and the `memprof::reset` generation it belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub(crate) struct Key {
    pub(crate) meta: usize,
    pub(crate) cell: u32,
    pub(crate) serial: u64,
    pub(crate) generation: u64,
}

#[repr(C)]
struct StackSlot {
    /// 0 while empty; written last.
    hash: AtomicU64,
    len: AtomicUsize,
    frames: [AtomicUsize; MAX_FRAMES],
}

#[repr(C)]
struct Entry {
    /// Set last, once `key` and `stack` are written.
    used: AtomicU64,
    meta: AtomicUsize,
    cell: AtomicU64,
    serial: AtomicU64,
    generation: AtomicU64,
    stack: AtomicU64,
    allocations: AtomicU64,
    bytes: AtomicU64,
    live: AtomicU64,
}

/// A block in `live`.
#[repr(C)]
#[derive(Clone, Copy)]
struct Live {
    /// The thread's allocation count once it was allocated.
    clock: u64,
    bytes: u64,
    stack: u32,
}

// SAFETY: integers only.
unsafe impl Zeroed for Live {}

/// A thread's tables. Zeroed memory is an empty table.
#[repr(C)]
pub(crate) struct Tables {
    next: *const Tables,
    stacks: [StackSlot; STACKS],
    entries: [Entry; ENTRIES],
    /// The owner's alone (see `live`); zeroed, an empty map.
    live: UnsafeCell<AddrMap<Live>>,
    /// One bit per hash of the blocks in `live`: a free whose bit is clear
    /// is of no remembered block, and skips the lookup in `live`, which
    /// is too large to stay in cache.
    maybe_live: [Cell<u64>; MAYBE_WORDS],
    /// `live` is scanned for blocks to forget when it holds this many.
    next_scan: Cell<usize>,
    /// Slots of `stacks` and `entries` taken (the owner's, as `live`):
    /// neither takes more than `full` of its slots, so that a probe for
    /// one not there meets a free slot in a few steps, however many stacks
    /// and rows the thread met.
    stacks_taken: Cell<usize>,
    entries_taken: Cell<usize>,
}

// SAFETY: other threads only read the atomics of `stacks` and `entries`
// (published with release stores); the cells are the owner's.
unsafe impl Sync for Tables {}

/// Every table set, newest first.
static ALL: AtomicPtr<Tables> = AtomicPtr::new(std::ptr::null_mut());

/// Reports read the tables under it; a thread's tables are emptied for
/// reuse under it alone.
static IN_USE: RwLock<()> = RwLock::new(());

/// Figures of ended threads: `(allocations, bytes, live)` by row and raw
/// stack.
type Retired = HashMap<(Key, Vec<usize>), (u64, u64, i64)>;
static RETIRED: Mutex<Option<Retired>> = Mutex::new(None);

/// Table sets mapped so far.
static MAPPED_SETS: AtomicUsize = AtomicUsize::new(0);

/// How many table sets were mapped: one per thread recording at once.
pub fn table_sets() -> usize {
    MAPPED_SETS.load(Relaxed)
}

/// Emptied table sets of ended threads, for the next threads.
static FREE: Mutex<Vec<usize>> = Mutex::new(Vec::new());

impl Tables {
    /// Maps a zeroed table set and lists it; `None` if the memory cannot
    /// be had (`RLIMIT_AS`, no `mmap`).
    pub(crate) fn create() -> Option<&'static Tables> {
        if let Some(reused) = FREE.lock().unwrap_or_else(|e| e.into_inner()).pop() {
            // SAFETY: an emptied set that no thread uses (see `retire`).
            return Some(unsafe { &*(reused as *const Tables) });
        }
        let ptr = super::mapping::map_zeroed(std::mem::size_of::<Tables>())?;
        MAPPED_SETS.fetch_add(1, Relaxed);
        let tables = ptr.cast::<Tables>();
        // SAFETY: zeroed memory is a valid `Tables` (atomics, cells and
        // plain integers, all zero; a null `next`).
        let tables: &'static Tables = unsafe { &*tables };
        let mut head = ALL.load(Relaxed);
        loop {
            // SAFETY: not yet listed: this thread is its only user.
            unsafe { (*(std::ptr::from_ref(tables).cast_mut())).next = head };
            match ALL.compare_exchange_weak(
                head,
                std::ptr::from_ref(tables).cast_mut(),
                Release,
                Relaxed,
            ) {
                Ok(_) => return Some(tables),
                Err(now) => head = now,
            }
        }
    }

    /// The stack's index, adding it if new; `NO_STACK` when the table is full.
    pub(crate) fn intern(&self, frames: &[usize]) -> u32 {
        let hash = hash_frames(frames);
        probe(hash, STACKS, STACKS / 2, |i| {
            let slot = &self.stacks[i];
            let h = slot.hash.load(Relaxed);
            if h == 0 {
                // Not there (a slot is never emptied but with the whole set).
                let taken = self.stacks_taken.get();
                if taken >= full(STACKS) {
                    return Some(NO_STACK);
                }
                self.stacks_taken.set(taken + 1);
                slot.len.store(frames.len(), Relaxed);
                for (cell, &frame) in slot.frames.iter().zip(frames) {
                    cell.store(frame, Relaxed);
                }
                slot.hash.store(hash, Release);
                return Some(i as u32);
            }
            let same = h == hash
                && slot.len.load(Relaxed) == frames.len()
                && slot
                    .frames
                    .iter()
                    .zip(frames)
                    .all(|(a, &b)| a.load(Relaxed) == b);
            same.then_some(i as u32)
        })
        .unwrap_or(NO_STACK)
    }

    /// Adds to the figures of `key`'s row from `stack`; false if the
    /// entries table had no room for a new one.
    pub(crate) fn charge(
        &self,
        key: &Key,
        stack: u32,
        allocations: u64,
        bytes: u64,
        live: i64,
    ) -> bool {
        let Some(e) = self.entry(key, stack) else {
            return false;
        };
        e.allocations
            .store(e.allocations.load(Relaxed) + allocations, Relaxed);
        e.bytes.store(e.bytes.load(Relaxed) + bytes, Relaxed);
        e.live
            .store(e.live.load(Relaxed).wrapping_add(live as u64), Relaxed);
        true
    }

    fn entry(&self, key: &Key, stack: u32) -> Option<&Entry> {
        probe(hash_key(key, stack), ENTRIES, ENTRIES / 2, |i| {
            let e = &self.entries[i];
            if e.used.load(Relaxed) == 0 {
                // Not there, as in `intern`: `None` once the table is full.
                let taken = self.entries_taken.get();
                if taken >= full(ENTRIES) {
                    return Some(None);
                }
                self.entries_taken.set(taken + 1);
                e.meta.store(key.meta, Relaxed);
                e.cell.store(u64::from(key.cell), Relaxed);
                e.serial.store(key.serial, Relaxed);
                e.generation.store(key.generation, Relaxed);
                e.stack.store(u64::from(stack), Relaxed);
                e.used.store(1, Release);
                return Some(Some(e));
            }
            let same = e.meta.load(Relaxed) == key.meta
                && e.cell.load(Relaxed) == u64::from(key.cell)
                && e.serial.load(Relaxed) == key.serial
                && e.generation.load(Relaxed) == key.generation
                && e.stack.load(Relaxed) == u64::from(stack);
            same.then_some(Some(e))
        })
        .flatten()
    }

    /// The thread's `live` map. Only its owner calls this, and never
    /// while a borrow it returned is alive: nothing in this module calls
    /// out while holding one.
    #[allow(clippy::mut_from_ref)]
    fn live(&self) -> &mut AddrMap<Live> {
        // SAFETY: see above; the owner is the only thread that reads or
        // writes `live`, and `retire` clears it on that thread.
        unsafe { &mut *self.live.get() }
    }

    /// Remembers a block allocated while rows were open, the thread's
    /// `clock`-th allocation. Before `live` grows, it first forgets the
    /// blocks allocated before `oldest_open` (the outermost open row's
    /// start), which no open row can be charged for again, and grows only
    /// if that left it more than half full: each scan is paid for by a
    /// quarter as many inserts as it looked at slots, whatever the map
    /// holds.
    /// False if the block could not be kept (the address-space budget).
    pub(crate) fn live_insert(
        &self,
        ptr: usize,
        stack: u32,
        bytes: u64,
        clock: u64,
        oldest_open: u64,
    ) -> bool {
        let live = self.live();
        if !live.has_room() && live.len() >= self.next_scan.get() {
            self.maybe_live.iter().for_each(|w| w.set(0));
            live.retain(|b| b.clock > oldest_open, |addr| self.mark_maybe_live(addr));
            if live.len() * 2 > live.capacity() {
                // NOTE: a map that cannot grow still takes blocks up to
                // seven eighths full (see `AddrMap::insert`).
                let _ = live.grow();
            }
            // The next scan waits for a quarter of the table's slots more:
            // one that cannot grow is not scanned at every insert.
            self.next_scan.set(live.len() + live.capacity() / 4);
        }
        let block = Live {
            clock,
            bytes,
            stack,
        };
        let kept = live.insert(ptr, block).is_ok();
        if kept {
            self.mark_maybe_live(ptr);
        }
        kept
    }

    /// Forgets the block at `ptr`, if remembered: its stack, bytes and the
    /// thread's allocation count once it was allocated.
    pub(crate) fn live_remove(&self, ptr: usize) -> Option<(u32, u64, u64)> {
        let (word, bit) = maybe_bit(ptr);
        if self.maybe_live[word].get() & bit == 0 {
            return None;
        }
        let block = self.live().remove(ptr)?;
        Some((block.stack, block.bytes, block.clock))
    }

    fn mark_maybe_live(&self, ptr: usize) {
        let (word, bit) = maybe_bit(ptr);
        self.maybe_live[word].set(self.maybe_live[word].get() | bit);
    }
}

/// The tables' locks, held (see `sites::hold_for_fork`), in the order
/// every other path takes them.
#[cfg(unix)]
pub(crate) struct Held {
    _free: std::sync::MutexGuard<'static, Vec<usize>>,
    _retired: std::sync::MutexGuard<'static, Option<Retired>>,
    _in_use: std::sync::RwLockWriteGuard<'static, ()>,
}

#[cfg(unix)]
pub(crate) fn hold() -> Held {
    let in_use = IN_USE.write().unwrap_or_else(|e| e.into_inner());
    let retired = RETIRED.lock().unwrap_or_else(|e| e.into_inner());
    let free = FREE.lock().unwrap_or_else(|e| e.into_inner());
    // NOTE: fields drop in declaration order, the reverse of this one.
    Held {
        _free: free,
        _retired: retired,
        _in_use: in_use,
    }
}

/// The calling thread ends: its figures join the ended threads' and its
/// tables, emptied, wait for another thread. The caller allocates outside
/// every figure.
pub(crate) fn retire(t: &'static Tables) {
    let _alone = IN_USE.write().unwrap_or_else(|e| e.into_inner());
    {
        let mut retired = RETIRED.lock().unwrap_or_else(|e| e.into_inner());
        let retired = retired.get_or_insert_with(HashMap::new);
        for c in charged_in(t, &|_| true) {
            let sum = retired.entry((c.key, c.frames)).or_insert((0, 0, 0));
            sum.0 += c.allocations;
            sum.1 += c.bytes;
            sum.2 += c.live;
        }
    }
    // The blocks it remembers can no longer be charged to its rows.
    t.live().clear();
    let next = t.next;
    let size = std::mem::size_of::<Tables>();
    let base = std::ptr::from_ref(t).cast_mut();
    // SAFETY: the thread's own set, which no one else writes, and no report
    // reads while `IN_USE` is held: zeroed (an empty set), then relinked.
    unsafe {
        #[cfg(target_os = "linux")]
        let zeroed = libc::madvise(base.cast(), size, libc::MADV_DONTNEED) == 0;
        #[cfg(not(target_os = "linux"))]
        let zeroed = false;
        if !zeroed {
            std::ptr::write_bytes(base.cast::<u8>(), 0, size);
        }
        (*base).next = next;
    }
    FREE.lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(base as usize);
}

/// One (row, stack) figure, as read by a report (`allocations` in
/// `COUNT_UNIT`s).
#[derive(Debug, Clone)]
pub(crate) struct Charged {
    pub(crate) key: Key,
    pub(crate) frames: Vec<usize>,
    pub(crate) allocations: u64,
    pub(crate) bytes: u64,
    pub(crate) live: i64,
}

/// Every thread's figures whose key `wanted` accepts.
pub(crate) fn read(wanted: impl Fn(&Key) -> bool) -> Vec<Charged> {
    let _shared = IN_USE.read().unwrap_or_else(|e| e.into_inner());
    let mut out = Vec::new();
    if let Some(retired) = RETIRED.lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
        for ((key, frames), &(allocations, bytes, live)) in retired {
            if wanted(key) {
                out.push(Charged {
                    key: *key,
                    frames: frames.clone(),
                    allocations,
                    bytes,
                    live,
                });
            }
        }
    }
    let mut tables = ALL.load(Acquire).cast_const();
    // SAFETY: listed tables are never unmapped.
    while let Some(t) = unsafe { tables.as_ref() } {
        out.extend(charged_in(t, &wanted));
        tables = t.next;
    }
    out
}

/// The figures in `t` whose key `wanted` accepts.
fn charged_in(t: &Tables, wanted: &dyn Fn(&Key) -> bool) -> Vec<Charged> {
    let mut out = Vec::new();
    for e in &t.entries {
        if e.used.load(Acquire) == 0 {
            continue;
        }
        let key = Key {
            meta: e.meta.load(Relaxed),
            cell: e.cell.load(Relaxed) as u32,
            serial: e.serial.load(Relaxed),
            generation: e.generation.load(Relaxed),
        };
        if !wanted(&key) {
            continue;
        }
        let stack = e.stack.load(Relaxed) as u32;
        let frames = match t.stacks.get(stack as usize) {
            Some(slot) if slot.hash.load(Acquire) != 0 => {
                let len = slot.len.load(Relaxed).min(MAX_FRAMES);
                slot.frames[..len].iter().map(|f| f.load(Relaxed)).collect()
            }
            _ => Vec::new(),
        };
        out.push(Charged {
            key,
            frames,
            allocations: e.allocations.load(Relaxed),
            bytes: e.bytes.load(Relaxed),
            live: e.live.load(Relaxed) as i64,
        });
    }
    out
}

fn hash_frames(frames: &[usize]) -> u64 {
    let h = frames
        .iter()
        .fold(frames.len() as u64, |h, &f| mix(h ^ f as u64));
    h.max(1)
}

fn hash_key(key: &Key, stack: u32) -> u64 {
    let h = mix(key.meta as u64 ^ u64::from(key.cell) << 40);
    let h = mix(h ^ key.serial ^ key.generation.rotate_left(32));
    mix(h ^ u64::from(stack))
}

/// The word and bit of `maybe_live` for a block at `ptr`.
// PERF: not `mix`: every free asks, and a filter's bit needs addresses
// spread, not every input bit moving every output bit: one multiply (the
// golden ratio's) and its high bits do.
fn maybe_bit(ptr: usize) -> (usize, u64) {
    let h = (ptr as u64 >> 4).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 48;
    ((h as usize >> 6) & (MAYBE_WORDS - 1), 1 << (h & 63))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_tables_take_no_more_and_still_find_theirs() {
        let t = Tables::create().expect("a table set");
        let stacks: Vec<u32> = (1..=STACKS).map(|i| t.intern(&[i, 7])).collect();
        let kept = full(STACKS);
        assert!(stacks[..kept].iter().all(|&s| s != NO_STACK));
        assert!(stacks[kept..].iter().all(|&s| s == NO_STACK));
        assert_eq!(t.intern(&[1, 7]), stacks[0]);
        assert_eq!(t.intern(&[kept, 7]), stacks[kept - 1]);
        let key = |cell| Key {
            meta: 1,
            cell,
            serial: 0,
            generation: 0,
        };
        let charged = (0..ENTRIES as u32)
            .filter(|&cell| t.charge(&key(cell), 0, 1, 8, 8))
            .count();
        assert_eq!(charged, full(ENTRIES));
        // A row it holds is still charged, one it has no room for is not.
        assert!(t.charge(&key(0), 0, 1, 8, 8));
        assert!(!t.charge(&key(ENTRIES as u32), 0, 1, 8, 8));
        let first = charged_in(t, &|k| k.meta == 1 && k.cell == 0);
        assert_eq!(first.len(), 1);
        assert_eq!((first[0].allocations, first[0].bytes), (2, 16));
    }
}
