//! Bytes in use now, by the rows that allocated them: for each profiled
//! line and function, and each stack under a line, what it allocated that
//! is still allocated, whoever frees the rest and on whichever thread
//! (heap profilers' "in use"; the tables' `Live`).
//!
//! While sites are recorded, each recorded allocation (every one, or the
//! sampled ones with their scaled weight) joins `blocks` under an origin
//! (`origins`: the rows open when it was made and its stack), and adds its
//! weight there; its free, on any thread, takes it off. A report sums the
//! origins of a row. Every thread's frees are seen: with sites on, every
//! thread's allocations and frees take the allocator's slow path, except,
//! with sampled sites, those the fast path tells apart: an allocation that
//! is not sampled, and a free of a block `blocks`' filter says it does not
//! hold (see `alloc::record`).

mod blocks;
mod origins;

pub(crate) use origins::{MAX_ROWS, Read, Row};

use crate::sites::left_out::Kind;
use std::cell::OnceCell;
use std::collections::HashMap;

/// Records the block at `ptr`, allocated while `rows` were open (outermost
/// first) through `frames`, standing for `count` allocations (in
/// `COUNT_UNIT`s) of `bytes`. Returns false where it had no room: the
/// block is then left out (and said so), and no free of it is seen here.
pub(crate) fn allocated(
    ptr: usize,
    rows: impl Iterator<Item = Row>,
    frames: &[usize],
    count: u64,
    bytes: u64,
) -> bool {
    // Each row once (a call's own table and the aggregate are one row);
    // past `MAX_ROWS`, the innermost takes the last place.
    let mut kept = [Row { meta: 0, cell: 0 }; MAX_ROWS];
    let mut n = 0;
    for row in rows {
        if kept[..n].contains(&row) {
            continue;
        }
        if n < MAX_ROWS {
            kept[n] = row;
            n += 1;
        } else {
            kept[MAX_ROWS - 1] = row;
        }
    }
    let origin = origins::intern(&kept[..n], frames);
    let left_out = || {
        let mut metas = [0usize; MAX_ROWS];
        for (meta, row) in metas.iter_mut().zip(&kept[..n]) {
            *meta = row.meta;
        }
        crate::sites::left_out::add_each(&metas[..n], Kind::Live, count, bytes);
    };
    if origin == origins::NO_ORIGIN {
        left_out();
        return false;
    }
    let weight = blocks::Weight {
        origin,
        count,
        bytes,
    };
    match blocks::insert(ptr, weight) {
        blocks::Inserted::New => origins::add(origin, count, bytes, 1),
        // Freed where no report was made (a thread that follows no frees):
        // the old block is gone.
        blocks::Inserted::Replaced(old) => {
            origins::add(old.origin, old.count, old.bytes, -1);
            origins::add(origin, count, bytes, 1);
        }
        blocks::Inserted::Not => {
            left_out();
            return false;
        }
    }
    true
}

/// Whether a block at `ptr` may be recorded here: false for nearly every
/// block never recorded, in one load (see `blocks`).
#[inline(always)]
pub(crate) fn maybe(ptr: usize) -> bool {
    blocks::maybe(ptr)
}

/// The block at `ptr` is freed: if recorded, its origin no longer holds it.
#[inline]
pub(crate) fn freed(ptr: usize) {
    if let Some(w) = blocks::remove(ptr) {
        origins::add(w.origin, w.count, w.bytes, -1);
    }
}

/// The origins with blocks in use, read once for a whole report: by the
/// functions whose rows they hold, and by the functions inlined at the
/// return addresses of their stacks (see `figures::for_rows`).
///
/// PERF: a report reads them once, not once per function: with 16,384
/// origins and 60 functions gone quiet, reading and copying them per
/// function took about a second of the report.
#[derive(Default)]
pub(crate) struct InUse {
    origins: Vec<Read>,
    /// Each function's origins (its `FnMeta`'s address), by index.
    of: HashMap<usize, Vec<usize>>,
    /// The origins whose stacks pass through each function, by its name
    /// as `resolve::function_key` gives it; made when first asked.
    through: OnceCell<HashMap<String, Vec<usize>>>,
}

/// Every origin with blocks in use now (none while sites are off).
pub(crate) fn read() -> InUse {
    let origins = origins::read(|_| true);
    let mut of: HashMap<usize, Vec<usize>> = HashMap::new();
    for (i, origin) in origins.iter().enumerate() {
        for row in &origin.rows {
            let list = of.entry(row.meta).or_default();
            if list.last() != Some(&i) {
                list.push(i);
            }
        }
    }
    InUse {
        origins,
        of,
        through: OnceCell::new(),
    }
}

impl InUse {
    /// The origins of the function whose `FnMeta` is at `meta`.
    pub(crate) fn of_function(&self, meta: usize) -> impl Iterator<Item = &Read> {
        self.of
            .get(&meta)
            .into_iter()
            .flatten()
            .map(|&i| &self.origins[i])
    }

    /// The origins allocated while none of the rows of the function whose
    /// `FnMeta` is at `meta` was open, whose stacks pass through a frame
    /// where that function (`name`) is inlined: among them, those of its
    /// quiet calls, which open no rows.
    pub(crate) fn through_function(&self, meta: usize, name: &str) -> impl Iterator<Item = &Read> {
        let through = self.through.get_or_init(|| {
            let mut through: HashMap<String, Vec<usize>> = HashMap::new();
            let mut seen: HashMap<usize, Vec<String>> = HashMap::new();
            for (i, origin) in self.origins.iter().enumerate() {
                for &address in origin.frames.iter().filter(|&&a| a != 0) {
                    let names = seen
                        .entry(address)
                        .or_insert_with(|| crate::sites::resolve::functions_at(address));
                    for name in names.iter() {
                        let list = through.entry(name.clone()).or_default();
                        if list.last() != Some(&i) {
                            list.push(i);
                        }
                    }
                }
            }
            through
        });
        through
            .get(&crate::sites::resolve::function_key(name))
            .into_iter()
            .flatten()
            .map(|&i| &self.origins[i])
            .filter(move |origin| !origin.rows.iter().any(|row| row.meta == meta))
    }
}

/// The locks of blocks and origins, held for `fork`.
#[cfg(unix)]
pub(crate) struct Held {
    _origins: std::sync::MutexGuard<'static, ()>,
    _blocks: blocks::Held,
}

/// Takes them (see `sites::hold_for_fork`).
#[cfg(unix)]
pub(crate) fn hold() -> Held {
    let origins = origins::hold();
    Held {
        _origins: origins,
        _blocks: blocks::hold(),
    }
}
