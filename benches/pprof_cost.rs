//! What writing a heap profile costs: `cargo bench --bench pprof_cost`.
//!
//! A report of 10,000 allocation sites (100 functions of 10 statement lines,
//! a loop around the other nine, each line with 10 sites of 8 frames), made
//! into a `HeapProfile`, encoded as gzipped profile.proto and written to a
//! file (`MEMPROF_PPROF`'s work at exit, and `memprof::heap_profile()`'s but
//! the file). Twice: with the sites' frames drawn from 2,000 functions in
//! 200 files (a program's stacks share their functions), and with every
//! frame a function of its own (80,000: the worst case, every string new).
//! Prints the median and longest wall time of 20 runs, the median CPU time
//! of the thread (what a loaded machine does not stretch), and the
//! profile's size. The budget is 100 ms.

use memprof::{FunctionReport, HeapProfile, LineReport, Report, Site, SiteFrame};
use std::time::{Duration, Instant};

const FUNCTIONS: usize = 100;
const LINES: usize = 10;
const SITES: usize = 10;
const FRAMES: usize = 8;

fn row(line: u32, contents: String, sites: Option<Vec<Site>>) -> LineReport {
    let ran = sites.is_some();
    LineReport {
        line,
        mem_usage: ran.then_some(1 << 20),
        increment: ran.then_some(4096),
        peak: ran.then_some(8192),
        occurrences: u64::from(ran),
        allocations: ran.then_some(100),
        allocated_bytes: ran.then_some(1 << 20),
        gpu_usage: None,
        gpu_increment: None,
        gpu_peak: None,
        gpu_driver_usage: None,
        gpu_driver_increment: None,
        pool_allocated: None,
        pool_increment: None,
        pool_reserved: None,
        in_use_allocations: ran.then_some(10),
        in_use_bytes: ran.then_some(4096),
        calls: None,
        within: None,
        contents,
        sites,
    }
}

/// `distinct`: every frame a function of its own; else 2,000 functions.
fn report(distinct: bool) -> Report {
    let mut report = Report::default();
    for f in 0..FUNCTIONS {
        let sites = |l: usize| -> Vec<Site> {
            (0..SITES)
                .map(|s| Site {
                    allocations: (s + 1) as u64,
                    allocated_bytes: ((s + 1) * 1000) as u64,
                    live_bytes: (s * 100) as i64,
                    in_use_allocations: Some(s as u64),
                    in_use_bytes: Some((s * 100) as u64),
                    estimated: false,
                    frames: (0..FRAMES)
                        .map(|d| {
                            let site = (f * LINES + l) * SITES + s;
                            // A spread of the 2,000 (Knuth's multiplier).
                            let k = (site * FRAMES + d).wrapping_mul(2_654_435_761) % 2_000;
                            let (function, file) = match distinct {
                                true => (format!("call_{site}_{d}"), format!("module_{s}.rs")),
                                false => (format!("call_{k}"), format!("module_{}.rs", k / 10)),
                            };
                            SiteFrame {
                                function: format!("dep{d}::module::Type::{function}"),
                                file: Some(format!("dep{d}-1.0.0/src/{file}")),
                                line: Some((10 + d * 7 + s) as u32),
                            }
                        })
                        .collect(),
                })
                .collect()
        };
        let mut lines = vec![
            row(1, "#[profile]".to_owned(), Some(vec![])),
            row(2, format!("fn f{f}() {{"), None),
        ];
        lines.push(row(3, "    for _ in 0..n {".to_owned(), Some(sites(0))));
        for l in 1..LINES {
            let text = format!("        let v{l} = work_{l}();");
            lines.push(row(3 + l as u32, text, Some(sites(l))));
        }
        lines.push(row(3 + LINES as u32, "    }".to_owned(), None));
        lines.push(row(4 + LINES as u32, "}".to_owned(), None));
        report.functions.push(FunctionReport {
            name: format!("app::module_{f}::f{f}"),
            file: format!("src/module_{f}.rs"),
            calls: 1,
            running: 0,
            gpu: None,
            gpu_driver: None,
            pool: None,
            lines,
            sites_left_out: None,
            quiet_calls: 0,
            events_calls: 0,
            quiet_unplaced: 0,
        });
    }
    report
}

fn main() {
    for (distinct, what) in [
        (false, "frames from 2,000 functions"),
        (true, "every frame its own function"),
    ] {
        measure(&report(distinct), what);
    }
}

fn measure(report: &Report, what: &str) {
    let sites: usize = report
        .functions
        .iter()
        .flat_map(|f| &f.lines)
        .filter_map(|l| l.sites.as_ref())
        .map(Vec::len)
        .sum();
    let dir = std::env::temp_dir().join(format!("memprof-pprof-cost-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    let path = dir.join("heap.pb.gz");
    let mut times = Vec::new();
    let mut cpu = Vec::new();
    let mut size = 0;
    for _ in 0..20 {
        let (start, start_cpu) = (Instant::now(), thread_cpu());
        let bytes = HeapProfile::of_report(report).to_pprof();
        std::fs::write(&path, &bytes).expect("the profile written");
        times.push(start.elapsed());
        cpu.push(thread_cpu().saturating_sub(start_cpu));
        size = bytes.len();
    }
    times.sort();
    cpu.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "writing a profile of {sites} sites, {what}: median {:.1} ms, longest {:.1} ms of 20; \
         CPU time median {:.1} ms ({size} bytes gzipped; budget 100 ms)",
        ms(times[times.len() / 2]),
        ms(times[times.len() - 1]),
        ms(cpu[cpu.len() / 2]),
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The calling thread's CPU time: the figure that other processes on a
/// loaded machine do not stretch.
fn thread_cpu() -> Duration {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid out pointer for the call.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}
