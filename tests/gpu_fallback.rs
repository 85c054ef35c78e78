//! What the GPU columns become when something is missing: no NVML library,
//! device or driver (no columns, no message); no CUPTI (NVML's columns, one
//! note); a process the driver does not list (the device's figures, said
//! so); and NVIDIA's own libcupti without a driver (an ignored test that
//! scripts/cupti-abi runs). Each test reads a child run of this binary (see
//! `support/gpu_child.rs`).
//!
//! A buffer whose contents nothing reads passes through `black_box`: an
//! optimized build (`cargo test --release`) removes such an allocation, and
//! its table then rightly shows nothing.

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
use memprof::profile;
use std::hint::black_box;

#[test]
#[ignore = "a child run: this file's tests start it"]
fn child_plain() {
    if is_child() {
        #[profile]
        fn plain() -> usize {
            let v = black_box(vec![0u8; 4096]);
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
#[ignore = "a child run: this file's tests start it"]
fn child_fallback() {
    if is_child() {
        let fake = FakeNvml::new();
        device_lines(&fake);
        print_report();
    }
}

/// libcupti is often not on the library path: it is looked for where CUDA
/// installs put it, here a toolkit under `CUDA_HOME`.
#[test]
fn cupti_is_found_in_the_cuda_toolkit_without_being_named() {
    let toolkit = std::env::temp_dir().join(format!("memprof-cuda-home-{}", std::process::id()));
    let lib64 = toolkit.join("extras/CUPTI/lib64");
    std::fs::create_dir_all(&lib64).unwrap();
    let link = lib64.join("libcupti.so");
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(fake_cupti::library(), &link).unwrap();
    let alloc = ("MEMPROF_GPU_SAMPLE", "alloc");
    let counted = "GPU: device allocations counted (CUPTI) on device 0 (Fake GPU 0)";
    let child = run_child(
        "child_plain",
        &[alloc, ("CUDA_HOME", toolkit.to_str().unwrap())],
    );
    assert_eq!(function(&child.report(), "plain")["gpu"], counted);
    assert!(!child.stderr.contains("memprof:"), "{}", child.stderr);
    // Elsewhere it is not found: the columns fall back, with one note.
    let child = run_child("child_plain", &[alloc, ("CUDA_HOME", "/nonexistent")]);
    assert_ne!(function(&child.report(), "plain")["gpu"], counted);
    assert!(
        child.stderr.contains("cannot load CUPTI (none of"),
        "{}",
        child.stderr
    );
    std::fs::remove_dir_all(&toolkit).unwrap();
}

/// A hot loop: 100,000 statements in one call.
#[profile]
fn hot_loop() -> u64 {
    let mut total = 0u64;
    for i in 0..100_000u64 {
        total = total.wrapping_add(black_box(i));
    }
    total
}

#[test]
#[ignore = "a child run: this file's tests start it"]
fn child_hot_loop() {
    if is_child() {
        let fake = FakeNvml::new();
        let before = fake.query_count();
        hot_loop();
        println!("nvml queries {}", fake.query_count() - before);
        print_report();
    }
}

/// Without CUPTI, NVML is read at the call's entry and exit, not at each
/// statement: an NVML read takes microseconds (27 µs on an H100), and a
/// loop of 5 M iterations that ran in 0.07 s did not finish in 60 s. The
/// count of reads is the cost, whatever the machine's speed.
#[test]
fn without_cupti_a_hot_loop_reads_nvml_per_call_not_per_statement() {
    let missing = std::env::temp_dir().join("memprof-no-such-dir/libcupti.so");
    let fallback = [
        ("MEMPROF_GPU_SAMPLE", "alloc"),
        ("MEMPROF_CUPTI_LIB", missing.to_str().unwrap()),
        ("MEMPROF_GPU_MEMORY", "process"),
    ];
    let child = run_child("child_hot_loop", &fallback);
    let queries: u64 = child.value("nvml queries").parse().unwrap();
    // Opening NVML reads a few times; then the call's entry and exit.
    assert!(queries <= 10, "{queries} NVML reads for one call");
    let report = child.report();
    let call = row(&report, "hot_loop", "fn hot_loop");
    assert_eq!(gpu(call), (0, 0));
    assert!(row(&report, "hot_loop", "total = total")["gpu_usage"].is_null());
    // Asked for, every statement reads NVML.
    let child = run_child("child_hot_loop", &[("MEMPROF_GPU_SAMPLE", "statement")]);
    let queries: u64 = child.value("nvml queries").parse().unwrap();
    assert!(
        queries > 200_000,
        "{queries} NVML reads for 200,000 statements"
    );
}

/// Without CUPTI the columns are NVML's, read at each call's entry and
/// exit (every statement with `MEMPROF_GPU_SAMPLE=statement`), and one note
/// says why.
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
        let note = "memprof: GPU columns sampled from NVML at each call's entry and exit, for \
                    its row alone (MEMPROF_GPU_SAMPLE=statement samples every line, at \
                    microseconds a statement): ";
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
        let call = row(&report, "device_lines", "fn device_lines");
        assert_eq!(gpu(call), (192 * MI, 192 * MIB));
        assert!(call["gpu_peak"].is_null());
        assert!(row(&report, "device_lines", "fake.alloc(")["gpu_usage"].is_null());
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
#[ignore = "a child run: this file's tests start it"]
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

/// A program that makes its CUDA context inside a profiled call: the
/// device's memory moves (the context) before the driver lists the process.
#[profile]
fn makes_its_context_late(fake: &FakeNvml) -> usize {
    fake.set_baseline(0, 500 * MIB);
    let ready = black_box(1);
    fake.alloc(0, pid(), 300 * MIB);
    ready
}

#[profile]
fn after_the_context(fake: &FakeNvml) {
    fake.alloc(0, pid(), 100 * MIB);
}

#[test]
#[ignore = "a child run: this file's tests start it"]
fn child_late_context() {
    if is_child() {
        let fake = FakeNvml::new();
        makes_its_context_late(&fake);
        after_the_context(&fake);
        print_report();
    }
}

/// Whose memory is decided at each sample: once the driver lists the
/// process, the figures and the header are its own again, not the
/// devices' for the rest of the run.
#[test]
fn a_process_listed_late_gets_its_own_figures_once_listed() {
    let child = run_child("child_late_context", &[]);
    let report = child.report();
    assert_eq!(
        function(&report, "after_the_context")["gpu"],
        "GPU: this process's memory on device 0 (Fake GPU 0)"
    );
    assert_eq!(
        gpu(row(&report, "after_the_context", "fn after_the_context")),
        (100 * MI, 400 * MIB)
    );
    assert!(!child.stderr.contains("memprof:"), "{}", child.stderr);
}

/// The process's CUDA context ends: the driver lists it no longer and
/// keeps 3 MiB of its own (an H200 showed this with examples/gpu).
#[profile]
fn context_gone(fake: &FakeNvml) {
    fake.free(0, pid(), 400 * MIB);
    fake.set_baseline(0, 503 * MIB);
}

#[test]
#[ignore = "a child run: this file's tests start it"]
fn child_context_gone() {
    if is_child() {
        let fake = FakeNvml::new();
        makes_its_context_late(&fake);
        after_the_context(&fake);
        context_gone(&fake);
        print_report();
    }
}

/// Once listed, a process the driver no longer lists holds nothing: its
/// own figure reads 0 and the header stays its own, not the devices'
/// (which it read before: 503 MiB, "the driver does not list this
/// process").
#[test]
fn a_process_whose_context_is_gone_reads_its_own_zero() {
    let child = run_child("child_context_gone", &[]);
    let report = child.report();
    assert_eq!(
        function(&report, "context_gone")["gpu"],
        "GPU: this process's memory on device 0 (Fake GPU 0)"
    );
    assert_eq!(
        gpu(row(&report, "context_gone", "fn context_gone")),
        (-400 * MI, 0)
    );
    assert!(!child.stderr.contains("memprof:"), "{}", child.stderr);
}

/// Counted columns keep CUPTI's header whatever NVML's view shows; the
/// driver view's line says whose memory that view reads now.
#[test]
fn counted_columns_keep_their_header_when_the_driver_view_widens() {
    let child = run_counted("child_unlisted", &[("MEMPROF_GPU_MEMORY", "process")]);
    let report = child.report();
    assert_eq!(
        function(&report, "unlisted_lines")["gpu"],
        "GPU: device allocations counted (CUPTI) on device 0 (Fake GPU 0)"
    );
    assert!(
        child.stdout.contains(
            "GPU driver view: memory used on device 0 (Fake GPU 0), all processes \
             (the driver does not list this process): "
        ),
        "{}",
        child.stdout
    );
}

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
                "memprof: GPU columns sampled from NVML at each call's entry and exit, for \
                 its row alone (MEMPROF_GPU_SAMPLE=statement samples every line, at \
                 microseconds a statement): {why}"
            )],
            "{release}: {}",
            child.stderr
        );
        let report = child.report();
        let call = row(&report, "device_lines", "fn device_lines");
        assert_eq!(gpu(call), (192 * MI, 192 * MIB), "{release}");
        assert!(call["gpu_peak"].is_null(), "{release}");
        assert!(
            row(&report, "device_lines", "fake.alloc(")["gpu_usage"].is_null(),
            "{release}"
        );
        let tables = tables(&child);
        assert!(!tables.contains("CUPTI"), "{release}: {tables}");
        assert!(
            tables.contains("GPU usage   GPU increment"),
            "{release}: {tables}"
        );
        println!("{release}: {}", notes[0]);
    }
}
