//! The one hash table of sites' hot paths: blocks by address, in memory
//! mapped outside the global allocator (see `mapping`), open-addressed with
//! linear probing, growing by doubling when three quarters full, emptied by
//! backward-shift deletion (no tombstones), so that a lookup, an insert or
//! a removal costs the same whatever the map holds. Also the one mixer that
//! every sites table hashes with, and the one linear probe that the fixed
//! tables (`tables`, `in_use::origins`) and this map look for a slot with.
//!
//! An `AddrMap` has one user at a time: a thread's own tables, or, as a
//! [`SharedMap`], whoever holds its spin lock. Nothing here allocates.

use super::mapping::{map_zeroed, prefer_huge_pages, unmap};
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, Ordering};

/// Slots of a map's first table: one page of 32-byte slots.
const FIRST_CAPACITY: usize = 128;

/// A value kept in an [`AddrMap`].
///
/// # Safety
/// All-zero bytes must be a valid value: a map's tables are mapped zeroed.
pub(crate) unsafe trait Zeroed: Copy {}

#[repr(C)]
#[derive(Clone, Copy)]
struct Slot<V> {
    /// 0: empty.
    addr: usize,
    value: V,
}

/// Values by non-zero address.
pub(crate) struct AddrMap<V: Zeroed> {
    /// `capacity` slots, or null before the first insert.
    slots: *mut Slot<V>,
    capacity: usize,
    len: usize,
}

/// An address could not be kept: the map was full and could not grow
/// (the address-space budget of `mapping`, or no memory).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct NoRoom;

// SAFETY: the map owns its mapping; `&mut` access is its only writer.
unsafe impl<V: Zeroed + Send> Send for AddrMap<V> {}

impl<V: Zeroed> AddrMap<V> {
    pub(crate) const fn new() -> Self {
        AddrMap {
            slots: std::ptr::null_mut(),
            capacity: 0,
            len: 0,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Slots in its table: it grows when `len` reaches half of them.
    pub(crate) fn capacity(&self) -> usize {
        self.capacity
    }

    /// Bytes of address space mapped for it.
    pub(crate) fn mapped_bytes(&self) -> usize {
        self.capacity * std::mem::size_of::<Slot<V>>()
    }

    fn slots(&self) -> &[Slot<V>] {
        if self.slots.is_null() {
            return &[];
        }
        // SAFETY: a mapped table of `capacity` slots, which the map owns.
        unsafe { std::slice::from_raw_parts(self.slots, self.capacity) }
    }

    fn slots_mut(&mut self) -> &mut [Slot<V>] {
        if self.slots.is_null() {
            return &mut [];
        }
        // SAFETY: as in `slots`; `&mut self` is the only access.
        unsafe { std::slice::from_raw_parts_mut(self.slots, self.capacity) }
    }

    /// Whether one more address fits without growing: at most three
    /// quarters full, where linear probing's chains stay a few slots long
    /// (a cache line or two) and a map holds 43–85 B per address of 32-byte
    /// slots, wherever its count falls between two powers of two.
    pub(crate) fn has_room(&self) -> bool {
        (self.len + 1) * 4 <= self.capacity * 3
    }

    /// Keeps `value` at `addr`, handing back the value it replaces.
    /// Grows first when three quarters full; past the budget it fills up
    /// to seven eighths (longer probes, no failure) before refusing.
    pub(crate) fn insert(&mut self, addr: usize, value: V) -> Result<Option<V>, NoRoom> {
        debug_assert!(addr != 0);
        if !self.has_room() && !self.grow() && (self.len + 1) * 8 > self.capacity * 7 {
            return Err(NoRoom);
        }
        // NOTE: never `None` here: the table is at most seven eighths full.
        let i = self.slot_of(addr).ok_or(NoRoom)?;
        let slots = self.slots_mut();
        let old = (slots[i].addr == addr).then_some(slots[i].value);
        slots[i] = Slot { addr, value };
        if old.is_none() {
            self.len += 1;
        }
        Ok(old)
    }

    /// The value at `addr`, if kept.
    pub(crate) fn get(&self, addr: usize) -> Option<V> {
        self.find(addr).map(|i| self.slots()[i].value)
    }

    /// Forgets `addr`, handing back its value.
    pub(crate) fn remove(&mut self, addr: usize) -> Option<V> {
        let i = self.find(addr)?;
        let value = self.slots()[i].value;
        self.remove_at(i);
        Some(value)
    }

    /// Keeps only the addresses whose value `keep` accepts; calls `each`
    /// on every address kept.
    pub(crate) fn retain(&mut self, keep: impl Fn(&V) -> bool, mut each: impl FnMut(usize)) {
        let mut i = 0;
        while i < self.capacity {
            let slot = self.slots()[i];
            if slot.addr != 0 && !keep(&slot.value) {
                // The slot may receive a later address: look at it again.
                self.remove_at(i);
                continue;
            }
            i += 1;
        }
        self.slots()
            .iter()
            .filter(|s| s.addr != 0)
            .for_each(|s| each(s.addr));
    }

    /// Unmaps the table: an empty map again.
    pub(crate) fn clear(&mut self) {
        if !self.slots.is_null() {
            let size = self.mapped_bytes();
            // SAFETY: the map's own mapping, which nothing uses after this.
            unsafe { unmap(self.slots.cast(), size) };
        }
        *self = AddrMap::new();
    }

    fn find(&self, addr: usize) -> Option<usize> {
        if self.len == 0 {
            return None;
        }
        self.slot_of(addr).filter(|&i| self.slots()[i].addr == addr)
    }

    /// The slot holding `addr`, or else the empty slot that ends its
    /// probe, where it would go; `None` before the first table.
    fn slot_of(&self, addr: usize) -> Option<usize> {
        let slots = self.slots();
        probe(mix(addr as u64), self.capacity, self.capacity, |i| {
            (slots[i].addr == 0 || slots[i].addr == addr).then_some(i)
        })
    }

    /// Empties slot `i` by backward-shift deletion.
    fn remove_at(&mut self, i: usize) {
        let capacity = self.capacity;
        let mask = capacity - 1;
        let slots = self.slots_mut();
        let mut hole = i;
        let mut j = (i + 1) & mask;
        while slots[j].addr != 0 {
            let home = home(slots[j].addr, capacity);
            // Moves back unless its home lies cyclically in (hole, j].
            let stays = if hole <= j {
                hole < home && home <= j
            } else {
                hole < home || home <= j
            };
            if !stays {
                slots[hole] = slots[j];
                hole = j;
            }
            j = (j + 1) & mask;
        }
        slots[hole].addr = 0;
        self.len -= 1;
    }

    /// Doubles the table; false if it cannot be mapped.
    pub(crate) fn grow(&mut self) -> bool {
        let grown = (self.capacity * 2).max(FIRST_CAPACITY);
        let size = grown * std::mem::size_of::<Slot<V>>();
        let Some(table) = map_zeroed(size) else {
            return false;
        };
        prefer_huge_pages(table, size);
        // SAFETY: freshly mapped, zeroed: `grown` empty slots (`V: Zeroed`).
        let new = unsafe { std::slice::from_raw_parts_mut(table.cast::<Slot<V>>(), grown) };
        for slot in self.slots().iter().filter(|s| s.addr != 0) {
            // NOTE: always `Some`: the new table has room for every slot.
            if let Some(i) = probe(mix(slot.addr as u64), grown, grown, |i| {
                (new[i].addr == 0).then_some(i)
            }) {
                new[i] = *slot;
            }
        }
        let len = self.len;
        self.clear();
        *self = AddrMap {
            slots: new.as_mut_ptr(),
            capacity: grown,
            len,
        };
        true
    }
}

/// An [`AddrMap`] behind a spin lock (a flag that spins, then yields):
/// for maps that any thread writes, from the allocator's slow path, where
/// no lock that allocates may be taken.
pub(crate) struct SharedMap<V: Zeroed> {
    locked: AtomicBool,
    /// Read and written by the holder of `locked` alone.
    map: UnsafeCell<AddrMap<V>>,
}

// SAFETY: `map` is only reached through `Guard`, one thread at a time.
unsafe impl<V: Zeroed + Send> Sync for SharedMap<V> {}

impl<V: Zeroed> SharedMap<V> {
    pub(crate) const fn new() -> Self {
        SharedMap {
            locked: AtomicBool::new(false),
            map: UnsafeCell::new(AddrMap::new()),
        }
    }

    /// The map, locked until the guard drops.
    pub(crate) fn lock(&self) -> Guard<'_, V> {
        let mut spins = 0u32;
        while self
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
        Guard(self)
    }
}

/// A [`SharedMap`], locked.
pub(crate) struct Guard<'a, V: Zeroed>(&'a SharedMap<V>);

impl<V: Zeroed> std::ops::Deref for Guard<'_, V> {
    type Target = AddrMap<V>;
    fn deref(&self) -> &AddrMap<V> {
        // SAFETY: the lock is held.
        unsafe { &*self.0.map.get() }
    }
}

impl<V: Zeroed> std::ops::DerefMut for Guard<'_, V> {
    fn deref_mut(&mut self) -> &mut AddrMap<V> {
        // SAFETY: the lock is held, and `&mut self` is its one user.
        unsafe { &mut *self.0.map.get() }
    }
}

impl<V: Zeroed> Drop for Guard<'_, V> {
    fn drop(&mut self) {
        self.0.locked.store(false, Ordering::Release);
    }
}

/// The slot an address starts its probe at, in a table of `capacity` (a
/// power of two).
fn home(addr: usize, capacity: usize) -> usize {
    mix(addr as u64) as usize & (capacity - 1)
}

/// Linear probing, the one way every sites table looks for a slot: from
/// `hash`'s home slot in a table of `capacity` slots (a power of two), the
/// next slot each time, wrapping around, at most `limit` slots (a full table
/// has no empty slot to end a probe). `visit` ends the probe at a slot by
/// returning `Some`: what it found there, or where to add. `None` when no
/// slot of the `limit` ended it.
// PERF: on the allocator's slow path, also unoptimized under `cargo test`:
// a counted loop and one call of `visit` per slot, no iterator adapters.
#[inline]
pub(crate) fn probe<T>(
    hash: u64,
    capacity: usize,
    limit: usize,
    mut visit: impl FnMut(usize) -> Option<T>,
) -> Option<T> {
    let mask = capacity.wrapping_sub(1);
    let mut i = hash as usize & mask;
    for _ in 0..limit {
        if let Some(found) = visit(i) {
            return Some(found);
        }
        i = (i + 1) & mask;
    }
    None
}

/// How many of a fixed table's `slots` it may take, no more: probing
/// linearly, a lookup that misses then takes about 8.5 steps on average;
/// with every slot taken, it went on to [`probe`]'s limit (half the table:
/// thousands of steps at every allocation once a program had met that
/// many sites).
pub(crate) const fn full(slots: usize) -> usize {
    slots / 4 * 3
}

/// A 64-bit finalizer (MurmurHash3's): every input bit moves every output
/// bit, so that aligned addresses spread over a table's slots.
#[inline]
pub(crate) fn mix(mut h: u64) -> u64 {
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

#[cfg(test)]
mod tests {
    use super::*;

    // SAFETY: zero is a `u64`.
    unsafe impl Zeroed for u64 {}

    #[test]
    fn a_probe_wraps_around_and_stops_at_its_limit() {
        let mut seen = Vec::new();
        let none = probe(6, 8, 4, |i| {
            seen.push(i);
            None::<usize>
        });
        assert_eq!((none, seen), (None, vec![6, 7, 0, 1]));
        assert_eq!(probe(6, 8, 8, |i| (i == 1).then_some(i)), Some(1));
    }

    #[test]
    fn addresses_come_back_once_with_their_values_through_growth_and_deletion() {
        let mut map = AddrMap::<u64>::new();
        let base = 0x7fff_0000_0000usize;
        let n = 100_000;
        for k in 0..n {
            assert_eq!(map.insert(base + 16 * k, k as u64), Ok(None));
        }
        assert_eq!(map.len(), n);
        assert!(map.mapped_bytes() * 3 >= 4 * n * 16, "at most 3/4 full");
        assert_eq!(map.insert(base, 7), Ok(Some(0)));
        assert_eq!(map.insert(base, 0), Ok(Some(7)));
        for k in (0..n).step_by(2) {
            assert_eq!(map.remove(base + 16 * k), Some(k as u64));
        }
        for k in 0..n {
            let expected = (k % 2 == 1).then_some(k as u64);
            assert_eq!(map.get(base + 16 * k), expected, "address {k}");
        }
        let mut kept = 0;
        map.retain(|&v| v % 4 == 1, |_| kept += 1);
        assert_eq!((map.len(), kept), (n / 4, n / 4));
        for k in 0..n {
            let expected = (k % 4 == 1).then_some(k as u64);
            assert_eq!(map.remove(base + 16 * k), expected, "address {k}");
        }
        assert_eq!(map.len(), 0);
        map.clear();
        assert_eq!(map.mapped_bytes(), 0);
    }
}
