//! The bookkeeping of counted device allocations: which blocks are live, how
//! many bytes each device and each thread holds, and the high-water marks
//! that statement peaks are read from.
//!
//! The CUPTI callback (`cupti`) writes here from inside the driver; the
//! statement probes read. Writers are device allocation calls, which take
//! microseconds in the driver, so the map of live blocks sits behind a
//! mutex and allocates through the untracked heap; readers (a statement
//! boundary) touch only this thread's `Cell`s or one atomic.
//!
//! Per thread, beside the heap's in the thread's counters (the `device_*`
//! fields of `kernel::layout::Counters`, which this module alone writes):
//! what the thread allocated minus what it freed, its watermark, and a count
//! of its counted allocations and frees. The statement probes, the kernel's
//! included, read them as they read the heap's (see `kernel::region`).

use crate::alloc::untracked;
use crate::kernel::layout::Counters;
use crate::kernel::region::{close_device_in, open_device_in};
use crate::owned::{get, max, set};
use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering::Relaxed};
use std::sync::{Mutex, PoisonError};

/// Devices beyond this ordinal are not counted.
pub(crate) const MAX_DEVICES: usize = 64;

/// What a live block is known by: its address, or, for the virtual memory
/// API, its allocation handle (a separate namespace).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum BlockKey {
    Address(u64),
    Handle(u64),
}

#[derive(Debug, Clone, Copy)]
struct Block {
    bytes: u64,
    device: u32,
}

/// A block whose free the driver is running: out of the live blocks, not
/// counted as freed until the free returns success.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PendingFree {
    key: BlockKey,
    block: Block,
}

/// One device's live bytes and their high-water mark, all threads together.
#[derive(Debug)]
struct DeviceTally {
    live: AtomicI64,
    high: AtomicI64,
}

/// Live device blocks and their tallies. One per process, in `LEDGER`; unit
/// tests make their own.
#[derive(Debug)]
pub(crate) struct Ledger {
    blocks: Mutex<Option<HashMap<BlockKey, Block>>>,
    devices: [DeviceTally; MAX_DEVICES],
    /// Bit `d` set: device `d` is counted in the figures.
    selected: AtomicU64,
    /// Bytes live on the selected devices, every thread's.
    process_live: AtomicI64,
    /// Highest `process_live` since the innermost open process-scope region
    /// opened.
    process_high: AtomicI64,
}

/// The process's ledger.
pub(crate) static LEDGER: Ledger = Ledger::new();

/// `f` of the calling thread's counters, if it still has them.
#[inline]
fn with_thread<R>(f: impl FnOnce(&Counters) -> R) -> Option<R> {
    // SAFETY: this thread's counters, which live as long as it does.
    unsafe { crate::alloc::thread_counters().as_ref() }.map(|t| f(t))
}

impl Ledger {
    pub(crate) const fn new() -> Self {
        #[allow(clippy::declare_interior_mutable_const)]
        const EMPTY: DeviceTally = DeviceTally {
            live: AtomicI64::new(0),
            high: AtomicI64::new(0),
        };
        Ledger {
            blocks: Mutex::new(None),
            devices: [EMPTY; MAX_DEVICES],
            selected: AtomicU64::new(u64::MAX),
            process_live: AtomicI64::new(0),
            process_high: AtomicI64::new(0),
        }
    }

    /// Counts only the devices in `devices` from now on.
    pub(crate) fn select(&self, devices: impl IntoIterator<Item = u32>) {
        let mask = devices
            .into_iter()
            .filter(|&d| (d as usize) < MAX_DEVICES)
            .fold(0u64, |mask, d| mask | 1 << d);
        self.selected.store(mask, Relaxed);
    }

    fn is_selected(&self, device: u32) -> bool {
        (device as usize) < MAX_DEVICES && self.selected.load(Relaxed) & (1 << device) != 0
    }

    /// A block of `bytes` came to life on `device`; the calling thread made
    /// it. A key seen again replaces its block (the driver reused the
    /// address of a free we missed).
    pub(crate) fn allocated(&self, key: BlockKey, bytes: u64, device: u32) {
        if (device as usize) >= MAX_DEVICES {
            return;
        }
        let old = untracked(|| {
            let mut blocks = self.blocks.lock().unwrap_or_else(PoisonError::into_inner);
            blocks
                .get_or_insert_with(HashMap::new)
                .insert(key, Block { bytes, device })
        });
        if let Some(old) = old {
            self.count(old, -1);
        }
        self.count(Block { bytes, device }, 1);
    }

    /// The block `key` is freed by the calling thread, and the free
    /// succeeded. Returns its bytes, or `None` for a key never seen
    /// (allocated before counting started, or not a device block at all):
    /// nothing is counted then.
    #[cfg(test)]
    pub(crate) fn freed(&self, key: BlockKey) -> Option<u64> {
        let pending = self.free_begins(key)?;
        self.free_ends(pending, true);
        Some(pending.block.bytes)
    }

    /// The calling thread asks the driver to free `key`: takes the block out
    /// of the live ones without counting anything yet, so that an address
    /// the driver hands out again before the free returns is a new block.
    /// `None` for a key never seen.
    pub(crate) fn free_begins(&self, key: BlockKey) -> Option<PendingFree> {
        let block = untracked(|| {
            let mut blocks = self.blocks.lock().unwrap_or_else(PoisonError::into_inner);
            blocks.as_mut()?.remove(&key)
        })?;
        Some(PendingFree { key, block })
    }

    /// The free that [`Ledger::free_begins`] saw has returned: counted if it
    /// `succeeded`; otherwise the block is live again, as the driver left it
    /// (unless the key was taken meanwhile, which only a free we missed
    /// allows).
    pub(crate) fn free_ends(&self, pending: PendingFree, succeeded: bool) {
        if succeeded {
            self.count(pending.block, -1);
            return;
        }
        untracked(|| {
            let mut blocks = self.blocks.lock().unwrap_or_else(PoisonError::into_inner);
            blocks
                .get_or_insert_with(HashMap::new)
                .entry(pending.key)
                .or_insert(pending.block);
        });
    }

    fn count(&self, block: Block, sign: i64) {
        let bytes = (block.bytes.min(i64::MAX as u64) as i64) * sign;
        let tally = &self.devices[block.device as usize];
        let live = tally.live.fetch_add(bytes, Relaxed) + bytes;
        tally.high.fetch_max(live, Relaxed);
        if !self.is_selected(block.device) {
            return;
        }
        let total = self.process_live.fetch_add(bytes, Relaxed) + bytes;
        self.process_high.fetch_max(total, Relaxed);
        with_thread(|t| {
            let net = get(&t.device_net) + bytes;
            set(&t.device_net, net);
            set(&t.device_peak, max(get(&t.device_peak), net));
            set(&t.device_events, get(&t.device_events).wrapping_add(1));
        });
    }

    /// Bytes live on `device` and their highest count so far, all threads'.
    #[cfg(test)]
    pub(crate) fn device(&self, device: u32) -> (i64, i64) {
        match self.devices.get(device as usize) {
            Some(t) => (t.live.load(Relaxed), t.high.load(Relaxed)),
            None => (0, 0),
        }
    }

    /// Bytes live on the selected devices, every thread's.
    #[cfg(test)]
    pub(crate) fn process_live(&self) -> i64 {
        self.process_live.load(Relaxed)
    }

    /// Opens a process-scope region: its start, and the enclosing one's
    /// high to hand back to [`Ledger::close_process`].
    pub(crate) fn open_process(&self) -> (i64, i64) {
        let live = self.process_live.load(Relaxed);
        (live, self.process_high.swap(live, Relaxed))
    }

    /// Closes a process-scope region: its end and its highest count, the
    /// enclosing region's high restored and raised by this one's.
    ///
    /// NOTE: process-scope regions that overlap without nesting (two
    /// threads' calls) share one high: each still sees every rise while it
    /// is open, unless the other opened and closed in between.
    pub(crate) fn close_process(&self, saved: i64) -> (i64, i64) {
        let end = self.process_live.load(Relaxed);
        let high = self.process_high.load(Relaxed).max(end);
        self.process_high.fetch_max(saved, Relaxed);
        (end, high)
    }
}

/// This thread's counted device bytes now.
#[inline]
pub(crate) fn thread_net() -> i64 {
    with_thread(|t| get(&t.device_net)).unwrap_or(0)
}

/// Opens a thread-scope region: its start and the enclosing region's
/// watermark, to hand back to [`close_thread`].
#[inline]
pub(crate) fn open_thread() -> (i64, i64) {
    with_thread(open_device_in).unwrap_or((0, i64::MIN))
}

/// Closes the thread-scope region that [`open_thread`] opened at `start`:
/// (increment, end, highest rise).
#[inline]
pub(crate) fn close_thread(start: i64, saved: i64) -> (i64, i64, u64) {
    with_thread(|t| close_device_in(t, start, saved)).unwrap_or((0, 0, 0))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    #[test]
    fn a_block_counts_from_its_allocation_to_its_free() {
        let ledger = Ledger::new();
        let before = thread_net();
        ledger.allocated(BlockKey::Address(0x1000), 3 * MIB, 0);
        assert_eq!(ledger.device(0), (3 * MIB as i64, 3 * MIB as i64));
        assert_eq!(thread_net() - before, 3 * MIB as i64);
        assert_eq!(ledger.freed(BlockKey::Address(0x1000)), Some(3 * MIB));
        assert_eq!(ledger.device(0), (0, 3 * MIB as i64));
        assert_eq!(thread_net(), before);
        assert_eq!(ledger.process_live(), 0);
    }

    #[test]
    fn frees_of_blocks_never_seen_count_nothing() {
        let ledger = Ledger::new();
        ledger.allocated(BlockKey::Address(0x1000), MIB, 0);
        assert_eq!(ledger.freed(BlockKey::Address(0x2000)), None);
        // An address and a handle of the same value are different blocks.
        assert_eq!(ledger.freed(BlockKey::Handle(0x1000)), None);
        assert_eq!(ledger.freed(BlockKey::Address(0x1000)), Some(MIB));
        assert_eq!(ledger.freed(BlockKey::Address(0x1000)), None);
        assert_eq!(ledger.device(0).0, 0);
    }

    #[test]
    fn a_failed_free_leaves_its_block_live() {
        let ledger = Ledger::new();
        let before = thread_net();
        ledger.allocated(BlockKey::Address(0x1000), 256 * MIB, 0);
        let pending = ledger.free_begins(BlockKey::Address(0x1000)).unwrap();
        ledger.free_ends(pending, false);
        assert_eq!(ledger.device(0).0, 256 * MIB as i64);
        assert_eq!(thread_net() - before, 256 * MIB as i64);
        // The later real free counts it.
        assert_eq!(ledger.freed(BlockKey::Address(0x1000)), Some(256 * MIB));
        assert_eq!(ledger.device(0).0, 0);
        assert_eq!(thread_net(), before);
    }

    #[test]
    fn a_reused_address_replaces_its_block() {
        let ledger = Ledger::new();
        ledger.allocated(BlockKey::Address(0x1000), MIB, 0);
        ledger.allocated(BlockKey::Address(0x1000), 2 * MIB, 0);
        assert_eq!(ledger.device(0).0, 2 * MIB as i64);
        assert_eq!(ledger.freed(BlockKey::Address(0x1000)), Some(2 * MIB));
        assert_eq!(ledger.device(0).0, 0);
    }

    #[test]
    fn only_selected_devices_reach_the_figures() {
        let ledger = Ledger::new();
        ledger.select([1]);
        let before = thread_net();
        ledger.allocated(BlockKey::Address(0x1000), MIB, 0);
        ledger.allocated(BlockKey::Address(0x2000), 2 * MIB, 1);
        ledger.allocated(BlockKey::Address(0x3000), 4 * MIB, MAX_DEVICES as u32);
        assert_eq!(ledger.device(0).0, MIB as i64);
        assert_eq!(ledger.device(1).0, 2 * MIB as i64);
        assert_eq!(ledger.process_live(), 2 * MIB as i64);
        assert_eq!(thread_net() - before, 2 * MIB as i64);
        assert_eq!(ledger.freed(BlockKey::Address(0x3000)), None);
        ledger.freed(BlockKey::Address(0x1000));
        ledger.freed(BlockKey::Address(0x2000));
        assert_eq!(thread_net(), before);
    }

    #[test]
    fn nested_regions_each_see_their_own_peak() {
        let ledger = Ledger::new();
        let (outer_start, outer_saved) = open_thread();
        ledger.allocated(BlockKey::Address(1), 10, 0);
        let (inner_start, inner_saved) = open_thread();
        ledger.allocated(BlockKey::Address(2), 100, 0);
        ledger.freed(BlockKey::Address(2));
        assert_eq!(
            close_thread(inner_start, inner_saved),
            (0, inner_start, 100)
        );
        // The next statement starts low again.
        let (next_start, next_saved) = open_thread();
        ledger.allocated(BlockKey::Address(3), 5, 0);
        assert_eq!(close_thread(next_start, next_saved), (5, next_start + 5, 5));
        assert_eq!(
            close_thread(outer_start, outer_saved),
            (15, outer_start + 15, 110)
        );
        ledger.freed(BlockKey::Address(1));
        ledger.freed(BlockKey::Address(3));
    }

    #[test]
    fn other_threads_blocks_are_theirs() {
        static SHARED: Ledger = Ledger::new();
        let before = thread_net();
        let (start, saved) = SHARED.open_process();
        std::thread::spawn(|| SHARED.allocated(BlockKey::Address(7), MIB, 0))
            .join()
            .unwrap();
        assert_eq!(thread_net(), before);
        assert_eq!(SHARED.process_live(), MIB as i64);
        // Freed here, so this thread's count goes below its start.
        assert_eq!(SHARED.freed(BlockKey::Address(7)), Some(MIB));
        assert_eq!(thread_net() - before, -(MIB as i64));
        let (end, high) = SHARED.close_process(saved);
        assert_eq!((end - start, high - start), (0, MIB as i64));
    }
}
