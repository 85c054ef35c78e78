//! Where blocks in use came from: each distinct (rows open, stack) once,
//! with the weight of its blocks still allocated.
//!
//! One process-wide open-addressed table, mapped outside the global
//! allocator on first use. A lookup takes no lock; a new origin is added
//! under one, so that two threads never add the same one twice. Counters
//! are atomic: a block allocated on one thread is often freed on another.

use crate::sites::addr_map::{full, mix, probe};
use crate::sites::mapping::map_zeroed;
use crate::sites::tables::MAX_FRAMES;
use std::sync::Mutex;
use std::sync::atomic::{AtomicI64, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering};

/// Rows kept per origin: the outermost ones and the innermost (see
/// `probe::open_rows`, which keeps the innermost in its last place too).
pub(crate) const MAX_ROWS: usize = 16;
const ORIGINS: usize = 1 << 14;
/// No origin: the table was full or could not be mapped.
pub(crate) const NO_ORIGIN: u32 = u32::MAX;

/// A row, by the function (its `FnMeta`'s address) and cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Row {
    pub(crate) meta: usize,
    pub(crate) cell: u32,
}

#[repr(C)]
struct Origin {
    /// 0 while empty; written last.
    hash: AtomicU64,
    rows_len: AtomicUsize,
    metas: [AtomicUsize; MAX_ROWS],
    cells: [AtomicU32; MAX_ROWS],
    frames_len: AtomicUsize,
    frames: [AtomicUsize; MAX_FRAMES],
    /// Allocations in use, in `COUNT_UNIT`s, and their bytes.
    count: AtomicI64,
    bytes: AtomicI64,
}

/// The table; null until the first origin.
static TABLE: AtomicPtr<Origin> = AtomicPtr::new(std::ptr::null_mut());
/// Taken to add an origin (and to map the table).
static ADDING: Mutex<()> = Mutex::new(());
/// Origins added, under `ADDING`: no more than `full(ORIGINS)`, so that a
/// lookup of one not there meets a free slot in a few steps.
static TAKEN: AtomicUsize = AtomicUsize::new(0);

fn table() -> Option<&'static [Origin]> {
    let table = TABLE.load(Ordering::Acquire);
    // SAFETY: null or a mapped table of `ORIGINS` origins, never unmapped.
    (!table.is_null()).then(|| unsafe { std::slice::from_raw_parts(table, ORIGINS) })
}

/// The origin of `rows` and `frames`, added if new; `NO_ORIGIN` when the
/// table is full or cannot be had.
pub(crate) fn intern(rows: &[Row], frames: &[usize]) -> u32 {
    let rows = &rows[..rows.len().min(MAX_ROWS)];
    let frames = &frames[..frames.len().min(MAX_FRAMES)];
    let hash = hash_of(rows, frames);
    if let Some(found) = table().and_then(|t| find(t, hash, rows, frames).ok()) {
        return found;
    }
    // Full: no lock to learn it again at every allocation.
    if TAKEN.load(Ordering::Relaxed) >= full(ORIGINS) {
        return NO_ORIGIN;
    }
    let _adding = ADDING.lock().unwrap_or_else(|e| e.into_inner());
    let table = match table() {
        Some(t) => t,
        None => {
            let Some(mapped) = map_zeroed(ORIGINS * std::mem::size_of::<Origin>()) else {
                return NO_ORIGIN;
            };
            TABLE.store(mapped.cast(), Ordering::Release);
            // SAFETY: just mapped, zeroed: empty origins.
            unsafe { std::slice::from_raw_parts(mapped.cast::<Origin>(), ORIGINS) }
        }
    };
    let at = match find(table, hash, rows, frames) {
        Ok(found) => return found,
        Err(Some(empty)) if TAKEN.load(Ordering::Relaxed) < full(ORIGINS) => empty,
        Err(_) => return NO_ORIGIN,
    };
    TAKEN.fetch_add(1, Ordering::Relaxed);
    let o = &table[at];
    o.rows_len.store(rows.len(), Ordering::Relaxed);
    for (i, row) in rows.iter().enumerate() {
        o.metas[i].store(row.meta, Ordering::Relaxed);
        o.cells[i].store(row.cell, Ordering::Relaxed);
    }
    o.frames_len.store(frames.len(), Ordering::Relaxed);
    for (cell, &frame) in o.frames.iter().zip(frames) {
        cell.store(frame, Ordering::Relaxed);
    }
    o.hash.store(hash, Ordering::Release);
    at as u32
}

/// The origin's index, or where it would go (`None`: the table is full).
fn find(table: &[Origin], hash: u64, rows: &[Row], frames: &[usize]) -> Result<u32, Option<usize>> {
    // NOTE: at most three quarters full (`TAKEN`), so that probes stay
    // short.
    probe(hash, ORIGINS, ORIGINS * 3 / 4, |i| {
        let o = &table[i];
        // One load decides: `hash` is stored last (release), once the
        // origin is whole.
        let h = o.hash.load(Ordering::Acquire);
        if h == 0 {
            return Some(Err(Some(i)));
        }
        (h == hash && same(o, rows, frames)).then_some(Ok(i as u32))
    })
    .unwrap_or(Err(None))
}

fn same(o: &Origin, rows: &[Row], frames: &[usize]) -> bool {
    o.rows_len.load(Ordering::Relaxed) == rows.len()
        && o.frames_len.load(Ordering::Relaxed) == frames.len()
        && rows.iter().enumerate().all(|(i, r)| {
            o.metas[i].load(Ordering::Relaxed) == r.meta
                && o.cells[i].load(Ordering::Relaxed) == r.cell
        })
        && frames
            .iter()
            .zip(&o.frames)
            .all(|(&f, cell)| cell.load(Ordering::Relaxed) == f)
}

/// Adds a block's weight to its origin (`sign` 1) or takes it off (-1).
pub(crate) fn add(origin: u32, count: u64, bytes: u64, sign: i64) {
    let Some(o) = table().and_then(|t| t.get(origin as usize)) else {
        return;
    };
    o.count.fetch_add(sign * count as i64, Ordering::Relaxed);
    o.bytes.fetch_add(sign * bytes as i64, Ordering::Relaxed);
}

/// One origin as a report reads it.
#[derive(Debug, Clone)]
pub(crate) struct Read {
    pub(crate) rows: Vec<Row>,
    pub(crate) frames: Vec<usize>,
    /// Allocations in use, in `COUNT_UNIT`s, and their bytes.
    pub(crate) count: i64,
    pub(crate) bytes: i64,
}

/// Every origin with blocks in use that `wanted` accepts (by its rows).
pub(crate) fn read(wanted: impl Fn(&[Row]) -> bool) -> Vec<Read> {
    let Some(table) = table() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for o in table {
        if o.hash.load(Ordering::Acquire) == 0 {
            continue;
        }
        let (count, bytes) = (
            o.count.load(Ordering::Relaxed),
            o.bytes.load(Ordering::Relaxed),
        );
        if count == 0 && bytes == 0 {
            continue;
        }
        let len = o.rows_len.load(Ordering::Relaxed).min(MAX_ROWS);
        let rows: Vec<Row> = (0..len)
            .map(|i| Row {
                meta: o.metas[i].load(Ordering::Relaxed),
                cell: o.cells[i].load(Ordering::Relaxed),
            })
            .collect();
        if !wanted(&rows) {
            continue;
        }
        let frames_len = o.frames_len.load(Ordering::Relaxed).min(MAX_FRAMES);
        out.push(Read {
            rows,
            frames: o.frames[..frames_len]
                .iter()
                .map(|f| f.load(Ordering::Relaxed))
                .collect(),
            count,
            bytes,
        });
    }
    out
}

/// The lock that adds origins, held for `fork`.
#[cfg(unix)]
pub(crate) fn hold() -> std::sync::MutexGuard<'static, ()> {
    ADDING.lock().unwrap_or_else(|e| e.into_inner())
}

fn hash_of(rows: &[Row], frames: &[usize]) -> u64 {
    let mut h = (rows.len() as u64) << 32 | frames.len() as u64;
    for r in rows {
        h = mix(h ^ r.meta as u64 ^ u64::from(r.cell).rotate_left(48));
    }
    for &f in frames {
        h = mix(h ^ f as u64);
    }
    h.max(1)
}
