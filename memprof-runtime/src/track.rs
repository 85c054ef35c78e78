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
use crate::env;
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

/// Prints a checkpoint; see `memprof::track!`. `function` is the path of a
/// marker item inside the calling function.
pub fn track(file: &str, line: u32, function: &str, to: Option<&str>) {
    let text = untracked(|| {
        let settings = env::config().render;
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
            text.push('\n');
            if last_net.is_some() {
                for (mark, tallies) in [
                    ("+", classes.map(|c| (c.allocs, c.alloc_bytes))),
                    ("-", classes.map(|c| (c.frees, c.free_bytes))),
                ] {
                    for (k, (n, total)) in tallies.into_iter().enumerate() {
                        if n > 0 {
                            text.push_str(&format!(
                                "{mark} {n} × [{}, {}) = {}\n",
                                power_of_two(k),
                                power_of_two(k + 1),
                                bytes(total as i64)
                            ));
                        }
                    }
                }
            }
        });
        text
    });
    alloc::start_tracking();
    match to {
        None => crate::report::emit(&text),
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
