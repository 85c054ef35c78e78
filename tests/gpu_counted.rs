//! Counted device allocations (the default, `MEMPROF_GPU_SAMPLE=alloc`),
//! checked against the fake CUPTI library (tests/fake-cupti) beside the fake
//! NVML: exact per-line allocations and peaks, every driver call the
//! subscriber enables, device choice, threads and `scope = "process"`, the
//! driver's view at call entry and exit, and nested calls. Each test reads a
//! child run of this binary (see `support/gpu_child.rs`).

#[path = "support/fake_cupti.rs"]
mod fake_cupti;
#[path = "support/fake_library.rs"]
mod fake_library;
#[path = "support/fake_nvml.rs"]
mod fake_nvml;
#[path = "support/gpu_child.rs"]
mod gpu_child;

use fake_cupti::{FakeCupti, cbid};
use fake_nvml::FakeNvml;
use gpu_child::*;
use memprof::{memit, profile};

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
#[ignore = "a child run: this file's tests start it"]
fn child_counted_lines() {
    in_counted_child(|_nvml, c| {
        counted_lines(c);
        counted_lines(c);
        let (_, m) = memprof::measure(|| counted_lines(c));
        println!("measure gpu {:?} {:?}", m.gpu_increment, m.gpu_peak);
        println!("subscriptions {}", c.subscriptions());
    });
}

/// [`counted_lines`] as an `async fn` that suspends between its lines: the
/// runtime steps it (its thread may change at each poll), not the kernel.
#[rustfmt::skip]
#[profile]
async fn counted_async_lines(c: &FakeCupti) {
    let a = c.alloc(cbid::MEM_ALLOC_V2, 0, 256 * MIB);
    Suspend(false).await;
    let b = c.alloc(cbid::MEM_ALLOC_ASYNC, 0, 256 * MIB);
    c.free(cbid::MEM_FREE_V2, 0, c.alloc(cbid::MEM_ALLOC_V2, 0, GIB / 2));
    Suspend(false).await;
    c.free(cbid::MEM_FREE_V2, 0, a);
    c.free(cbid::MEM_FREE_ASYNC, 0, b);
}

/// Returns `Pending` once.
struct Suspend(bool);

impl std::future::Future for Suspend {
    type Output = ();
    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<()> {
        if std::mem::replace(&mut self.0, true) {
            std::task::Poll::Ready(())
        } else {
            std::task::Poll::Pending
        }
    }
}

/// Polls `future` on this thread until it is ready.
fn block_on<F: std::future::Future>(future: F) -> F::Output {
    let mut future = std::pin::pin!(future);
    let mut context = std::task::Context::from_waker(std::task::Waker::noop());
    loop {
        if let std::task::Poll::Ready(out) = future.as_mut().poll(&mut context) {
            return out;
        }
    }
}

#[test]
#[ignore = "a child run: this file's tests start it"]
fn child_counted_async_lines() {
    in_counted_child(|_nvml, c| {
        block_on(counted_async_lines(c));
        block_on(counted_async_lines(c));
    });
}

#[test]
fn an_async_fns_lines_count_as_a_synchronous_ones() {
    let child = run_counted("child_counted_async_lines", &[]);
    assert!(!child.stderr.contains("memprof:"), "{}", child.stderr);
    let report = child.report();
    let f = "counted_async_lines";
    assert_counted_lines(&report, f, 2);
    // A suspension moves nothing: the bytes after the first are those
    // after `let a`.
    assert_eq!(counted(row(&report, f, "Suspend")), (0, 256 * MIB, 0));
}

/// The GPU columns of [`counted_lines`]' rows, or its async copy's, in
/// function `f` of `report`, after `calls` calls, each 0 → 256 → 512 →
/// (1024) 512 → 256 → 0.
fn assert_counted_lines(report: &serde_json::Value, f: &str, calls: i64) {
    assert_eq!(
        counted(row(report, f, "let a")),
        (calls * 256 * MI, 256 * MIB, 256 * MIB)
    );
    assert_eq!(
        counted(row(report, f, "let b")),
        (calls * 256 * MI, 512 * MIB, 256 * MIB)
    );
    assert_eq!(
        counted(row(report, f, "GIB / 2")),
        (0, 512 * MIB, 512 * MIB)
    );
    assert_eq!(
        counted(row(report, f, "0, a)")),
        (-calls * 256 * MI, 256 * MIB, 0)
    );
    assert_eq!(counted(row(report, f, "0, b)")), (-calls * 256 * MI, 0, 0));
    assert_eq!(
        counted(row(report, f, &format!("fn {f}"))),
        (0, 0, 1024 * MIB)
    );
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

    // Three calls.
    let report = child.report();
    let f = "counted_lines";
    assert_counted_lines(&report, f, 3);
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
#[ignore = "a child run: this file's tests start it"]
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
#[ignore = "a child run: this file's tests start it"]
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
#[ignore = "a child run: this file's tests start it"]
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
#[ignore = "a child run: this file's tests start it"]
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
        out.lines().any(|l| l.starts_with("At tests/gpu_counted.rs")
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
#[ignore = "a child run: this file's tests start it"]
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

/// A free the driver refuses changes nothing; the later real free counts.
#[rustfmt::skip]
#[profile]
fn refused_free(c: &FakeCupti) {
    let a = c.alloc(cbid::MEM_ALLOC_V2, 0, 256 * MIB);
    c.free_failing(cbid::MEM_FREE_V2, 0, a, fake_cupti::CUDA_ERROR_INVALID_VALUE);
    let h = c.alloc(cbid::MEM_CREATE, 0, 64 * MIB);
    c.free_failing(cbid::MEM_RELEASE, 0, h, fake_cupti::CUDA_ERROR_INVALID_VALUE);
    c.free(cbid::MEM_RELEASE, 0, h);
    c.free(cbid::MEM_FREE_V2, 0, a);
}

#[test]
#[ignore = "a child run: this file's tests start it"]
fn child_refused_free() {
    in_counted_child(|_nvml, c| refused_free(c));
}

#[test]
fn a_failed_free_changes_nothing_and_the_real_free_counts() {
    let child = run_counted("child_refused_free", &[]);
    let report = child.report();
    let f = "refused_free";
    assert_eq!(
        counted(row(&report, f, "MEM_FREE_V2, 0, a, fake")),
        (0, 256 * MIB, 0)
    );
    assert_eq!(
        counted(row(&report, f, "MEM_RELEASE, 0, h, fake")),
        (0, 320 * MIB, 0)
    );
    assert_eq!(
        counted(row(&report, f, "c.free(cbid::MEM_RELEASE, 0, h)")),
        (-64 * MI, 256 * MIB, 0)
    );
    assert_eq!(
        counted(row(&report, f, "c.free(cbid::MEM_FREE_V2, 0, a)")),
        (-256 * MI, 0, 0)
    );
}

// NVIDIA's own libcupti, on a machine without a driver.
