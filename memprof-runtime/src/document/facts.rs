//! What a snapshot adds to a report document: the one definition that
//! `document` writes and `read` reads back.

/// What a snapshot adds to `to_json`'s document: when it was taken and of
/// which process. Written on Unix only, as snapshots are (`MEMPROF_LIVE`,
/// `MEMPROF_SNAPSHOT_EVERY`); read back by
/// [`ReportDocument::read`](crate::ReportDocument::read) anywhere.
#[derive(Debug, Clone, Copy, Default, PartialEq, miniserde::Serialize)]
pub struct SnapshotFacts {
    /// Seconds since the Unix epoch.
    pub time: f64,
    /// Seconds since the process started.
    pub uptime: f64,
    /// The process's id.
    pub pid: u32,
    /// The process's heap now, as `process_heap()` reads it.
    pub heap: u64,
    /// The highest heap memprof has seen: at a snapshot, or after a
    /// profiled line (the rows' Mem usage). Not the true peak, which no
    /// counter keeps between lines.
    pub heap_high: u64,
    /// With `MEMPROF_SITES=sample`: one sample per this many bytes
    /// allocated on average, so that a reader can say how many samples a
    /// Live figure holds (`mprof top`'s ±); `None` (`null`) with exact
    /// sites or none.
    pub sample_mean: Option<u64>,
}
