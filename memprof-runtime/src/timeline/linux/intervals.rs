//! The calls of each function at each depth, merged into the intervals
//! they cover, with exact totals.
//!
//! A service runs the same handler in hundreds of tasks at once. One `FUNC`
//! line per call made files of tens of MB, plots of overlapping brackets,
//! and sums of durations longer than the run. So the calls of one function
//! at one depth are counted as they open and close: an interval begins when
//! the first call opens and ends when the last open one closes, which is the
//! union of the calls' `[start, end]`. Each interval long enough to draw
//! gets one `FUNC` line (memory_profiler reads it as one call); the number
//! of calls and the time covered, shorter intervals included, go to one
//! `CALLS` line per function and depth at exit.

use super::*;

/// (function, depth) pairs counted apart; more share `(others)`.
pub(super) const SLOTS: usize = 4096;
/// `Start::slot` of a call that found the table full.
pub(super) const NO_SLOT: usize = usize::MAX;

/// The calls of one function at one depth: keyed by its `FnMeta`'s address
/// and the depth.
pub(super) struct CallIntervals {
    meta: AtomicPtr<FnMeta>,
    depth: AtomicU32,
    /// The function's name, set by the thread that took the slot.
    name: AtomicPtr<u8>,
    name_len: AtomicUsize,
    /// Held for the few loads and stores below, never across a call.
    lock: AtomicBool,
    state: UnsafeCell<Tally>,
}

/// What a slot's lock guards.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(super) struct Tally {
    /// Calls open now.
    pub(super) open: u64,
    /// Start of the current interval (unix seconds) and RSS then (MiB).
    pub(super) start: f64,
    pub(super) start_rss: f64,
    /// End of the last closed interval: a new one starts no earlier, so
    /// that intervals never overlap and `covered` stays a union.
    pub(super) last_end: f64,
    /// Calls closed, and the seconds covered by closed intervals.
    pub(super) calls: u64,
    pub(super) covered: f64,
}

/// An interval that its last call just closed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Closed {
    pub(super) start: f64,
    pub(super) start_rss: f64,
    pub(super) end: f64,
}

impl Tally {
    /// A call opens at `time` with the RSS `rss`.
    pub(super) fn open(&mut self, time: f64, rss: f64) {
        if self.open == 0 {
            self.start = time.max(self.last_end);
            self.start_rss = rss;
        }
        self.open += 1;
    }

    /// A call closes at `time`; the interval, if it was the last open one.
    pub(super) fn close(&mut self, time: f64) -> Option<Closed> {
        self.calls += 1;
        // A call counted in no `open` (the table filled up in between)
        // still counts; it has no interval of its own.
        if self.open == 0 {
            return None;
        }
        self.open -= 1;
        if self.open > 0 {
            return None;
        }
        let end = time.max(self.start);
        self.covered += end - self.start;
        self.last_end = end;
        Some(Closed {
            start: self.start,
            start_rss: self.start_rss,
            end,
        })
    }
}

// SAFETY: `state` is only reached through `with`, which holds `lock`.
unsafe impl Sync for CallIntervals {}

impl CallIntervals {
    const fn new() -> Self {
        CallIntervals {
            meta: AtomicPtr::new(std::ptr::null_mut()),
            depth: AtomicU32::new(0),
            name: AtomicPtr::new(std::ptr::null_mut()),
            name_len: AtomicUsize::new(0),
            lock: AtomicBool::new(false),
            state: UnsafeCell::new(Tally {
                open: 0,
                start: 0.0,
                start_rss: 0.0,
                last_end: 0.0,
                calls: 0,
                covered: 0.0,
            }),
        }
    }

    /// Runs `f` on the tally with the slot's lock held.
    pub(super) fn with<R>(&self, f: impl FnOnce(&mut Tally) -> R) -> R {
        // PERF: a spin lock held for a few instructions; the functions
        // whose calls contend on it are the ones the merging is for.
        let mut spins = 0u32;
        while self
            .lock
            .compare_exchange_weak(false, true, Acquire, Relaxed)
            .is_err()
        {
            spins += 1;
            if spins.is_multiple_of(64) {
                std::thread::yield_now();
            } else {
                std::hint::spin_loop();
            }
        }
        // SAFETY: the lock is held, so no other reference to the tally.
        let result = f(unsafe { &mut *self.state.get() });
        self.lock.store(false, Release);
        result
    }

    pub(super) fn name(&self) -> Option<&'static str> {
        let ptr = self.name.load(Acquire);
        if ptr.is_null() {
            return None;
        }
        let len = self.name_len.load(Relaxed);
        // SAFETY: `ptr` and `len` were taken from a `&'static str` (see
        // `slot_of`), `len` stored before `ptr` was released.
        Some(unsafe { std::str::from_utf8_unchecked(std::slice::from_raw_parts(ptr, len)) })
    }

    pub(super) fn depth(&self) -> u32 {
        self.depth.load(Relaxed)
    }
}

pub(super) static INTERVALS: [CallIntervals; SLOTS] = [const { CallIntervals::new() }; SLOTS];
/// Totals of the calls that found the table full.
pub(super) static OTHERS: CallIntervals = CallIntervals::new();

/// The slot of `meta` at `depth`, taken if new; [`NO_SLOT`] if the table
/// is full.
pub(super) fn slot_of(meta: &FnMeta, depth: u32) -> usize {
    let key = std::ptr::from_ref(meta).cast_mut();
    let hash = ((key as usize >> 3) ^ (depth as usize).wrapping_mul(0x85EB_CA6B))
        .wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let first = hash >> (usize::BITS - SLOTS.trailing_zeros());
    for probe in 0..SLOTS {
        let index = (first + probe) % SLOTS;
        let slot = &INTERVALS[index];
        let found = slot.meta.load(Acquire);
        if found == key && slot.depth.load(Relaxed) == depth {
            return index;
        }
        if found.is_null() {
            // Claimed through the name: the first thread to store one owns
            // the slot and then publishes the key.
            if slot
                .name
                .compare_exchange(
                    std::ptr::null_mut(),
                    meta.name().as_ptr().cast_mut(),
                    Relaxed,
                    Relaxed,
                )
                .is_ok()
            {
                slot.name_len.store(meta.name().len(), Relaxed);
                slot.depth.store(depth, Relaxed);
                slot.meta.store(key, Release);
                return index;
            }
            // Another thread is claiming it: wait for its key.
            let mut claimed = slot.meta.load(Acquire);
            while claimed.is_null() {
                std::hint::spin_loop();
                claimed = slot.meta.load(Acquire);
            }
            if claimed == key && slot.depth.load(Relaxed) == depth {
                return index;
            }
        }
    }
    NO_SLOT
}

/// One `CALLS <name> <depth> <calls> <covered seconds>` line per function
/// and depth, at exit.
pub(super) fn write_totals() {
    let untimed = untimed_calls();
    let slots = INTERVALS.iter().enumerate();
    let slots = slots.filter_map(|(index, s)| Some((s.name()?, s, untimed.get(&index))));
    for (name, slot, untimed) in slots.chain([("(others)", &OTHERS, None)]) {
        let tally = slot.with(|t| *t);
        let calls = tally.calls + untimed.copied().unwrap_or(0);
        if calls == 0 {
            continue;
        }
        let mut line = LineBuf::new();
        line.push_str("CALLS ");
        line.push_name(name);
        let _ = writeln!(line, " {} {calls} {:.6}", slot.depth(), tally.covered);
        line.write_to_dat();
    }
}

/// The calls that no slot timed, by slot: a function's quiet calls (see
/// `kernel::quiet`), which run without a clock. Its own `Calls` count
/// cannot tell at which depths they ran: they go to its slot of least
/// depth.
fn untimed_calls() -> std::collections::BTreeMap<usize, u64> {
    let mut by_fn = std::collections::BTreeMap::<*const FnMeta, (u32, usize, u64)>::new();
    for (index, slot) in INTERVALS.iter().enumerate() {
        let meta = slot.meta.load(Acquire).cast_const();
        if meta.is_null() {
            continue;
        }
        let (depth, timed) = (slot.depth(), slot.with(|t| t.calls));
        let least = by_fn.entry(meta).or_insert((depth, index, 0));
        if depth < least.0 {
            (least.0, least.1) = (depth, index);
        }
        least.2 += timed;
    }
    let untimed = by_fn.into_iter().map(|(meta, (_, index, timed))| {
        // SAFETY: a slot's key is a profiled function's `FnMeta`, a static.
        let (_, calls) = unsafe { &*meta }.totals();
        (index, calls.saturating_sub(timed))
    });
    untimed.filter(|&(_, calls)| calls > 0).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Opens and closes calls given as (start, end), in time order of their
    /// events, and returns the closed intervals and the tally.
    fn replay(calls: &[(f64, f64)]) -> (Vec<Closed>, Tally) {
        let mut events: Vec<(f64, bool)> = calls
            .iter()
            .flat_map(|&(s, e)| [(s, true), (e, false)])
            .collect();
        // Closes before opens at the same time: touching calls stay apart.
        events.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        let mut tally = Tally::default();
        let mut closed = Vec::new();
        for (time, opens) in events {
            if opens {
                tally.open(time, time * 10.0);
            } else if let Some(c) = tally.close(time) {
                closed.push(c);
            }
        }
        (closed, tally)
    }

    #[test]
    fn overlapping_calls_merge_into_the_intervals_they_cover() {
        // Three handlers in flight together, then one alone, then two that
        // nest: six calls whose durations add up to 4.25 s cover 3 s, in
        // three intervals.
        let (closed, tally) = replay(&[
            (0.0, 1.0),
            (0.5, 1.5),
            (0.25, 0.75),
            (2.0, 2.5),
            (3.0, 4.0),
            (3.25, 3.5),
        ]);
        let spans: Vec<(f64, f64, f64)> = closed
            .iter()
            .map(|c| (c.start, c.start_rss, c.end))
            .collect();
        assert_eq!(spans, [(0.0, 0.0, 1.5), (2.0, 20.0, 2.5), (3.0, 30.0, 4.0)]);
        assert_eq!(tally.calls, 6);
        assert_eq!(tally.covered, 3.0);
        assert_eq!(tally.open, 0);
    }

    #[test]
    fn an_interval_starts_no_earlier_than_the_last_one_ended() {
        // A call whose start was read before another's end was counted
        // (two threads, one clock): the union is not counted twice.
        let mut tally = Tally::default();
        tally.open(0.0, 1.0);
        assert_eq!(
            tally.close(2.0),
            Some(Closed {
                start: 0.0,
                start_rss: 1.0,
                end: 2.0
            })
        );
        tally.open(1.5, 1.0);
        let closed = tally.close(3.0).unwrap();
        assert_eq!((closed.start, closed.end), (2.0, 3.0));
        assert_eq!((tally.calls, tally.covered), (2, 3.0));
    }

    #[test]
    fn a_close_without_an_open_counts_the_call_only() {
        let mut tally = Tally::default();
        assert_eq!(tally.close(5.0), None);
        assert_eq!((tally.calls, tally.covered, tally.open), (1, 0.0, 0));
    }
}
