//! What the GPU tests (`tests/gpu_*.rs`) share: memprof opens the GPU once
//! per process, so each test re-runs its own test binary on one `child_*`
//! test with the environment under test, and reads what the child printed:
//! its tables and its report as JSON. Include it with
//! `#[path = "support/gpu_child.rs"] mod gpu_child;`, beside
//! `support/fake_nvml.rs`, `support/fake_cupti.rs` and
//! `support/fake_library.rs` as `mod fake_nvml`, `mod fake_cupti` and
//! `mod fake_library`.
//!
//! A buffer whose contents nothing reads passes through `black_box`: an
//! optimized build (`cargo test --release`) removes such an allocation, and
//! its table then rightly shows nothing.

// Each test crate that includes this file uses a different part of it.
#![allow(dead_code)]

use crate::fake_cupti::{self, FakeCupti};
use crate::fake_nvml::{self, FakeNvml};
use memprof::profile;
use serde_json::Value;
use std::hint::black_box;
use std::process::Command;

pub const MIB: u64 = 1 << 20;
pub const GIB: u64 = 1 << 30;

/// A PID that is not this process's: another program on the same GPU, or,
/// in a container, this process under its host PID.
pub const OTHER_PID: u32 = 4_000_000;

pub fn pid() -> u32 {
    std::process::id()
}

pub fn is_child() -> bool {
    std::env::var_os("MEMPROF_GPU_CHILD").is_some()
}

pub struct Child {
    pub stdout: String,
    pub stderr: String,
}

impl Child {
    /// The report the child printed last, as JSON.
    pub fn report(&self) -> Value {
        let line = self
            .stdout
            .lines()
            .rev()
            .find_map(|l| l.strip_prefix("REPORT "))
            .unwrap_or_else(|| panic!("no report in {}", self.stdout));
        serde_json::from_str(line).unwrap()
    }

    /// The value the child printed after `key `.
    pub fn value(&self, key: &str) -> String {
        self.stdout
            .lines()
            .find_map(|l| l.split_once(key)?.1.strip_prefix(' '))
            .unwrap_or_else(|| panic!("no {key} in {}", self.stdout))
            .to_owned()
    }
}

/// Runs the child test `name` against the fake library, or against
/// `MEMPROF_NVML_LIB` from `env` if given.
pub fn run_child(name: &str, env: &[(&str, &str)]) -> Child {
    run_child_with(None, name, env)
}

pub fn run_child_with(prefix: Option<&[&str]>, name: &str, env: &[(&str, &str)]) -> Child {
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
    cmd.args([
        name,
        "--ignored",
        "--exact",
        "--nocapture",
        "--test-threads=1",
    ])
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

pub fn print_report() {
    println!("REPORT {}", memprof::report().to_json());
}

/// In a child run: `f` with the fake NVML and the fake CUPTI set up, then
/// the report printed for the parent test to read.
pub fn in_counted_child(f: impl FnOnce(&FakeNvml, &FakeCupti)) {
    if is_child() {
        let nvml = FakeNvml::new();
        let c = FakeCupti::new();
        f(&nvml, &c);
        print_report();
    }
}

/// The report of the function whose path ends with `::name`.
pub fn function<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["functions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"].as_str().unwrap().ends_with(&format!("::{name}")))
        .unwrap_or_else(|| panic!("no {name} in {report}"))
}

/// The row of `name` whose source contains `needle`.
pub fn row<'a>(report: &'a Value, name: &str, needle: &str) -> &'a Value {
    let function = function(report, name);
    function["lines"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["contents"].as_str().unwrap().contains(needle))
        .unwrap_or_else(|| panic!("no {needle:?} row in {function}"))
}

pub fn gpu(row: &Value) -> (i64, u64) {
    (
        row["gpu_increment"]
            .as_i64()
            .unwrap_or_else(|| panic!("{row}")),
        row["gpu_usage"].as_u64().unwrap_or_else(|| panic!("{row}")),
    )
}

/// Runs the child test `name` counting device allocations through the fake
/// CUPTI.
pub fn run_counted(name: &str, env: &[(&str, &str)]) -> Child {
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
pub fn counted(row: &Value) -> (i64, u64, u64) {
    let (increment, usage) = gpu(row);
    (
        increment,
        usage,
        row["gpu_peak"].as_u64().unwrap_or_else(|| panic!("{row}")),
    )
}

pub const MI: i64 = MIB as i64;

/// What a GPU program's lines do: `alloc`/`free` stand in for cudaMalloc and
/// cudaFree.
#[profile]
pub fn device_lines(fake: &FakeNvml) -> usize {
    fake.alloc(0, pid(), 256 * MIB);
    let host = black_box(vec![0u8; 1000]);
    fake.free(0, pid(), 64 * MIB);
    host.len()
}
