//! What sites could not follow, by function: allocations no site holds
//! (a thread's site tables were full), blocks Live does not follow (the
//! in-use map had no room) and frees the thread's tables could not pair
//! with their allocations. Kept so that a report says what its figures
//! leave out, instead of undercounting in silence.
//!
//! Written on the slow path of the slow path (a table out of room), by any
//! thread: one [`SharedMap`] by the function's `FnMeta` address.

use super::addr_map::{SharedMap, Zeroed};
use super::tables::COUNT_UNIT;

/// What was left out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Charged to no site.
    Sites = 0,
    /// Not followed in use (Live).
    Live = 1,
    /// Allocated while a line ran, its free not taken off the line's
    /// `live_bytes`.
    LineEnd = 2,
}

/// Allocations (in `COUNT_UNIT`s) and bytes of each [`Kind`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[repr(C)]
pub(crate) struct Shortfall {
    counts: [u64; 3],
    bytes: [u64; 3],
}

// SAFETY: integers only.
unsafe impl Zeroed for Shortfall {}

impl Shortfall {
    /// Allocations and bytes of `kind`, allocations rounded to whole ones.
    pub(crate) fn of(&self, kind: Kind) -> (u64, u64) {
        let k = kind as usize;
        (
            (self.counts[k] + COUNT_UNIT / 2) / COUNT_UNIT,
            self.bytes[k],
        )
    }
}

static BY_FUNCTION: SharedMap<Shortfall> = SharedMap::new();

/// `count` allocations (in `COUNT_UNIT`s) of `bytes` of the function whose
/// `FnMeta` is at `meta` were left out of `kind`.
pub(crate) fn add(meta: usize, kind: Kind, count: u64, bytes: u64) {
    let k = kind as usize;
    let mut map = BY_FUNCTION.lock();
    let mut sum = map.get(meta).unwrap_or_default();
    sum.counts[k] += count;
    sum.bytes[k] += bytes;
    // NOTE: a map that cannot grow past the address-space budget still
    // takes 112 functions (seven eighths of its first table); past them a
    // function's shortfall is not named (docs/reliability.md).
    let _ = map.insert(meta, sum);
}

/// [`add`] for each function among `metas` once, however many of its rows
/// were open: one block left out is one block of each function. Runs only
/// when a table had no room, over at most `MAX_OPEN` rows.
pub(crate) fn add_each(metas: &[usize], kind: Kind, count: u64, bytes: u64) {
    for (i, &meta) in metas.iter().enumerate() {
        if !metas[..i].contains(&meta) {
            add(meta, kind, count, bytes);
        }
    }
}

/// What the function whose `FnMeta` is at `meta` had left out.
pub(crate) fn of_function(meta: usize) -> Shortfall {
    BY_FUNCTION.lock().get(meta).unwrap_or_default()
}

/// The map's lock, held for `fork` (see `sites::hold_for_fork`).
#[cfg(unix)]
pub(crate) fn hold() -> super::addr_map::Guard<'static, Shortfall> {
    BY_FUNCTION.lock()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_function_with_several_rows_open_counts_a_block_once() {
        // Addresses no FnMeta has: far above the heap.
        let (a, b) = (0x7ffe_0000_0000usize, 0x7ffe_0000_0100usize);
        add_each(&[a, a, b, a], Kind::Live, 2 * COUNT_UNIT, 48);
        add_each(&[b], Kind::Sites, COUNT_UNIT, 8);
        assert_eq!(of_function(a).of(Kind::Live), (2, 48));
        assert_eq!(of_function(b).of(Kind::Live), (2, 48));
        assert_eq!(of_function(b).of(Kind::Sites), (1, 8));
        assert_eq!(of_function(a).of(Kind::Sites), (0, 0));
    }
}
