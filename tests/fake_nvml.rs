//! The fake NVML library, driven through the real `nvml-wrapper` API, so that
//! the GPU tests built on it stand on what NVML itself would answer.

#[path = "support/fake_library.rs"]
mod fake_library;
#[path = "support/fake_nvml.rs"]
mod fake_nvml;

use fake_nvml::{FakeNvml, TOTAL_BYTES, library};
use nvml_wrapper::Nvml;
use nvml_wrapper::enums::device::UsedGpuMemory;
use nvml_wrapper::error::NvmlError;
use nvml_wrapper::struct_wrappers::device::{MemoryInfo, ProcessInfo};
use std::ffi::CStr;
use std::process::Command;

const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

fn init() -> Nvml {
    let path = library();
    Nvml::builder()
        .lib_path(path.as_os_str())
        .init()
        .expect("the fake nvml library initializes")
}

fn process(pid: u32, bytes: u64) -> ProcessInfo {
    ProcessInfo {
        pid,
        used_gpu_memory: UsedGpuMemory::Used(bytes),
        // Without MIG, NVML reports 0xFFFFFFFF, which nvml-wrapper turns into None.
        gpu_instance_id: None,
        compute_instance_id: None,
    }
}

#[test]
fn devices_have_names_uuids_and_a_driver_version() {
    let fake = FakeNvml::new();
    fake.set_device_count(3);
    let nvml = init();
    assert_eq!(fake.live_inits(), 1);

    assert_eq!(nvml.device_count().unwrap(), 3);
    assert_eq!(nvml.sys_driver_version().unwrap(), "0.0.0-fake");
    let names: Vec<String> = (0..3)
        .map(|i| nvml.device_by_index(i).unwrap().name().unwrap())
        .collect();
    assert_eq!(names, ["Fake GPU 0", "Fake GPU 1", "Fake GPU 2"]);
    assert_eq!(
        nvml.device_by_index(2).unwrap().uuid().unwrap(),
        "GPU-fa4e0000-0000-0000-0000-000000000002"
    );
    assert!(matches!(
        nvml.device_by_index(3),
        Err(NvmlError::InvalidArg)
    ));
    // None of these is a memory or process query.
    assert_eq!(fake.query_count(), 0);

    // `Nvml`'s Drop calls nvmlShutdown.
    drop(nvml);
    assert_eq!(fake.live_inits(), 0);
}

#[test]
fn memory_info_is_the_baseline_plus_every_process() {
    let fake = FakeNvml::new();
    let pid = std::process::id();
    fake.set_baseline(0, GIB);
    fake.alloc(0, pid, 256 * MIB);
    fake.alloc(0, pid, 512 * MIB);
    fake.alloc(0, 4242, MIB);
    fake.free(0, pid, 256 * MIB);

    let nvml = init();
    let memory = nvml.device_by_index(0).unwrap().memory_info().unwrap();
    assert_eq!(
        memory,
        MemoryInfo {
            free: 84_287_684_608,
            reserved: 0,
            total: 85_899_345_920,
            // 1 GiB baseline + 512 MiB + 1 MiB.
            used: 1_611_661_312,
            // NVML_STRUCT_VERSION(Memory, 2): sizeof(nvmlMemory_v2_t) = 40, version 2.
            version: 0x0200_0028,
        }
    );
    assert_eq!(memory.total, TOTAL_BYTES);
    assert_eq!(fake.query_count(), 1);
}

#[test]
fn running_compute_processes_lists_each_pid_with_bytes() {
    let fake = FakeNvml::new();
    fake.set_device_count(2);
    let pid = std::process::id();
    fake.alloc(0, pid, 512 * MIB);
    fake.alloc(0, 1, 4096);
    fake.alloc(1, pid, 1000);
    fake.set_baseline(0, GIB);

    let nvml = init();
    let gpu0 = nvml.device_by_index(0).unwrap();
    let gpu1 = nvml.device_by_index(1).unwrap();

    // Listed in pid order; the baseline belongs to no listed process.
    assert_eq!(
        gpu0.running_compute_processes().unwrap(),
        [process(1, 4096), process(pid, 536_870_912)]
    );
    // Two calls: the count, then the list.
    assert_eq!(fake.query_count(), 2);
    assert_eq!(gpu0.running_compute_processes_count().unwrap(), 2);
    assert_eq!(fake.query_count(), 3);
    assert_eq!(
        gpu1.running_compute_processes().unwrap(),
        [process(pid, 1000)]
    );
    assert_eq!(fake.query_count(), 5);

    // A process that frees everything leaves the list; an empty list takes
    // one call, since nvml-wrapper stops at a count of 0.
    fake.free(1, pid, 1000);
    assert_eq!(gpu1.running_compute_processes().unwrap(), []);
    assert_eq!(gpu1.running_compute_processes_count().unwrap(), 0);
    assert_eq!(fake.query_count(), 7);
    assert_eq!(gpu1.memory_info().unwrap().used, 0);
}

#[test]
fn fail_after_loses_the_gpu_for_memory_and_process_queries() {
    let fake = FakeNvml::new();
    fake.alloc(0, 7, 3 * MIB);
    fake.fail_after(2);
    let nvml = init();
    let gpu = nvml.device_by_index(0).unwrap();

    assert_eq!(gpu.memory_info().unwrap().used, 3_145_728);
    assert_eq!(gpu.running_compute_processes_count().unwrap(), 1);
    assert!(matches!(gpu.memory_info(), Err(NvmlError::GpuLost)));
    assert!(matches!(
        gpu.running_compute_processes(),
        Err(NvmlError::GpuLost)
    ));
    assert!(matches!(
        gpu.running_compute_processes_count(),
        Err(NvmlError::GpuLost)
    ));
    // Failed queries count: a sampler that stops asking shows up here.
    assert_eq!(fake.query_count(), 5);
    // Queries that are not samples keep working.
    assert_eq!(gpu.name().unwrap(), "Fake GPU 0");
    assert_eq!(nvml.device_count().unwrap(), 1);

    // SAFETY: the fake exports nvmlErrorString, and 15 is a valid nvmlReturn_t.
    let message = unsafe { CStr::from_ptr(nvml.lib().nvmlErrorString(15)) };
    assert_eq!(
        message.to_str().unwrap(),
        "the gpu is lost (fake_nvml_fail_after)"
    );

    fake.reset();
    assert_eq!(gpu.memory_info().unwrap().used, 0);
    assert_eq!(fake.query_count(), 1);
}

#[test]
fn a_missing_library_is_a_libloading_error() {
    let missing = library().with_file_name("libmemprof_no_such_nvml.so");
    let result = Nvml::builder().lib_path(missing.as_os_str()).init();
    assert!(
        matches!(result, Err(NvmlError::LibloadingError(_))),
        "{:?}",
        result.err()
    );
}

/// Runs one test of this binary alone in a child process, with `env` set, and
/// returns its stdout after checking that it passed.
fn run_child(test: &str, env: &[(&str, &str)]) -> String {
    let output = Command::new(std::env::current_exe().unwrap())
        .args([
            test,
            "--ignored",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("FAKE_NVML_CHILD", "1")
        .env("MEMPROF_NVML_LIB", library())
        .envs(env.iter().copied())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success() && stdout.contains("test result: ok. 1 passed"),
        "child {test} failed ({}):\n{stdout}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

/// Only does something in a child started by `run_child`.
fn in_child() -> Option<Nvml> {
    let path = std::env::var_os("FAKE_NVML_CHILD").and(std::env::var_os("MEMPROF_NVML_LIB"))?;
    let result = Nvml::builder().lib_path(&path).init();
    match result {
        Ok(nvml) => Some(nvml),
        Err(e) => {
            println!("child: init failed: {e:?}");
            None
        }
    }
}

#[test]
#[ignore = "a child run: this file's tests start it"]
fn child_fail_init() {
    if std::env::var_os("FAKE_NVML_CHILD").is_some() {
        assert!(in_child().is_none(), "init succeeded");
    }
}

#[test]
fn fake_nvml_fail_init_makes_init_fail_with_driver_not_loaded() {
    let stdout = run_child("child_fail_init", &[("FAKE_NVML_FAIL_INIT", "1")]);
    assert!(
        stdout.contains("child: init failed: DriverNotLoaded\n"),
        "{stdout}"
    );
}

#[test]
#[ignore = "a child run: this file's tests start it"]
fn child_device_count() {
    if let Some(nvml) = in_child() {
        println!("child: {} devices", nvml.device_count().unwrap());
    }
}

#[test]
fn fake_nvml_devices_sets_the_device_count() {
    let stdout = run_child("child_device_count", &[("FAKE_NVML_DEVICES", "5")]);
    assert!(stdout.contains("child: 5 devices\n"), "{stdout}");
}
