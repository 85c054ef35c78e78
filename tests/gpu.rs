//! GPU columns, checked against the fake NVML library (tests/fake-nvml)
//! through the real nvml-wrapper code path, and against the fake CUPTI
//! library (tests/fake-cupti) for counted device allocations. memprof opens
//! the GPU once per process, so each test re-runs this binary on one
//! `child_*` test with the environment under test, and reads what the child
//! printed: its tables and its report as JSON.
//!
//! The NVML tests ask for `MEMPROF_GPU_SAMPLE=statement`, NVML's per-statement
//! columns; the counted ones for the default, with the fake CUPTI.

#[path = "support/fake_cupti.rs"]
mod fake_cupti;
#[path = "support/fake_library.rs"]
mod fake_library;
#[path = "support/fake_nvml.rs"]
mod fake_nvml;

use fake_cupti::{FakeCupti, cbid};
use fake_nvml::FakeNvml;
use memprof::{memit, profile};
use serde_json::Value;
use std::process::Command;

const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

/// A PID that is not this process's: another program on the same GPU, or,
/// in a container, this process under its host PID.
const OTHER_PID: u32 = 4_000_000;

fn pid() -> u32 {
    std::process::id()
}

fn is_child() -> bool {
    std::env::var_os("MEMPROF_GPU_CHILD").is_some()
}

struct Child {
    stdout: String,
    stderr: String,
}

impl Child {
    /// The report the child printed last, as JSON.
    fn report(&self) -> Value {
        let line = self
            .stdout
            .lines()
            .rev()
            .find_map(|l| l.strip_prefix("REPORT "))
            .unwrap_or_else(|| panic!("no report in {}", self.stdout));
        serde_json::from_str(line).unwrap()
    }

    /// The value the child printed after `key `.
    fn value(&self, key: &str) -> String {
        self.stdout
            .lines()
            .find_map(|l| l.split_once(key)?.1.strip_prefix(' '))
            .unwrap_or_else(|| panic!("no {key} in {}", self.stdout))
            .to_owned()
    }
}

/// Runs the child test `name` against the fake library, or against
/// `MEMPROF_NVML_LIB` from `env` if given.
fn run_child(name: &str, env: &[(&str, &str)]) -> Child {
    run_child_with(None, name, env)
}

fn run_child_with(prefix: Option<&[&str]>, name: &str, env: &[(&str, &str)]) -> Child {
    let library = fake_nvml::library();
    let exe = std::env::current_exe().unwrap();
    let mut cmd = match prefix {
        Some([program, args @ ..]) => {
            let mut cmd = Command::new(program);
            cmd.args(args).arg(&exe);
            cmd
        }
        _ => Command::new(&exe),
    };
    cmd.args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env("MEMPROF_GPU_CHILD", "1")
        .env("MEMPROF_NVML_LIB", &library)
        .env("MEMPROF_REPORT", "call")
        .env("MEMPROF_UNIT", "MiB")
        .env_remove("MEMPROF")
        .env_remove("MEMPROF_GPU")
        .env_remove("MEMPROF_GPU_MEMORY")
        .env("MEMPROF_GPU_SAMPLE", "statement")
        .env_remove("MEMPROF_CUPTI_LIB")
        .env_remove("FAKE_CUPTI_SUBSCRIBE_ERROR")
        .env_remove("FAKE_CUPTI_REFUSE_CBID")
        .env_remove("FAKE_NVML_DEVICES")
        .env_remove("FAKE_NVML_FAIL_INIT");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    let child = Child {
        stdout: String::from_utf8(out.stdout).unwrap(),
        stderr: String::from_utf8(out.stderr).unwrap(),
    };
    assert!(
        out.status.success(),
        "child {name} failed: {}\n{}\n{}",
        out.status,
        child.stdout,
        child.stderr
    );
    child
}

fn print_report() {
    println!("REPORT {}", memprof::report().to_json());
}

/// In a child run: `f` with the fake NVML and the fake CUPTI set up, then
/// the report printed for the parent test to read.
fn in_counted_child(f: impl FnOnce(&FakeNvml, &FakeCupti)) {
    if is_child() {
        let nvml = FakeNvml::new();
        let c = FakeCupti::new();
        f(&nvml, &c);
        print_report();
    }
}

/// The report of the function whose path ends with `::name`.
fn function<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["functions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"].as_str().unwrap().ends_with(&format!("::{name}")))
        .unwrap_or_else(|| panic!("no {name} in {report}"))
}

/// The row of `name` whose source contains `needle`.
fn row<'a>(report: &'a Value, name: &str, needle: &str) -> &'a Value {
    let function = function(report, name);
    function["lines"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["contents"].as_str().unwrap().contains(needle))
        .unwrap_or_else(|| panic!("no {needle:?} row in {function}"))
}

fn gpu(row: &Value) -> (i64, u64) {
    (
        row["gpu_increment"]
            .as_i64()
            .unwrap_or_else(|| panic!("{row}")),
        row["gpu_usage"].as_u64().unwrap_or_else(|| panic!("{row}")),
    )
}

/// What a GPU program's lines do: `alloc`/`free` stand in for cudaMalloc and
/// cudaFree.
#[profile]
fn device_lines(fake: &FakeNvml) -> usize {
    fake.alloc(0, pid(), 256 * MIB);
    let host = vec![0u8; 1000];
    fake.free(0, pid(), 64 * MIB);
    host.len()
}

#[test]
fn child_device_lines() {
    if is_child() {
        let fake = FakeNvml::new();
        // Another process's memory: not ours, so not in the process columns.
        fake.set_baseline(0, GIB);
        fake.alloc(0, OTHER_PID, 100 * MIB);
        device_lines(&fake);
        device_lines(&fake);
        print_report();
    }
}

#[test]
fn columns_show_each_lines_device_memory() {
    let child = run_child("child_device_lines", &[("MEMPROF_GPU_MEMORY", "process")]);
    let out = &child.stdout;
    assert_eq!(out.matches("GPU usage   GPU increment").count(), 2, "{out}");
    assert_eq!(
        out.matches("GPU: this process's memory on device 0 (Fake GPU 0)\n")
            .count(),
        2,
        "{out}"
    );
    // The first call's table: +256 MiB where it allocates, -64 MiB where it
    // frees, the heap columns as without a GPU.
    let words = |needle: &str| {
        let line = out.lines().find(|l| l.contains(needle)).unwrap();
        line.split_whitespace().collect::<Vec<_>>().join(" ")
    };
    assert!(
        words("fake.alloc(").ends_with(" 1 256.0 MiB 256.0 MiB fake.alloc(0, pid(), 256 * MIB);"),
        "{out}"
    );
    assert!(
        words("fake.free(").ends_with(" 1 192.0 MiB -64.0 MiB fake.free(0, pid(), 64 * MIB);"),
        "{out}"
    );

    // Both calls: 0 → 256 → 192, then 192 → 448 → 384.
    let report = child.report();
    let alloc = row(&report, "device_lines", "fake.alloc(");
    assert_eq!(gpu(alloc), (512 * MIB as i64, 448 * MIB));
    let host = row(&report, "device_lines", "let host");
    assert_eq!(gpu(host), (0, 448 * MIB));
    assert_eq!(host["increment"], 2000);
    let free = row(&report, "device_lines", "fake.free(");
    assert_eq!(gpu(free), (-128 * MIB as i64, 384 * MIB));
    let call = row(&report, "device_lines", "fn device_lines");
    assert_eq!(gpu(call), (384 * MIB as i64, 384 * MIB));
    assert_eq!(
        function(&report, "device_lines")["gpu"],
        "GPU: this process's memory on device 0 (Fake GPU 0)"
    );
    // Lines with no statement have no figures.
    let blank = row(&report, "device_lines", "#[profile]");
    assert!(blank["gpu_usage"].is_null() && blank["gpu_increment"].is_null());
    assert!(!child.stderr.contains("memprof:"), "{}", child.stderr);
}

/// Three statements: one GPU sample at each of the four statement
/// boundaries, plus one at the call's entry and one at its exit.
#[profile]
fn three_statements(fake: &FakeNvml) {
    fake.alloc(0, pid(), MIB);
    fake.alloc(0, pid(), MIB);
    fake.free(0, pid(), 2 * MIB);
}

#[profile(gpu = false)]
fn without_gpu(fake: &FakeNvml) {
    fake.alloc(0, pid(), MIB);
    fake.free(0, pid(), MIB);
}

#[test]
fn child_sampling() {
    if is_child() {
        let fake = FakeNvml::new();
        fake.set_baseline(0, GIB);
        three_statements(&fake);
        let before = fake.query_count();
        three_statements(&fake);
        println!("samples per call {}", fake.query_count() - before);
        let before = fake.query_count();
        without_gpu(&fake);
        println!("samples without gpu {}", fake.query_count() - before);
        print_report();
    }
}

#[test]
fn device_memory_is_sampled_once_per_statement_boundary_and_only_where_asked() {
    // In device mode one sample is one NVML query.
    let child = run_child("child_sampling", &[("MEMPROF_GPU_MEMORY", "device")]);
    assert_eq!(child.value("samples per call"), "6");
    assert_eq!(child.value("samples without gpu"), "0");
    let report = child.report();
    // All processes' memory, the other process's baseline included.
    let first = row(&report, "three_statements", "fake.alloc(");
    assert_eq!(gpu(first), (2 * MIB as i64, GIB + MIB));
    assert!(row(&report, "without_gpu", "fake.alloc(")["gpu_usage"].is_null());
    let out = &child.stdout;
    assert!(
        out.contains(
            "GPU: memory used on device 0 (Fake GPU 0), all processes (MEMPROF_GPU_MEMORY=device)"
        ),
        "{out}"
    );
    // `gpu = false` tables have no GPU columns.
    let table = out.split("Function: gpu::without_gpu").nth(1).unwrap();
    let table = table.split("\n\n").nth(1).unwrap();
    assert!(!table.contains("GPU usage"), "{table}");

    // MEMPROF_GPU=off: NVML is never asked.
    let child = run_child("child_sampling", &[("MEMPROF_GPU", "off")]);
    assert_eq!(child.value("samples per call"), "0");
    assert!(!child.stdout.contains("GPU usage"), "{}", child.stdout);
}

#[test]
fn child_plain() {
    if is_child() {
        #[profile]
        fn plain() -> usize {
            let v = vec![0u8; 4096];
            v.len()
        }
        plain();
        let (_, m) = memprof::measure(plain);
        println!("measure gpu {:?} {:?}", m.gpu_increment, m.gpu_peak);
        print_report();
    }
}

#[test]
fn without_a_library_device_or_driver_there_are_no_columns_and_no_message() {
    let missing = std::env::temp_dir().join("memprof-no-such-dir/libnvidia-ml.so.1");
    let missing = missing.to_str().unwrap();
    for env in [
        &[("MEMPROF_NVML_LIB", missing)][..],
        &[("FAKE_NVML_DEVICES", "0")],
        &[("FAKE_NVML_FAIL_INIT", "1")],
    ] {
        let child = run_child("child_plain", env);
        assert!(
            !child.stdout.contains("GPU usage"),
            "{env:?}: {}",
            child.stdout
        );
        assert!(
            !child.stderr.contains("memprof"),
            "{env:?}: {}",
            child.stderr
        );
        assert_eq!(child.value("measure gpu"), "None None");
        let report = child.report();
        assert!(function(&report, "plain")["gpu"].is_null());
        assert!(row(&report, "plain", "let v")["gpu_usage"].is_null());
        // The heap columns are there as ever.
        assert_eq!(row(&report, "plain", "let v")["increment"], 8192);
    }
    // Asked for by name, a missing GPU gets one note.
    let child = run_child(
        "child_plain",
        &[("MEMPROF_NVML_LIB", missing), ("MEMPROF_GPU", "0")],
    );
    assert_eq!(
        child
            .stderr
            .matches("memprof: no GPU columns: cannot load NVML")
            .count(),
        1,
        "{}",
        child.stderr
    );
    assert!(!child.stdout.contains("GPU usage"));
}

#[test]
fn child_lost() {
    if is_child() {
        let fake = FakeNvml::new();
        three_statements(&fake);
        // The device answers two more queries, then is gone.
        fake.fail_after(2);
        three_statements(&fake);
        three_statements(&fake);
        println!("still running");
        print_report();
    }
}

#[test]
fn a_device_lost_mid_run_warns_once_and_drops_the_columns() {
    let child = run_child("child_lost", &[("MEMPROF_GPU_MEMORY", "device")]);
    assert_eq!(
        child
            .stderr
            .matches("memprof: GPU sampling stopped, NVML failed: ")
            .count(),
        1,
        "{}",
        child.stderr
    );
    assert!(child.stdout.contains("still running"));
    let tables: Vec<&str> = child
        .stdout
        .split("Filename: ")
        .filter(|t| t.contains("three_statements"))
        .collect();
    assert_eq!(tables.len(), 3, "{}", child.stdout);
    assert!(tables[0].contains("GPU usage"), "{}", tables[0]);
    assert!(!tables[1].contains("GPU usage"), "{}", tables[1]);
    assert!(!tables[2].contains("GPU usage"), "{}", tables[2]);
    let report = child.report();
    assert!(function(&report, "three_statements")["gpu"].is_null());
    // The heap figures go on.
    assert_eq!(
        row(&report, "three_statements", "fake.free(")["occurrences"],
        3
    );
}

#[profile]
fn on_two_devices(fake: &FakeNvml) {
    fake.alloc(0, pid(), 100 * MIB);
    fake.alloc(1, pid(), 50 * MIB);
}

#[test]
fn child_two_devices() {
    if is_child() {
        let fake = FakeNvml::new();
        on_two_devices(&fake);
        print_report();
    }
}

#[test]
fn devices_are_chosen_by_memprof_gpu() {
    let two = ("FAKE_NVML_DEVICES", "2");
    let process = ("MEMPROF_GPU_MEMORY", "process");
    for (setting, description, first, second) in [
        ("all", "devices 0 (Fake GPU 0), 1 (Fake GPU 1)", 100, 50),
        ("auto", "devices 0 (Fake GPU 0), 1 (Fake GPU 1)", 100, 50),
        ("1", "device 1 (Fake GPU 1)", 0, 50),
    ] {
        let child = run_child(
            "child_two_devices",
            &[two, process, ("MEMPROF_GPU", setting)],
        );
        let report = child.report();
        assert_eq!(
            function(&report, "on_two_devices")["gpu"],
            format!("GPU: this process's memory on {description}"),
            "MEMPROF_GPU={setting}"
        );
        let total = (first + second) * MIB;
        assert_eq!(
            gpu(row(&report, "on_two_devices", "fake.alloc(0")),
            (first as i64 * MIB as i64, first * MIB)
        );
        assert_eq!(
            gpu(row(&report, "on_two_devices", "fake.alloc(1")),
            (second as i64 * MIB as i64, total)
        );
    }
    let child = run_child("child_two_devices", &[two, process, ("MEMPROF_GPU", "7")]);
    assert!(
        child.stderr.contains(
            "memprof: ignoring MEMPROF_GPU=7: NVML shows 2 device(s), numbered from 0; using all of them"
        ),
        "{}",
        child.stderr
    );
    let child = run_child(
        "child_two_devices",
        &[two, process, ("MEMPROF_GPU", "most")],
    );
    assert!(
        child.stderr.contains(
            "memprof: ignoring MEMPROF_GPU=\"most\": expected auto, off, all or a device index"
        ),
        "{}",
        child.stderr
    );
}

#[test]
fn child_measure_and_memit() {
    if is_child() {
        let fake = FakeNvml::new();
        let (_, m) = memprof::measure(|| device_lines(&fake));
        println!("measure gpu {:?} {:?}", m.gpu_increment, m.gpu_peak);
        memit!(device_lines(&fake));
        memprof::track!();
        fake.alloc(0, pid(), 32 * MIB);
        memprof::track!();
    }
}

#[test]
fn measure_memit_and_checkpoints_carry_gpu_figures() {
    let child = run_child(
        "child_measure_and_memit",
        &[("MEMPROF_GPU_MEMORY", "process"), ("MEMPROF_REPORT", "off")],
    );
    // 0 → 256 (sampled after the allocating statement) → 192 MiB.
    assert_eq!(
        child.value("measure gpu"),
        format!("Some({}) Some({})", 192 * MIB, 256 * MIB)
    );
    assert!(
        child
            .stdout
            .contains("; GPU peak: +256.0 MiB, GPU increment: 192.0 MiB\n"),
        "{}",
        child.stdout
    );
    let checkpoints: Vec<&str> = child
        .stdout
        .lines()
        .filter(|l| l.starts_with("At tests/gpu.rs"))
        .collect();
    assert_eq!(checkpoints.len(), 2, "{}", child.stdout);
    assert!(
        checkpoints[0].ends_with(", GPU 384.0 MiB"),
        "{}",
        checkpoints[0]
    );
    assert!(
        checkpoints[1].ends_with(", GPU 416.0 MiB (+32.0 MiB)"),
        "{}",
        checkpoints[1]
    );
}

#[test]
fn child_in_a_container() {
    if is_child() {
        let fake = FakeNvml::new();
        // NVML knows this process by its host PID, not the one it sees.
        fake.alloc(0, OTHER_PID, 300 * MIB);
        device_lines(&fake);
        print_report();
    }
}

/// In another PID namespace, as in a container, NVML's PIDs are not ours:
/// the columns show the device's used memory and the header says why.
#[test]
fn in_another_pid_namespace_the_columns_fall_back_to_device_memory() {
    let unshare: &[&str] = &["unshare", "--user", "--map-root-user", "--pid", "--fork"];
    let usable = Command::new(unshare[0])
        .args(&unshare[1..])
        .arg("true")
        .output()
        .is_ok_and(|o| o.status.success());
    if !usable {
        eprintln!("note: `unshare` cannot make a PID namespace here; checking the host only");
        let child = run_child("child_in_a_container", &[]);
        let report = child.report();
        let host = std::fs::read_link("/proc/self/ns/pid")
            .is_ok_and(|l| l.as_os_str() == "pid:[4026531836]");
        assert_eq!(
            function(&report, "device_lines")["gpu"]
                .as_str()
                .unwrap()
                .contains("this process's memory"),
            host
        );
        return;
    }
    let child = run_child_with(Some(unshare), "child_in_a_container", &[]);
    let report = child.report();
    assert_eq!(
        function(&report, "device_lines")["gpu"],
        "GPU: memory used on device 0 (Fake GPU 0), all processes \
         (NVML's PIDs are not this PID namespace's)"
    );
    let alloc = row(&report, "device_lines", "fake.alloc(");
    assert_eq!(gpu(alloc), (256 * MIB as i64, 556 * MIB));
}

#[test]
fn child_crowded_device() {
    if is_child() {
        let fake = FakeNvml::new();
        for other in 0..100 {
            fake.alloc(0, OTHER_PID + other, MIB);
        }
        device_lines(&fake);
        print_report();
    }
}

/// memprof reads a device's process list into a buffer of 64 entries; a
/// device with more processes goes through nvml-wrapper's own listing.
#[test]
fn a_device_crowded_with_processes_still_shows_this_process() {
    let child = run_child("child_crowded_device", &[("MEMPROF_GPU_MEMORY", "process")]);
    let report = child.report();
    let alloc = row(&report, "device_lines", "fake.alloc(");
    assert_eq!(gpu(alloc), (256 * MIB as i64, 256 * MIB));
    let free = row(&report, "device_lines", "fake.free(");
    assert_eq!(gpu(free), (-64 * MIB as i64, 192 * MIB));
}

// Counted device allocations (CUPTI).

/// Runs the child test `name` counting device allocations through the fake
/// CUPTI.
fn run_counted(name: &str, env: &[(&str, &str)]) -> Child {
    let cupti = fake_cupti::library();
    let cupti = cupti.to_str().unwrap();
    let mut all = vec![
        ("MEMPROF_GPU_SAMPLE", "alloc"),
        ("MEMPROF_CUPTI_LIB", cupti),
    ];
    all.extend_from_slice(env);
    run_child(name, &all)
}

/// (increment, alloc, peak) of a counted row.
fn counted(row: &Value) -> (i64, u64, u64) {
    let (increment, usage) = gpu(row);
    (
        increment,
        usage,
        row["gpu_peak"].as_u64().unwrap_or_else(|| panic!("{row}")),
    )
}

const MI: i64 = MIB as i64;

/// Lines of a GPU program: allocations by `cuMemAlloc_v2` and
/// `cuMemAllocAsync`, a buffer made and freed within one line, the frees.
// One statement per line, as the assertions read them.
#[rustfmt::skip]
#[profile]
fn counted_lines(c: &FakeCupti) {
    let a = c.alloc(cbid::MEM_ALLOC_V2, 0, 256 * MIB);
    let b = c.alloc(cbid::MEM_ALLOC_ASYNC, 0, 256 * MIB);
    c.free(cbid::MEM_FREE_V2, 0, c.alloc(cbid::MEM_ALLOC_V2, 0, GIB / 2));
    c.free(cbid::MEM_FREE_V2, 0, a);
    c.free(cbid::MEM_FREE_ASYNC, 0, b);
}

#[test]
fn child_counted_lines() {
    in_counted_child(|_nvml, c| {
        counted_lines(c);
        counted_lines(c);
        let (_, m) = memprof::measure(|| counted_lines(c));
        println!("measure gpu {:?} {:?}", m.gpu_increment, m.gpu_peak);
        println!("subscriptions {}", c.subscriptions());
    });
}

#[test]
fn counted_columns_show_each_lines_allocations_and_peak_exactly() {
    let child = run_counted("child_counted_lines", &[]);
    assert!(!child.stderr.contains("memprof:"), "{}", child.stderr);
    let out = &child.stdout;
    let headers = out
        .lines()
        .filter(|l| {
            l.split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
                .contains("Occurrences GPU alloc GPU increment GPU peak Line Contents")
        })
        .count();
    // Two calls and a measured one.
    assert_eq!(headers, 3, "{out}");
    assert!(
        out.contains("GPU: device allocations counted (CUPTI) on device 0 (Fake GPU 0)\n"),
        "{out}"
    );
    let words = |needle: &str| {
        let line = out.lines().find(|l| l.contains(needle)).unwrap();
        line.split_whitespace().collect::<Vec<_>>().join(" ")
    };
    assert!(
        words("GIB / 2").ends_with(" 1 512.0 MiB 0.0 MiB 512.0 MiB c.free(cbid::MEM_FREE_V2, 0, c.alloc(cbid::MEM_ALLOC_V2, 0, GIB / 2));"),
        "{out}"
    );
    assert_eq!(
        child.value("measure gpu"),
        format!("Some(0) Some({})", 1024 * MIB)
    );
    assert_eq!(child.value("subscriptions"), "1");

    // Three calls, each 0 → 256 → 512 → (1024) 512 → 256 → 0.
    let report = child.report();
    let f = "counted_lines";
    assert_eq!(
        counted(row(&report, f, "let a")),
        (3 * 256 * MI, 256 * MIB, 256 * MIB)
    );
    assert_eq!(
        counted(row(&report, f, "let b")),
        (3 * 256 * MI, 512 * MIB, 256 * MIB)
    );
    assert_eq!(
        counted(row(&report, f, "GIB / 2")),
        (0, 512 * MIB, 512 * MIB)
    );
    assert_eq!(
        counted(row(&report, f, "0, a)")),
        (-3 * 256 * MI, 256 * MIB, 0)
    );
    assert_eq!(counted(row(&report, f, "0, b)")), (-3 * 256 * MI, 0, 0));
    assert_eq!(
        counted(row(&report, f, "fn counted_lines")),
        (0, 0, 1024 * MIB)
    );
    // The callback's bookkeeping never shows in the heap columns.
    for needle in ["let a", "let b", "GIB / 2", "0, a)", "0, b)"] {
        assert_eq!(row(&report, f, needle)["increment"], 0, "{needle}");
        assert_eq!(row(&report, f, needle)["peak"], 0, "{needle}");
    }
}

/// Every allocating and freeing driver call the subscriber enables, one per
/// line, and calls that must count nothing.
#[profile]
fn every_call(c: &FakeCupti) {
    let a = c.alloc(cbid::MEM_ALLOC_V2, 0, MIB);
    let b = c.alloc(cbid::MEM_ALLOC_MANAGED, 0, 2 * MIB);
    let d = c.alloc(cbid::MEM_ALLOC_ASYNC, 0, 4 * MIB);
    let e = c.alloc(cbid::MEM_ALLOC_ASYNC_PTSZ, 0, 8 * MIB);
    let g = c.alloc(cbid::MEM_ALLOC_FROM_POOL_ASYNC, 0, 16 * MIB);
    let h = c.alloc(cbid::MEM_ALLOC_FROM_POOL_ASYNC_PTSZ, 0, 32 * MIB);
    let v = c.alloc(cbid::MEM_CREATE, 0, 64 * MIB);
    let p = c.alloc_pitch(0, 1000, 1024);
    c.alloc_failing(
        cbid::MEM_ALLOC_V2,
        0,
        1 << 40,
        fake_cupti::CUDA_ERROR_OUT_OF_MEMORY,
    );
    c.free(cbid::MEM_FREE_V2, 0, 0xdead_0000);
    c.free(cbid::MEM_RELEASE, 0, a);
    c.free(cbid::MEM_FREE_V2, 0, a);
    c.free(cbid::MEM_FREE_V2, 0, a);
    c.free(cbid::MEM_FREE_V2, 0, b);
    c.free(cbid::MEM_FREE_ASYNC, 0, d);
    c.free(cbid::MEM_FREE_ASYNC_PTSZ, 0, e);
    c.free(cbid::MEM_FREE_ASYNC, 0, g);
    c.free(cbid::MEM_FREE_ASYNC_PTSZ, 0, h);
    c.free(cbid::MEM_RELEASE, 0, v);
    c.free(cbid::MEM_FREE_V2, 0, p);
}

#[test]
fn child_every_call() {
    in_counted_child(|_nvml, c| {
        every_call(c);
        let enabled: Vec<u32> = (0..1000).filter(|&id| c.enabled(id)).collect();
        println!("enabled {enabled:?}");
    });
}

#[test]
fn every_allocation_call_counts_and_failed_or_unknown_ones_do_not() {
    let child = run_counted("child_every_call", &[]);
    assert_eq!(
        child.value("enabled"),
        "[243, 244, 245, 371, 549, 550, 598, 599, 600, 601, 611, 612]"
    );
    let report = child.report();
    let f = "every_call";
    let rise = |needle: &str| counted(row(&report, f, needle)).0;
    for (needle, bytes) in [
        ("MEM_ALLOC_V2, 0, MIB", MI),
        ("MEM_ALLOC_MANAGED", 2 * MI),
        ("MEM_ALLOC_ASYNC, 0", 4 * MI),
        ("MEM_ALLOC_ASYNC_PTSZ", 8 * MI),
        ("MEM_ALLOC_FROM_POOL_ASYNC, 0", 16 * MI),
        ("MEM_ALLOC_FROM_POOL_ASYNC_PTSZ", 32 * MI),
        ("MEM_CREATE", 64 * MI),
        // 1024 rows of 1000 bytes, each padded to 1024.
        ("alloc_pitch", MI),
        ("alloc_failing", 0),
        ("0xdead_0000", 0),
        // A handle is not an address, though of the same value.
        ("MEM_RELEASE, 0, a", 0),
        ("MEM_FREE_V2, 0, b", -2 * MI),
        ("MEM_FREE_ASYNC, 0, d", -4 * MI),
        ("MEM_FREE_ASYNC_PTSZ, 0, e", -8 * MI),
        ("MEM_FREE_ASYNC, 0, g", -16 * MI),
        ("MEM_FREE_ASYNC_PTSZ, 0, h", -32 * MI),
        ("MEM_RELEASE, 0, v", -64 * MI),
        ("MEM_FREE_V2, 0, p", -MI),
    ] {
        assert_eq!(rise(needle), bytes, "{needle}");
    }
    // `a` freed twice on two lines of the same text: one row, counted once.
    assert_eq!(rise("MEM_FREE_V2, 0, a"), -MI);
    assert_eq!(counted(row(&report, f, "fn every_call")), (0, 0, 128 * MIB));
}

#[profile]
fn on_two_counted_devices(c: &FakeCupti) {
    let a = c.alloc(cbid::MEM_ALLOC_V2, 0, 100 * MIB);
    let b = c.alloc(cbid::MEM_ALLOC_V2, 1, 50 * MIB);
    c.free(cbid::MEM_FREE_V2, 0, a);
    c.free(cbid::MEM_FREE_V2, 1, b);
}

#[test]
fn child_two_counted_devices() {
    in_counted_child(|_nvml, c| {
        on_two_counted_devices(c);
    });
}

#[test]
fn counted_devices_are_chosen_by_memprof_gpu() {
    let two = ("FAKE_NVML_DEVICES", "2");
    for (setting, description, first, second) in [
        ("auto", "devices 0 (Fake GPU 0), 1 (Fake GPU 1)", 100, 50),
        ("1", "device 1 (Fake GPU 1)", 0, 50),
    ] {
        let child = run_counted(
            "child_two_counted_devices",
            &[two, ("MEMPROF_GPU", setting)],
        );
        let report = child.report();
        let f = "on_two_counted_devices";
        assert_eq!(
            function(&report, f)["gpu"],
            format!("GPU: device allocations counted (CUPTI) on {description}")
        );
        assert_eq!(counted(row(&report, f, "let a")).0, first * MI);
        assert_eq!(counted(row(&report, f, "let b")).0, second * MI);
        assert_eq!(counted(row(&report, f, "0, a)")).0, -first * MI);
        assert_eq!(
            counted(row(&report, f, "fn on_two")),
            (0, 0, (first + second) as u64 * MIB)
        );
    }
}

/// Device memory allocated by another thread: not this thread's.
#[profile]
fn beside_another_thread(c: &FakeCupti) -> u64 {
    let mine = c.alloc(cbid::MEM_ALLOC_V2, 0, 10 * MIB);
    let theirs = std::thread::scope(|s| {
        s.spawn(|| c.alloc(cbid::MEM_ALLOC_V2, 0, 30 * MIB))
            .join()
            .unwrap()
    });
    c.free(cbid::MEM_FREE_V2, 0, mine);
    theirs
}

#[profile(scope = "process")]
fn whole_process(c: &FakeCupti) -> u64 {
    let mine = c.alloc(cbid::MEM_ALLOC_V2, 0, 10 * MIB);
    let theirs = std::thread::scope(|s| {
        s.spawn(|| c.alloc(cbid::MEM_ALLOC_V2, 0, 30 * MIB))
            .join()
            .unwrap()
    });
    c.free(cbid::MEM_FREE_V2, 0, mine);
    theirs
}

#[test]
fn child_counted_threads() {
    in_counted_child(|_nvml, c| {
        let theirs = beside_another_thread(c);
        c.free(cbid::MEM_FREE_V2, 0, theirs);
        let theirs = whole_process(c);
        c.free(cbid::MEM_FREE_V2, 0, theirs);
    });
}

#[test]
fn device_bytes_go_to_the_thread_that_allocated_them_unless_scope_is_process() {
    let child = run_counted("child_counted_threads", &[]);
    let report = child.report();
    let f = "beside_another_thread";
    assert_eq!(
        counted(row(&report, f, "let mine")),
        (10 * MI, 10 * MIB, 10 * MIB)
    );
    assert_eq!(counted(row(&report, f, "let theirs")), (0, 10 * MIB, 0));
    assert_eq!(counted(row(&report, f, "fn beside")), (0, 0, 10 * MIB));
    let f = "whole_process";
    assert_eq!(
        counted(row(&report, f, "let mine")),
        (10 * MI, 10 * MIB, 10 * MIB)
    );
    assert_eq!(
        counted(row(&report, f, "let theirs")),
        (30 * MI, 40 * MIB, 30 * MIB)
    );
    assert_eq!(
        counted(row(&report, f, "0, mine)")),
        (-10 * MI, 30 * MIB, 0)
    );
    assert_eq!(
        counted(row(&report, f, "fn whole_process")),
        (30 * MI, 30 * MIB, 40 * MIB)
    );
}

#[test]
fn child_fallback() {
    if is_child() {
        let fake = FakeNvml::new();
        device_lines(&fake);
        print_report();
    }
}

/// Without CUPTI the columns are NVML's, as with
/// `MEMPROF_GPU_SAMPLE=statement`, and one note says why.
#[test]
fn without_cupti_the_columns_fall_back_to_nvml_with_one_note() {
    let missing = std::env::temp_dir().join("memprof-no-such-dir/libcupti.so");
    let busy = ("FAKE_CUPTI_SUBSCRIBE_ERROR", "39");
    let refused = ("FAKE_CUPTI_REFUSE_CBID", "600");
    for (child, why) in [
        (
            run_child(
                "child_fallback",
                &[
                    ("MEMPROF_GPU_SAMPLE", "alloc"),
                    ("MEMPROF_CUPTI_LIB", missing.to_str().unwrap()),
                    ("MEMPROF_GPU_MEMORY", "process"),
                ],
            ),
            "cannot load CUPTI (",
        ),
        (
            run_counted("child_fallback", &[busy, ("MEMPROF_GPU_MEMORY", "process")]),
            "another profiler holds CUPTI's only subscription \
             (CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)",
        ),
        (
            run_counted(
                "child_fallback",
                &[refused, ("MEMPROF_GPU_MEMORY", "process")],
            ),
            "cuptiEnableCallback failed for driver callback 600 (CUPTI error 1)",
        ),
    ] {
        let note = "memprof: GPU columns sampled from NVML at each statement, without a GPU peak: ";
        assert_eq!(
            child.stderr.matches("memprof:").count(),
            1,
            "{}",
            child.stderr
        );
        assert!(
            child.stderr.contains(&format!("{note}{why}")),
            "{}",
            child.stderr
        );
        let report = child.report();
        let alloc = row(&report, "device_lines", "fake.alloc(");
        assert_eq!(gpu(alloc), (256 * MI, 256 * MIB));
        assert!(alloc["gpu_peak"].is_null());
        assert!(
            child.stdout.contains("GPU usage   GPU increment"),
            "{}",
            child.stdout
        );
    }
}

/// Device memory that the driver gives to another PID, as where it does not
/// list this process at all.
#[profile]
fn unlisted_lines(fake: &FakeNvml) {
    fake.alloc(0, OTHER_PID, 256 * MIB);
    fake.free(0, OTHER_PID, 64 * MIB);
}

#[test]
fn child_unlisted() {
    if is_child() {
        let fake = FakeNvml::new();
        fake.set_baseline(0, GIB);
        unlisted_lines(&fake);
        unlisted_lines(&fake);
        print_report();
    }
}

/// Never a silent 0: when the device's memory moves while the driver does
/// not list this process, the columns become the device's and the header
/// says so. The statement (and call) during which that happened has no
/// figures, rather than a jump from one measure to the other.
#[test]
fn an_unlisted_process_gets_the_devices_figures_and_a_header_saying_so() {
    let child = run_child("child_unlisted", &[("MEMPROF_GPU_MEMORY", "process")]);
    let report = child.report();
    let f = "unlisted_lines";
    assert_eq!(
        function(&report, f)["gpu"],
        "GPU: memory used on device 0 (Fake GPU 0), all processes \
         (the driver does not list this process)"
    );
    // 1 GiB → (switch) 1.25 GiB → 1.1875 GiB, then → 1.4375 → 1.375 GiB.
    assert_eq!(
        gpu(row(&report, f, "fake.alloc(")),
        (256 * MI, GIB + 448 * MIB)
    );
    assert_eq!(
        gpu(row(&report, f, "fake.free(")),
        (-128 * MI, GIB + 384 * MIB)
    );
    assert_eq!(
        gpu(row(&report, f, "fn unlisted_lines")),
        (192 * MI, GIB + 384 * MIB)
    );
    assert!(
        child
            .stdout
            .contains("(the driver does not list this process)\n"),
        "{}",
        child.stdout
    );
    assert!(!child.stderr.contains("memprof:"), "{}", child.stderr);
}

/// A CUDA program's first use: the driver takes memory for the context,
/// which NVML sees and CUPTI does not, then the program allocates.
#[profile]
fn with_a_context(nvml: &FakeNvml, c: &FakeCupti) {
    nvml.alloc(0, pid(), 500 * MIB);
    let a = c.alloc(cbid::MEM_ALLOC_V2, 0, 256 * MIB);
    nvml.alloc(0, pid(), 256 * MIB);
    c.free(cbid::MEM_FREE_V2, 0, a);
}

#[test]
fn child_driver_view() {
    in_counted_child(|nvml, c| {
        with_a_context(nvml, c);
        let (_, m) = memprof::measure(|| with_a_context(nvml, c));
        println!(
            "measure gpu {:?} {:?} {:?}",
            m.gpu_increment, m.gpu_peak, m.gpu_driver_increment
        );
        memit!(with_a_context(nvml, c));
        memprof::track!();
    });
}

/// While counting, NVML's view is read at call entry and exit only: on the
/// `fn` row (under the table's header), in `measure`, `memit!` and
/// `track!()`, and never per statement.
#[test]
fn counting_keeps_the_drivers_view_at_call_entry_and_exit() {
    let child = run_counted("child_driver_view", &[("MEMPROF_GPU_MEMORY", "process")]);
    assert!(!child.stderr.contains("memprof:"), "{}", child.stderr);
    let report = child.report();
    let f = function(&report, "with_a_context");
    assert_eq!(
        f["gpu_driver"],
        "GPU driver view: this process's memory on device 0 (Fake GPU 0)"
    );
    let fn_row = row(&report, "with_a_context", "fn with_a_context");
    // Three calls of +756 MiB each, as NVML sees them.
    assert_eq!(fn_row["gpu_driver_increment"], 3 * 756 * MI);
    assert_eq!(fn_row["gpu_driver_usage"], 3 * 756 * MIB);
    // The counted columns see the program's block only.
    assert_eq!(counted(fn_row), (0, 0, 256 * MIB));
    assert!(row(&report, "with_a_context", "let a")["gpu_driver_usage"].is_null());
    assert_eq!(
        child.value("measure gpu"),
        format!("Some(0) Some({}) Some({})", 256 * MIB, 756 * MIB)
    );
    let out = &child.stdout;
    assert!(
        out.contains(
            "GPU driver view: this process's memory on device 0 (Fake GPU 0): \
             756.0 MiB at call exit, +756.0 MiB over the call\n"
        ),
        "{out}"
    );
    assert!(
        out.contains(
            "; GPU peak: +256.0 MiB, GPU increment: 0.0 MiB, GPU driver view: +756.0 MiB\n"
        ),
        "{out}"
    );
    assert!(
        out.lines().any(|l| l.starts_with("At tests/gpu.rs")
            && l.ends_with(", GPU 0.0 MiB, GPU driver view 2268.0 MiB")),
        "{out}"
    );
}

#[profile]
fn inner_scratch(c: &FakeCupti) -> u64 {
    let kept = c.alloc(cbid::MEM_ALLOC_V2, 0, 10 * MIB);
    c.free(
        cbid::MEM_FREE_V2,
        0,
        c.alloc(cbid::MEM_ALLOC_V2, 0, 100 * MIB),
    );
    kept
}

#[profile]
fn outer_of_scratch(c: &FakeCupti) {
    let kept = inner_scratch(c);
    let more = c.alloc(cbid::MEM_ALLOC_V2, 0, MIB);
    c.free(cbid::MEM_FREE_V2, 0, kept);
    c.free(cbid::MEM_FREE_V2, 0, more);
}

#[test]
fn child_nested_counted() {
    in_counted_child(|_nvml, c| {
        outer_of_scratch(c);
    });
}

/// A line that calls a profiled function gets that call's peak, however
/// the callee's own lines reset theirs; the next line starts afresh.
#[test]
fn a_calling_line_sees_the_callees_peak_and_the_next_line_does_not() {
    let child = run_counted("child_nested_counted", &[]);
    let report = child.report();
    let f = "outer_of_scratch";
    assert_eq!(
        counted(row(&report, f, "let kept")),
        (10 * MI, 10 * MIB, 110 * MIB)
    );
    assert_eq!(counted(row(&report, f, "let more")), (MI, 11 * MIB, MIB));
    assert_eq!(
        counted(row(&report, f, "fn outer_of_scratch")),
        (0, 0, 110 * MIB)
    );
    let f = "inner_scratch";
    assert_eq!(
        counted(row(&report, f, "c.free(")),
        (0, 10 * MIB, 100 * MIB)
    );
}

// NVIDIA's own libcupti, on a machine without a driver.

/// The releases of NVIDIA's libcupti in `MEMPROF_REAL_CUPTI`
/// (`release=directory` pairs, `;`-separated: scripts/cupti-abi fetches
/// them), each with the note memprof gives when it cannot subscribe there
/// without a CUDA driver.
fn real_cupti_releases() -> Vec<(String, String, &'static str)> {
    let releases = std::env::var("MEMPROF_REAL_CUPTI")
        .expect("MEMPROF_REAL_CUPTI lists release=directory pairs: run scripts/cupti-abi");
    releases
        .split(';')
        .map(|pair| {
            let (release, dir) = pair.split_once('=').expect("release=directory");
            let why = match release.split('.').next() {
                Some("11" | "12") => "cuptiSubscribe failed (CUPTI_ERROR_NOT_INITIALIZED)",
                // CUPTI 13 without libcuda answers CUPTI_ERROR_UNKNOWN to
                // every call, cuptiGetResultString included.
                Some("13") => "cuptiSubscribe failed (CUPTI error 999)",
                _ => panic!("{release}: which note should CUPTI {release} give?"),
            };
            (release.to_owned(), dir.to_owned(), why)
        })
        .collect()
}

/// With NVIDIA's libcupti found on the library path (its soname, as the
/// CUDA toolkit and the wheels install it) and no driver: nothing changes
/// where NVML is absent too, and where NVML shows a device (the fake), CUPTI
/// refuses to subscribe and the columns are NVML's, with one note. Never a
/// silent 0, a panic or a hang (each child runs under `timeout`).
#[test]
#[ignore = "needs NVIDIA's libcupti: scripts/cupti-abi fetches it and runs this"]
fn nvidias_libcupti_without_a_driver_falls_back_with_one_note() {
    /// What the child printed but its report: its tables.
    fn tables(child: &Child) -> String {
        let lines = child.stdout.lines().filter(|l| !l.starts_with("REPORT "));
        lines.collect::<Vec<_>>().join("\n")
    }
    let timeout: &[&str] = &["timeout", "60"];
    let missing_nvml = std::env::temp_dir().join("memprof-no-such-dir/libnvidia-ml.so.1");
    let missing_nvml = missing_nvml.to_str().unwrap();
    for (release, dir, why) in real_cupti_releases() {
        let path = ("LD_LIBRARY_PATH", dir.as_str());
        let counting = ("MEMPROF_GPU_SAMPLE", "alloc");

        // No driver at all, as on this machine: no columns, and nothing
        // said unless a device was asked for.
        let nvml = ("MEMPROF_NVML_LIB", missing_nvml);
        let child = run_child_with(Some(timeout), "child_plain", &[path, counting, nvml]);
        assert!(
            !tables(&child).contains("GPU"),
            "{release}: {}",
            tables(&child)
        );
        assert!(
            !child.stderr.contains("memprof"),
            "{release}: {}",
            child.stderr
        );
        assert!(row(&child.report(), "plain", "let v")["gpu_usage"].is_null());
        let asked = ("MEMPROF_GPU", "0");
        let child = run_child_with(Some(timeout), "child_plain", &[path, counting, nvml, asked]);
        let notes: Vec<&str> = child
            .stderr
            .lines()
            .filter(|l| l.contains("memprof"))
            .collect();
        assert_eq!(notes.len(), 1, "{release}: {}", child.stderr);
        assert!(
            notes[0].starts_with("memprof: no GPU columns: cannot load NVML ("),
            "{release}: {}",
            child.stderr
        );
        assert!(
            !tables(&child).contains("GPU"),
            "{release}: {}",
            tables(&child)
        );

        // A device that NVML shows, but no CUDA driver behind it: CUPTI
        // loads and refuses, and NVML's figures stand in, said once.
        let child = run_child_with(
            Some(timeout),
            "child_fallback",
            &[path, counting, ("MEMPROF_GPU_MEMORY", "process")],
        );
        let notes: Vec<&str> = child
            .stderr
            .lines()
            .filter(|l| l.contains("memprof"))
            .collect();
        assert_eq!(
            notes,
            [format!(
                "memprof: GPU columns sampled from NVML at each statement, \
                 without a GPU peak: {why}"
            )],
            "{release}: {}",
            child.stderr
        );
        let report = child.report();
        let alloc = row(&report, "device_lines", "fake.alloc(");
        assert_eq!(gpu(alloc), (256 * MI, 256 * MIB), "{release}");
        assert!(alloc["gpu_peak"].is_null(), "{release}");
        let tables = tables(&child);
        assert!(!tables.contains("CUPTI"), "{release}: {tables}");
        assert!(
            tables.contains("GPU usage   GPU increment"),
            "{release}: {tables}"
        );
        println!("{release}: {}", notes[0]);
    }
}
