//! Sites as a report shows them: one function's rows' figures, read from
//! every thread's tables and from the origins of blocks in use, merged
//! where their trimmed stacks read the same (see `resolve`), ranked, the
//! tail summed.

use super::in_use::InUse;
use super::resolve::{Span, trimmed};
use super::tables::{COUNT_UNIT, read};
use super::{Site, SiteFrame, sample_mean};
use std::collections::HashMap;

/// Sites kept per line in a report; the rest are summed into one site
/// without frames, `(other sites)`, so that a line's sites still add up.
pub(crate) const KEPT_PER_LINE: usize = 50;

/// Where blocks in use that a function's quiet calls allocated go: the
/// rows (offsets from the function's first line) that an origin's stack
/// places on, from its return addresses; none when no frame of the stack
/// is the function's. Quiet calls open no rows, so their blocks' origins
/// name only their callers' rows (see `report::quiet`).
pub(crate) type QuietRows<'a> = &'a mut dyn FnMut(&[usize]) -> Vec<u32>;

/// The sites of each row of the function whose `FnMeta` is at `meta`, in
/// reset generation `generation`: those of one call's own table (`serial`)
/// or of every call (`None`), with, for every call's, the blocks in use of
/// `in_use` (the report's). Cells merge into their rows (`cell_rows`) as
/// their figures do. With every call's, blocks still in use that the
/// function's quiet calls allocated are placed by `quiet`. `None` when
/// sites are off.
#[allow(clippy::too_many_arguments)]
pub(crate) fn for_rows(
    meta: usize,
    generation: u64,
    serial: Option<u64>,
    cell_rows: &[u32],
    rows: usize,
    span: &Span<'_>,
    in_use: &InUse,
    quiet: Option<QuietRows<'_>>,
) -> Option<Vec<Vec<Site>>> {
    if !super::enabled() {
        return None;
    }
    let charged = read(|key| {
        key.meta == meta && serial.map_or(key.generation == generation, |s| s == key.serial)
    });
    let estimated = sample_mean().is_some();
    let mut per_row: Vec<HashMap<Vec<SiteFrame>, Site>> = vec![HashMap::new(); rows];
    for c in charged {
        let Some(&row) = cell_rows.get(c.key.cell as usize) else {
            continue;
        };
        let Some(merged) = per_row.get_mut(row as usize) else {
            continue;
        };
        let frames = trimmed(&c.frames, span);
        let site = merged
            .entry(frames.clone())
            .or_insert_with(|| empty_site(estimated, frames, serial.is_none()));
        site.allocations += c.allocations;
        site.allocated_bytes += c.bytes;
        site.live_bytes += c.live;
    }
    // What is in use now: of every call, so not in one call's table.
    if serial.is_none() {
        let mut add = |origin: &super::in_use::Read, mut lines: Vec<u32>| {
            lines.sort_unstable();
            lines.dedup();
            let frames = trimmed(&origin.frames, span);
            for row in lines {
                let Some(merged) = per_row.get_mut(row as usize) else {
                    continue;
                };
                let site = merged
                    .entry(frames.clone())
                    .or_insert_with(|| empty_site(estimated, frames.clone(), true));
                add_in_use(site, origin.count.max(0) as u64, origin.bytes.max(0) as u64);
            }
        };
        for origin in in_use.of_function(meta) {
            let lines = origin
                .rows
                .iter()
                .filter(|r| r.meta == meta)
                .filter_map(|r| cell_rows.get(r.cell as usize).copied())
                .collect();
            add(origin, lines);
        }
        if let Some(quiet) = quiet {
            for origin in in_use.through_function(meta, span.name) {
                let lines = quiet(&origin.frames);
                if !lines.is_empty() {
                    add(origin, lines);
                }
            }
        }
    }
    Some(
        per_row
            .into_iter()
            .map(|mut merged| {
                for site in merged.values_mut() {
                    site.allocations = (site.allocations + COUNT_UNIT / 2) / COUNT_UNIT;
                    site.in_use_allocations = site
                        .in_use_allocations
                        .map(|n| (n + COUNT_UNIT / 2) / COUNT_UNIT);
                }
                ranked(merged)
            })
            .collect(),
    )
}

/// A site with no figures yet: with in-use figures (0 so far) if `in_use`.
fn empty_site(estimated: bool, frames: Vec<SiteFrame>, in_use: bool) -> Site {
    Site {
        allocations: 0,
        allocated_bytes: 0,
        live_bytes: 0,
        in_use_allocations: in_use.then_some(0),
        in_use_bytes: in_use.then_some(0),
        estimated,
        frames,
    }
}

/// Adds an in-use figure to `site`'s.
fn add_in_use(site: &mut Site, allocations: u64, bytes: u64) {
    site.in_use_allocations = Some(site.in_use_allocations.unwrap_or(0) + allocations);
    site.in_use_bytes = Some(site.in_use_bytes.unwrap_or(0) + bytes);
}

/// Adds `theirs` (another process's sites of the same line) to `ours`.
pub(crate) fn merge(ours: &mut Vec<Site>, theirs: &[Site]) {
    let mut merged: HashMap<Vec<SiteFrame>, Site> = HashMap::new();
    for site in ours.drain(..).chain(theirs.iter().cloned()) {
        match merged.get_mut(&site.frames) {
            Some(sum) => {
                sum.allocations += site.allocations;
                sum.allocated_bytes += site.allocated_bytes;
                sum.live_bytes += site.live_bytes;
                if let (Some(n), Some(b)) = (site.in_use_allocations, site.in_use_bytes) {
                    add_in_use(sum, n, b);
                }
                sum.estimated |= site.estimated;
            }
            None => {
                merged.insert(site.frames.clone(), site);
            }
        }
    }
    *ours = ranked(merged);
}

/// A line's sites, most bytes allocated first, the tail summed.
fn ranked(merged: HashMap<Vec<SiteFrame>, Site>) -> Vec<Site> {
    let mut sites: Vec<Site> = merged
        .into_values()
        .filter(|s| {
            s.allocations != 0
                || s.allocated_bytes != 0
                || s.live_bytes != 0
                || s.in_use_bytes.is_some_and(|b| b != 0)
        })
        .collect();
    sites.sort_by(|a, b| {
        b.allocated_bytes
            .cmp(&a.allocated_bytes)
            .then(b.allocations.cmp(&a.allocations))
            .then_with(|| a.frames.len().cmp(&b.frames.len()))
            .then_with(|| a.frames.cmp(&b.frames))
    });
    if sites.len() > KEPT_PER_LINE {
        let rest = sites.split_off(KEPT_PER_LINE - 1);
        let frames = vec![SiteFrame {
            function: format!("(other sites: {})", rest.len()),
            file: None,
            line: None,
        }];
        let in_use = rest[0].in_use_bytes.is_some();
        let mut other = empty_site(rest[0].estimated, frames, in_use);
        for s in rest {
            other.allocations += s.allocations;
            other.allocated_bytes += s.allocated_bytes;
            other.live_bytes += s.live_bytes;
            if let (Some(n), Some(b)) = (s.in_use_allocations, s.in_use_bytes) {
                add_in_use(&mut other, n, b);
            }
        }
        sites.push(other);
    }
    sites
}
