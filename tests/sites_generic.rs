//! Allocation sites of a generic method with a lifetime: its stacks end
//! at the method's frame, as a plain function's do. With debug
//! information the frame is found by its file and lines; without it (a
//! release build) by its name, whatever the symbol names its type's
//! parameters (`Holder<T>`) and memprof its own (`Holder<'_, _>`): see
//! `sites::resolve`'s unit tests.

#[path = "support/child.rs"]
mod child;

use child::{is_child, run_child};
use serde_json::Value;
use std::hint::black_box;

pub struct Holder<'a, T> {
    items: &'a [T],
}

impl<'a, T: Clone> Holder<'a, T> {
    #[memprof::profile]
    #[inline(never)]
    fn copied(&self, times: usize) -> Vec<Vec<T>> {
        let all = repeat(self.items, times);
        black_box(all)
    }
}

#[inline(never)]
fn repeat<T: Clone>(items: &[T], times: usize) -> Vec<Vec<T>> {
    let mut all = Vec::with_capacity(times);
    for _ in 0..times {
        all.push(black_box(items.to_vec()));
    }
    all
}

#[test]
#[ignore = "a child run: this file's tests start it"]
fn child_copied() {
    if is_child() {
        let items = [1u64, 2, 3, 4];
        let holder = Holder { items: &items };
        assert_eq!(holder.copied(5).len(), 5);
    }
}

#[test]
fn a_generic_methods_stacks_end_at_its_frame() {
    let dir = child::scratch_dir("sites-generic");
    let json = dir.join("report.json");
    run_child(
        "child_copied",
        &[
            ("MEMPROF_SITES", "1"),
            ("MEMPROF_REPORT", "exit"),
            ("MEMPROF_JSON", json.to_str().unwrap()),
        ],
    );
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let function = report["functions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"].as_str().unwrap().ends_with("::copied"))
        .unwrap_or_else(|| panic!("{report}"));
    let line = function["lines"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["contents"].as_str().unwrap().contains("let all = repeat"))
        .unwrap();
    let sites: Vec<(u64, u64, Vec<&str>)> = line["sites"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let frames = s["frames"].as_array().unwrap();
            (
                s["allocations"].as_u64().unwrap(),
                s["allocated_bytes"].as_u64().unwrap(),
                frames
                    .iter()
                    .map(|f| f["function"].as_str().unwrap())
                    .collect(),
            )
        })
        .collect();
    // Five copies of 32 bytes and their vector of 5 × 24: in `repeat`, by
    // one stack or two as the build inlines `to_vec`.
    let allocations: u64 = sites.iter().map(|s| s.0).sum();
    let bytes: u64 = sites.iter().map(|s| s.1).sum();
    assert_eq!((allocations, bytes), (6, 280), "{sites:?}");
    for (_, _, frames) in &sites {
        assert_eq!(frames.last(), Some(&"sites_generic::repeat"), "{frames:?}");
    }
}
