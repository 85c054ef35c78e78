//! The summary: every function that ran, highest peak first, then the
//! program's top lines by Increment and by Peak. One test in this binary, so
//! that the summary holds this program's functions only.

use memprof::profile;

#[profile]
fn load(n: usize) -> Vec<u64> {
    let scratch = vec![0u8; 64 << 10];
    let kept = vec![7u64; n];
    drop(std::hint::black_box(scratch));
    kept
}

#[profile]
fn parse(n: usize) -> usize {
    let mut words = Vec::new();
    for i in 0..n {
        words.push(i.to_string());
    }
    words.len()
}

#[profile]
fn never_called() -> usize {
    1
}

/// `load`'s scratch buffer, whose contents nothing reads, passes through
/// `black_box`: an optimized build (`cargo test --release`) removes such an
/// allocation, and its rows then rightly show nothing. (Noted here, not in
/// the module doc, so that the line numbers this test pins stay put.)
#[test]
fn the_summary_ranks_functions_by_peak_and_lists_the_top_lines() {
    let kept: Vec<Vec<u64>> = (0..2).map(|_| load(1024)).collect();
    assert_eq!(parse(3), 3);
    if kept.is_empty() {
        never_called();
    }
    let summary = memprof::report().summary();
    assert_eq!(
        summary.to_string(),
        "\
Summary: 2 functions ran, highest peak first

     Peak   Kept/call       Kept   Allocs   Allocated   Calls   Function         File
=====================================================================================
 72.0 KiB     8.0 KiB   16.0 KiB        4   144.0 KiB       2   summary::load    tests/summary.rs
     99 B         0 B        0 B        4        99 B       1   summary::parse   tests/summary.rs

Top lines by Increment

 Increment       Peak   Allocs   Occurrences   Line #   Function         Line Contents
======================================================================================
 128.0 KiB   64.0 KiB        2             2        9   summary::load    let scratch = vec![0u8; 64 << 10];
  16.0 KiB    8.0 KiB        2             2       10   summary::load    let kept = vec![7u64; n];
      99 B       99 B        4             1       18   summary::parse   for i in 0..n {
      99 B       97 B        4             3       19   summary::parse   words.push(i.to_string());   [in line 18]

Top lines by Peak

 Increment       Peak   Allocs   Occurrences   Line #   Function         Line Contents
======================================================================================
 128.0 KiB   64.0 KiB        2             2        9   summary::load    let scratch = vec![0u8; 64 << 10];
  16.0 KiB    8.0 KiB        2             2       10   summary::load    let kept = vec![7u64; n];
      99 B       99 B        4             1       18   summary::parse   for i in 0..n {
      99 B       97 B        4             3       19   summary::parse   words.push(i.to_string());   [in line 18]
"
    );
    // The JSON holds the same summary; never-called functions are in
    // neither.
    let json: serde_json::Value = serde_json::from_str(&memprof::report().to_json()).unwrap();
    let names: Vec<&str> = json["summary"]["functions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["summary::load", "summary::parse"]);
    assert_eq!(json["summary"]["top_peak"][0]["line"], 9);
    drop(kept);
}
