//! What an NVML sample reads: this process's GPU memory, summed over the
//! selected devices (the `used_gpu_memory` of our PID's entries in each
//! device's running compute processes), or the devices' used memory, all
//! processes together, as `gpu_rule` decides. NVML reports host PIDs, so in
//! a container (another PID namespace) ours cannot be matched; while the
//! driver does not list this process and the devices' memory has moved,
//! the figures are the devices' (`WIDENED`), until the driver lists it (a
//! CUDA context made late). Decided at each sample; the table header says
//! which.

use crate::gpu_rule::{self, Whose};
use nvml_wrapper::enums::device::UsedGpuMemory;
use nvml_wrapper::error::{NvmlError, nvml_try};
use nvml_wrapper::{Device, Nvml};
use nvml_wrapper_sys::bindings::{
    nvmlProcessInfo_t, nvmlReturn_enum_NVML_ERROR_INSUFFICIENT_SIZE, nvmlReturn_enum_NVML_SUCCESS,
};
use std::ffi::c_uint;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

/// The figures are the devices' (see [`Gpu::read`]): set while the devices'
/// memory has moved and the driver does not list this process.
pub(super) static WIDENED: AtomicBool = AtomicBool::new(false);
/// The driver has listed this process with a figure: set once.
static LISTED_ONCE: AtomicBool = AtomicBool::new(false);

/// What the GPU figures count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Source {
    /// This process's entries in the devices' compute process lists.
    Process,
    /// The devices' used memory, every process's.
    Device,
}

pub(super) struct Gpu {
    pub(super) nvml: &'static Nvml,
    pub(super) devices: Vec<Device<'static>>,
    pub(super) source: Source,
    pub(super) pid: u32,
    /// The table header line naming what the columns show.
    pub(super) description: String,
    /// The header line once the figures are the devices' because the
    /// driver did not list this process.
    pub(super) widened_description: String,
    /// Process figures: the devices' used memory at open, to tell when it
    /// moves while this process is not listed.
    pub(super) baseline: Option<u64>,
    /// While counting: what the driver's view (NVML, read at call entry
    /// and exit) shows, the header line NVML's columns would have.
    pub(super) driver_description: Option<String>,
    /// The same, while the figures are the devices' (see [`WIDENED`]).
    pub(super) driver_widened_description: Option<String>,
}

impl Gpu {
    pub(super) fn read(&self) -> Result<u64, NvmlError> {
        if self.source == Source::Device {
            return self.device_used();
        }
        let mut total = 0u64;
        let mut listed = false;
        for device in &self.devices {
            let (bytes, seen) = match self.listed_bytes(device) {
                Some(found) => found?,
                None => device
                    .running_compute_processes()?
                    .iter()
                    .filter(|p| p.pid == self.pid)
                    .fold((0, false), |(sum, seen), p| match p.used_gpu_memory {
                        UsedGpuMemory::Used(bytes) => (sum + bytes, true),
                        UsedGpuMemory::Unavailable => (sum, seen),
                    }),
            };
            total += bytes;
            listed |= seen;
        }
        // Never a silent 0: the device's memory moved while the driver
        // gives no figure for this process, and never has. Listed again,
        // its own.
        let now = match WIDENED.load(Relaxed) {
            true => Whose::Device(gpu_rule::WhyDevice::Unlisted),
            false => Whose::Process,
        };
        let before = match listed {
            true => LISTED_ONCE.swap(true, Relaxed),
            false => LISTED_ONCE.load(Relaxed),
        };
        let (whose, used) = match (listed, self.baseline) {
            (false, Some(baseline)) if !before => {
                let used = self.device_used()?;
                (
                    gpu_rule::after_sample(now, listed, used != baseline, before),
                    used,
                )
            }
            _ => (gpu_rule::after_sample(now, listed, false, before), total),
        };
        let widened = whose != Whose::Process;
        if widened != WIDENED.load(Relaxed) {
            WIDENED.store(widened, Relaxed);
        }
        Ok(if widened { used } else { total })
    }

    /// The selected devices' used memory, every process's.
    pub(super) fn device_used(&self) -> Result<u64, NvmlError> {
        let mut total = 0;
        for device in &self.devices {
            total += device.memory_info()?.used;
        }
        Ok(total)
    }

    /// This process's bytes on `device` in one NVML call into a buffer on
    /// the stack, and whether the driver gave a figure for it; `None` if
    /// more processes run there than it holds.
    ///
    /// PERF: nvml-wrapper's `running_compute_processes` makes two calls (a
    /// count, then the list) and allocates; at some 12 µs a call on a real
    /// driver, one call per sample halves the cost of GPU sampling.
    fn listed_bytes(&self, device: &Device<'static>) -> Option<Result<(u64, bool), NvmlError>> {
        /// `usedGpuMemory` when NVML cannot tell (NVML_VALUE_NOT_AVAILABLE).
        const NOT_AVAILABLE: u64 = u64::MAX;
        const ROOM: usize = 64;
        let list = self
            .nvml
            .lib()
            .nvmlDeviceGetComputeRunningProcesses_v3
            .as_ref()
            .ok()?;
        // SAFETY: `nvmlProcessInfo_t` is plain integers, valid when zeroed.
        let mut infos: [nvmlProcessInfo_t; ROOM] = unsafe { std::mem::zeroed() };
        let mut count = ROOM as c_uint;
        // SAFETY: `list` is NVML's own function for this signature; the
        // device handle belongs to the open NVML, and `count` says how many
        // entries `infos` holds.
        let code = unsafe { list(device.handle(), &mut count, infos.as_mut_ptr()) };
        if code == nvmlReturn_enum_NVML_ERROR_INSUFFICIENT_SIZE {
            return None;
        }
        if code != nvmlReturn_enum_NVML_SUCCESS {
            return Some(nvml_try(code).map(|()| (0, false)));
        }
        let listed = infos.get(..count as usize).unwrap_or(&infos);
        Some(Ok(listed
            .iter()
            .filter(|p| p.pid == self.pid && p.usedGpuMemory != NOT_AVAILABLE)
            .fold((0, false), |(sum, _), p| {
                (sum + p.usedGpuMemory, true)
            })))
    }
}
