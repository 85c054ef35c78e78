//! Heap profiles in pprof's format (profile.proto, gzipped), which pprof's
//! viewer, flame-graph tools and continuous-profiling backends read.
//!
//! The data flows one way: a [`Report`]'s rows and sites become a
//! [`HeapProfile`] here (stacks and their four values, Go's heap sample
//! types), which `encode` turns into profile.proto's messages (`proto`)
//! and gzips, or reads back from them. Nothing here runs on the allocation
//! path: a profile is made when it is asked for.

mod encode;
mod names;
mod nesting;
mod proto;

pub use encode::DecodeError;

use crate::report::{FunctionReport, LineReport, Report};
use crate::sites::{Site, SiteFrame};
use foldhash::fast::FixedState;
use std::collections::{BTreeMap, HashSet};

/// The names of the profiled functions that recorded sites.
type Profiled<'r> = HashSet<&'r str, FixedState>;

/// A sample's four values, Go's heap sample types, in their order in the
/// profile: `alloc_objects`, `alloc_space`, `inuse_objects`, `inuse_space`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HeapValues {
    /// `alloc_objects`/count: allocations made (a `realloc` counts as one).
    pub alloc_objects: i64,
    /// `alloc_space`/bytes: bytes those allocations asked for, freed or not.
    pub alloc_space: i64,
    /// `inuse_objects`/count: allocations still in use. memprof does not
    /// count live blocks yet, so it is 0 in the profiles it makes.
    pub inuse_objects: i64,
    /// `inuse_space`/bytes: bytes still in use (see [`HeapProfile`]).
    pub inuse_space: i64,
}

impl HeapValues {
    /// Every value zero.
    pub fn is_zero(&self) -> bool {
        *self == HeapValues::default()
    }

    fn add(&mut self, other: &HeapValues) {
        self.alloc_objects = self.alloc_objects.saturating_add(other.alloc_objects);
        self.alloc_space = self.alloc_space.saturating_add(other.alloc_space);
        self.inuse_objects = self.inuse_objects.saturating_add(other.inuse_objects);
        self.inuse_space = self.inuse_space.saturating_add(other.inuse_space);
    }

    fn minus(&self, base: &HeapValues) -> HeapValues {
        HeapValues {
            alloc_objects: self.alloc_objects.saturating_sub(base.alloc_objects),
            alloc_space: self.alloc_space.saturating_sub(base.alloc_space),
            inuse_objects: self.inuse_objects.saturating_sub(base.inuse_objects),
            inuse_space: self.inuse_space.saturating_sub(base.inuse_space),
        }
    }
}

/// A heap profile: call stacks and what was allocated through each.
///
/// Each stack is innermost frame first: the frames of a site between the
/// allocation and the profiled line (with `MEMPROF_SITES`), then the
/// profiled line as a frame of its own (the profiled function's name, its
/// file and the line), then the profiled lines that enclose it (a loop's
/// line after its body's), outermost last. A line holds its own share: its
/// figures less those of the lines it encloses, so that each allocation
/// counts once and the samples through a line add up to its row in the
/// tables. The `fn` row is left out: it holds the whole call, whose
/// statements are there. A site that passes through another profiled
/// function is left to that function's lines, which record it too; without
/// sites, a line that calls a profiled function holds that call's bytes as
/// well as the function's own lines do.
///
/// Values are those of the report: a site's figures, scaled from a sample
/// under `MEMPROF_SITES=sample` as its estimates are (each sampled
/// allocation of `size` bytes stands for `1 / (1 - exp(-size / mean))`
/// of its kind), exact otherwise. In use is a site's `live_bytes`, or a
/// line's Increment (what its executions kept) without sites, below zero
/// read as 0.
///
/// ```
/// #[memprof::profile]
/// fn build() -> Vec<u8> {
///     let v = vec![0u8; 100];
///     v
/// }
///
/// let v = build();
/// let profile = memprof::HeapProfile::of_report(&memprof::report());
/// if memprof::ENABLED {
///     let values = profile.total();
///     assert_eq!((values.alloc_objects, values.alloc_space), (1, 100));
/// }
/// let bytes = profile.to_pprof();
/// assert_eq!(memprof::HeapProfile::from_pprof(&bytes).unwrap().samples, profile.samples);
/// # drop(v);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HeapProfile {
    /// Each stack (innermost frame first, the profiled line last) and its
    /// values, stacks that read the same added together.
    pub samples: BTreeMap<Vec<SiteFrame>, HeapValues>,
    /// The sampling mean in bytes (`MEMPROF_SITES=sample`), written as the
    /// profile's period; `None` where every allocation was recorded, or
    /// where the mean is not known (a report read from JSON).
    pub sample_mean: Option<u64>,
    /// When the profile was taken, in nanoseconds since the Unix epoch; 0
    /// where not known.
    pub time_nanos: i64,
    /// What the report's sites and Live left out, every function's added
    /// up (see [`SitesLeftOut`](crate::SitesLeftOut)), written as a comment.
    pub left_out: crate::SitesLeftOut,
}

impl HeapProfile {
    /// The profile of `report`'s lines and sites (see [`HeapProfile`]).
    pub fn of_report(report: &Report) -> HeapProfile {
        // Functions whose own rows record the sites that pass through them.
        let profiled: Profiled<'_> = report
            .functions
            .iter()
            .filter(|f| f.lines.iter().any(|l| l.sites.is_some()))
            .map(|f| f.name.as_str())
            .collect();
        let mut profile = HeapProfile::default();
        for function in &report.functions {
            profile.add_function(function, &profiled);
            if let Some(left_out) = &function.sites_left_out {
                profile.left_out.add(left_out);
            }
        }
        profile
    }

    /// Each statement row's own share (its figures less those of the rows
    /// it encloses), on a stack of its sites' frames, its line, and the
    /// lines that enclose it.
    fn add_function(&mut self, function: &FunctionReport, profiled: &Profiled<'_>) {
        let parents = nesting::enclosing(function);
        let rows: Vec<usize> = function.statement_indices().collect();
        let mut shares: Vec<BTreeMap<Vec<SiteFrame>, HeapValues>> = rows
            .iter()
            .map(|&i| figures(&function.lines[i], profiled))
            .collect();
        // PERF: in line order, a row's figures are still whole when they are
        // taken from its parent's (its own children come after it), so each
        // row's figures are made once.
        for c in 0..rows.len() {
            let Some(parent) = parents[rows[c]] else {
                continue;
            };
            let Some(p) = rows[..c].iter().position(|&r| r == parent) else {
                continue;
            };
            let (before, after) = shares.split_at_mut(c);
            for (frames, values) in &after[0] {
                match before[p].get_mut(frames) {
                    Some(outer) => *outer = outer.minus(values),
                    None => {
                        before[p].insert(frames.clone(), HeapValues::default().minus(values));
                    }
                }
            }
        }
        let own = rows.into_iter().zip(shares);
        let line = |i: usize| SiteFrame {
            function: function.name.clone(),
            file: Some(function.file.clone()),
            line: Some(function.lines[i].line),
        };
        for (i, shares) in own {
            let mut lines = vec![line(i)];
            let mut at = i;
            while let Some(parent) = parents[at] {
                lines.push(line(parent));
                at = parent;
            }
            for (frames, values) in shares {
                let mut stack = frames;
                stack.extend(lines.iter().cloned());
                self.add(stack, values);
            }
        }
    }

    fn add(&mut self, stack: Vec<SiteFrame>, values: HeapValues) {
        if !values.is_zero() {
            self.samples.entry(stack).or_default().add(&values);
        }
    }

    /// What grew from `base` to this profile: per stack, this profile's
    /// values minus `base`'s (below zero where a stack shrank), stacks
    /// whose values did not change left out. pprof allows negative values.
    pub fn minus(&self, base: &HeapProfile) -> HeapProfile {
        let zero = HeapValues::default();
        let mut samples = BTreeMap::new();
        for (stack, values) in &self.samples {
            let delta = values.minus(base.samples.get(stack).unwrap_or(&zero));
            if !delta.is_zero() {
                samples.insert(stack.clone(), delta);
            }
        }
        for (stack, values) in &base.samples {
            if !self.samples.contains_key(stack) && !values.is_zero() {
                samples.insert(stack.clone(), zero.minus(values));
            }
        }
        HeapProfile {
            samples,
            sample_mean: self.sample_mean.or(base.sample_mean),
            time_nanos: self.time_nanos,
            left_out: self.left_out.clone(),
        }
    }

    /// Every sample's values added up.
    pub fn total(&self) -> HeapValues {
        let mut total = HeapValues::default();
        for values in self.samples.values() {
            total.add(values);
        }
        total
    }

    /// The profile in pprof's format: profile.proto, gzipped, functions,
    /// files and lines in its string table (no binary is needed to read it),
    /// `inuse_space` the default sample type.
    pub fn to_pprof(&self) -> Vec<u8> {
        encode::encode(self)
    }

    /// Reads a profile in pprof's format, gzipped or not: the sample types
    /// named as Go's heap profiles name them (others are ignored), each
    /// location's lines as frames (inlined ones first, as pprof lists them).
    pub fn from_pprof(bytes: &[u8]) -> Result<HeapProfile, DecodeError> {
        encode::decode(bytes)
    }
}

/// The in-use figures `(objects, bytes)` of a line's site (`site`), or of
/// the line itself without sites: the allocations and bytes still in use
/// (Live: `in_use_allocations`, `in_use_bytes`), which reports with sites
/// have; else, in a report written before memprof kept them, a site's
/// `live_bytes` or a line's Increment (what its executions kept), below
/// zero read as 0, with no object count.
// NOTE: the one place that chooses the in-use figure.
fn in_use(row: &LineReport, site: Option<&Site>) -> (i64, i64) {
    let live = match site {
        Some(site) => site.in_use_allocations.zip(site.in_use_bytes),
        None => row.in_use_allocations.zip(row.in_use_bytes),
    };
    if let Some((objects, bytes)) = live {
        return (as_i64(objects), as_i64(bytes));
    }
    let bytes = match site {
        Some(site) => site.live_bytes,
        None => row.increment.unwrap_or(0),
    };
    (0, bytes.max(0))
}

fn as_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// A row's figures, whole (enclosed rows' included): per site, keyed by
/// its frames, where sites were recorded, less those that pass through a
/// profiled function (whose own rows hold them); else the row's own, under
/// no frame.
fn figures(row: &LineReport, profiled: &Profiled<'_>) -> BTreeMap<Vec<SiteFrame>, HeapValues> {
    let mut out: BTreeMap<Vec<SiteFrame>, HeapValues> = BTreeMap::new();
    match &row.sites {
        Some(sites) => {
            for site in sites {
                if site
                    .frames
                    .iter()
                    .any(|f| profiled.contains(f.function.as_str()))
                {
                    continue;
                }
                let (inuse_objects, inuse_space) = in_use(row, Some(site));
                out.entry(site.frames.clone())
                    .or_default()
                    .add(&HeapValues {
                        alloc_objects: signed(site.allocations),
                        alloc_space: signed(site.allocated_bytes),
                        inuse_objects,
                        inuse_space,
                    });
            }
        }
        None => {
            let (inuse_objects, inuse_space) = in_use(row, None);
            out.insert(
                Vec::new(),
                HeapValues {
                    alloc_objects: signed(row.allocations.unwrap_or(0)),
                    alloc_space: signed(row.allocated_bytes.unwrap_or(0)),
                    inuse_objects,
                    inuse_space,
                },
            );
        }
    }
    out
}

fn signed(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// The process's heap profile now: [`HeapProfile::of_report`] of
/// [`report()`](crate::report()), with the sampling mean in force and the
/// time, in pprof's format (gzipped profile.proto). What a service serves
/// at `/debug/pprof/heap`; see `examples/pprof_server.rs`.
///
/// The work is memprof's own, outside every figure; the bytes returned are
/// the caller's, counted as a `Vec` of their size.
///
/// ```
/// let bytes = memprof::heap_profile();
/// assert_eq!(&bytes[..2], &[0x1f, 0x8b]); // gzip
/// ```
pub fn heap_profile() -> Vec<u8> {
    let bytes = crate::alloc::untracked(|| {
        let mut profile = HeapProfile::of_report(&crate::report::report());
        profile.sample_mean = crate::sites::sample_mean();
        profile.time_nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX));
        // A service's endpoint: not the binary's debug information
        // resident until the next request (issue 60).
        crate::sites::let_go_of_debug_information();
        profile.to_pprof()
    });
    let ours = bytes.to_vec();
    crate::alloc::untracked(|| drop(bytes));
    ours
}
