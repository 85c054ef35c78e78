//! `mprof run` on a program built with memprof, then `mprof plot` on its file.
//!
//! The program is this test binary itself, run again with
//! `MPROF_TEST_WORKLOAD` set: `workload_child` then grows the heap to
//! 200 MiB in 25 MiB steps, holds it, and frees it again, inside nested
//! `#[memprof::profile]` functions, writing every page so that RSS grows as
//! much as the heap.

mod common;

use common::{mprof, png_size, scratch, stderr};
use std::process::Command;
use std::time::{Duration, Instant};

const STEP: usize = 25 << 20;
const STEPS: usize = 8;
const PAUSE: Duration = Duration::from_millis(60);
const INTERVAL: f64 = 0.05;
const MIB: f64 = (1u64 << 20) as f64;

#[memprof::profile]
fn fill(step: usize) -> Vec<u8> {
    vec![step as u8 + 1; STEP]
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
fn workload() {
    let mut blocks = Vec::with_capacity(STEPS);
    eprintln!("heap-before {}", memprof::process_heap());
    grow(&mut blocks);
    std::thread::sleep(5 * PAUSE);
    shrink(&mut blocks);
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
    YieldOnce(false).await;
    page.len()
}

#[memprof::profile]
fn read_back() -> usize {
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

/// The program that the tests below record; does nothing in an ordinary
/// test run.
#[test]
fn workload_child() {
    match std::env::var("MPROF_TEST_WORKLOAD").as_deref() {
        Ok("grow") => {
            std::thread::sleep(PAUSE);
            workload();
            std::thread::sleep(PAUSE);
        }
        Ok("async") => assert_eq!(run_async(), (1 << 20) + 4096),
        Ok("nested") => {
            // Records, then starts a second memprof program that must not.
            assert_eq!(run_async(), (1 << 20) + 4096);
            let status = Command::new(std::env::current_exe().unwrap())
                .args(["workload_child", "--exact", "--test-threads=1"])
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

#[derive(Debug)]
struct Func {
    name: String,
    mem_start: f64,
    start: f64,
    mem_end: f64,
    end: f64,
    depth: u32,
}

/// Samples as (unix time, MiB).
type Series = Vec<(f64, f64)>;

/// Parses the file strictly: every line must be one of memory_profiler's
/// or memprof's, in their exact number formats. Returns MEM, HEAP and FUNC.
fn parse(text: &str) -> (Series, Series, Vec<Func>) {
    let decimals = |field: &str, n: usize| {
        let (_, frac) = field.split_once('.').unwrap_or_else(|| panic!("{field}"));
        assert_eq!(frac.len(), n, "{field} should have {n} decimals");
        field.parse::<f64>().unwrap()
    };
    let (mut mem, mut heap, mut funcs) = (Vec::new(), Vec::new(), Vec::new());
    let mut lines = text.lines();
    assert!(lines.next().unwrap().starts_with("CMDLINE "));
    assert!(text.ends_with('\n'));
    for line in lines {
        let fields: Vec<&str> = line.split(' ').collect();
        match fields[0] {
            "MEM" | "HEAP" => {
                assert_eq!(fields.len(), 3, "{line}");
                let sample = (decimals(fields[2], 4), decimals(fields[1], 6));
                if fields[0] == "MEM" {
                    &mut mem
                } else {
                    &mut heap
                }
                .push(sample);
            }
            "FUNC" => {
                assert_eq!(fields.len(), 7, "{line}");
                funcs.push(Func {
                    name: fields[1].to_string(),
                    mem_start: decimals(fields[2], 4),
                    start: decimals(fields[3], 4),
                    mem_end: decimals(fields[4], 4),
                    end: decimals(fields[5], 4),
                    depth: fields[6].parse().unwrap(),
                });
            }
            _ => panic!("unexpected line {line:?}"),
        }
    }
    let by_time = |a: &(f64, f64), b: &(f64, f64)| a.0.total_cmp(&b.0);
    mem.sort_by(by_time);
    heap.sort_by(by_time);
    (mem, heap, funcs)
}

#[test]
fn records_a_memprof_program() {
    if std::env::var_os("MPROF_TEST_WORKLOAD").is_some() {
        return;
    }
    let dir = scratch("run");
    let started = Instant::now();
    let output = record(&dir, "grow", &[]);
    std::fs::rename(dir.join("run.dat"), dir.join("grow.dat")).unwrap();
    let elapsed = started.elapsed().as_secs_f64();
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

    // One sample per interval for as long as the program ran.
    let span = mem.last().unwrap().0 - mem[0].0;
    let expected = span / INTERVAL + 1.0;
    assert!(
        (mem.len() as f64 - expected).abs() <= 2.0,
        "{} MEM samples over {span:.3}s",
        mem.len()
    );
    assert!(
        span > elapsed - 0.5 && span <= elapsed,
        "{span} vs {elapsed}"
    );
    assert!(
        (heap.len() as f64 - mem.len() as f64).abs() <= 3.0,
        "{} HEAP and {} MEM samples",
        heap.len(),
        mem.len()
    );

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
    // start, give or take a few pages.
    for fill in funcs.iter().filter(|f| f.name == "run::fill") {
        let grew = fill.mem_end - fill.mem_start;
        assert!((grew - 25.0).abs() < 0.1, "{fill:?}");
    }
    let workload = funcs.iter().find(|f| f.name == "run::workload").unwrap();
    let peak = mem.iter().map(|s| s.1).fold(0.0, f64::max);
    let rise = peak - workload.mem_start;
    assert!((200.0..200.5).contains(&rise), "RSS rose by {rise} MiB");

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
fn gpu_without_nvml_records_no_gpu_lines() {
    if std::env::var_os("MPROF_TEST_WORKLOAD").is_some() {
        return;
    }
    let dir = scratch("no-gpu");
    let output = Command::new(env!("CARGO_BIN_EXE_mprof"))
        .args(["run", "--gpu", "-o", "gpu.dat", "sleep", "0.2"])
        .env("MEMPROF_NVML_LIB", dir.join("libnvidia-ml-absent.so.1"))
        .current_dir(&dir)
        .output()
        .unwrap();
    let err = stderr(&output);
    assert!(output.status.success(), "{err}");
    let notes: Vec<&str> = err.lines().filter(|l| l.contains("NVML")).collect();
    assert_eq!(notes.len(), 1, "{err}");
    assert!(
        notes[0].starts_with("mprof: note: --gpu: cannot use NVML"),
        "{err}"
    );
    assert!(notes[0].ends_with("recording no GPU memory"), "{err}");
    let text = std::fs::read_to_string(dir.join("gpu.dat")).unwrap();
    assert!(text.contains("\nMEM "));
    assert!(!text.contains("GPU "), "{text}");
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
        "'{}' workload_child --exact --test-threads=1 >/dev/null",
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
