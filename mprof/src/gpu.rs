//! GPU memory of the recorded program through NVML, for `mprof run --gpu`.
//!
//! The library is loaded at run time: `MEMPROF_NVML_LIB` names it, or
//! `libnvidia-ml.so.1` is searched as the dynamic loader does. Without it,
//! `--gpu` prints one note and records no `GPU` line.
//!
//! Whose memory is recorded, the program's or the whole GPU's, follows
//! memprof's own rule (`memprof_runtime::gpu_rule`, stated in the README), so that
//! a `GPU` line and memprof's GPU columns mean the same thing; each switch
//! to the whole GPU gets one note.

use memprof_runtime::gpu_rule::{self, Asked, Whose, WhyDevice};
use nvml_wrapper::Nvml;
use nvml_wrapper::enums::device::UsedGpuMemory;
use nvml_wrapper::error::NvmlError;

/// The environment variable that names the NVML library to load.
const LIB_VAR: &str = "MEMPROF_NVML_LIB";

pub struct GpuSampler {
    nvml: Nvml,
    whose: Whose,
    /// The devices' used memory at the start, to tell when it moves while
    /// the driver does not list the program.
    baseline: u64,
    /// The driver has listed one of the program's processes: unlisted
    /// after that, it holds nothing (its CUDA context is gone).
    listed_before: bool,
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
        let asked = std::env::var("MEMPROF_GPU_MEMORY")
            .ok()
            .and_then(|v| Asked::parse(&v))
            .unwrap_or(Asked::Auto);
        let whose = gpu_rule::at_start(asked, gpu_rule::pids_match_nvml());
        if whose == Whose::Device(WhyDevice::OtherPidNamespace) {
            note_whole_gpu(WhyDevice::OtherPidNamespace);
        }
        let mut sampler = GpuSampler {
            nvml,
            whose,
            baseline: 0,
            listed_before: false,
        };
        sampler.baseline = sampler.devices_used();
        Some(sampler)
    }

    /// The memory used on every device, all processes.
    fn devices_used(&self) -> u64 {
        let count = self.nvml.device_count().unwrap_or(0);
        (0..count)
            .filter_map(|index| self.nvml.device_by_index(index).ok())
            .map(|device| device.memory_info().map(|m| m.used).unwrap_or(0))
            .sum()
    }

    /// GPU memory used by the processes `pids`, in bytes, summed over the
    /// devices; or the memory used on the whole devices, by memprof's rule
    /// (see the module documentation).
    pub fn sample(&mut self, pids: &[u32]) -> Option<u64> {
        if !gpu_rule::asks_for_processes(self.whose) {
            return Some(self.devices_used());
        }
        let count = self.nvml.device_count().ok()?;
        let mut total = 0u64;
        let mut listed = false;
        for index in 0..count {
            let Ok(device) = self.nvml.device_by_index(index) else {
                continue;
            };
            // A list NVML cannot give counts as no entry: the rule then
            // looks at the device's memory.
            for p in device.running_compute_processes().unwrap_or_default() {
                if let (true, UsedGpuMemory::Used(bytes)) =
                    (pids.contains(&p.pid), p.used_gpu_memory)
                {
                    total += bytes;
                    listed = true;
                }
            }
        }
        let was = self.whose;
        let used = (!listed).then(|| self.devices_used());
        let moved = used.is_some_and(|used| used != self.baseline);
        self.whose = gpu_rule::after_sample(was, listed, moved, self.listed_before);
        self.listed_before |= listed;
        match (was, self.whose) {
            (Whose::Process, Whose::Device(why)) => note_whole_gpu(why),
            (Whose::Device(_), Whose::Process) => eprintln!(
                "mprof: note: --gpu: the driver lists the program now: recording its own GPU \
                 memory again"
            ),
            _ => {}
        }
        match self.whose {
            Whose::Device(_) => used.or_else(|| Some(self.devices_used())),
            Whose::Process => Some(total),
        }
    }
}

/// The one note for recording the whole GPU's memory.
fn note_whole_gpu(why: WhyDevice) {
    eprintln!(
        "mprof: note: --gpu: recording the memory used on the whole GPU, all processes ({})",
        why.words()
    );
}

fn lowercase_first(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => String::new(),
    }
}
