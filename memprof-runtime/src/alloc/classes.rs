//! Allocations and frees by size class, for `track!` checkpoints: the
//! allocator fills the tallies, the checkpoint reads them.

use super::{THREAD, ThreadCounters};

/// Size classes: class `k` holds sizes in `[2^k, 2^(k+1))`.
pub(crate) const SIZE_CLASSES: usize = 64;

/// Allocations and frees of one size class.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ClassTally {
    pub(crate) allocs: u32,
    pub(crate) alloc_bytes: u64,
    pub(crate) frees: u32,
    pub(crate) free_bytes: u64,
}

impl ClassTally {
    pub(super) const ZERO: ClassTally = ClassTally {
        allocs: 0,
        alloc_bytes: 0,
        frees: 0,
        free_bytes: 0,
    };
}

fn size_class(size: usize) -> usize {
    (usize::BITS - 1 - size.max(1).leading_zeros()) as usize
}

/// Counts by size class, on the slow path of tracking threads.
pub(super) fn count_classes(t: &ThreadCounters, allocated: usize, freed: usize) {
    if allocated != 0 {
        let class = &t.classes[size_class(allocated)];
        let mut tally = class.get();
        tally.allocs = tally.allocs.saturating_add(1);
        tally.alloc_bytes += allocated as u64;
        class.set(tally);
    }
    if freed != 0 {
        let class = &t.classes[size_class(freed)];
        let mut tally = class.get();
        tally.frees = tally.frees.saturating_add(1);
        tally.free_bytes += freed as u64;
        class.set(tally);
    }
}

/// This thread's allocations and frees by size class since the previous
/// call, indexed by class; starts the next tally from zero. Only threads
/// that called [`start_tracking`] are counted.
pub(crate) fn take_size_classes() -> [ClassTally; SIZE_CLASSES] {
    THREAD
        .try_with(|t| std::array::from_fn(|k| t.classes[k].replace(ClassTally::ZERO)))
        .unwrap_or([ClassTally::ZERO; SIZE_CLASSES])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_classes_are_powers_of_two() {
        assert_eq!(size_class(0), 0);
        assert_eq!(size_class(1), 0);
        assert_eq!(size_class(2), 1);
        assert_eq!(size_class(3), 1);
        assert_eq!(size_class(4096), 12);
        assert_eq!(size_class(8191), 12);
        assert_eq!(size_class(usize::MAX), 63);
    }
}
