//! Two versions of one program for `mprof diff`: `DIFF_DEMO=head` is the
//! "head" version, in which `fill_cache` keeps an extra buffer per call and
//! `parse_records` reserves less. `scripts/diff-fixtures` records both runs
//! as `tests/fixtures/diff/{base,head}.json`.
use memprof::profile;

/// Which version runs: `DIFF_DEMO=head` or the base.
fn head() -> bool {
    std::env::var_os("DIFF_DEMO").is_some_and(|v| v == "head")
}

#[profile]
fn load_config() -> Vec<String> {
    let names: Vec<String> = (0..100).map(|i| format!("key{i}")).collect();
    names
}

#[profile]
fn fill_cache(cache: &mut Vec<Vec<u8>>, head: bool) {
    let entry = vec![7u8; 64 * 1024];
    cache.push(entry);
    if head {
        // The regression: a copy that is never freed.
        cache.push(vec![8u8; 256 * 1024]);
    }
}

#[profile]
fn parse_records(head: bool) -> usize {
    let capacity = if head { 100_000 } else { 400_000 };
    let mut records: Vec<u32> = Vec::with_capacity(capacity);
    records.extend(0..100_000);
    records.iter().filter(|r| **r % 3 == 0).count()
}

fn main() {
    let head = head();
    let config = load_config();
    let mut cache = Vec::new();
    for _ in 0..3 {
        fill_cache(&mut cache, head);
    }
    let count = parse_records(head);
    println!(
        "{} config keys, {} cache entries, {count} records",
        config.len(),
        cache.len()
    );
}
