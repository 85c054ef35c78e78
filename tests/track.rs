//! `track!()` checkpoints: heap, change since the previous checkpoint, and
//! allocations and frees since then by power-of-two size class. Checked in a
//! child process that runs one `child_*` test, as tests/output.rs does.
//!
//! A buffer whose contents nothing reads passes through `black_box`: an
//! optimized build (`cargo test --release`) removes such an allocation, and
//! its checkpoints then rightly show nothing of it.

// The point is to allocate on the heap.
#![allow(clippy::useless_vec)]

use std::hint::black_box;
use std::process::Command;

fn is_child() -> bool {
    std::env::var_os("MEMPROF_CHILD").is_some()
}

fn run_child(name: &str) -> String {
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            name,
            "--ignored",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("MEMPROF_CHILD", "1")
        .env("MEMPROF_UNIT", "KiB")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout).unwrap()
}

#[test]
#[ignore = "a child run: this file's tests start it"]
fn child_checkpoints() {
    if is_child() {
        memprof::track!();
        let big: Vec<Vec<u8>> = (0..3).map(|_| vec![1u8; 1 << 20]).collect();
        drop(black_box(vec![2u8; 300 << 10]));
        memprof::track!();
        drop(big);
        memprof::track!();
    }
}

#[test]
fn checkpoints_list_allocations_and_frees_by_size_class() {
    let out = run_child("child_checkpoints");
    let lines: Vec<&str> = out
        .lines()
        .skip_while(|l| !l.contains("At tests/track.rs"))
        .take_while(|l| !l.starts_with("ok"))
        .collect();
    let at = |l: &str| l[l.find("At ").unwrap()..].to_owned();
    // The source lines of the three checkpoints in `child_checkpoints`.
    let source_lines: Vec<usize> = include_str!("track.rs")
        .lines()
        .enumerate()
        .filter(|(_, l)| l.trim() == "memprof::track!();")
        .map(|(i, _)| i + 1)
        .collect();
    let prefix = |n: usize| {
        format!(
            "At tests/track.rs:{} track::child_checkpoints: heap ",
            source_lines[n]
        )
    };
    assert!(at(lines[0]).starts_with(&prefix(0)), "{out}");
    assert!(
        lines[0].ends_with("(first checkpoint on this thread)"),
        "{out}"
    );
    // A blank line ends each checkpoint.
    assert_eq!([lines[1], lines[7], lines[11]], ["", "", ""], "{out}");
    assert!(at(lines[2]).starts_with(&prefix(1)), "{out}");
    assert!(at(lines[8]).starts_with(&prefix(2)), "{out}");
    // Three 1 MiB buffers and the 72-byte Vec holding them are kept; the
    // 300 KiB buffer came and went.
    assert!(
        lines[2].ends_with("(+3072.1 KiB since last)"),
        "{}",
        lines[2]
    );
    assert_eq!(
        &lines[3..7],
        [
            "+ 1 × [64 B, 128 B) = 0.1 KiB",
            "+ 1 × [256 KiB, 512 KiB) = 300.0 KiB",
            "+ 3 × [1 MiB, 2 MiB) = 3072.0 KiB",
            "- 1 × [256 KiB, 512 KiB) = 300.0 KiB",
        ],
        "{out}"
    );
    assert!(
        lines[8].ends_with("(-3072.1 KiB since last)"),
        "{}",
        lines[8]
    );
    assert_eq!(
        &lines[9..11],
        [
            "- 1 × [64 B, 128 B) = 0.1 KiB",
            "- 3 × [1 MiB, 2 MiB) = 3072.0 KiB"
        ],
        "{out}"
    );
}

#[test]
#[ignore = "a child run: this file's tests start it"]
fn child_checkpoints_to_a_file() {
    if is_child() {
        let path = std::env::var("MEMPROF_TRACK_FILE").unwrap();
        memprof::track!(to = path);
        let v = black_box(vec![0u8; 4096]);
        memprof::track!(to = &path);
        drop(v);
    }
}

#[test]
fn checkpoints_can_append_to_a_file() {
    let path = std::env::temp_dir().join(format!("memprof-track-{}.log", std::process::id()));
    std::fs::write(&path, "earlier\n").unwrap();
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "child_checkpoints_to_a_file",
            "--ignored",
            "--exact",
            "--nocapture",
        ])
        .env("MEMPROF_CHILD", "1")
        .env("MEMPROF_TRACK_FILE", &path)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(
        !String::from_utf8(out.stdout)
            .unwrap()
            .contains("At tests/track.rs")
    );
    let log = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(lines[0], "earlier");
    assert!(
        lines[1].ends_with("(first checkpoint on this thread)"),
        "{log}"
    );
    // A blank line ends each checkpoint.
    assert_eq!(lines[2], "", "{log}");
    assert!(lines[3].ends_with("(+4.0 KiB since last)"), "{log}");
    assert_eq!(lines[4..], ["+ 1 × [4 KiB, 8 KiB) = 4.0 KiB", ""]);
    std::fs::remove_file(path).unwrap();
}

#[test]
fn checkpoints_count_only_their_own_thread() {
    // Another thread allocating meanwhile shows in neither delta nor classes.
    let path = std::env::temp_dir().join(format!("memprof-track-quiet-{}.log", std::process::id()));
    let path = path.to_str().unwrap();
    memprof::track!(to = path);
    std::thread::spawn(|| drop(black_box(vec![0u8; 1 << 20])))
        .join()
        .unwrap();
    let ((), m) = memprof::measure(|| {
        memprof::track!(to = path);
    });
    // A checkpoint's own work is bookkeeping: it shows in no figure.
    assert_eq!((m.increment, m.peak, m.allocations), (0, 0, 0));
    // Spawning allocates a little on this thread (the handle, the closure),
    // and that is listed; the other thread's 1 MiB buffer is not.
    // NOTE: the heading's heap figure is the whole process's, which other
    // tests of this binary move (a panic's backtrace keeps about 1 MiB):
    // only the delta and the size classes are this thread's.
    let log = std::fs::read_to_string(path).unwrap();
    let second = log.lines().find(|l| l.contains("since last")).unwrap();
    assert!(second.contains(" B since last)"), "{log}");
    let classes = log.lines().filter(|l| l.starts_with(['+', '-']));
    assert!(classes.clone().count() > 0, "{log}");
    assert!(classes.clone().all(|l| !l.contains("MiB")), "{log}");
    std::fs::remove_file(path).unwrap();
}

#[memprof::profile]
fn after_a_checkpoint() -> usize {
    let v = vec![0u8; 100];
    v.len()
}

#[test]
#[ignore = "a child run: this file's tests start it"]
fn child_string_growth() {
    if is_child() {
        memprof::track!();
        let mut s = String::new();
        for _ in 0..1 << 20 {
            s.push('x');
        }
        memprof::track!();
        drop(black_box(s));
        after_a_checkpoint();
    }
}

#[test]
fn a_long_listing_is_cut_and_a_blank_line_ends_it() {
    let out = run_child("child_string_growth");
    let second = out.find("(+1024.0 KiB since last)\n").unwrap();
    let listing = &out[second..];
    let listing = &listing[listing.find('\n').unwrap() + 1..];
    // Growing a String one push at a time reallocates through every size
    // class from 8 B to 1 MiB; the nine with the most bytes are listed, the
    // other 26 summed. Then a blank line, before the next table.
    assert_eq!(
        &listing[..listing.find("Filename:").unwrap_or(listing.len())],
        "\
+ 1 × [64 KiB, 128 KiB) = 64.0 KiB
+ 1 × [128 KiB, 256 KiB) = 128.0 KiB
+ 1 × [256 KiB, 512 KiB) = 256.0 KiB
+ 1 × [512 KiB, 1 MiB) = 512.0 KiB
+ 1 × [1 MiB, 2 MiB) = 1024.0 KiB
- 1 × [64 KiB, 128 KiB) = 64.0 KiB
- 1 × [128 KiB, 256 KiB) = 128.0 KiB
- 1 × [256 KiB, 512 KiB) = 256.0 KiB
- 1 × [512 KiB, 1 MiB) = 512.0 KiB
... and 26 more size classes: + 13 allocations, 64.0 KiB; - 13 frees, 64.0 KiB

",
        "{out}"
    );
}
