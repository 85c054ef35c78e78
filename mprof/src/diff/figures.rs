//! What `mprof diff` compares: a function's figures per call in each run
//! ([`Figure`]), one figure's [`Change`], and a function's comparison
//! ([`FunctionDiff`]) with its status and the size of its change.
//!
//! Figures are per call, so that runs with different call counts compare:
//! a function's peak is already the highest of any one call, and its kept
//! bytes, a sum over calls, are divided by its calls.

use memprof_runtime::FunctionReport;

/// A figure that `mprof diff` compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Figure {
    Calls,
    Peak,
    KeptPerCall,
    GpuPeak,
    AllocsPerCall,
    /// Bytes allocated per call, freed or not (the churn).
    AllocatedPerCall,
    /// Bytes its calls allocated that are still in use, over all its calls
    /// (`in_use_bytes`, with sites): a total, not per call, as what a
    /// leak adds between two snapshots is.
    Live,
    /// A framework's pool (`memprof::watch_pool`), the `fn` row's: bytes in
    /// its live tensors after a call, and held from the driver, the highest
    /// over calls.
    PoolAllocated,
    PoolReserved,
}

impl Figure {
    pub fn name(self) -> &'static str {
        match self {
            Figure::Calls => "Calls",
            Figure::Peak => "Peak",
            Figure::KeptPerCall => "Kept/call",
            Figure::GpuPeak => "GPU peak",
            Figure::AllocsPerCall => "Allocs/call",
            Figure::AllocatedPerCall => "Allocated/call",
            Figure::Live => "Live",
            Figure::PoolAllocated => "Pool allocated",
            Figure::PoolReserved => "Pool reserved",
        }
    }

    /// Whether the figure is bytes (and so written in a unit).
    pub fn is_bytes(self) -> bool {
        !matches!(self, Figure::Calls | Figure::AllocsPerCall)
    }

    /// Whether the figure is kept in millionths (allocations per call,
    /// where 20 allocations over 113,331 calls are 0.00018, not 0).
    pub fn is_millionths(self) -> bool {
        self == Figure::AllocsPerCall
    }

    /// Whether the figure is an average over calls (truncated to whole
    /// bytes, or millionths): two runs' averages of the same behaviour
    /// differ by a unit of rounding, which is no change.
    pub fn is_per_call(self) -> bool {
        matches!(
            self,
            Figure::KeptPerCall | Figure::AllocsPerCall | Figure::AllocatedPerCall
        )
    }

    /// Whether the figure is memory held, which can regress: checked
    /// against `--fail-over` and judged in a function's status. Bytes
    /// allocated are work, as allocation counts are: shown, not judged; so
    /// is a pool's reserve, a cache the framework keeps.
    pub fn is_held(self) -> bool {
        self.is_bytes() && !matches!(self, Figure::AllocatedPerCall | Figure::PoolReserved)
    }
}

/// One figure in both runs; `None` where the run has no such figure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Change {
    pub figure: Figure,
    pub base: Option<i64>,
    pub head: Option<i64>,
}

impl Change {
    /// Head less base, a missing side counting as 0.
    pub fn delta(&self) -> i64 {
        self.head
            .unwrap_or(0)
            .saturating_sub(self.base.unwrap_or(0))
    }

    /// Whether the figure moved: any difference for a total (calls, peak,
    /// Live, a pool's), and for a per-call average a difference past its
    /// rounding and a little more, `|Δ| > 1 + 0.1 % × max(|base|, |head|)`
    /// units, as `numpy.isclose` with an absolute and a relative
    /// tolerance. A function keeping −94 B a call, then −93 B, has not
    /// changed: its averages, truncated to whole bytes, moved by their
    /// rounding (issue 60).
    pub fn moved(&self) -> bool {
        if self.base.is_none() || self.head.is_none() || !self.figure.is_per_call() {
            return self.base != self.head;
        }
        let larger = self
            .base
            .unwrap_or(0)
            .unsigned_abs()
            .max(self.head.unwrap_or(0).unsigned_abs());
        let tolerance = PER_CALL_UNITS as f64 + larger as f64 * PER_CALL_SHARE;
        self.delta().unsigned_abs() as f64 > tolerance
    }

    /// The change in percent of the base; `None` where the base is missing
    /// or 0 and the figure changed, and for kept bytes, where the base is
    /// below 0 (a call that freed its input): a percentage of that means
    /// nothing.
    pub fn percent(&self) -> Option<f64> {
        let base = self.base?;
        match (base, self.delta()) {
            (_, 0) => Some(0.0),
            (0, _) => None,
            (b, _) if b < 0 && self.figure == Figure::KeptPerCall => None,
            (base, delta) => Some(delta as f64 * 100.0 / base.unsigned_abs() as f64),
        }
    }

    /// How much the figure grew in the sense that can regress: a peak's
    /// rise, and kept bytes only above 0. A call that frees more than it
    /// keeps has nothing kept to grow: from −56 MiB to −40 MiB it frees
    /// less of its input, which is the input's doing, not a leak.
    pub fn growth(&self) -> i64 {
        match self.figure {
            Figure::KeptPerCall => {
                let kept = |v: Option<i64>| v.unwrap_or(0).max(0);
                kept(self.head) - kept(self.base)
            }
            _ => self.delta(),
        }
    }

    /// [`Change::growth`] in percent of the base it grew from; `None` from
    /// nothing (0, or kept bytes below 0).
    pub(super) fn growth_percent(&self) -> Option<f64> {
        let base = match self.figure {
            Figure::KeptPerCall => self.base?.max(0),
            _ => self.base?,
        };
        match (base, self.growth()) {
            (_, 0) => Some(0.0),
            (b, _) if b <= 0 => None,
            (base, growth) => Some(growth as f64 * 100.0 / base as f64),
        }
    }
}

/// The tolerance of a per-call average (see [`Change::moved`]): units of
/// rounding, and a share of the larger figure.
const PER_CALL_UNITS: u64 = 1;
const PER_CALL_SHARE: f64 = 0.001;

/// Whether a function ran in both runs, or only in one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Presence {
    Both,
    New,
    Removed,
}

/// One function's comparison.
#[derive(Debug)]
pub struct FunctionDiff<'a> {
    pub name: &'a str,
    /// The base's name for the function, where it differs from the head's
    /// and the two were matched by file and signature (a dependency's new
    /// version renamed a trait path in `type_name`).
    pub base_name: Option<&'a str>,
    pub file: &'a str,
    pub presence: Presence,
    pub base: Option<&'a FunctionReport>,
    pub head: Option<&'a FunctionReport>,
    /// Calls, peak, kept per call and, where either run counted device
    /// allocations, GPU peak.
    pub changes: Vec<Change>,
    /// The byte figures that grew past `--fail-over`.
    pub over: Vec<Change>,
    /// For a function that grew only through the profiled functions it
    /// calls: their names (see `callees`). Empty otherwise.
    pub callees: Vec<String>,
}

impl FunctionDiff<'_> {
    /// The largest growth of a byte figure (negative when all shrank; see
    /// [`Change::growth`]).
    pub fn growth(&self) -> i64 {
        self.byte_changes().map(|c| c.growth()).max().unwrap_or(0)
    }

    /// The size of the largest change of a byte figure, growth or shrink;
    /// a missing side counts as 0, so that a new or removed function's is
    /// its own size.
    pub fn size_of_change(&self) -> u64 {
        // Where the runs have bytes in use, what grew in use ranks: a
        // steady leak keeps the same per call, and grows only there.
        if let Some(live) = self.changes.iter().find(|c| c.figure == Figure::Live) {
            return live.delta().unsigned_abs();
        }
        self.byte_changes()
            .map(|c| c.delta().unsigned_abs())
            .max()
            .unwrap_or(0)
    }

    fn byte_changes(&self) -> impl Iterator<Item = &Change> {
        self.changes.iter().filter(|c| c.figure.is_held())
    }

    /// A word for the function's change: new, removed, grew, shrank, same,
    /// or changed (figures moved, none of them in a way that can regress,
    /// as kept bytes below 0 that rose toward 0).
    pub fn status(&self) -> &'static str {
        match self.presence {
            Presence::New => "new",
            Presence::Removed => "removed",
            Presence::Both if self.byte_changes().any(|c| c.moved() && c.growth() > 0) => {
                match self.callees.is_empty() {
                    true => "grew",
                    false => "grew in callees",
                }
            }
            Presence::Both if self.byte_changes().any(|c| c.moved() && c.delta() < 0) => "shrank",
            Presence::Both if self.byte_changes().any(Change::moved) => "changed",
            Presence::Both => "same",
        }
    }

    /// Whether any figure moved ([`Change::moved`]), or the function is in
    /// one run only.
    pub fn changed(&self) -> bool {
        self.presence != Presence::Both || self.changes.iter().any(Change::moved)
    }
}

/// The per-call figures of one run of a function: calls, peak, kept per
/// call, GPU peak, allocations and bytes allocated per call, bytes in
/// use, and a framework's pool. A function that never ran has 0 of each but GPU peak, the
/// allocation figures and bytes in use, which a run may not have.
pub(super) fn figures(function: &FunctionReport) -> [Option<i64>; 9] {
    let row = function.fn_row();
    let calls = function.calls;
    let peak = row.and_then(|r| r.peak).unwrap_or(0);
    let kept = per_call(row.and_then(|r| r.increment).unwrap_or(0), calls);
    let gpu_peak = row.and_then(|r| r.gpu_peak);
    [
        Some(to_i64(calls)),
        Some(to_i64(peak)),
        Some(kept),
        gpu_peak.map(to_i64),
        row.and_then(|r| r.allocations)
            .map(|n| millionths_per_call(n, calls)),
        row.and_then(|r| r.allocated_bytes)
            .map(|n| per_call(to_i64(n), calls)),
        row.and_then(|r| r.in_use_bytes).map(to_i64),
        row.and_then(|r| r.pool_allocated).map(to_i64),
        row.and_then(|r| r.pool_reserved).map(to_i64),
    ]
}

/// `total` bytes over `calls` calls, rounded toward zero to whole bytes; 0
/// without calls.
pub fn per_call(total: i64, calls: u64) -> i64 {
    match calls {
        0 => 0,
        n => total / to_i64(n),
    }
}

/// `total` over `calls` calls in millionths, rounded toward zero; 0
/// without calls.
fn millionths_per_call(total: u64, calls: u64) -> i64 {
    match calls {
        0 => 0,
        n => to_i64((u128::from(total) * 1_000_000 / u128::from(n)).min(i64::MAX as u128) as u64),
    }
}

pub fn to_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}
