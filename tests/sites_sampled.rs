//! Sampled allocation sites (`MEMPROF_SITES=sample`): estimates within
//! 10 % of the exact figures, and the same samples whether the allocator
//! counts on its fast path or sends every allocation and free to the slow
//! path.

#[path = "support/child.rs"]
mod child;

use child::{is_child, run_child};
use serde_json::Value;
use std::hint::black_box;

/// Frees as it goes: 256 MiB allocated, little held.
#[inline(never)]
fn churn_large() {
    for _ in 0..2048 {
        drop(black_box(vec![0u8; 64 << 10]));
    }
}

#[inline(never)]
fn churn_medium() {
    for _ in 0..8192 {
        drop(black_box(vec![0u8; 12 << 10]));
    }
}

#[inline(never)]
fn churn_small() {
    for _ in 0..131_072 {
        drop(black_box(vec![0u8; 256]));
    }
}

#[memprof::profile]
#[inline(never)]
fn churn() {
    let () = (churn_large(), churn_medium(), churn_small()).0;
}

#[test]
#[ignore = "a child run: this file's tests start it"]
fn child_churn() {
    if is_child() {
        churn();
    }
}

/// Keeps every other one of 8,192 blocks of 4 KiB: half of them in use at
/// exit (leaked, so that the report written then sees them).
#[memprof::profile]
#[inline(never)]
fn keep_half() {
    let mut kept = Vec::with_capacity(4096);
    for i in 0..8192 {
        let block = black_box(vec![1u8; 4096]);
        if i % 2 == 0 {
            kept.push(block);
        }
    }
    std::mem::forget(black_box(kept));
}

#[test]
#[ignore = "a child run: this file's tests start it"]
fn child_churn_and_keep_half() {
    if is_child() {
        if std::env::var_os("SITES_TEST_SLOW_PATH").is_some() {
            // `track!` sends every allocation and free of this thread
            // through the allocator's slow path, as exact sites do.
            memprof::track!(to = std::env::var("SITES_TEST_SLOW_PATH").unwrap().as_str());
        }
        churn();
        keep_half();
    }
}

/// With sampled sites the allocator's fast path keeps the allocations that
/// are not sampled, and the frees of blocks nothing follows: for three
/// seeds, every site of both functions reads the same on the fast path as
/// with every allocation and free on the slow path (the same allocations
/// sampled, the same frees seen), and what was freed is not in use.
#[test]
fn sampled_sites_are_the_same_on_the_allocators_fast_path() {
    let dir = child::scratch_dir("sites-sampled-paths");
    let sites = |json: &std::path::Path| -> Vec<Value> {
        let report: Value = serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
        let mut sites = Vec::new();
        for name in ["sites_sampled::churn", "sites_sampled::keep_half"] {
            let function = report["functions"]
                .as_array()
                .unwrap()
                .iter()
                .find(|f| f["name"] == name)
                .unwrap_or_else(|| panic!("no {name}"));
            for line in function["lines"].as_array().unwrap() {
                for site in line["sites"].as_array().into_iter().flatten() {
                    let mut site = site.clone();
                    site["contents"] = line["contents"].clone();
                    sites.push(site);
                }
            }
        }
        sites
    };
    for seed in ["1", "2", "3"] {
        let fast = dir.join(format!("fast-{seed}.json"));
        let slow = dir.join(format!("slow-{seed}.json"));
        let log = dir.join(format!("track-{seed}.log"));
        let env = |json: &std::path::Path| {
            vec![
                ("MEMPROF_SITES", "sample".to_owned()),
                ("MEMPROF_SITES_SEED", seed.to_owned()),
                ("MEMPROF_REPORT", "off".to_owned()),
                ("MEMPROF_JSON", json.to_str().unwrap().to_owned()),
            ]
        };
        let fast_env = env(&fast);
        let mut slow_env = env(&slow);
        slow_env.push(("SITES_TEST_SLOW_PATH", log.to_str().unwrap().to_owned()));
        for vars in [&fast_env, &slow_env] {
            let vars: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (*k, v.as_str())).collect();
            run_child("child_churn_and_keep_half", &vars);
        }
        let (fast, slow) = (sites(&fast), sites(&slow));
        assert!(std::fs::metadata(&log).unwrap().len() > 0, "track! ran");
        assert_eq!(fast, slow, "seed {seed}");
        let kept: u64 = fast
            .iter()
            .filter(|s| s["contents"].as_str().unwrap().contains("vec![1u8; 4096]"))
            .map(|s| s["in_use_bytes"].as_u64().unwrap())
            .sum();
        // Churn frees all it allocates: only `keep_half`'s blocks are in use,
        // 16 MiB in truth, estimated from about 1,000 samples.
        let truth = (4096 * 4096) as f64;
        assert!(
            (kept as f64 - truth).abs() / truth < 0.15,
            "seed {seed}: {kept} B in use"
        );
        for site in fast.iter().filter(|s| {
            s["frames"][0]["function"]
                .as_str()
                .is_some_and(|f| f.starts_with("sites_sampled::churn_"))
        }) {
            assert_eq!(site["in_use_bytes"], 0, "seed {seed}: {site}");
        }
    }
}

/// `MEMPROF_SITES=sample` (one sample per 32 KiB on average) on a line that
/// allocates 256 MiB through three sites: with each of ten seeds, every
/// site's estimate is within 10 % of its exact bytes and count.
#[test]
fn sampled_sites_are_within_ten_percent_over_ten_seeds() {
    let exact: [(&str, u64, u64); 3] = [
        ("sites_sampled::churn_large", 2048, 128 << 20),
        ("sites_sampled::churn_medium", 8192, 96 << 20),
        ("sites_sampled::churn_small", 131_072, 32 << 20),
    ];
    let dir = child::scratch_dir("sites-sampled");
    let mut spread = vec![Vec::new(); exact.len()];
    for seed in 1..=10 {
        let json = dir.join(format!("seed-{seed}.json"));
        let seed = seed.to_string();
        run_child(
            "child_churn",
            &[
                ("MEMPROF_SITES", "sample"),
                ("MEMPROF_SITES_SEED", &seed),
                ("MEMPROF_REPORT", "off"),
                ("MEMPROF_JSON", json.to_str().unwrap()),
            ],
        );
        let report: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        let function = report["functions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["name"] == "sites_sampled::churn")
            .unwrap();
        let line = function["lines"]
            .as_array()
            .unwrap()
            .iter()
            .find(|l| l["contents"].as_str().unwrap().contains("churn_large()"))
            .unwrap();
        // The line's own figures stay exact.
        assert_eq!(line["allocated_bytes"], 256 << 20);
        for (i, (name, count, bytes)) in exact.iter().enumerate() {
            let site = line["sites"]
                .as_array()
                .unwrap()
                .iter()
                .find(|s| s["frames"][0]["function"] == *name)
                .unwrap_or_else(|| panic!("{name} with seed {seed}: {line}"));
            assert_eq!(site["estimated"], true);
            let error = |estimate: &Value, exact: u64| {
                (estimate.as_u64().unwrap() as f64 - exact as f64) / exact as f64
            };
            let (by_bytes, by_count) = (
                error(&site["allocated_bytes"], *bytes),
                error(&site["allocations"], *count),
            );
            assert!(
                by_bytes.abs() < 0.10 && by_count.abs() < 0.10,
                "{name}, seed {seed}: {by_bytes:+.3} in bytes, {by_count:+.3} in count"
            );
            spread[i].push(by_bytes);
        }
    }
    for ((name, _, _), errors) in exact.iter().zip(&spread) {
        let (low, high) = errors
            .iter()
            .fold((f64::MAX, f64::MIN), |(l, h), &e| (l.min(e), h.max(e)));
        println!(
            "{name}: bytes estimate off by {:+.1} % to {:+.1} % over seeds 1-10",
            low * 100.0,
            high * 100.0
        );
    }
}
