//! GPU memory of the recorded program through NVML, for `mprof run --gpu`.
//!
//! The library is loaded at run time: `MEMPROF_NVML_LIB` names it, or
//! `libnvidia-ml.so.1` is searched as the dynamic loader does. Without it,
//! `--gpu` prints one note and records no `GPU` line.

use nvml_wrapper::Nvml;
use nvml_wrapper::enums::device::UsedGpuMemory;
use nvml_wrapper::error::NvmlError;

/// The environment variable that names the NVML library to load.
const LIB_VAR: &str = "MEMPROF_NVML_LIB";

pub struct GpuSampler {
    nvml: Nvml,
    /// Set once per-process figures proved unavailable, after one note.
    whole_device: bool,
}

impl GpuSampler {
    /// Loads NVML; `None`, after one note on stderr, where it is unusable.
    pub fn new() -> Option<GpuSampler> {
        let lib = std::env::var_os(LIB_VAR).filter(|p| !p.is_empty());
        let init = match &lib {
            Some(path) => Nvml::builder().lib_path(path).init(),
            None => Nvml::init(),
        };
        let nvml = match init {
            Ok(nvml) => nvml,
            Err(err) => {
                // The loader's own message names the library and the cause.
                let reason = match &err {
                    NvmlError::LibloadingError(load) => load.to_string(),
                    other => lowercase_first(&other.to_string()),
                };
                let from = match &lib {
                    Some(path) => format!(" from {LIB_VAR}={}", path.to_string_lossy()),
                    None => String::new(),
                };
                eprintln!(
                    "mprof: note: --gpu: cannot use NVML{from} ({reason}); recording no GPU memory"
                );
                return None;
            }
        };
        if nvml.device_count().unwrap_or(0) == 0 {
            eprintln!("mprof: note: --gpu: NVML sees no GPU; recording no GPU memory");
            return None;
        }
        Some(GpuSampler {
            nvml,
            whole_device: false,
        })
    }

    /// GPU memory used by the processes `pids`, in bytes, summed over the
    /// devices. Where the driver cannot tell per-process figures, it is the
    /// memory used on the whole devices, after one note.
    pub fn sample(&mut self, pids: &[u32]) -> Option<u64> {
        let count = self.nvml.device_count().ok()?;
        let mut total = 0u64;
        for index in 0..count {
            let Ok(device) = self.nvml.device_by_index(index) else {
                continue;
            };
            let per_process = if self.whole_device {
                None
            } else {
                device.running_compute_processes().ok().and_then(|procs| {
                    procs
                        .iter()
                        .filter(|p| pids.contains(&p.pid))
                        .map(|p| match p.used_gpu_memory {
                            UsedGpuMemory::Used(bytes) => Some(bytes),
                            UsedGpuMemory::Unavailable => None,
                        })
                        .sum::<Option<u64>>()
                })
            };
            let used = match per_process {
                Some(bytes) => bytes,
                None => {
                    if !self.whole_device {
                        self.whole_device = true;
                        eprintln!(
                            "mprof: note: --gpu: the driver gives no per-process figures; \
                             recording the memory used on the whole GPU"
                        );
                    }
                    device.memory_info().map(|m| m.used).unwrap_or(0)
                }
            };
            total += used;
        }
        Some(total)
    }
}

fn lowercase_first(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => String::new(),
    }
}
