//! `mprof run` on a program built with memprof, then `mprof plot` on its file.
//!
//! The program is this test binary itself, run again with
//! `MPROF_TEST_WORKLOAD` set: `workload_child` then grows the heap to
//! 200 MiB in 25 MiB steps, holds it until mprof has sampled it, and frees
//! it again, inside nested
//! `#[memprof::profile]` functions, writing every page so that RSS grows as
//! much as the heap. Every call lasts longer than a tenth of the interval, so
//! that each has its `FUNC` line; `short_calls_are_counted_not_listed`
//! checks what becomes of shorter ones, and
//! `overlapping_calls_merge_into_intervals_with_exact_totals` of calls that
//! run at once on several threads.
//!
//! NOTE: nothing here depends on how fast the machine is or how busy: sleeps
//! give lower bounds (a sleep never ends early), threads are ordered by a
//! barrier and a channel, not by sleeps, and the sampler's schedule is
//! tested with a fake clock in `mprof`'s `run` module.

mod common;

use common::dat::{Func, parse, parse_all};
use common::{mprof, png_size, scratch, stderr, under_mprof};
use std::process::Command;
use std::time::Duration;

const STEP: usize = 25 << 20;
const STEPS: usize = 8;
const PAUSE: Duration = Duration::from_millis(60);
const INTERVAL: f64 = 0.05;
const MIB: f64 = (1u64 << 20) as f64;

/// Long enough for a `FUNC` line: a tenth of `INTERVAL`, and then some.
const LONG_ENOUGH: Duration = Duration::from_millis(10);

#[memprof::profile]
fn fill(step: usize) -> Vec<u8> {
    let block = vec![step as u8 + 1; STEP];
    std::thread::sleep(LONG_ENOUGH);
    block
}

#[memprof::profile]
fn allocate(step: usize) -> Vec<u8> {
    let block = fill(step);
    std::thread::sleep(PAUSE);
    block
}

#[memprof::profile]
fn grow(blocks: &mut Vec<Vec<u8>>) {
    for step in 0..STEPS {
        blocks.push(allocate(step));
    }
}

#[memprof::profile]
fn shrink(blocks: &mut Vec<Vec<u8>>) {
    while let Some(block) = blocks.pop() {
        drop(block);
        std::thread::sleep(PAUSE);
    }
}

#[memprof::profile]
fn workload(dat: &std::path::Path, buffer: &mut [u8]) {
    let mut blocks = Vec::with_capacity(STEPS);
    eprintln!("heap-before {}", memprof::process_heap());
    grow(&mut blocks);
    std::thread::sleep(PAUSE);
    wait_for_a_sample(dat, unix_now(), buffer);
    shrink(&mut blocks);
}

fn unix_now() -> f64 {
    let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    since.unwrap().as_secs_f64()
}

/// Waits until `mprof run` has written a `MEM` sample to `dat` taken after
/// `after` (Unix seconds): one that saw the peak, however late mprof
/// samples. Reads the file into `buffer`, allocated before the workload
/// starts, so that waiting changes no heap figure.
fn wait_for_a_sample(dat: &std::path::Path, after: f64, buffer: &mut [u8]) {
    use std::io::Read;
    loop {
        let mut file = std::fs::File::open(dat).unwrap();
        let mut len = 0;
        while let Ok(n @ 1..) = file.read(&mut buffer[len..]) {
            len += n;
        }
        let text = std::str::from_utf8(&buffer[..len]).unwrap_or_default();
        let sampled = text.lines().any(|line| {
            let time = line.strip_prefix("MEM ").and_then(|l| l.split(' ').nth(1));
            time.and_then(|t| t.parse::<f64>().ok())
                .is_some_and(|t| t > after)
        });
        if sampled {
            return;
        }
        assert!(under_mprof(), "mprof ended without sampling the peak");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Returns `Pending` once, as an `.await` that really suspends.
struct YieldOnce(bool);

impl std::future::Future for YieldOnce {
    type Output = ();
    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<()> {
        if self.0 {
            return std::task::Poll::Ready(());
        }
        self.0 = true;
        cx.waker().wake_by_ref();
        std::task::Poll::Pending
    }
}

#[memprof::profile]
async fn fetch() -> usize {
    let page = vec![7u8; 1 << 20];
    std::thread::sleep(LONG_ENOUGH);
    YieldOnce(false).await;
    page.len()
}

#[memprof::profile]
fn read_back() -> usize {
    std::thread::sleep(LONG_ENOUGH);
    vec![1u8; 4096].len()
}

#[memprof::profile]
fn run_async() -> usize {
    let mut future = std::pin::pin!(fetch());
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    loop {
        if let std::task::Poll::Ready(n) = future.as_mut().poll(&mut cx) {
            return n + read_back();
        }
    }
}

const BATCHES: u64 = 3;
const SHORT_CALLS: u64 = 20_000;

/// Far shorter than a tenth of the interval.
#[memprof::profile]
fn tiny(i: u64) -> u64 {
    i & 1
}

/// Long enough to be listed, with many short calls inside.
#[memprof::profile]
fn batch() -> u64 {
    let odd: u64 = (0..SHORT_CALLS).map(tiny).sum();
    std::thread::sleep(LONG_ENOUGH);
    odd * 2 + tiny(1)
}

#[memprof::profile]
fn batches() -> u64 {
    (0..BATCHES).map(|_| batch()).sum()
}

/// Threads that handle requests one after another, beside the first one's.
const REQUEST_THREADS: u64 = 7;
const REQUESTS_EACH: u64 = 5;
/// Every request but the first.
const REQUEST_TIME: Duration = Duration::from_millis(20);
/// All requests: the first, and each thread's.
const REQUESTS: u64 = 1 + REQUEST_THREADS * REQUESTS_EACH;

/// A handler that several threads run at once; `wait` runs inside it.
#[memprof::profile]
fn request(id: u64, wait: &dyn Fn()) -> Vec<u8> {
    wait();
    vec![id as u8; 1024]
}

/// A first request that lasts until `REQUEST_THREADS` threads, let go from
/// inside it, have each handled `REQUESTS_EACH` requests one after
/// another: every request overlaps the first, so they make one interval
/// (by construction, not by timing), at least one thread's requests long.
fn serve_requests() -> usize {
    let started = std::sync::Barrier::new(REQUEST_THREADS as usize + 1);
    let (done, finished) = std::sync::mpsc::channel::<usize>();
    std::thread::scope(|scope| {
        for _ in 0..REQUEST_THREADS {
            let (started, done) = (&started, done.clone());
            scope.spawn(move || {
                started.wait();
                let sleep = || std::thread::sleep(REQUEST_TIME);
                let bytes = (0..REQUESTS_EACH).map(|i| request(i, &sleep).len());
                done.send(bytes.sum()).unwrap();
            });
        }
        let others = std::cell::Cell::new(0);
        let first = request(0, &|| {
            started.wait();
            others.set(finished.iter().take(REQUEST_THREADS as usize).sum());
        });
        first.len() + others.get()
    })
}

/// The program that the tests below record, which they run with
/// `--ignored --exact`; does nothing in an ordinary test run.
#[test]
#[ignore = "a child run: the tests below start it"]
fn workload_child() {
    match std::env::var("MPROF_TEST_WORKLOAD").as_deref() {
        Ok("grow") => {
            // Before the workload, as its figures must not include them.
            let dat = std::path::PathBuf::from(std::env::var_os("MEMPROF_MPROF").unwrap());
            let mut buffer = vec![0u8; 1 << 20];
            std::thread::sleep(PAUSE);
            workload(&dat, &mut buffer);
            std::thread::sleep(PAUSE);
        }
        Ok("async") => assert_eq!(run_async(), (1 << 20) + 4096),
        Ok("short") => assert_eq!(batches(), BATCHES * (SHORT_CALLS + 1)),
        Ok("overlap") => assert_eq!(serve_requests() as u64, REQUESTS * 1024),
        Ok("nested") => {
            // Records, then starts a second memprof program that must not.
            assert_eq!(run_async(), (1 << 20) + 4096);
            let status = Command::new(std::env::current_exe().unwrap())
                .args(["workload_child", "--ignored", "--exact", "--test-threads=1"])
                .env("MPROF_TEST_WORKLOAD", "async")
                .stdout(std::process::Stdio::null())
                .status()
                .unwrap();
            assert!(status.success());
        }
        _ => {}
    }
}

/// Runs this binary's `workload_child` under `mprof run` in `dir`.
fn record(dir: &std::path::Path, workload: &str, extra: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_mprof"))
        .args(["run", "--interval", &INTERVAL.to_string(), "-o", "run.dat"])
        .args(extra)
        .arg(std::env::current_exe().unwrap())
        .args([
            "workload_child",
            "--ignored",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("MPROF_TEST_WORKLOAD", workload)
        .env("MEMPROF_REPORT", "off")
        .current_dir(dir)
        .output()
        .unwrap()
}

#[test]
fn records_a_memprof_program() {
    if std::env::var_os("MPROF_TEST_WORKLOAD").is_some() {
        return;
    }
    let dir = scratch("run");
    let before = unix_now();
    let output = record(&dir, "grow", &[]);
    let after = unix_now();
    std::fs::rename(dir.join("run.dat"), dir.join("grow.dat")).unwrap();
    let err = stderr(&output);
    assert!(output.status.success(), "{err}");
    let heap_before: u64 = err
        .lines()
        .find_map(|l| l.strip_prefix("heap-before "))
        .unwrap_or_else(|| panic!("no heap-before line in {err}"))
        .parse()
        .unwrap();
    let text = std::fs::read_to_string(dir.join("grow.dat")).unwrap();
    let (mem, heap, funcs) = parse(&text);

    // Samples in order, taken while the program ran. How many per second
    // depends on the machine's load: the sampler's schedule (one per
    // interval, late ones at once) is tested with a fake clock in mprof's
    // `run` module, not here.
    let in_order = |s: &[(f64, f64)]| s.windows(2).all(|w| w[0].0 <= w[1].0);
    assert!(in_order(&mem) && in_order(&heap), "{mem:?} {heap:?}");
    assert!(mem.len() >= 2 && heap.len() >= 2, "{mem:?} {heap:?}");
    // Every sample inside the run, on the same clock (Unix time; mprof
    // stamps samples with it to 0.1 ms).
    let inside = |s: &[(f64, f64)]| {
        s.first().is_some_and(|f| f.0 >= before - 1e-4)
            && s.last().is_some_and(|l| l.0 <= after + 1e-4)
    };
    assert!(
        inside(&mem) && inside(&heap),
        "{before}..{after}: {mem:?} {heap:?}"
    );
    assert!(mem.last().unwrap().0 > mem[0].0, "{mem:?}");

    // The calls, nested as memory_profiler counts depth.
    let count = |name: &str, depth: u32| {
        funcs
            .iter()
            .filter(|f| f.name == format!("run::{name}") && f.depth == depth)
            .count()
    };
    assert_eq!(count("workload", 0), 1, "{funcs:#?}");
    assert_eq!(count("grow", 1), 1);
    assert_eq!(count("shrink", 1), 1);
    assert_eq!(count("allocate", 2), STEPS);
    assert_eq!(count("fill", 3), STEPS);
    assert_eq!(funcs.len(), 3 + 2 * STEPS);
    for inner in funcs.iter().filter(|f| f.depth > 0) {
        assert!(
            funcs.iter().any(|outer| outer.depth == inner.depth - 1
                && outer.start <= inner.start
                && inner.end <= outer.end),
            "{inner:?} is inside no call of depth {}",
            inner.depth - 1
        );
    }

    // RSS: each step writes 25 MiB of pages; the peak is 200 MiB above the
    // start, give or take a few pages. A call's start RSS is the last one
    // read (by the sampler, or at the end of the last call), which may
    // miss what the program added to RSS since, and the code that runs for
    // the first time during the workload (the program's and memprof's)
    // adds its pages too: 201.0-201.3 MiB in all on a quiet machine, where
    // the sampler reads the start early.
    //
    // The first fill's start is the RSS read before the workload's first
    // call, and the workload's first calls fault in their code and
    // memprof's per-thread state: that fill grew by 25.75-26.08 MiB in 15
    // runs here (CI saw 26.01), the later ones by 25.00-25.07 MiB.
    let mut fills: Vec<&Func> = funcs.iter().filter(|f| f.name == "run::fill").collect();
    fills.sort_by(|a, b| a.start.total_cmp(&b.start));
    for (i, fill) in fills.iter().enumerate() {
        let grew = fill.mem_end - fill.mem_start;
        let most = if i == 0 { 27.0 } else { 26.0 };
        assert!((24.9..most).contains(&grew), "{fill:?}");
    }
    let workload = funcs.iter().find(|f| f.name == "run::workload").unwrap();
    let peak = mem.iter().map(|s| s.1).fold(0.0, f64::max);
    let rise = peak - workload.mem_start;
    assert!((200.0..202.0).contains(&rise), "RSS rose by {rise} MiB");

    // HEAP: exact, as the file's 6 decimals write it.
    let heap_peak = heap.iter().map(|s| s.1).fold(0.0, f64::max);
    let expected = (heap_before + (STEPS * STEP) as u64) as f64 / MIB;
    assert_eq!(format!("{heap_peak:.6}"), format!("{expected:.6}"));
    let last = heap.last().unwrap().1;
    assert!(
        last * MIB < heap_before as f64 + 4096.0,
        "heap ends at {last} MiB"
    );

    // `mprof peak` agrees.
    let out = mprof(&dir, &["peak", "grow.dat"]);
    assert_eq!(
        common::stdout(&out).lines().next().unwrap(),
        format!("grow.dat\t{peak:.3} MiB")
    );

    // And the plots.
    for args in [
        &["plot", "grow.dat"][..],
        &["plot", "grow.dat", "--flame", "-o", "flame.png"],
        &["plot", "grow.dat", "-o", "grow.svg", "--title", "grow"],
        &["plot", "grow.dat", "--no-function-ts", "-o", "plain.png"],
        &[
            "plot",
            "grow.dat",
            "--window",
            "0.2,0.9",
            "-o",
            "window.png",
        ],
    ] {
        let out = mprof(&dir, args);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    }
    for png in ["grow.png", "flame.png", "window.png", "plain.png"] {
        let bytes = std::fs::read(dir.join(png)).unwrap();
        assert_eq!(png_size(&bytes), (1200, 600), "{png}");
    }
    let svg = std::fs::read_to_string(dir.join("grow.svg")).unwrap();
    assert!(svg.starts_with("<svg"));
    assert!(svg.contains("allocate "), "no call label in the SVG");
    assert!(svg.contains("memory used (in MiB)"));
    assert!(svg.contains("time (in seconds)"));
}

#[test]
fn async_calls_take_the_depth_of_the_thread_they_start_on() {
    if std::env::var_os("MPROF_TEST_WORKLOAD").is_some() {
        return;
    }
    let dir = scratch("async");
    let output = record(&dir, "async", &[]);
    assert!(output.status.success(), "{}", stderr(&output));
    let (_, _, funcs) = parse(&std::fs::read_to_string(dir.join("run.dat")).unwrap());
    let find = |name: &str| {
        funcs
            .iter()
            .find(|f| f.name == format!("run::{name}"))
            .unwrap_or_else(|| panic!("no FUNC line for {name}: {funcs:#?}"))
    };
    let (outer, fetch, read_back) = (find("run_async"), find("fetch"), find("read_back"));
    assert_eq!(funcs.len(), 3, "{funcs:#?}");
    assert_eq!((outer.depth, fetch.depth, read_back.depth), (0, 1, 1));
    assert!(outer.start <= fetch.start && fetch.end <= read_back.start);
    assert!(read_back.end <= outer.end);
}

#[test]
fn one_process_records_even_through_a_wrapper() {
    if std::env::var_os("MPROF_TEST_WORKLOAD").is_some() {
        return;
    }
    let dir = scratch("nested");
    // sh starts the memprof program, which starts another one.
    let exe = std::env::current_exe().unwrap();
    let script = format!(
        "'{}' workload_child --ignored --exact --test-threads=1 >/dev/null",
        exe.display()
    );
    let output = Command::new(env!("CARGO_BIN_EXE_mprof"))
        .args(["run", "-o", "run.dat", "sh", "-c", &script])
        .env("MPROF_TEST_WORKLOAD", "nested")
        .env("MEMPROF_REPORT", "off")
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let (_, heap, funcs) = parse(&std::fs::read_to_string(dir.join("run.dat")).unwrap());
    // The first program's three calls, not the second's.
    assert_eq!(funcs.len(), 3, "{funcs:#?}");
    assert!(!heap.is_empty());
}

#[test]
fn short_calls_are_counted_not_listed() {
    if std::env::var_os("MPROF_TEST_WORKLOAD").is_some() {
        return;
    }
    let dir = scratch("short");
    let output = record(&dir, "short", &[]);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = std::fs::read_to_string(dir.join("run.dat")).unwrap();
    let recorded = parse_all(&text);

    // The long calls, at their depth, and of the 60,003 short ones only
    // those that the scheduler stretched past a tenth of the interval, on a
    // busy machine: they run one after another inside `batches`, so there
    // are no more of them than fit in its time.
    let funcs = &recorded.funcs;
    let count = |name: &str, depth: u32| {
        funcs
            .iter()
            .filter(|f| f.name == name && f.depth == depth)
            .count() as u64
    };
    assert_eq!(count("run::batches", 0), 1, "{funcs:#?}");
    assert_eq!(count("run::batch", 1), BATCHES, "{funcs:#?}");
    let stretched = count("run::tiny", 2);
    assert_eq!(funcs.len() as u64, BATCHES + 1 + stretched, "{funcs:#?}");
    let shortest = INTERVAL / 10.0 - 1e-4;
    for tiny in funcs.iter().filter(|f| f.name == "run::tiny") {
        assert!(tiny.end - tiny.start >= shortest, "{tiny:?}");
    }
    let batches = funcs.iter().find(|f| f.name == "run::batches").unwrap();
    assert!(
        stretched as f64 * shortest <= batches.end - batches.start,
        "{stretched} FUNC lines for run::tiny"
    );

    // Every call counted, once, in the totals of its depth.
    let totals = |name: &str| {
        recorded
            .totals
            .iter()
            .find(|t| t.name == name)
            .unwrap_or_else(|| panic!("no CALLS line for {name}: {:?}", recorded.totals))
    };
    assert_eq!(recorded.totals.len(), 3, "{:?}", recorded.totals);
    let tiny = totals("run::tiny");
    assert_eq!((tiny.depth, tiny.calls), (2, BATCHES * (SHORT_CALLS + 1)));
    assert_eq!(
        (totals("run::batch").depth, totals("run::batch").calls),
        (1, BATCHES)
    );
    assert_eq!(totals("run::batches").calls, 1);
    assert!(
        tiny.covered > 0.0 && tiny.covered < batches.end - batches.start,
        "{tiny:?}"
    );

    // Our mprof reads the file and says what the plot cannot show.
    let out = mprof(&dir, &["plot", "run.dat"]);
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    let row = err
        .lines()
        .find(|l| l.trim_start().starts_with("run::tiny "))
        .unwrap_or_else(|| panic!("{err}"));
    let expected = format!(
        "{} calls  {:>9.3} s",
        BATCHES * (SHORT_CALLS + 1),
        tiny.covered
    );
    assert!(row.contains(&expected), "{row:?} lacks {expected:?}");
}

#[test]
fn overlapping_calls_merge_into_intervals_with_exact_totals() {
    if std::env::var_os("MPROF_TEST_WORKLOAD").is_some() {
        return;
    }
    let dir = scratch("overlap");
    let output = record(&dir, "overlap", &[]);
    assert!(output.status.success(), "{}", stderr(&output));
    let recorded = parse_all(&std::fs::read_to_string(dir.join("run.dat")).unwrap());

    // 36 calls, all during the first: one interval, the first call's, and
    // one line of totals.
    let lines: Vec<&Func> = recorded
        .funcs
        .iter()
        .filter(|f| f.name == "run::request")
        .collect();
    assert_eq!(lines.len(), 1, "{lines:#?}");
    let interval = lines[0];
    assert_eq!(interval.depth, 0);
    assert_eq!(recorded.totals.len(), 1, "{:?}", recorded.totals);
    let totals = &recorded.totals[0];
    assert_eq!(
        (totals.name.as_str(), totals.depth, totals.calls),
        ("run::request", 0, REQUESTS)
    );
    // The covered time is the interval's length (to the FUNC line's 4
    // decimals), not the calls' durations added up: those are the first
    // call's and 35 times at least 20 ms more.
    assert!(
        (totals.covered - (interval.end - interval.start)).abs() <= 1e-4,
        "{totals:?} {interval:?}"
    );
    // At least one thread's requests one after another.
    let least = REQUESTS_EACH as f64 * REQUEST_TIME.as_secs_f64();
    assert!(totals.covered >= least - 1e-4, "{totals:?}");

    // The plot's summary says the same.
    let out = mprof(&dir, &["plot", "run.dat"]);
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert_eq!(
        err.lines().take(2).collect::<Vec<_>>(),
        [
            "mprof: run.dat: profiled calls, and the wall time during which at least one ran:"
                .to_string(),
            format!(
                "  run::request  {:>12}  {:>9.3} s",
                format!("{REQUESTS} calls"),
                totals.covered
            ),
        ]
    );
}
