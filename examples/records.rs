//! A realistic program to profile: generates a 200,000-record text, parses
//! it (one profiled call per record), indexes the records by city and sorts
//! them by score. Deterministic: the same text and summary on every run.
//!
//! ```sh
//! cargo run --example records            # tables of the first calls, then totals at exit
//! cargo run -p mprof -- run target/debug/examples/records
//! cargo run -p mprof -- plot
//! ```
//!
//! `RECORDS=N` changes the number of records. `scripts/corpus/records`
//! times it against a copy built without memprof.

use memprof::profile;
use std::collections::HashMap;

/// One line of the text.
#[derive(Debug, Clone)]
struct Record {
    id: u32,
    name: String,
    city: String,
    score: f64,
    tags: Vec<String>,
}

/// A linear congruential generator (Knuth's MMIX constants): enough
/// variety for test data, and the same on every run.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u32 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) as u32
    }

    fn below(&mut self, n: u32) -> u32 {
        self.next() % n
    }
}

const CITIES: [&str; 12] = [
    "Amsterdam",
    "Bergen",
    "Cork",
    "Dresden",
    "Evora",
    "Florence",
    "Gdansk",
    "Hamburg",
    "Innsbruck",
    "Jena",
    "Krakow",
    "Lyon",
];
const TAGS: [&str; 8] = [
    "new", "vip", "late", "bulk", "gift", "export", "promo", "repeat",
];

/// The text: one record a line, `id<TAB>name<TAB>city<TAB>score<TAB>tags`.
#[profile]
fn generate(records: u32) -> String {
    let mut rng = Lcg(0x5eed);
    let mut text = String::with_capacity(records as usize * 48);
    for id in 0..records {
        let name: String = (0..5 + rng.below(6))
            .map(|_| char::from(b'a' + rng.below(26) as u8))
            .collect();
        let city = CITIES[rng.below(CITIES.len() as u32) as usize];
        let score = f64::from(rng.below(100_000)) / 100.0;
        let tags: Vec<&str> = (0..rng.below(4))
            .map(|_| TAGS[rng.below(TAGS.len() as u32) as usize])
            .collect();
        text.push_str(&format!(
            "{id}\t{name}\t{city}\t{score:.2}\t{}\n",
            tags.join(",")
        ));
    }
    text
}

/// One line; `None` if it is malformed.
#[profile]
fn parse_record(line: &str) -> Option<Record> {
    let mut fields = line.split('\t');
    let id = fields.next()?.parse().ok()?;
    let name = fields.next()?.to_string();
    let city = fields.next()?.to_string();
    let score = fields.next()?.parse().ok()?;
    let tags = fields
        .next()?
        .split(',')
        .filter(|t| !t.is_empty())
        .map(str::to_string)
        .collect();
    Some(Record {
        id,
        name,
        city,
        score,
        tags,
    })
}

/// The positions of the records of each city.
#[profile]
fn index_by_city(records: &[Record]) -> HashMap<String, Vec<usize>> {
    let mut index: HashMap<String, Vec<usize>> = HashMap::new();
    for (at, record) in records.iter().enumerate() {
        index.entry(record.city.clone()).or_default().push(at);
    }
    index
}

/// Highest score first; equal scores by name, then id.
#[profile]
fn sort_by_score(records: &mut [Record]) {
    records.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| a.name.cmp(&b.name))
            .then(a.id.cmp(&b.id))
    });
}

fn main() {
    let count = std::env::var("RECORDS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(200_000);
    let text = generate(count);
    let mut records: Vec<Record> = text.lines().filter_map(parse_record).collect();
    let index = index_by_city(&records);
    sort_by_score(&mut records);
    let busiest = index
        .iter()
        .max_by_key(|(city, at)| (at.len(), std::cmp::Reverse(*city)))
        .map_or("none", |(city, _)| city);
    let tagged = records.iter().filter(|r| !r.tags.is_empty()).count();
    let top = &records[0];
    println!(
        "records: {} parsed from {} bytes, {} cities (busiest {busiest}), {tagged} tagged, top {} {} ({:.2})",
        records.len(),
        text.len(),
        index.len(),
        top.id,
        top.name,
        top.score
    );
}
