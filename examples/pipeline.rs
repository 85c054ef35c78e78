//! A rayon pipeline: parses 1,000,000 small CSV records in parallel, groups
//! them by sensor, sorts each group by time and summarises it. The stages
//! run on rayon's pool, so they are profiled with `scope = "process"`,
//! which counts every thread's allocations, not only the calling one's.
//! Deterministic: the same summary on every run.
//!
//! ```sh
//! cargo run --example pipeline
//! cargo run -p mprof -- run target/debug/examples/pipeline
//! ```

use memprof::{memit, profile};
use rayon::prelude::*;
use std::collections::HashMap;

const RECORDS: u32 = 1_000_000;
const SENSORS: u32 = 64;

#[derive(Debug, Clone, Copy)]
struct Reading {
    sensor: u16,
    time: u32,
    value: f32,
}

/// The input, as a log would hold it: `sensor,time,value` lines.
fn generate() -> Vec<String> {
    (0..RECORDS)
        .map(|i| {
            let hash = i.wrapping_mul(2_654_435_761);
            let value = (hash % 10_000) as f32 / 100.0;
            format!("s{},{},{value}", hash % SENSORS, RECORDS - i)
        })
        .collect()
}

fn parse_line(line: &str) -> Option<Reading> {
    let mut fields = line.split(',');
    let sensor = fields.next()?.strip_prefix('s')?.parse().ok()?;
    let time = fields.next()?.parse().ok()?;
    let value = fields.next()?.parse().ok()?;
    Some(Reading {
        sensor,
        time,
        value,
    })
}

#[profile(scope = "process")]
fn group(readings: Vec<Reading>) -> HashMap<u16, Vec<Reading>> {
    let mut groups: HashMap<u16, Vec<Reading>> = HashMap::new();
    for reading in readings {
        groups.entry(reading.sensor).or_default().push(reading);
    }
    groups
}

#[profile(scope = "process")]
fn sort_groups(groups: &mut HashMap<u16, Vec<Reading>>) {
    groups
        .par_iter_mut()
        .for_each(|(_, readings)| readings.sort_unstable_by_key(|r| r.time));
}

/// Per sensor: its readings, first and last time, and mean value.
#[profile(scope = "process")]
fn summarise(groups: &HashMap<u16, Vec<Reading>>) -> Vec<(u16, usize, u32, u32, f64)> {
    let mut rows: Vec<_> = groups
        .par_iter()
        .map(|(&sensor, readings)| {
            let sum: f64 = readings.iter().map(|r| f64::from(r.value)).sum();
            let (first, last) = (readings[0].time, readings[readings.len() - 1].time);
            (
                sensor,
                readings.len(),
                first,
                last,
                sum / readings.len() as f64,
            )
        })
        .collect();
    rows.sort_unstable_by_key(|r| r.0);
    rows
}

fn main() {
    let lines = generate();
    // The parse stage: every worker's allocations count in `memit!`.
    let readings: Vec<Reading> = memit!(lines.par_iter().filter_map(|l| parse_line(l)).collect());
    drop(lines);
    let mut groups = group(readings);
    sort_groups(&mut groups);
    let rows = summarise(&groups);
    let total: usize = rows.iter().map(|r| r.1).sum();
    let (sensor, count, first, last, mean) = rows[0];
    println!(
        "{total} readings from {} sensors; s{sensor}: {count} readings, t {first}..{last}, mean {mean:.2}",
        rows.len()
    );
}
