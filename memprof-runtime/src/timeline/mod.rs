//! Cooperation with `mprof run`: `FUNC` lines for the intervals covered by
//! profiled calls long enough to show on a plot, one `CALLS` line of exact
//! totals per function and depth, and `HEAP` samples of the exact heap,
//! appended to the run's `.dat` file.
//!
//! `mprof run` sets `MEMPROF_MPROF` to the absolute path of the `.dat` file it
//! writes, and `MEMPROF_MPROF_INTERVAL` to its sampling interval in seconds.
//! Without `MEMPROF_MPROF` nothing here runs: a profiled call pays one relaxed
//! load of [`STATE`].
//!
//! With it, the program:
//! - merges the calls of each function at each depth into the intervals
//!   they cover (the union of their `[start, end]`: an interval opens with
//!   the first call and closes with the last open one), and writes
//!   `FUNC <path> <rss_start> <t_start> <rss_end> <t_end> <depth>` for each
//!   interval that lasted at least a tenth of the sampling interval (MiB and
//!   unix seconds, `%.4f`, as memory_profiler writes them). Calls one after
//!   another stay apart, so a sequential program gets one line per call as
//!   before; a service that runs a handler in hundreds of tasks at once gets
//!   a line per stretch of time in which some handler ran, not one per
//!   request. The depth counts the profiled calls open on the thread, as
//!   memory_profiler's `TimeStamper` does: 0 for an outermost call, 1 inside
//!   it, and so on, short calls included. An `async fn` may move between
//!   threads at each `.await`, so its call takes the depth of the thread it
//!   starts on and does not deepen the calls made inside it;
//! - writes at exit, per function and depth, `CALLS <path> <depth> <calls>
//!   <seconds %.6f>`: the number of calls, and the wall time during which at
//!   least one of them ran (not their sum, which counts overlapping calls
//!   again), intervals too short to draw included. memory_profiler's reader
//!   skips the prefix. A function whose calls went quiet (see
//!   `kernel::quiet`: here, 64 calls in a row that moved no heap and were
//!   too short to draw) is not timed any more: its quiet calls run without
//!   the clock and are counted from its `Calls` into its slot of least
//!   depth;
//! - runs a sampler thread that, every interval, reads the process's RSS
//!   from `/proc/self/statm` into [`RSS_BITS`], writes out the `FUNC` lines
//!   buffered since the last interval, and appends
//!   `HEAP <MiB %.6f> <t %.4f>` with the heap in use as the counting
//!   allocator sums it. At exit it writes the last lines, the `CALLS`
//!   totals and one last `HEAP` sample.
//!
//! So a profiled call makes no system call: it reads the clock (the vDSO),
//! takes its start RSS from the last reading (the sampler's, at most one
//! interval old, or the end of the last long interval if later), counts
//! itself in its function's slot (a spin lock held for a few instructions),
//! and, if it closes an interval long enough to be drawn, reads
//! `/proc/self/statm` once for its end RSS and copies its line into its
//! thread's ring buffer. A bracket's start
//! may so miss what the last moments before the call added to RSS; its end
//! is exact.
//! Each thread that ends a long call leases one of [`RINGS`] fixed rings;
//! the sampler writes each ring out with one `writev(2)` of whole lines. A
//! thread that finds no free ring, or a full one, writes its line itself.
//!
//! The file is opened with `O_APPEND` and written in whole lines: the kernel
//! appends each write whole, so lines from the program and from `mprof
//! run`'s own sampler (which also writes whole lines with `O_APPEND`)
//! interleave but never mix, and the file is complete up to the last
//! interval, even if either process is killed. Readers sort by time.
//!
//! Only one process of a run records: the first to take an exclusive `flock`
//! on the file. Programs that `mprof run` reaches through a wrapper (`cargo
//! run`, a shell script) still record; a profiled program started by another
//! one while that one records does not, so one `HEAP` series never mixes two
//! heaps.
//!
//! Nothing here allocates while the program runs: lines are formatted into
//! stack buffers, rings and the interval table are fixed statics, and the
//! sampler is a bare `pthread` with every signal blocked that only sleeps,
//! reads, sums the allocator's slots and writes. Setting up (reading the
//! environment, starting the thread, a thread's first lease of a ring) runs
//! inside [`untracked`], so none of it shows in any figure.

use crate::calls::FnMeta;

/// What a profiled call noted at entry, for its `FUNC` line. Read on
/// Linux only: elsewhere no timeline is recorded (see below).
#[derive(Debug)]
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
pub(crate) struct CallMark {
    start: Option<Start>,
}

impl CallMark {
    /// A call that writes no `FUNC` line (`MEMPROF=off`).
    pub(crate) const fn none() -> Self {
        CallMark { start: None }
    }
}

#[derive(Debug)]
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
struct Start {
    rss_mib: f64,
    time: f64,
    depth: u32,
    /// Whether the call counted in the thread's depth (sync calls do).
    nests: bool,
    /// Its function's slot in the interval table, or `NO_SLOT`.
    slot: usize,
}

#[cfg(target_os = "linux")]
pub(crate) use linux::{call_end, call_start, recording};

// NOTE: the timeline is recorded on Linux only (its RSS comes from
// `/proc/self/statm`; see `docs/platforms.md`). Elsewhere `mprof run`
// still samples the program's RSS from outside, without `FUNC`, `CALLS`
// or `HEAP` lines.

/// Whether this process records a timeline for `mprof run`.
#[cfg(not(target_os = "linux"))]
pub(crate) fn recording() -> bool {
    false
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn call_start(_nests: bool, _meta: &FnMeta) -> CallMark {
    CallMark { start: None }
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn call_end(_mark: &CallMark, _meta: &FnMeta) -> bool {
    false
}

#[cfg(target_os = "linux")]
mod linux;
