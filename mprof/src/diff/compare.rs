//! Comparing two runs function by function: each function's figures, their
//! changes, the order functions are shown in (past `--fail-over` first,
//! then by the size of the change, shrinks as growth, a new or removed
//! function by its own size), and which changes are past `--fail-over` (a
//! new function's figures grew from nothing).

use super::figures::{Change, Figure, FunctionDiff, Presence, figures};
use memprof_runtime::units::{SIZE_HELP, parse_size};
use memprof_runtime::{FunctionReport, Report};
use std::cmp::Reverse;
use std::collections::{HashMap, HashSet};

/// Every function of either run, compared: those past `threshold` first,
/// then by the size of the change, then by name.
pub fn compare<'a>(
    base: &'a Report,
    head: &'a Report,
    threshold: Option<Threshold>,
) -> Vec<FunctionDiff<'a>> {
    let has_gpu = |run: &Report| {
        run.functions
            .iter()
            .any(|f| f.fn_row().is_some_and(|r| r.gpu_peak.is_some()))
    };
    let gpu = has_gpu(base) || has_gpu(head);
    // Reports written before allocations were counted have none.
    let has_allocations = |run: &Report| {
        run.functions
            .iter()
            .any(|f| f.fn_row().is_some_and(|r| r.allocations.is_some()))
    };
    let allocations = has_allocations(base) || has_allocations(head);
    let has_allocated = |run: &Report| {
        run.functions
            .iter()
            .any(|f| f.fn_row().is_some_and(|r| r.allocated_bytes.is_some()))
    };
    let allocated = has_allocated(base) || has_allocated(head);
    let has_live = |run: &Report| {
        run.functions
            .iter()
            .any(|f| f.fn_row().is_some_and(|r| r.in_use_bytes.is_some()))
    };
    let live = has_live(base) && has_live(head);
    let has_pool = |run: &Report| {
        run.functions
            .iter()
            .any(|f| f.fn_row().is_some_and(|r| r.pool_allocated.is_some()))
    };
    let pool = has_pool(base) || has_pool(head);
    // A base where nothing ran (`--allow-empty-base`: the change that adds
    // memprof) makes every function new, and none of them a regression.
    let judge_new = base.functions.iter().any(|f| f.calls > 0);
    let pairs = pair_functions(base, head);
    let mut diffs: Vec<FunctionDiff<'a>> = pairs
        .into_iter()
        .map(|(b, h)| {
            let presence = match (b, h) {
                (Some(_), None) => Presence::Removed,
                (None, Some(_)) => Presence::New,
                _ => Presence::Both,
            };
            let (bf, hf) = (b.map(figures), h.map(figures));
            let figures = [
                Figure::Calls,
                Figure::Peak,
                Figure::KeptPerCall,
                Figure::GpuPeak,
                Figure::AllocsPerCall,
                Figure::AllocatedPerCall,
                Figure::Live,
                Figure::PoolAllocated,
                Figure::PoolReserved,
            ];
            let changes: Vec<Change> = figures
                .iter()
                .enumerate()
                .filter(|&(_, &figure)| figure != Figure::GpuPeak || gpu)
                .filter(|&(_, &figure)| figure != Figure::AllocsPerCall || allocations)
                .filter(|&(_, &figure)| figure != Figure::AllocatedPerCall || allocated)
                .filter(|&(_, &figure)| figure != Figure::Live || live)
                .filter(|&(_, &figure)| {
                    !matches!(figure, Figure::PoolAllocated | Figure::PoolReserved) || pool
                })
                .map(|(i, &figure)| Change {
                    figure,
                    base: bf.and_then(|f| f[i]),
                    head: hf.and_then(|f| f[i]),
                })
                .collect();
            // A new function's figures grew from nothing.
            let from_nothing = |c: &Change| Change {
                base: c.base.or(Some(0)),
                ..*c
            };
            let over = match (presence, threshold) {
                (Presence::Both, Some(threshold)) => changes
                    .iter()
                    .filter(|c| c.figure.is_held() && threshold.is_past(c))
                    .copied()
                    .collect(),
                (Presence::New, Some(threshold)) if judge_new => changes
                    .iter()
                    .filter(|c| c.figure.is_held() && threshold.is_past(&from_nothing(c)))
                    .copied()
                    .collect(),
                _ => Vec::new(),
            };
            let file = h.or(b).map_or("", |f| f.file.as_str());
            let name = h.or(b).map_or("", |f| f.name.as_str());
            let base_name = b.map(|f| f.name.as_str()).filter(|&n| n != name);
            FunctionDiff {
                name,
                base_name,
                file,
                presence,
                base: b,
                head: h,
                changes,
                over,
                callees: Vec::new(),
            }
        })
        .collect();
    super::callees::attribute(&mut diffs);
    diffs.sort_by_key(|d| (d.over.is_empty(), Reverse(d.size_of_change())));
    diffs
}

/// Each function of either run with its counterpart in the other, if any,
/// in order of name: by name first; then a function found in one run only is
/// matched to one found in the other run only with the same file and the
/// same own name (after the last `::`) and the same `fn` line, where
/// exactly one such pair exists (`type_name` paths
/// change with a dependency's version: `<S as serde::ser::Serializer>` became
/// `<S as serde_core::ser::Serializer>`).
fn pair_functions<'a>(
    base: &'a Report,
    head: &'a Report,
) -> Vec<(Option<&'a FunctionReport>, Option<&'a FunctionReport>)> {
    // PERF: maps, not scans: a diff of 40,000 functions compares each with
    // its counterpart, not with every other.
    let by_name = |run: &'a Report| {
        let mut names: HashMap<&'a str, &'a FunctionReport> = HashMap::new();
        for f in &run.functions {
            names.entry(f.name.as_str()).or_insert(f);
        }
        names
    };
    let (base_names, head_names) = (by_name(base), by_name(head));
    let signature = |f: &FunctionReport| f.fn_row().map(|r| r.contents.trim().to_owned());
    // The function's own name, after the path that `type_name` may change.
    let own = |f: &'a FunctionReport| f.name.rsplit("::").next().unwrap_or_default();
    type Key<'k> = (&'k str, &'k str, Option<String>);
    let key = |f: &'a FunctionReport| -> Key<'a> { (f.file.as_str(), own(f), signature(f)) };
    // Functions found in one run only, by key.
    let only_in = |run: &'a Report, other: &HashMap<&str, &FunctionReport>| {
        let mut keys: HashMap<Key<'a>, Vec<&'a FunctionReport>> = HashMap::new();
        for f in run
            .functions
            .iter()
            .filter(|f| !other.contains_key(f.name.as_str()))
        {
            keys.entry(key(f)).or_default().push(f);
        }
        keys
    };
    let removed = only_in(base, &head_names);
    let added = only_in(head, &base_names);
    let unique = |list: &HashMap<Key<'a>, Vec<&'a FunctionReport>>, f: &'a FunctionReport| {
        let key = key(f);
        match list.get(&key).map(Vec::as_slice) {
            Some([only]) if key.2.is_some() => Some(*only),
            _ => None,
        }
    };
    let mut pairs = Vec::new();
    let mut matched: HashSet<*const FunctionReport> = HashSet::new();
    for b in &base.functions {
        let h = match head_names.get(b.name.as_str()) {
            Some(h) => Some(*h),
            None => unique(&added, b)
                .filter(|h| unique(&removed, h).is_some_and(|r| std::ptr::eq(r, b))),
        };
        if let Some(h) = h {
            matched.insert(h);
        }
        pairs.push((Some(b), h));
    }
    for h in &head.functions {
        if !matched.contains(&(h as *const FunctionReport)) {
            pairs.push((None, Some(h)));
        }
    }
    pairs.sort_by_cached_key(|p| p.1.or(p.0).map_or(String::new(), |f| f.name.clone()));
    pairs
}

/// How much a byte figure may grow before `--fail-over` fails.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Threshold {
    /// `--fail-over`: a limit on the growth.
    pub limit: Limit,
    /// `--min`: growth up to this many bytes never fails, whatever its
    /// percentage (a 16 B buffer that became 32 B grew 100%).
    pub floor: u64,
}

/// `--fail-over`'s limit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Limit {
    /// Percent of the base's figure.
    Percent(f64),
    /// Bytes.
    Bytes(u64),
}

impl Threshold {
    /// Whether `change` grew past the threshold: by more than the limit and
    /// more than the floor. Growth is [`Change::growth`]'s; a figure that
    /// grew from nothing is past any percentage.
    pub fn is_past(self, change: &Change) -> bool {
        let growth = change.growth();
        if growth <= 0 || change.base.is_none() || change.head.is_none() {
            return false;
        }
        if growth.unsigned_abs() <= self.floor {
            return false;
        }
        match self.limit {
            Limit::Percent(limit) => change.growth_percent().is_none_or(|p| p > limit),
            Limit::Bytes(limit) => growth.unsigned_abs() > limit,
        }
    }
}

/// Parses `--fail-over`: `10%` or a size with its unit, such as `1MiB` or
/// `512B`. A bare number is refused: `10` could mean either.
pub fn parse_limit(text: &str) -> Result<Limit, String> {
    if let Some(number) = text.trim().strip_suffix('%') {
        return match number.trim().parse::<f64>() {
            Ok(p) if p.is_finite() && p >= 0.0 => Ok(Limit::Percent(p)),
            _ => Err("expected a percentage of 0 or more, such as 10%".to_owned()),
        };
    }
    if text.trim().parse::<f64>().is_ok() {
        return Err(format!(
            "a bare number is ambiguous: write a percentage ({0}%) or a size with its unit \
             ({0}B, {0}KiB)",
            text.trim()
        ));
    }
    parse_size(text)
        .map(Limit::Bytes)
        .map_err(|_| format!("expected a percentage such as 10%, or {SIZE_HELP}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_parse_as_percent_or_binary_size_with_a_unit() {
        assert_eq!(parse_limit("10%"), Ok(Limit::Percent(10.0)));
        assert_eq!(parse_limit(" 2.5 % "), Ok(Limit::Percent(2.5)));
        assert_eq!(parse_limit("1MiB"), Ok(Limit::Bytes(1 << 20)));
        assert_eq!(parse_limit("1 MB"), Ok(Limit::Bytes(1 << 20)));
        assert_eq!(parse_limit("512B"), Ok(Limit::Bytes(512)));
        assert!(parse_limit("-5%").is_err());
        assert!(parse_limit("ten%").is_err());
        assert!(parse_limit("1 TB").is_err());
        assert_eq!(
            parse_limit("10"),
            Err(
                "a bare number is ambiguous: write a percentage (10%) or a size with its \
                 unit (10B, 10KiB)"
                    .to_owned()
            )
        );
    }

    fn change(base: Option<i64>, head: Option<i64>) -> Change {
        Change {
            figure: Figure::Peak,
            base,
            head,
        }
    }

    fn kept(base: i64, head: i64) -> Change {
        Change {
            figure: Figure::KeptPerCall,
            base: Some(base),
            head: Some(head),
        }
    }

    fn threshold(limit: Limit) -> Threshold {
        Threshold { limit, floor: 0 }
    }

    #[test]
    fn past_means_grew_by_more_than_the_threshold() {
        let ten = threshold(Limit::Percent(10.0));
        assert!(!ten.is_past(&change(Some(100), Some(110))));
        assert!(ten.is_past(&change(Some(100), Some(111))));
        assert!(ten.is_past(&change(Some(0), Some(1))));
        assert!(!ten.is_past(&change(Some(100), Some(50))));
        assert!(!ten.is_past(&change(None, Some(500))));
        let kib = threshold(Limit::Bytes(1024));
        assert!(!kib.is_past(&change(Some(0), Some(1024))));
        assert!(kib.is_past(&change(Some(0), Some(1025))));
    }

    #[test]
    fn a_floor_keeps_small_growth_from_failing_a_percentage() {
        let ten_over_64k = Threshold {
            limit: Limit::Percent(10.0),
            floor: 64 << 10,
        };
        // 100% of 16 B is 16 B: below the floor.
        assert!(!ten_over_64k.is_past(&change(Some(16), Some(32))));
        // 20% of 1 MiB is past both.
        assert!(ten_over_64k.is_past(&change(Some(1 << 20), Some(6 << 18))));
        // 5% of 4 MiB is past the floor, not the percentage.
        assert!(!ten_over_64k.is_past(&change(Some(4 << 20), Some((4 << 20) + (200 << 10)))));
    }

    #[test]
    fn kept_bytes_below_zero_do_not_grow() {
        // A call that frees its input, given a smaller input: it frees less.
        let freed_less = kept(-(56 << 20), -(40 << 20));
        assert_eq!(freed_less.growth(), 0);
        assert_eq!(freed_less.percent(), None);
        assert!(!threshold(Limit::Percent(10.0)).is_past(&freed_less));
        // From freeing to keeping: growth from 0, past any percentage.
        let now_keeps = kept(-100, 300);
        assert_eq!(now_keeps.growth(), 300);
        assert!(threshold(Limit::Percent(10.0)).is_past(&now_keeps));
        assert!(!threshold(Limit::Bytes(300)).is_past(&now_keeps));
    }

    #[test]
    fn percent_of_a_negative_base_is_of_its_size() {
        // A peak cannot be below 0; other figures' percentages are of the
        // base's size.
        assert_eq!(change(Some(-200), Some(-100)).percent(), Some(50.0));
        assert_eq!(change(Some(0), Some(0)).percent(), Some(0.0));
        assert_eq!(change(Some(0), Some(5)).percent(), None);
    }
}
