//! A call's own table: whether it wants one (the first calls under
//! `MEMPROF_REPORT=auto`, every call under `call`, calls with a budget,
//! every `async fn` call), claiming it, and folding it into the thread's
//! aggregate when the call ends ([`OwnTable`]).

use super::{AUTO_CALL_TABLES, Frame};
use crate::alloc;
use crate::calls::meta::{FnMeta, table_every_call, tables_per_thread};
use crate::calls::thread::thread_fn;
use crate::cells::LineCell;
use crate::config::ReportMode;
use crate::owned::set;
use std::sync::atomic::Ordering::Relaxed;

/// A finished call's own rows. Dropping it folds them into the aggregate of
/// the thread it ended on.
#[derive(Debug)]
pub(crate) struct OwnTable {
    pub(super) meta: &'static FnMeta,
    pub(super) cells: Box<[LineCell]>,
}

impl OwnTable {
    pub(crate) fn cells(&self) -> &[LineCell] {
        &self.cells
    }
}

impl Drop for OwnTable {
    fn drop(&mut self) {
        alloc::untracked(|| {
            let thread_fn = thread_fn(self.meta);
            // SAFETY: a non-null aggregate lives as long as this thread.
            let (target, calls) = match unsafe { thread_fn.as_ref() } {
                Some(t) => {
                    if t.depth.get() == 0 {
                        t.renew();
                    }
                    (t.cells(), Some(&t.calls))
                }
                // Thread teardown: straight into the retired rows, under
                // the lock that makes us their only writer.
                None => (self.meta.retired, None),
            };
            let _lock = calls
                .is_none()
                .then(|| self.meta.threads.lock().unwrap_or_else(|e| e.into_inner()));
            let cells = std::mem::take(&mut self.cells);
            for (sum, cell) in target.iter().zip(cells.iter()) {
                sum.absorb(&cell.read());
            }
            match calls {
                Some(calls) => calls.store(calls.load(Relaxed) + 1, Relaxed),
                None => {
                    self.meta.retired_calls.fetch_add(1, Relaxed);
                }
            }
        });
    }
}

impl Frame {
    /// Which per-call table an outermost call starts, or 0 for none.
    #[inline]
    pub(super) fn wanted_table(&self) -> u64 {
        let meta = self.meta;
        // PERF: once a function's tables are handed out, a call only reads
        // `tables`, a line no call writes.
        if meta.tables.load(Relaxed) >= AUTO_CALL_TABLES
            && !meta.has_budget()
            && !table_every_call()
        {
            return 0;
        }
        self.claim_table()
    }

    #[cold]
    fn claim_table(&self) -> u64 {
        let meta = self.meta;
        let mode = crate::settings::get().report;
        let nth = match mode {
            // NOTE: then `meta.tables` stays 0, so that every call comes
            // here; the kernel enters a thread's calls once its tables are
            // handed out (see `thread::set_published`).
            ReportMode::Auto if tables_per_thread() => {
                // SAFETY: a non-null aggregate lives as long as this thread.
                match unsafe { thread_fn(meta).as_ref() } {
                    Some(t) if t.tables.get() < AUTO_CALL_TABLES => {
                        t.tables.set(t.tables.get() + 1);
                        t.tables.get()
                    }
                    _ => u64::MAX,
                }
            }
            ReportMode::Auto if meta.tables.load(Relaxed) < AUTO_CALL_TABLES => {
                meta.tables.fetch_add(1, Relaxed) + 1
            }
            ReportMode::Exit | ReportMode::Off if !meta.has_budget() => {
                // No per-call tables in these modes: later calls need not
                // come here.
                meta.tables.store(AUTO_CALL_TABLES, Relaxed);
                0
            }
            // `call`, and every call of a function with a budget (whose
            // message shows the call's own table): untallied.
            _ => u64::MAX,
        };
        let printed = match mode {
            ReportMode::Call => true,
            ReportMode::Auto => nth <= AUTO_CALL_TABLES,
            ReportMode::Exit | ReportMode::Off => false,
        };
        if printed || meta.has_budget() { nth } else { 0 }
    }

    #[cold]
    pub(super) fn own_table(&self, nth: u64) {
        let cells = alloc::untracked(|| LineCell::row_set(self.meta.cell_count()));
        set(&self.head.cells, cells.as_ptr());
        self.state().own.set(Some(cells));
        set(&self.state().nth, nth);
        // A table that is neither printed nor checked (`nth` 0: an `async
        // fn` call past its function's first tables) is read only through
        // the aggregate: its sites go there, as a synchronous call's do, so
        // that a service's thousands of async calls do not each fill the
        // thread's sites table with keys of their own.
        static SERIALS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        let serial = match nth {
            0 => 0,
            _ => SERIALS.fetch_add(1, Relaxed),
        };
        set(&self.state().sites_serial, serial);
    }
}
