//! The fake driver's state: each device's memory and the bytes each pid
//! holds, behind one lock that ignores poisoning.

use super::{
    MAX_DEVICES, NVML_ERROR_GPU_IS_LOST, NVML_ERROR_INVALID_ARGUMENT, NVML_ERROR_UNINITIALIZED,
    NvmlDevice, NvmlReturn, handle_index,
};
use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

pub(crate) struct DeviceState {
    pub(crate) baseline: u64,
    /// Bytes per pid; a pid is removed when it frees everything, so every
    /// entry is nonzero and the map is the process list.
    pub(crate) processes: BTreeMap<u32, u64>,
}

impl DeviceState {
    pub(crate) const fn new() -> Self {
        Self {
            baseline: 0,
            processes: BTreeMap::new(),
        }
    }

    /// Never overflows: every change is checked against [`crate::TOTAL_BYTES`].
    pub(crate) fn used(&self) -> u64 {
        self.baseline + self.processes.values().sum::<u64>()
    }
}

/// `FAKE_NVML_LATE_CHILDREN`'s scenario.
#[derive(Clone, Copy)]
pub(crate) struct LateChildren {
    pub(crate) other: u64,
    pub(crate) bytes: u64,
    pub(crate) moved: u64,
    pub(crate) listed: u64,
    /// From this query on, the children are gone from the list again and
    /// the driver keeps 3 MiB (a CUDA context ended); `u64::MAX`: never.
    pub(crate) released: u64,
    /// Process-list queries so far.
    pub(crate) queries: u64,
}

impl LateChildren {
    pub(crate) fn parse(text: &str) -> Option<LateChildren> {
        let mut fields = text.split(':').map(|f| f.parse::<u64>().ok());
        let mut next = || fields.next().flatten();
        Some(LateChildren {
            other: next()? << 20,
            bytes: next()? << 20,
            moved: next()?,
            listed: next()?,
            released: next().unwrap_or(u64::MAX),
            queries: 0,
        })
    }

    /// Device 0 after one more process-list query.
    pub(crate) fn step(&mut self, device: &mut DeviceState) {
        self.queries += 1;
        if self.queries >= self.released {
            device.baseline = self.other + (3 << 20);
            device.processes.clear();
        } else if self.queries >= self.listed {
            device.baseline = self.other;
            for pid in children() {
                device.processes.insert(pid, self.bytes);
            }
        } else if self.queries >= self.moved {
            device.baseline = self.other + self.bytes;
        } else {
            device.baseline = self.other;
        }
    }
}

/// The processes whose parent is this one, from `/proc`.
pub(crate) fn children() -> Vec<u32> {
    let me = std::process::id();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|stat| {
                    let after = &stat[stat.rfind(')')? + 1..];
                    after.split_whitespace().nth(1)?.parse::<u32>().ok()
                })
                == Some(me)
        })
        .collect()
}

pub(crate) struct State {
    /// `nvmlInit*` calls not yet matched by `nvmlShutdown`: NVML counts them,
    /// and answers `NVML_ERROR_UNINITIALIZED` when none is live.
    pub(crate) live_inits: u32,
    pub(crate) device_count: u32,
    pub(crate) devices: [DeviceState; MAX_DEVICES as usize],
    /// Device queries still answered before the GPU is lost; negative: never lost.
    pub(crate) fail_after: i64,
    pub(crate) queries: u64,
    /// `FAKE_NVML_LATE_CHILDREN`, if set.
    pub(crate) late: Option<LateChildren>,
}

impl State {
    pub(crate) const fn new() -> Self {
        Self {
            live_inits: 0,
            device_count: 1,
            devices: [const { DeviceState::new() }; MAX_DEVICES as usize],
            fail_after: -1,
            queries: 0,
            late: None,
        }
    }

    /// Everything a test controls goes back to the start. `live_inits` does
    /// not: it belongs to whoever holds an `Nvml`, and a reset in the middle of
    /// a test must not make its handle uninitialized.
    pub(crate) fn reset(&mut self) {
        *self = Self {
            live_inits: self.live_inits,
            ..Self::new()
        };
    }

    /// The device behind a handle from `nvmlDeviceGetHandleByIndex_v2`, if
    /// NVML is initialized and the device still exists.
    pub(crate) fn device(&self, handle: NvmlDevice) -> Result<&DeviceState, NvmlReturn> {
        if self.live_inits == 0 {
            return Err(NVML_ERROR_UNINITIALIZED);
        }
        match handle_index(handle) {
            Some(index) if index < self.device_count => Ok(&self.devices[index as usize]),
            _ => Err(NVML_ERROR_INVALID_ARGUMENT),
        }
    }

    /// Counts a memory or process query that reached a device, and decides
    /// whether the GPU is lost. Lost queries count too, so a test can tell
    /// that a sampler stopped asking once the GPU was gone.
    pub(crate) fn device_query(&mut self) -> Result<(), NvmlReturn> {
        self.queries += 1;
        match self.fail_after {
            0 => Err(NVML_ERROR_GPU_IS_LOST),
            n if n > 0 => {
                self.fail_after = n - 1;
                Ok(())
            }
            _ => Ok(()),
        }
    }

    pub(crate) fn device_mut(&mut self, index: u32) -> Result<&mut DeviceState, NvmlReturn> {
        self.devices
            .get_mut(index as usize)
            .ok_or(NVML_ERROR_INVALID_ARGUMENT)
    }
}

pub(crate) static STATE: Mutex<State> = Mutex::new(State::new());

/// A panic elsewhere must not turn every later call into another panic.
pub(crate) fn state() -> MutexGuard<'static, State> {
    STATE.lock().unwrap_or_else(PoisonError::into_inner)
}
