//! Checkpoints: `track!()` prints the heap at a point of the program and
//! what this thread allocated and freed since its previous checkpoint,
//! grouped by power-of-two size class, as Pytorch-Memory-Utils' `MemTracker`
//! lists the tensors added and removed between two `track()` calls.
//!
//! Counting by size class starts at a thread's first checkpoint and costs
//! one array increment per allocation on that thread; other threads, and
//! programs with no checkpoint, pay nothing. The allocator keeps those
//! tallies (`alloc::take_size_classes`); this module only reads them.

use crate::alloc::{self, untracked};
use std::cell::Cell;
use std::io::Write;

/// What this thread's previous checkpoint saw.
struct LastCheckpoint {
    /// This thread's net count at its previous checkpoint.
    net: Cell<Option<i64>>,
    /// GPU bytes at this thread's previous checkpoint, if sampled.
    gpu: Cell<Option<i64>>,
}

thread_local! {
    static LAST: LastCheckpoint = const {
        LastCheckpoint {
            net: Cell::new(None),
            gpu: Cell::new(None),
        }
    };
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
            "At {}:{line} {}: heap {}",
            crate::text::printable(file),
            crate::text::printable(function),
            bytes(alloc::process_heap() as i64)
        );
        let gpu = crate::gpu::active().then(crate::gpu::sample).flatten();
        let driver = crate::gpu::driver();
        let since = |delta: i64| {
            let sign = if delta >= 0 { "+" } else { "" };
            format!("{sign}{}", bytes(delta))
        };
        let classes = alloc::take_size_classes();
        LAST.with(|previous| {
            let last_net = previous.net.replace(Some(net));
            match last_net {
                None => text.push_str(" (first checkpoint on this thread)"),
                Some(last) => text.push_str(&format!(" ({} since last)", since(net - last))),
            }
            if let Some(gpu) = gpu {
                text.push_str(&format!(", GPU {}", bytes(gpu)));
                if let Some(last) = previous.gpu.replace(Some(gpu)) {
                    text.push_str(&format!(" ({})", since(gpu - last)));
                }
            }
            if let Some(driver) = driver {
                text.push_str(&format!(", GPU driver view {}", bytes(driver)));
            }
            text.push('\n');
            if last_net.is_some() {
                let mut rows = Vec::new();
                for mark in ['+', '-'] {
                    for (class, tally) in classes.iter().enumerate() {
                        let (count, bytes) = match mark {
                            '+' => (tally.allocs, tally.alloc_bytes),
                            _ => (tally.frees, tally.free_bytes),
                        };
                        if count > 0 {
                            rows.push(ClassRow {
                                mark,
                                class,
                                count,
                                bytes,
                            });
                        }
                    }
                }
                text.push_str(&listing(rows, &bytes));
            }
        });
        // NOTE: a blank line ends the checkpoint, as it ends a table, so
        // that what is printed next does not run into it.
        text.push('\n');
        text
    });
    alloc::start_tracking();
    match to {
        None => crate::sink::emit(&text),
        Some(path) => untracked(|| {
            let written = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .and_then(|mut f| f.write_all(text.as_bytes()));
            if let Err(err) = written {
                crate::stdio::warning!(
                    "memprof: cannot append to {path}: {err}; writing to stderr instead"
                );
                let _ = crate::stdio::stderr(&text);
            }
        }),
    }
    // The text was made counted-off; free it the same way.
    untracked(move || drop(text));
}
