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
//! Per thread, as the heap's counters: `net` is what the thread allocated
//! minus what it freed, `peak` the highest `net` since the innermost open
//! region opened, and `carry` the watermark of the inner regions that closed
//! since (see `region.rs`, whose scheme this follows); `events` counts the
//! thread's counted allocations and frees, so that a statement in which it
//! did not move closes without reading the rest (see [`quiet_thread`]).

use crate::alloc::untracked;
use crate::owned::{get, max, set};
use std::cell::Cell;
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

thread_local! {
    static THREAD: ThreadTally = const {
        ThreadTally {
            net: Cell::new(0),
            peak: Cell::new(0),
            carry: Cell::new(i64::MIN),
            events: Cell::new(0),
        }
    };
}

/// This thread's counted device bytes (see the module documentation).
#[derive(Debug)]
struct ThreadTally {
    net: Cell<i64>,
    peak: Cell<i64>,
    carry: Cell<i64>,
    events: Cell<u64>,
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
        let _ = THREAD.try_with(|t| {
            let net = get(&t.net) + bytes;
            set(&t.net, net);
            set(&t.peak, max(get(&t.peak), net));
            set(&t.events, get(&t.events).wrapping_add(1));
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
    THREAD.try_with(|t| get(&t.net)).unwrap_or(0)
}

/// Opens a thread-scope region: its start and the enclosing region's
/// watermark, to hand back to [`close_thread`].
#[inline]
pub(crate) fn open_thread() -> (i64, i64) {
    THREAD.try_with(ThreadTally::open).unwrap_or((0, i64::MIN))
}

/// Closes the thread-scope region that [`open_thread`] opened: its end and
/// the highest count reached while it was open.
#[inline]
pub(crate) fn close_thread(saved: i64) -> (i64, i64) {
    THREAD.try_with(|t| t.close(saved)).unwrap_or((0, 0))
}

/// A thread-scope region's (count, watermark): (start, saved) when it
/// opens, (end, high) when it closes.
pub(crate) type Pair = (i64, i64);

/// Closes the thread-scope region whose watermark `saved` holds, if any,
/// then opens the next if `open`: [`close_thread`] and [`open_thread`] in
/// one reach of the thread-local. The opened region comes with this
/// thread's event count, for [`quiet_thread`].
#[inline(always)]
pub(crate) fn step_thread(saved: Option<i64>, open: bool) -> (Option<Pair>, Option<(Pair, u64)>) {
    THREAD
        .try_with(|t| {
            let closed = saved.map(|saved| t.close(saved));
            (closed, open.then(|| (t.open(), get(&t.events))))
        })
        .unwrap_or((None, None))
}

/// Whether this thread counted no allocation or free since its event count
/// was `events`: then a thread-scope region opened at that count ends where
/// it started, with no rise, and [`close_quiet_thread`] closes it.
#[inline(always)]
pub(crate) fn quiet_thread(events: u64) -> bool {
    THREAD
        .try_with(|t| get(&t.events) == events)
        .unwrap_or(false)
}

/// [`close_thread`] for a region that [`quiet_thread`]: restores the
/// enclosing watermark, `saved`, which is all the full close changes then
/// (`peak` is still the region's start, inner regions raised `carry` to
/// that at most, and `saved` is at least the start).
#[inline(always)]
pub(crate) fn close_quiet_thread(saved: i64) {
    let _ = THREAD.try_with(|t| set(&t.carry, saved));
}

impl ThreadTally {
    #[inline(always)]
    fn open(&self) -> (i64, i64) {
        let net = get(&self.net);
        let saved = max(get(&self.peak), get(&self.carry));
        set(&self.peak, net);
        set(&self.carry, i64::MIN);
        (net, saved)
    }

    #[inline(always)]
    fn close(&self, saved: i64) -> (i64, i64) {
        let watermark = max(get(&self.peak), get(&self.carry));
        set(&self.carry, max(saved, watermark));
        let net = get(&self.net);
        (net, max(watermark, net))
    }
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
        let (inner_end, inner_high) = close_thread(inner_saved);
        assert_eq!(
            (inner_end - inner_start, inner_high - inner_start),
            (0, 100)
        );
        // The next statement starts low again.
        let (next_start, next_saved) = open_thread();
        ledger.allocated(BlockKey::Address(3), 5, 0);
        let (next_end, next_high) = close_thread(next_saved);
        assert_eq!((next_end - next_start, next_high - next_start), (5, 5));
        let (outer_end, outer_high) = close_thread(outer_saved);
        assert_eq!(outer_end - outer_start, 15);
        assert_eq!(outer_high - outer_start, 110);
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
