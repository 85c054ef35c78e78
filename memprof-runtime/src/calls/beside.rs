//! What a call reads beside the heap at its entry and exit, for its `fn`
//! row: its GPU region, the driver's view (NVML, while counting) and a
//! framework's pool (`crate::pool`).

use crate::cells::{DriverFigures, LineCell};
use crate::gpu::GpuMark;
use crate::pool::PoolUsage;

/// A call's readings at entry, folded into its `fn` row at exit.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Beside {
    /// Where the call's GPU figures started, when it watches GPU memory.
    gpu: Option<GpuMark>,
    /// The driver's view at the call's entry, while counting.
    driver: Option<i64>,
    /// A framework's pool at the call's entry, while one is watched.
    pool: Option<PoolUsage>,
}

impl Beside {
    /// Before the call's heap region opens: its GPU region, if `gpu`
    /// (`process`: every thread's device allocations).
    pub(crate) fn open_gpu(gpu: bool, process: bool) -> Beside {
        Beside {
            gpu: if gpu {
                crate::gpu::begin(process)
            } else {
                None
            },
            ..Beside::default()
        }
    }

    /// After the heap region opens, so that NVML's and a pool reader's own
    /// work are no part of the call's figures.
    pub(crate) fn read_after_open(&mut self, gpu: bool, pool: bool) {
        self.driver = if gpu { crate::gpu::driver() } else { None };
        self.pool = if pool { crate::pool::read() } else { None };
    }

    /// At the call's exit, before its heap figures close `fn_row`.
    pub(crate) fn close(self, fn_row: &LineCell) {
        if let Some(gpu) = self.gpu.and_then(crate::gpu::end) {
            fn_row.closed_gpu(gpu);
        }
        if let Some(start) = self.driver
            && let Some(end) = crate::gpu::driver()
        {
            fn_row.closed_driver(DriverFigures {
                increment: end - start,
                usage: end,
            });
        }
        if let Some(start) = self.pool
            && let Some(end) = crate::pool::read()
        {
            fn_row.closed_pool(crate::pool::figures(start, end));
        }
    }
}
