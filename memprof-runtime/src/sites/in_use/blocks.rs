//! Every block in use that an open profiled row allocated, by address:
//! what a free on any thread looks up, to take the block's weight off the
//! origin that made it.
//!
//! A process-wide hash map split into shards by the address's hash, each
//! an [`AddrMap`] behind its own spin lock (it grows as the blocks do:
//! the cost of an insert or a free does not grow with the heap). Before a
//! free takes a lock, a counting filter (one counter per hash bucket,
//! shared by all shards) answers for the frees of blocks never recorded,
//! nearly all of them when allocations are sampled: one load.
//!
//! Nothing here allocates: a lock is a flag that spins, then yields.

use crate::sites::addr_map::{SharedMap, Zeroed, mix};
use std::sync::atomic::{AtomicU16, Ordering};

const SHARDS: usize = 64;
const FILTER: usize = 1 << 16;

/// What a block stood for, handed back when it is freed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(C)]
pub(crate) struct Weight {
    pub(crate) origin: u32,
    /// Allocations, in `COUNT_UNIT`s.
    pub(crate) count: u64,
    pub(crate) bytes: u64,
}

// SAFETY: integers only.
unsafe impl Zeroed for Weight {}

static SHARD: [SharedMap<Weight>; SHARDS] = [const { SharedMap::new() }; SHARDS];

/// Recorded blocks per hash bucket, up to [`STUCK`].
///
/// PERF: two bytes a bucket, so that the filter (128 KiB, where four bytes
/// made it 256 KiB) misses the cache less: it is read at every free. A
/// bucket reaches `STUCK` only past 65,535 recorded blocks of its own
/// (about 4 billion in all); it then stays there, answering "maybe" for
/// good, and a block of it is looked up in its shard, which alone says
/// whether it is there.
static COUNTS: [AtomicU16; FILTER] = [const { AtomicU16::new(0) }; FILTER];

/// A bucket's count once it has saturated: never raised or lowered again.
const STUCK: u16 = u16::MAX;

/// What [`insert`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Inserted {
    /// A new block.
    New,
    /// The address was recorded already, with this weight: its free was
    /// not seen (a thread that does not report its frees). The new block
    /// takes its place.
    Replaced(Weight),
    /// Not recorded: no room (the address-space budget of `mapping`).
    Not,
}

/// Records the block at `ptr`.
pub(crate) fn insert(ptr: usize, weight: Weight) -> Inserted {
    let hash = mix(ptr as u64);
    match SHARD[shard_of(hash)].lock().insert(ptr, weight) {
        Ok(None) => {
            let _ =
                COUNTS[bucket_of(hash)].fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                    (n != STUCK).then(|| n + 1)
                });
            Inserted::New
        }
        Ok(Some(old)) => Inserted::Replaced(old),
        Err(_) => Inserted::Not,
    }
}

/// Whether the block at `ptr` may be recorded: false only if it is not.
///
/// NOTE: a block is recorded before its address is handed out and freed
/// by whoever holds it after, which saw the count raised.
#[inline(always)]
pub(crate) fn maybe(ptr: usize) -> bool {
    COUNTS[bucket_of(mix(ptr as u64))].load(Ordering::Relaxed) != 0
}

/// Forgets the block at `ptr`, if recorded, and hands back its weight.
pub(crate) fn remove(ptr: usize) -> Option<Weight> {
    let hash = mix(ptr as u64);
    let bucket = &COUNTS[bucket_of(hash)];
    if bucket.load(Ordering::Relaxed) == 0 {
        return None;
    }
    let found = SHARD[shard_of(hash)].lock().remove(ptr)?;
    let _ = bucket.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
        (n != STUCK).then(|| n - 1)
    });
    Some(found)
}

/// Every shard, locked, for `fork` (see `sites::hold_for_fork`).
#[cfg(unix)]
pub(crate) struct Held(#[allow(dead_code)] Vec<crate::sites::addr_map::Guard<'static, Weight>>);

/// Locks every shard. NOTE: the `Vec` is made before the first lock: a
/// thread holding one may allocate meanwhile.
#[cfg(unix)]
pub(crate) fn hold() -> Held {
    let mut held = Vec::with_capacity(SHARDS);
    for shard in &SHARD {
        held.push(shard.lock());
    }
    Held(held)
}

fn shard_of(hash: u64) -> usize {
    (hash >> 58) as usize % SHARDS
}

fn bucket_of(hash: u64) -> usize {
    (hash >> 20) as usize & (FILTER - 1)
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
    fn a_saturated_bucket_still_finds_each_of_its_blocks_once() {
        // Addresses far above the heap, and from the other test's, that
        // share one filter bucket, whose count starts a few below
        // saturation (raised only: a count the other test adds to here
        // still never reaches zero while its block is recorded).
        let base = 0x7ffe_0000_0000usize;
        let bucket = bucket_of(mix(base as u64));
        let same: Vec<usize> = (0..)
            .map(|k| base + 16 * k)
            .filter(|&p| bucket_of(mix(p as u64)) == bucket)
            .take(20)
            .collect();
        COUNTS[bucket].fetch_max(STUCK - 5, Ordering::Relaxed);
        for (k, &p) in same.iter().enumerate() {
            assert_eq!(insert(p, weight(k as u32)), Inserted::New);
        }
        assert_eq!(COUNTS[bucket].load(Ordering::Relaxed), STUCK);
        for (k, &p) in same.iter().enumerate() {
            assert_eq!(remove(p), Some(weight(k as u32)));
            assert_eq!(remove(p), None);
        }
        // Stuck for good: a free in it is looked up, and finds nothing.
        assert_eq!(COUNTS[bucket].load(Ordering::Relaxed), STUCK);
        assert_eq!(remove(same[0]), None);
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
