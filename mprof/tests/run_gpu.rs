//! `mprof run --gpu`: the GPU line of a recording, without NVML (one note,
//! no GPU line) and with the fake NVML playing a program whose CUDA context
//! comes late.

mod common;

use common::{scratch, stderr};
use std::process::Command;

#[path = "../../tests/support/fake_library.rs"]
mod fake_library;

#[test]
fn gpu_without_nvml_records_no_gpu_lines() {
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

/// `mprof run --gpu` of a program that waits for `samples` GPU samples,
/// with the fake NVML playing `FAKE_NVML_LATE_CHILDREN=scenario`: the GPU
/// line's figures (MiB) and mprof's `--gpu` notes.
fn late_context_run(name: &str, scenario: &str, samples: usize) -> (Vec<f64>, Vec<String>) {
    let library = fake_library::build("memprof-fake-nvml", "memprof_fake_nvml");
    let dir = scratch(name);
    // The program waits for its samples (or some 300 s: a guard against
    // hanging, not a timing bound).
    let script = format!(
        "i=0; until [ $(grep -c ^GPU gpu.dat) -ge {samples} ] || [ $i -ge 30000 ]; \
         do sleep 0.01; i=$((i+1)); done"
    );
    let output = Command::new(env!("CARGO_BIN_EXE_mprof"))
        .args([
            "run", "--gpu", "-T", "0.02", "-o", "gpu.dat", "sh", "-c", &script,
        ])
        .env("MEMPROF_NVML_LIB", &library)
        .env("FAKE_NVML_LATE_CHILDREN", scenario)
        .current_dir(&dir)
        .output()
        .unwrap();
    let err = stderr(&output);
    assert!(output.status.success(), "{err}");
    let text = std::fs::read_to_string(dir.join("gpu.dat")).unwrap();
    let gpu: Vec<f64> = text
        .lines()
        .filter_map(|l| l.strip_prefix("GPU "))
        .map(|l| l.split(' ').next().unwrap().parse().unwrap())
        .collect();
    assert!(gpu.len() >= samples, "{text}");
    let notes = err
        .lines()
        .filter(|l| l.contains("--gpu"))
        .map(str::to_owned)
        .collect();
    (gpu, notes)
}

const WHOLE_GPU_NOTE: &str = "mprof: note: --gpu: recording the memory used on the whole GPU, \
                              all processes (the driver does not list this process)";
const LISTED_NOTE: &str =
    "mprof: note: --gpu: the driver lists the program now: recording its own GPU memory again";

/// A program that makes its CUDA context late: the device's memory moves
/// before the driver lists the program (the fake NVML plays it). The GPU
/// line records the whole device meanwhile, said once, and the program's
/// own memory once the driver lists it, said once too.
#[test]
fn gpu_records_the_program_itself_once_the_driver_lists_it() {
    // 1 GiB of other processes; 300 MiB more from the 3rd list on, listed
    // as the program's from the 8th.
    let (gpu, notes) = late_context_run("gpu-late-context", "1024:300:3:8", 12);
    assert!(gpu.contains(&1324.0), "{gpu:?}");
    assert_eq!(gpu.last(), Some(&300.0), "{gpu:?}");
    assert_eq!(notes, [WHOLE_GPU_NOTE, LISTED_NOTE]);
}

/// A program whose CUDA context ends before it does (examples/gpu drops
/// its context inside `train_step`): once listed, unlisted means it holds
/// nothing. The line reads 0, not the whole device, and says nothing more;
/// before this, a run on an H200 switched back to the whole GPU, with a
/// third note.
#[test]
fn gpu_records_zero_once_the_programs_context_is_gone() {
    // As above, and unlisted again from the 12th list on, with 3 MiB left
    // on the device.
    let (gpu, notes) = late_context_run("gpu-context-gone", "1024:300:3:8:12", 16);
    assert!(gpu.contains(&1324.0), "{gpu:?}");
    assert!(gpu.contains(&300.0), "{gpu:?}");
    assert_eq!(gpu.last(), Some(&0.0), "{gpu:?}");
    assert_eq!(notes, [WHOLE_GPU_NOTE, LISTED_NOTE]);
}
