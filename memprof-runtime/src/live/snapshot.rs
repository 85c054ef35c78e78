//! A snapshot: the report as it stands, in the `MEMPROF_JSON` schema, with
//! the time, the process's uptime and its heap; the numbered ones that
//! `MEMPROF_SNAPSHOT_EVERY` writes by themselves; and when the debug
//! information their sites were symbolized with is let go of.

use crate::document::SnapshotFacts;
use crate::report::report_so_far;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant, SystemTime};

/// The highest heap a snapshot has seen so far.
static HEAP_HIGH: AtomicU64 = AtomicU64::new(0);

/// The snapshot document, as `mprof snapshot` writes it.
pub(super) fn json() -> String {
    let report = report_so_far();
    let heap = crate::alloc::process_heap();
    let rows_high = report.highest_mem_usage().max(0) as u64;
    let heap_high = HEAP_HIGH
        .fetch_max(heap.max(rows_high), Relaxed)
        .max(heap)
        .max(rows_high);
    let facts = SnapshotFacts {
        time: SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64()),
        uptime: crate::json_file::uptime().unwrap_or(0.0),
        pid: std::process::id(),
        heap,
        heap_high,
        sample_mean: crate::sites::sample_mean(),
    };
    report.to_json_snapshot(&facts)
}

/// When the next numbered snapshot is due (`MEMPROF_SNAPSHOT_EVERY`).
pub(super) struct Schedule {
    every: Option<Duration>,
    /// `None` with an interval the clock cannot reach from now (a huge
    /// `MEMPROF_SNAPSHOT_EVERY`): never due.
    next: Option<Instant>,
    /// The number the next file gets, from 1.
    number: u64,
}

impl Schedule {
    pub(super) fn new(every: Option<Duration>) -> Self {
        Schedule {
            every,
            next: Instant::now().checked_add(every.unwrap_or_default()),
            number: 1,
        }
    }

    /// `poll`'s timeout: until the next snapshot, or -1 (none).
    pub(super) fn timeout_ms(&self) -> i32 {
        match (self.every, self.next) {
            (None, _) | (_, None) => -1,
            (Some(_), Some(next)) => {
                let left = next.saturating_duration_since(Instant::now());
                // Rounded up, so that the wait does not end just before.
                left.as_millis().saturating_add(1).min(i32::MAX as u128) as i32
            }
        }
    }

    /// Writes the next numbered snapshot if it is due; whether it was.
    pub(super) fn write_if_due(&mut self) -> bool {
        let (Some(every), Some(mut next)) = (self.every, self.next) else {
            return false;
        };
        let now = Instant::now();
        if now < next {
            return false;
        }
        // From the deadline, so that snapshots do not drift; one snapshot
        // for deadlines missed (a stopped process), not one for each.
        while next <= now {
            match next.checked_add(every) {
                Some(later) => next = later,
                None => break,
            }
        }
        self.next = (next > now).then_some(next);
        let report = crate::settings::get().json.as_deref();
        let report = report.map(crate::json_file::of_this_process);
        let path = numbered(report.as_deref(), self.number);
        self.number += 1;
        if let Err(err) = crate::safe_file::write(&path, json().as_bytes()) {
            crate::stdio::warning!(
                "memprof: MEMPROF_SNAPSHOT_EVERY: cannot write {}: {err}",
                path.display()
            );
        }
        true
    }
}

/// How long the debug information read to symbolize a snapshot's sites
/// stays after the last snapshot: `mprof top` asks for one a second, and
/// reading it again for each that meets a new address would cost seconds
/// in a build whose `backtrace` crate is not optimized.
const KEEP_DEBUG_INFORMATION: Duration = Duration::from_secs(5);

/// When the debug information is let go of (issue 60: kept, it held a
/// service's resident memory at 117 MB after one snapshot, from 34 MB).
pub(super) struct LetGo {
    at: Option<Instant>,
}

impl LetGo {
    pub(super) fn new() -> Self {
        LetGo { at: None }
    }

    /// The thread served something that may have symbolized (a
    /// snapshot, a signal's `MEMPROF_JSON`): let go after a while.
    pub(super) fn after_use(&mut self) {
        self.at = Instant::now().checked_add(KEEP_DEBUG_INFORMATION);
    }

    /// `poll`'s timeout: until the debug information is let go of, or -1
    /// (nothing to let go of).
    pub(super) fn timeout_ms(&self) -> i32 {
        self.at.map_or(-1, |at| {
            let left = at.saturating_duration_since(Instant::now());
            left.as_millis().saturating_add(1).min(i32::MAX as u128) as i32
        })
    }

    /// Lets go of the debug information if the time has come.
    pub(super) fn let_go_if_due(&mut self) {
        if self.at.is_some_and(|at| Instant::now() >= at) {
            self.at = None;
            crate::sites::let_go_of_debug_information();
        }
    }
}

/// The earlier of two `poll` timeouts, -1 meaning none.
pub(super) fn earlier_timeout(a: i32, b: i32) -> i32 {
    match (a, b) {
        (-1, t) | (t, -1) => t,
        (a, b) => a.min(b),
    }
}

/// The `number`th snapshot's file: beside `MEMPROF_JSON`'s (`%p` replaced
/// by the process's id), `NAME.N.json` for `NAME.json`, else
/// `memprof-PID.N.json` in the working directory.
fn numbered(json: Option<&Path>, number: u64) -> PathBuf {
    match json {
        Some(path) => {
            let stem = path
                .file_stem()
                .unwrap_or(path.as_os_str())
                .to_string_lossy();
            let name = match path.extension() {
                Some(extension) => format!("{stem}.{number}.{}", extension.to_string_lossy()),
                None => format!("{stem}.{number}"),
            };
            path.with_file_name(name)
        }
        None => PathBuf::from(format!("memprof-{}.{number}.json", std::process::id())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_interval_past_what_the_clock_reaches_is_never_due() {
        // `MEMPROF_SNAPSHOT_EVERY=9223372036854775807s`: the live thread
        // panicked adding it to the clock, and SIGTERM was then ignored.
        let mut schedule = Schedule::new(Some(Duration::from_secs(i64::MAX as u64)));
        assert_eq!(schedule.timeout_ms(), -1);
        assert!(!schedule.write_if_due());
        assert_eq!(schedule.number, 1);
        let mut hourly = Schedule::new(Some(Duration::from_secs(3600)));
        assert!(hourly.timeout_ms() > 0);
        assert!(!hourly.write_if_due());
        assert_eq!(hourly.number, 1);
    }

    #[test]
    fn the_debug_information_is_let_go_of_a_while_after_the_last_use() {
        let mut let_go = LetGo::new();
        assert_eq!(let_go.timeout_ms(), -1);
        let_go.after_use();
        let wait = let_go.timeout_ms();
        assert!(wait > 4_000 && wait <= 5_001, "{wait}");
        let_go.let_go_if_due();
        assert!(let_go.at.is_some());
        let_go.at = Some(Instant::now());
        let_go.let_go_if_due();
        assert_eq!(let_go.timeout_ms(), -1);
        assert_eq!(earlier_timeout(-1, 7), 7);
        assert_eq!(earlier_timeout(9, -1), 9);
        assert_eq!(earlier_timeout(9, 7), 7);
        assert_eq!(earlier_timeout(-1, -1), -1);
    }

    #[test]
    fn snapshots_are_numbered_beside_memprof_json() {
        let json = Path::new("/srv/app/report.json");
        assert_eq!(numbered(Some(json), 3), Path::new("/srv/app/report.3.json"));
        assert_eq!(numbered(Some(Path::new("out")), 1), Path::new("out.1"));
        let pid = std::process::id();
        assert_eq!(
            numbered(None, 2),
            PathBuf::from(format!("memprof-{pid}.2.json"))
        );
    }
}
