//! Calls too short to draw: counted per function, one `SHORT` line each
//! at exit.

use super::*;

/// Functions whose short calls are counted apart; more share one line.
pub(super) const SHORT_SLOTS: usize = 4096;

/// The short calls of one function: keyed by its `FnMeta`'s address.
pub(super) struct ShortCalls {
    meta: AtomicPtr<FnMeta>,
    /// The function's name, set by the thread that took the slot.
    name: AtomicPtr<u8>,
    name_len: AtomicUsize,
    calls: AtomicU64,
    nanos: AtomicU64,
}

impl ShortCalls {
    pub(super) const fn new() -> Self {
        ShortCalls {
            meta: AtomicPtr::new(std::ptr::null_mut()),
            name: AtomicPtr::new(std::ptr::null_mut()),
            name_len: AtomicUsize::new(0),
            calls: AtomicU64::new(0),
            nanos: AtomicU64::new(0),
        }
    }

    pub(super) fn add(&self, seconds: f64) {
        // PERF: shared counters; the functions called often enough for
        // this to contend are the ones the line exists for.
        self.calls.fetch_add(1, Relaxed);
        self.nanos.fetch_add((seconds * 1e9) as u64, Relaxed);
    }

    pub(super) fn name(&self) -> Option<&'static str> {
        let ptr = self.name.load(Acquire);
        if ptr.is_null() {
            return None;
        }
        let len = self.name_len.load(Relaxed);
        // SAFETY: `ptr` and `len` were taken from a `&'static str` (see
        // `note_short_call`), `len` stored before `ptr` was released.
        Some(unsafe { std::str::from_utf8_unchecked(std::slice::from_raw_parts(ptr, len)) })
    }
}

pub(super) static SHORT: [ShortCalls; SHORT_SLOTS] = [const { ShortCalls::new() }; SHORT_SLOTS];
/// Short calls of the functions that found the table full.
pub(super) static SHORT_OTHERS: ShortCalls = ShortCalls::new();

pub(super) fn note_short_call(meta: &FnMeta, seconds: f64) {
    let key = std::ptr::from_ref(meta).cast_mut();
    let hash = (key as usize >> 3).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let first = hash >> (usize::BITS - SHORT_SLOTS.trailing_zeros());
    for probe in 0..SHORT_SLOTS {
        let slot = &SHORT[(first + probe) % SHORT_SLOTS];
        let found = slot.meta.load(Relaxed);
        if found == key {
            return slot.add(seconds);
        }
        if found.is_null() {
            match slot
                .meta
                .compare_exchange(std::ptr::null_mut(), key, Relaxed, Relaxed)
            {
                Ok(_) => {
                    let name = meta.name();
                    slot.name_len.store(name.len(), Relaxed);
                    slot.name.store(name.as_ptr().cast_mut(), Release);
                    return slot.add(seconds);
                }
                Err(other) if other == key => return slot.add(seconds),
                Err(_) => {}
            }
        }
    }
    SHORT_OTHERS.add(seconds);
}

pub(super) fn write_short_summary() {
    let slots = SHORT.iter().filter_map(|s| Some((s.name()?, s)));
    for (name, slot) in slots.chain([("(others)", &SHORT_OTHERS)]) {
        let calls = slot.calls.load(Relaxed);
        if calls == 0 {
            continue;
        }
        let mut line = LineBuf::new();
        line.push_str("SHORT ");
        line.push_name(name);
        let seconds = slot.nanos.load(Relaxed) as f64 / 1e9;
        let _ = writeln!(line, " {calls} {seconds:.6}");
        line.write_to_dat();
    }
}
