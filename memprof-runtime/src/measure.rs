//! `measure`, `memit!` and `assert_memory!`: one region around an expression,
//! in thread or process scope, with its allocation counts and GPU figures.

use crate::alloc;
use crate::region::{Region, Scope, context_counts};

/// Figures of one measured expression, in bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct Measurement {
    /// Net change: bytes allocated minus bytes freed.
    pub increment: i64,
    /// Highest rise of the heap above its value at the start.
    pub peak: u64,
    /// Number of allocations (a `realloc` counts as one).
    pub allocations: u64,
    /// Number of deallocations (a `realloc` counts as one).
    pub deallocations: u64,
    /// Bytes allocated, freed or not: the sum of every allocation's size (a
    /// `realloc`'s new size), the churn that dhat calls `total_bytes`.
    pub allocated_bytes: u64,
    /// Net change of GPU memory (see the README's GPU section for what is
    /// counted); `None` without a usable GPU.
    pub gpu_increment: Option<i64>,
    /// Highest rise of GPU memory above the start during the measurement:
    /// exact when device allocations are counted (CUPTI); in NVML's view,
    /// the highest sample (at its ends and at the statement boundaries of
    /// profiled functions it ran on this thread). `None` without a usable
    /// GPU.
    pub gpu_peak: Option<u64>,
    /// While device allocations are counted: the driver's view (NVML, what
    /// `nvidia-smi` shows) at the end minus at the start, CUDA context and
    /// pools included; `None` otherwise.
    pub gpu_driver_increment: Option<i64>,
}

/// An open measurement; see [`crate::measure`].
#[derive(Debug)]
pub struct MeasureGuard {
    scope: Scope,
    region: Region,
    counts: (u64, u64, u64),
    heap_before: i64,
    open: bool,
    /// `memit!` in thread scope: the whole process, measured beside, for
    /// the note on what other threads did meanwhile.
    beside: Option<Region>,
    /// Where the GPU figures started, when the GPU is watched.
    gpu: Option<crate::gpu::GpuMark>,
    /// The driver's view at the start, while counting.
    driver: Option<i64>,
}

/// What other threads did during a thread-scope `memit!`: the figures
/// process scope would have shown, (increment, peak).
pub(crate) type Beside = Option<(i64, u64)>;

impl MeasureGuard {
    /// Starts measuring `scope`: the calling thread (or task), or the whole
    /// process.
    #[inline]
    pub fn start(scope: Scope) -> Self {
        Self::open(scope, false)
    }

    /// [`MeasureGuard::start`] for `memit!`, which in thread scope also
    /// watches the process, to say what thread scope missed.
    pub fn start_memit(scope: Scope) -> Self {
        Self::open(scope, true)
    }

    fn open(scope: Scope, beside: bool) -> Self {
        // NOTE: the GPU figures keep the view they had before measurements
        // took a scope; only the heap's follows `scope`.
        let gpu = crate::gpu::active()
            .then(|| crate::gpu::begin(false))
            .flatten();
        let driver = gpu.and_then(|_| crate::gpu::driver());
        let beside = (beside && scope == Scope::Thread).then(|| Region::open(Scope::Process));
        let region = Region::open(scope);
        MeasureGuard {
            scope,
            counts: counts(scope),
            heap_before: alloc::process_net(),
            region,
            open: true,
            beside,
            gpu,
            driver,
        }
    }

    /// Ends the measurement: its figures, the process heap at its start, and
    /// what process scope would have shown beside a thread-scope `memit!`.
    pub(crate) fn finish(mut self) -> (Measurement, i64, Beside) {
        let (allocs, deallocs, allocated) = counts(self.scope);
        self.open = false;
        let stats = self.region.close();
        let beside = self.beside.take().map(|mut r| {
            let s = r.close();
            (s.increment, s.peak)
        });
        let gpu = self.gpu.take().and_then(crate::gpu::end);
        let (gpu_increment, gpu_peak) = (gpu.map(|g| g.increment), gpu.map(|g| g.peak));
        let gpu_driver_increment = self
            .driver
            .take()
            .and_then(|start| Some(crate::gpu::driver()? - start));
        let m = Measurement {
            increment: stats.increment,
            peak: stats.peak,
            allocations: allocs.wrapping_sub(self.counts.0),
            deallocations: deallocs.wrapping_sub(self.counts.1),
            allocated_bytes: allocated.wrapping_sub(self.counts.2),
            gpu_increment,
            gpu_peak,
            gpu_driver_increment,
        };
        (m, self.heap_before, beside)
    }

    /// Ends the measurement and returns its figures.
    pub fn measurement(self) -> Measurement {
        self.finish().0
    }
}

/// Allocation and deallocation counts and bytes allocated of `scope`, as
/// running totals.
fn counts(scope: Scope) -> (u64, u64, u64) {
    match scope {
        Scope::Thread => context_counts(),
        Scope::Process => alloc::watch_counts(),
    }
}

impl Drop for MeasureGuard {
    fn drop(&mut self) {
        if self.open {
            self.region.close();
        }
        if let Some(mut beside) = self.beside.take() {
            beside.close();
        }
        if let Some(mark) = self.gpu.take() {
            crate::gpu::end(mark);
        }
    }
}
