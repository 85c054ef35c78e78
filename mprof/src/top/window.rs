//! The window `mprof top`'s rates cover (`--window`): a ring of marks, each
//! a snapshot's time and each function's kept (or Live) bytes and
//! allocations, so that Live/min and Allocs/s are the growth from the
//! oldest mark in the window to the snapshot shown. A rate over two
//! snapshots a second apart holds a handful of sampled allocations
//! (`MEMPROF_SITES=sample`) and swung 0.44–1.57× the true one; over a
//! minute it holds some 250 at 8 MiB/min.

use super::model::{Mark, Snapshot};
use std::collections::VecDeque;
use std::time::Duration;

/// The window the screen's rates cover unless `--window` says otherwise.
pub const DEFAULT_WINDOW: Duration = Duration::from_secs(60);

/// Marks kept over a window, at most: a mark is taken no oftener than
/// every window / this, so that a day's window at a 0.1 s refresh stays a
/// few hundred snapshots' figures, not 864,000.
const MARKS: f64 = 240.0;

/// The marks of the last `length` seconds, oldest first.
#[derive(Debug)]
pub struct Window {
    length: f64,
    marks: VecDeque<Mark>,
}

impl Window {
    pub fn new(length: Duration) -> Window {
        Window {
            length: length.as_secs_f64(),
            marks: VecDeque::new(),
        }
    }

    /// The window's length in seconds.
    pub fn length(&self) -> f64 {
        self.length
    }

    /// Takes `snapshot` in; the marks older than the window leave, all but
    /// the newest of them, so that the rates cover the whole window once
    /// it has filled.
    pub fn push(&mut self, snapshot: &Snapshot) {
        let time = snapshot.facts.time;
        // NOTE: a clock that went back (or another process's report at
        // exit, which has no time) starts the window again.
        if self.marks.back().is_some_and(|last| time < last.time) {
            self.marks.clear();
        }
        let step = self.length / MARKS;
        if self
            .marks
            .back()
            .is_none_or(|last| time - last.time >= step)
        {
            self.marks.push_back(Mark::of(snapshot));
        }
        while self.marks.len() >= 2 && self.marks[1].time <= time - self.length {
            self.marks.pop_front();
        }
    }

    /// The oldest mark: what the rates are taken against.
    pub fn oldest(&self) -> Option<&Mark> {
        self.marks.front()
    }

    /// Seconds the rates at `time` cover, and whether they cover the whole
    /// window (it has filled).
    pub fn span(&self, time: f64) -> Option<(f64, bool)> {
        let oldest = self.oldest()?.time;
        let span = time - oldest;
        (span > 0.0 && span.is_finite()).then_some((span, span >= self.length))
    }
}
