//! Every block in use that an open profiled row allocated, by address:
//! what a free on any thread looks up, to take the block's weight off the
//! origin that made it.
//!
//! A process-wide hash map in memory mapped outside the global allocator,
//! split into shards by the address's hash, each an open-addressed table
//! behind its own spin lock that doubles when half full. Before a free
//! takes a lock, a counting filter (one counter per hash bucket, shared by
//! all shards) answers for the frees of blocks never recorded, nearly all
//! of them when allocations are sampled: one load.
//!
//! Nothing here allocates: a lock is a flag that spins, then yields.

use crate::sites::mapping::{map_zeroed, unmap};
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicUsize, Ordering};

const SHARDS: usize = 64;
const FILTER: usize = 1 << 16;
/// Slots of a shard's first table.
const FIRST_CAPACITY: usize = 1 << 10;

/// One recorded block: its address (0: empty slot), origin and weight.
#[derive(Clone, Copy)]
#[repr(C)]
struct Block {
    ptr: usize,
    origin: u32,
    count: u64,
    bytes: u64,
}

/// What a block stood for, handed back when it is freed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Weight {
    pub(crate) origin: u32,
    /// Allocations, in `COUNT_UNIT`s.
    pub(crate) count: u64,
    pub(crate) bytes: u64,
}

struct Shard {
    locked: AtomicBool,
    /// `capacity` blocks, or null before the first.
    table: AtomicPtr<Block>,
    capacity: AtomicUsize,
    len: AtomicUsize,
}

static SHARD: [Shard; SHARDS] = [const {
    Shard {
        locked: AtomicBool::new(false),
        table: AtomicPtr::new(std::ptr::null_mut()),
        capacity: AtomicUsize::new(0),
        len: AtomicUsize::new(0),
    }
}; SHARDS];

/// Recorded blocks per hash bucket.
static COUNTS: [AtomicU32; FILTER] = [const { AtomicU32::new(0) }; FILTER];

/// A shard, locked until dropped.
struct Locked(&'static Shard);

impl Locked {
    fn of(shard: &'static Shard) -> Locked {
        let mut spins = 0u32;
        while shard
            .locked
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            spins += 1;
            if spins < 64 {
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
        Locked(shard)
    }

    /// The shard's table, as a slice; empty before its first block.
    fn slots(&mut self) -> &mut [Block] {
        let table = self.0.table.load(Ordering::Relaxed);
        if table.is_null() {
            return &mut [];
        }
        // SAFETY: a mapped table of `capacity` blocks, which only the
        // holder of the lock reads or writes.
        unsafe { std::slice::from_raw_parts_mut(table, self.0.capacity.load(Ordering::Relaxed)) }
    }

    /// Makes room for one more block; false if the table cannot grow.
    fn reserve(&mut self) -> bool {
        let len = self.0.len.load(Ordering::Relaxed);
        let capacity = self.0.capacity.load(Ordering::Relaxed);
        if (len + 1) * 2 <= capacity {
            return true;
        }
        let grown = (capacity * 2).max(FIRST_CAPACITY);
        let size = grown * std::mem::size_of::<Block>();
        let Some(table) = map_zeroed(size) else {
            return false;
        };
        let table = table.cast::<Block>();
        // SAFETY: freshly mapped, zeroed: `grown` empty blocks.
        let new = unsafe { std::slice::from_raw_parts_mut(table, grown) };
        for block in self.slots().iter().filter(|b| b.ptr != 0) {
            let mut i = slot_of(block.ptr, grown);
            while new[i].ptr != 0 {
                i = (i + 1) & (grown - 1);
            }
            new[i] = *block;
        }
        let old = self.0.table.swap(table, Ordering::Relaxed);
        self.0.capacity.store(grown, Ordering::Relaxed);
        if !old.is_null() {
            // SAFETY: the old table, which nothing reads any more: only
            // the holder of the lock did.
            unsafe { unmap(old.cast(), capacity * std::mem::size_of::<Block>()) };
        }
        true
    }
}

impl Drop for Locked {
    fn drop(&mut self) {
        self.0.locked.store(false, Ordering::Release);
    }
}

/// What [`insert`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Inserted {
    /// A new block.
    New,
    /// The address was recorded already, with this weight: its free was
    /// not seen (a thread that does not report its frees). The new block
    /// takes its place.
    Replaced(Weight),
    /// Not recorded: no room.
    Not,
}

/// Records the block at `ptr`.
pub(crate) fn insert(ptr: usize, weight: Weight) -> Inserted {
    let hash = hash(ptr);
    let mut shard = Locked::of(&SHARD[shard_of(hash)]);
    // NOTE: past the address-space budget (see `mapping`) a block is not
    // recorded: in use nowhere, as sites lose what their full tables cannot
    // hold.
    if !shard.reserve() {
        return Inserted::Not;
    }
    let this: &'static Shard = shard.0;
    let slots = shard.slots();
    let mask = slots.len() - 1;
    let mut i = slot_of(ptr, slots.len());
    while slots[i].ptr != 0 && slots[i].ptr != ptr {
        i = (i + 1) & mask;
    }
    let inserted = match slots[i].ptr {
        0 => {
            this.len.fetch_add(1, Ordering::Relaxed);
            COUNTS[bucket_of(hash)].fetch_add(1, Ordering::Relaxed);
            Inserted::New
        }
        _ => Inserted::Replaced(Weight {
            origin: slots[i].origin,
            count: slots[i].count,
            bytes: slots[i].bytes,
        }),
    };
    slots[i] = Block {
        ptr,
        origin: weight.origin,
        count: weight.count,
        bytes: weight.bytes,
    };
    inserted
}

/// Forgets the block at `ptr`, if recorded, and hands back its weight.
pub(crate) fn remove(ptr: usize) -> Option<Weight> {
    let hash = hash(ptr);
    let bucket = &COUNTS[bucket_of(hash)];
    // NOTE: a block is recorded before its address is handed out and freed
    // by whoever holds it after, which saw the count raised.
    if bucket.load(Ordering::Relaxed) == 0 {
        return None;
    }
    let mut shard = Locked::of(&SHARD[shard_of(hash)]);
    let this: &'static Shard = shard.0;
    let slots = shard.slots();
    if slots.is_empty() {
        return None;
    }
    let mask = slots.len() - 1;
    let mut i = slot_of(ptr, slots.len());
    while slots[i].ptr != ptr {
        if slots[i].ptr == 0 {
            return None;
        }
        i = (i + 1) & mask;
    }
    let found = slots[i];
    // Backward-shift deletion: no tombstones, so probes stay short.
    let mut hole = i;
    let mut j = (i + 1) & mask;
    while slots[j].ptr != 0 {
        let home = slot_of(slots[j].ptr, slots.len());
        // Whether `j`'s block may move to `hole`: its home is not in the
        // cyclic range (hole, j].
        let between = if hole <= j {
            hole < home && home <= j
        } else {
            hole < home || home <= j
        };
        if !between {
            slots[hole] = slots[j];
            hole = j;
        }
        j = (j + 1) & mask;
    }
    slots[hole].ptr = 0;
    this.len.fetch_sub(1, Ordering::Relaxed);
    bucket.fetch_sub(1, Ordering::Relaxed);
    Some(Weight {
        origin: found.origin,
        count: found.count,
        bytes: found.bytes,
    })
}

/// Every shard, locked, for `fork` (see `sites::hold_for_fork`).
pub(crate) struct Held(#[allow(dead_code)] Vec<Locked>);

/// Locks every shard. NOTE: the `Vec` is made before the first lock: a
/// thread holding one may allocate meanwhile.
pub(crate) fn hold() -> Held {
    let mut held = Vec::with_capacity(SHARDS);
    for shard in &SHARD {
        held.push(Locked::of(shard));
    }
    Held(held)
}

fn hash(ptr: usize) -> u64 {
    let mut h = ptr as u64;
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

fn shard_of(hash: u64) -> usize {
    (hash >> 58) as usize % SHARDS
}

fn bucket_of(hash: u64) -> usize {
    (hash >> 20) as usize & (FILTER - 1)
}

/// The block's home slot in a table of `capacity` (a power of two).
fn slot_of(ptr: usize, capacity: usize) -> usize {
    hash(ptr) as usize & (capacity - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn weight(origin: u32) -> Weight {
        Weight {
            origin,
            count: 1024,
            bytes: u64::from(origin) * 8,
        }
    }

    #[test]
    fn blocks_come_back_once_with_their_weight_through_growth_and_deletion() {
        // Addresses no allocator hands out here: far above the heap.
        let base = 0x7fff_0000_0000usize;
        let n = 5_000;
        for k in 0..n {
            assert_eq!(insert(base + 16 * k, weight(k as u32)), Inserted::New);
        }
        // An address recorded again (its free unseen) hands back the old
        // weight, and keeps the new one.
        assert_eq!(insert(base, weight(7)), Inserted::Replaced(weight(0)));
        assert_eq!(insert(base, weight(0)), Inserted::Replaced(weight(7)));
        // Every other one freed, then all looked up: shifted blocks are
        // still found.
        for k in (0..n).step_by(2) {
            assert_eq!(remove(base + 16 * k), Some(weight(k as u32)));
        }
        for k in 0..n {
            let expected = (k % 2 == 1).then(|| weight(k as u32));
            assert_eq!(remove(base + 16 * k), expected, "block {k}");
        }
        assert_eq!(remove(base), None);
    }
}
