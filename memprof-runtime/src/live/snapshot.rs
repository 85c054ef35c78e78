//! A snapshot: the report as it stands, in the `MEMPROF_JSON` schema, with
//! the time, the process's uptime and its heap; and the numbered ones that
//! `MEMPROF_SNAPSHOT_EVERY` writes by themselves.

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

    /// Writes the next numbered snapshot if it is due.
    pub(super) fn write_if_due(&mut self) {
        let (Some(every), Some(mut next)) = (self.every, self.next) else {
            return;
        };
        let now = Instant::now();
        if now < next {
            return;
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
        let path = numbered(crate::settings::get().json.as_deref(), self.number);
        self.number += 1;
        if let Err(err) = crate::safe_file::write(&path, json().as_bytes()) {
            crate::stdio::warning!(
                "memprof: MEMPROF_SNAPSHOT_EVERY: cannot write {}: {err}",
                path.display()
            );
        }
    }
}

/// The `number`th snapshot's file: beside `MEMPROF_JSON`'s, `NAME.N.json`
/// for `NAME.json`, else `memprof-PID.N.json` in the working directory.
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
        schedule.write_if_due();
        assert_eq!(schedule.number, 1);
        let mut hourly = Schedule::new(Some(Duration::from_secs(3600)));
        assert!(hourly.timeout_ms() > 0);
        hourly.write_if_due();
        assert_eq!(hourly.number, 1);
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
