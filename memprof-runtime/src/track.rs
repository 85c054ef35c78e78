//! Checkpoints: `track!()` prints the heap at a point of the program and
//! what this thread allocated and freed since its previous checkpoint,
//! grouped by power-of-two size class, as Pytorch-Memory-Utils' `MemTracker`
//! lists the tensors added and removed between two `track()` calls.
//!
//! Counting by size class starts at a thread's first checkpoint and costs
//! one array increment per allocation on that thread; other threads, and
//! programs with no checkpoint, pay nothing.

use crate::alloc::{self, untracked};
use std::cell::Cell;
use std::io::Write;

/// Size classes: class `k` holds sizes in `[2^k, 2^(k+1))`.
const CLASSES: usize = 64;

struct ClassCounts {
    allocs: [Cell<u32>; CLASSES],
    alloc_bytes: [Cell<u64>; CLASSES],
    frees: [Cell<u32>; CLASSES],
    free_bytes: [Cell<u64>; CLASSES],
    /// This thread's net count at its previous checkpoint.
    last_net: Cell<Option<i64>>,
    /// GPU bytes at this thread's previous checkpoint, if sampled.
    last_gpu: Cell<Option<i64>>,
}

thread_local! {
    // NOTE: no destructor, so the allocator may touch it at any time.
    static COUNTS: ClassCounts = const {
        ClassCounts {
            allocs: [const { Cell::new(0) }; CLASSES],
            alloc_bytes: [const { Cell::new(0) }; CLASSES],
            frees: [const { Cell::new(0) }; CLASSES],
            free_bytes: [const { Cell::new(0) }; CLASSES],
            last_net: Cell::new(None),
            last_gpu: Cell::new(None),
        }
    };
}

fn class(size: usize) -> usize {
    (usize::BITS - 1 - size.max(1).leading_zeros()) as usize
}

/// Called by the allocator on tracking threads; never allocates.
#[inline]
pub(crate) fn count_classes(allocated: usize, freed: usize) {
    let _ = COUNTS.try_with(|c| {
        if allocated != 0 {
            let k = class(allocated);
            c.allocs[k].set(c.allocs[k].get().saturating_add(1));
            c.alloc_bytes[k].set(c.alloc_bytes[k].get() + allocated as u64);
        }
        if freed != 0 {
            let k = class(freed);
            c.frees[k].set(c.frees[k].get().saturating_add(1));
            c.free_bytes[k].set(c.free_bytes[k].get() + freed as u64);
        }
    });
}

/// `2^k` bytes in the largest binary unit that keeps it whole: `256 KiB`.
fn power_of_two(k: usize) -> String {
    match k {
        0..=9 => format!("{} B", 1u64 << k),
        10..=19 => format!("{} KiB", 1u64 << (k - 10)),
        20..=29 => format!("{} MiB", 1u64 << (k - 20)),
        _ => format!("{} GiB", 1u64 << (k - 30)),
    }
}

/// A checkpoint lists at most this many lines of size classes.
const LISTED_CLASSES: usize = 10;

/// Allocations (`+`) or frees (`-`) of one size class since the previous
/// checkpoint.
struct ClassRow {
    mark: char,
    class: usize,
    count: u32,
    bytes: u64,
}

/// The `+`/`-` lines, allocations first, each by ascending size class. Past
/// [`LISTED_CLASSES`] lines, the classes with the most bytes are listed and
/// the rest summed on a last line: growing a `String` one push at a time
/// touches some forty classes.
fn listing(mut rows: Vec<ClassRow>, bytes: &dyn Fn(i64) -> String) -> String {
    let mut rest = Vec::new();
    if rows.len() > LISTED_CLASSES {
        rows.sort_by_key(|r| std::cmp::Reverse(r.bytes));
        rest = rows.split_off(LISTED_CLASSES - 1);
        rows.sort_by_key(|r| (r.mark != '+', r.class));
    }
    let mut text = String::new();
    for row in &rows {
        text.push_str(&format!(
            "{} {} × [{}, {}) = {}\n",
            row.mark,
            row.count,
            power_of_two(row.class),
            power_of_two(row.class + 1),
            bytes(row.bytes as i64)
        ));
    }
    if !rest.is_empty() {
        let mut sums = Vec::new();
        for (mark, what) in [('+', "allocations"), ('-', "frees")] {
            let (count, total) = rest
                .iter()
                .filter(|r| r.mark == mark)
                .fold((0u64, 0u64), |(n, b), r| {
                    (n + u64::from(r.count), b + r.bytes)
                });
            if count > 0 {
                sums.push(format!("{mark} {count} {what}, {}", bytes(total as i64)));
            }
        }
        text.push_str(&format!(
            "... and {} more size classes: {}\n",
            rest.len(),
            sums.join("; ")
        ));
    }
    text
}

/// Prints a checkpoint; see `memprof::track!`. `function` is the path of a
/// marker item inside the calling function.
pub fn track(file: &str, line: u32, function: &str, to: Option<&str>) {
    let text = untracked(|| {
        let settings = crate::settings::get().render;
        let bytes = |n: i64| crate::render::bytes(n, &settings);
        let mut function = function
            .strip_suffix("::__memprof_here")
            .unwrap_or(function);
        while let Some(outer) = function.strip_suffix("::{{closure}}") {
            function = outer;
        }
        let net = alloc::thread_net();
        let mut text = format!(
            "At {file}:{line} {function}: heap {}",
            bytes(alloc::process_heap() as i64)
        );
        let gpu = crate::gpu::active().then(crate::gpu::sample).flatten();
        let since = |delta: i64| {
            let sign = if delta >= 0 { "+" } else { "" };
            format!("{sign}{}", bytes(delta))
        };
        COUNTS.with(|c| {
            let last_net = c.last_net.replace(Some(net));
            match last_net {
                None => text.push_str(" (first checkpoint on this thread)"),
                Some(last) => text.push_str(&format!(" ({} since last)", since(net - last))),
            }
            if let Some(gpu) = gpu {
                text.push_str(&format!(", GPU {}", bytes(gpu)));
                if let Some(last) = c.last_gpu.replace(Some(gpu)) {
                    text.push_str(&format!(" ({})", since(gpu - last)));
                }
            }
            text.push('\n');
            if last_net.is_some() {
                let mut rows = Vec::new();
                for (mark, counts, totals) in [
                    ('+', &c.allocs, &c.alloc_bytes),
                    ('-', &c.frees, &c.free_bytes),
                ] {
                    for k in 0..CLASSES {
                        let count = counts[k].get();
                        if count > 0 {
                            let bytes = totals[k].get();
                            rows.push(ClassRow {
                                mark,
                                class: k,
                                count,
                                bytes,
                            });
                        }
                    }
                }
                text.push_str(&listing(rows, &bytes));
            }
            for k in 0..CLASSES {
                c.allocs[k].set(0);
                c.alloc_bytes[k].set(0);
                c.frees[k].set(0);
                c.free_bytes[k].set(0);
            }
        });
        // NOTE: a blank line ends the checkpoint, as it ends a table, so
        // that what is printed next does not run into it.
        text.push('\n');
        text
    });
    alloc::start_tracking();
    match to {
        None => crate::output::emit(&text),
        Some(path) => untracked(|| {
            let written = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .and_then(|mut f| f.write_all(text.as_bytes()));
            if let Err(err) = written {
                eprintln!("memprof: cannot append to {path}: {err}; writing to stderr instead");
                let _ = std::io::stderr().write_all(text.as_bytes());
            }
        }),
    }
    // The text was made counted-off; free it the same way.
    untracked(move || drop(text));
}
