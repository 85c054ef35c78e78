//! GPU columns from NVML at each statement (`MEMPROF_GPU_SAMPLE=statement`),
//! checked against the fake NVML library (tests/fake-nvml) through the real
//! nvml-wrapper code path: per-line figures, sampling, a lost device, device
//! choice, `measure`/`memit!`/`track!`, PID namespaces and crowded devices.
//! Each test reads a child run of this binary (see `support/gpu_child.rs`).

#[path = "support/fake_cupti.rs"]
mod fake_cupti;
#[path = "support/fake_library.rs"]
mod fake_library;
#[path = "support/fake_nvml.rs"]
mod fake_nvml;
#[path = "support/gpu_child.rs"]
mod gpu_child;

use fake_nvml::FakeNvml;
use gpu_child::*;
use memprof::{memit, profile};
use std::process::Command;

#[test]
#[ignore = "a child run: this file's tests start it"]
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
#[ignore = "a child run: this file's tests start it"]
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
    let table = out.split("Function: gpu_nvml::without_gpu").nth(1).unwrap();
    let table = table.split("\n\n").nth(1).unwrap();
    assert!(!table.contains("GPU usage"), "{table}");

    // MEMPROF_GPU=off: NVML is never asked.
    let child = run_child("child_sampling", &[("MEMPROF_GPU", "off")]);
    assert_eq!(child.value("samples per call"), "0");
    assert!(!child.stdout.contains("GPU usage"), "{}", child.stdout);
}

#[test]
#[ignore = "a child run: this file's tests start it"]
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
#[ignore = "a child run: this file's tests start it"]
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
#[ignore = "a child run: this file's tests start it"]
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
        .filter(|l| l.starts_with("At tests/gpu_nvml.rs"))
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
#[ignore = "a child run: this file's tests start it"]
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
#[ignore = "a child run: this file's tests start it"]
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
