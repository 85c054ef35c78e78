//! Allocation sites (`MEMPROF_SITES`): the call stacks of the allocations
//! made while each profiled line runs, inside code nobody annotated.
//!
//! The data flows one way:
//! - `recorder`: what the allocator's slow path reports (a stack per
//!   allocation, taken without allocating or locking, charged to the rows
//!   open on the thread, which a walker of the side stack that the runtime
//!   registers reads);
//! - `tables`: where that goes, per thread, in fixed-capacity tables;
//! - `in_use`: each recorded block until it is freed, on any thread, by
//!   the rows and stack that made it (the Live figures);
//! - `figures`: at report time, the figures of one function's rows, from
//!   both, merged by stack; `resolve` symbolizes a stack and trims it to
//!   the frames below the line.
//!
//! Beside them: `frames` (taking a stack), `mapping` (memory for the
//! tables, outside the allocator) and `addr_map` (the growing hash map of
//! blocks by address that `tables` and `in_use` keep, and the one mixer).
//!
//! Off (the default), none of it runs: the allocator's fast path is that of
//! a build without sites. On, statements and calls still run as they do
//! without it; each thread's allocations take the allocator's slow path.

mod addr_map;
mod figures;
mod frames;
mod in_use;
mod left_out;
mod mapping;
mod recorder;
mod resolve;
mod tables;

pub(crate) use figures::{for_rows, merge};
pub(crate) use frames::{ANCHORS, anchor, caller_anchor, returns_into};
pub(crate) use in_use::{InUse, read as read_in_use};
pub use mapping::mapped_bytes;
pub(crate) use recorder::{OpenRow, Rows, allocation, free, set_walker, thread_ends};
pub(crate) use resolve::{Span, in_own_frame, let_go_of_debug_information, line_of};
pub(crate) use tables::Key;
pub(crate) use tables::MAX_OPEN;
pub use tables::table_sets;

use crate::config::{DEFAULT_SITES_SAMPLE_MEAN, DEFAULT_SITES_SEED, SitesMode};
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering::Relaxed};

/// Every lock of sites, held: taken before `fork` (see `fork`), so that
/// the child never inherits one locked, which its own reports or threads
/// would wait on forever.
#[cfg(unix)]
pub(crate) struct HeldForFork {
    _tables: tables::Held,
    _in_use: in_use::Held,
    _left_out: addr_map::Guard<'static, left_out::Shortfall>,
    _symbols: std::sync::MutexGuard<'static, resolve::Symbols>,
}

/// Sites' locks, held until the guard drops; `None` when sites are off.
#[cfg(unix)]
pub(crate) fn hold_for_fork() -> Option<HeldForFork> {
    enabled().then(|| {
        let symbols = resolve::hold_symbols();
        HeldForFork {
            _tables: tables::hold(),
            _in_use: in_use::hold(),
            _left_out: left_out::hold(),
            _symbols: symbols,
        }
    })
}

const OFF: u8 = 0;
const ALL: u8 = 1;
const SAMPLE: u8 = 2;
static MODE: AtomicU8 = AtomicU8::new(OFF);
static MEAN: AtomicU64 = AtomicU64::new(DEFAULT_SITES_SAMPLE_MEAN);
static SEED: AtomicU64 = AtomicU64::new(DEFAULT_SITES_SEED);

/// Puts the configuration in force, once, before the first profiled call.
pub(crate) fn configure(mode: SitesMode, seed: u64) {
    SEED.store(seed, Relaxed);
    match mode {
        SitesMode::Off => MODE.store(OFF, Relaxed),
        SitesMode::All => MODE.store(ALL, Relaxed),
        SitesMode::Sample(mean) => {
            MEAN.store(mean.max(1), Relaxed);
            MODE.store(SAMPLE, Relaxed);
        }
    }
}

/// Whether sites are recorded.
#[inline]
pub(crate) fn enabled() -> bool {
    MODE.load(Relaxed) != OFF
}

/// `MEMPROF_SITES` asks for sites: noted as the program loads (see
/// `settings`), before the configuration is read at the first profiled
/// call, so that threads started before it report their frees.
static WANTED_AT_LOAD: AtomicBool = AtomicBool::new(false);

/// Notes that `MEMPROF_SITES` asks for sites (see [`follow_every_thread`]).
pub(crate) fn wanted_at_load() {
    WANTED_AT_LOAD.store(true, Relaxed);
}

/// Whether every thread's allocations and frees go to sites from its
/// first, profiled or not: a block in use is often freed on a thread that
/// runs no profiled code, and started before the first profiled call.
pub(crate) fn follow_every_thread() -> bool {
    enabled() || WANTED_AT_LOAD.load(Relaxed)
}

/// Whether the block at `ptr` may be followed by the in-use map or a
/// thread's tables: if not, its free is nothing for sites. One load (see
/// `in_use`); the allocator's fast path asks it with sampled sites.
#[inline(always)]
pub(crate) fn maybe_followed(ptr: *mut u8) -> bool {
    in_use::maybe(ptr as usize)
}

/// The sampling mean, or `None` when every allocation is recorded.
pub(crate) fn sample_mean() -> Option<u64> {
    (MODE.load(Relaxed) == SAMPLE).then(|| MEAN.load(Relaxed))
}

fn sample_seed() -> u64 {
    SEED.load(Relaxed)
}

/// Where the allocations of a line came from: one call stack below the
/// line, and what was allocated through it.
///
/// With `MEMPROF_SITES=1` the figures are exact and a line's sites add up
/// to its `allocations` and `allocated_bytes`; with `MEMPROF_SITES=sample`
/// they are estimates from a sample (`estimated`).
#[derive(
    Debug,
    Clone,
    PartialEq,
    Eq,
    serde::Serialize,
    serde::Deserialize,
    miniserde::Serialize,
    miniserde::Deserialize,
)]
pub struct Site {
    /// Allocations made through this stack while the line ran (a
    /// `realloc` counts as one), summed over its executions.
    pub allocations: u64,
    /// Bytes they asked for (a `realloc`'s new size), freed or not.
    pub allocated_bytes: u64,
    /// Of those, bytes not yet freed by the line's thread when the line
    /// ended, summed over its executions.
    pub live_bytes: i64,
    /// Of those, the allocations still allocated when the report was
    /// taken, freed by no thread yet (heap profilers' "in use", the
    /// `Live` figure); scaled as `allocations` is. `None` in a report of
    /// one call, or written before memprof kept it.
    pub in_use_allocations: Option<u64>,
    /// Their bytes.
    pub in_use_bytes: Option<u64>,
    /// The figures are scaled from a sample.
    pub estimated: bool,
    /// The frames between the allocation and the line, innermost first:
    /// memprof's, the allocator's and `alloc`'s own left out. Empty when
    /// the line allocated itself.
    pub frames: Vec<SiteFrame>,
}

/// What a function's sites and Live leave out: allocations made while its
/// lines ran that memprof's tables had no room to follow (their memory is
/// mapped within the address-space budget of docs/reliability.md). The
/// figures shown stay exact for what they cover; these say what they do
/// not. Counted since the process started (`memprof::reset` keeps them),
/// in allocations (scaled, as sites are, when sampled) and their bytes.
#[derive(
    Debug,
    Clone,
    Default,
    PartialEq,
    Eq,
    serde::Serialize,
    serde::Deserialize,
    miniserde::Serialize,
    miniserde::Deserialize,
)]
pub struct SitesLeftOut {
    /// Allocations no site holds (a thread's site tables were full): the
    /// lines' `allocations` count them, their sites do not.
    pub unsited_allocations: u64,
    /// Their bytes.
    pub unsited_bytes: u64,
    /// Allocations Live does not follow (the in-use map had no room): a
    /// line's `in_use_*` leave out those of them still allocated.
    pub unfollowed_allocations: u64,
    /// Their bytes.
    pub unfollowed_bytes: u64,
    /// Allocations whose frees the allocating thread's tables could not
    /// pair with them: a site's `live_bytes` may still count them.
    pub unpaired_allocations: u64,
    /// Their bytes.
    pub unpaired_bytes: u64,
}

impl SitesLeftOut {
    /// Whether nothing was left out.
    pub fn is_empty(&self) -> bool {
        *self == SitesLeftOut::default()
    }

    /// Adds another process's (reports merged across test binaries).
    pub(crate) fn add(&mut self, other: &SitesLeftOut) {
        self.unsited_allocations += other.unsited_allocations;
        self.unsited_bytes += other.unsited_bytes;
        self.unfollowed_allocations += other.unfollowed_allocations;
        self.unfollowed_bytes += other.unfollowed_bytes;
        self.unpaired_allocations += other.unpaired_allocations;
        self.unpaired_bytes += other.unpaired_bytes;
    }
}

/// What the function whose `FnMeta` is at `meta` had left out; `None`
/// when sites are off or nothing was.
pub(crate) fn left_out_of(meta: usize) -> Option<SitesLeftOut> {
    if !enabled() {
        return None;
    }
    let s = left_out::of_function(meta);
    let (unsited_allocations, unsited_bytes) = s.of(left_out::Kind::Sites);
    let (unfollowed_allocations, unfollowed_bytes) = s.of(left_out::Kind::Live);
    let (unpaired_allocations, unpaired_bytes) = s.of(left_out::Kind::LineEnd);
    let out = SitesLeftOut {
        unsited_allocations,
        unsited_bytes,
        unfollowed_allocations,
        unfollowed_bytes,
        unpaired_allocations,
        unpaired_bytes,
    };
    (!out.is_empty()).then_some(out)
}

/// One frame of a [`Site`]'s stack.
#[derive(
    Debug,
    Clone,
    PartialEq,
    PartialOrd,
    Ord,
    Eq,
    Hash,
    serde::Serialize,
    serde::Deserialize,
    miniserde::Serialize,
    miniserde::Deserialize,
)]
pub struct SiteFrame {
    /// The function, without its symbol hash; an address where the binary
    /// has no symbol for it.
    pub function: String,
    /// Its source file, where debug information gives it: named as the
    /// tables name the profiled function's file (relative to the
    /// workspace's root), from the package folder for a registry
    /// dependency (`serde_json-1.0.145/src/de.rs`), from `library/` for
    /// the standard library.
    pub file: Option<String>,
    /// The line in it.
    pub line: Option<u32>,
}
