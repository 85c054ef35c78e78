//! The test's side: the `fake_nvml_*` functions that steer what the NVML
//! functions of the crate root report. Tests reach them through
//! `tests/support/fake_nvml.rs`, which loads this library as memprof does.

use super::*;

/// Back to the start: 1 device, no processes, baselines 0, no failure
/// scheduled, query count 0. NVML stays initialized if it was.
#[unsafe(no_mangle)]
pub extern "C" fn fake_nvml_reset() {
    ffi((), || state().reset());
}

/// Sets how many devices NVML reports. Answers `NVML_ERROR_INVALID_ARGUMENT`
/// above [`MAX_DEVICES`]. Devices beyond the count keep their state.
#[unsafe(no_mangle)]
pub extern "C" fn fake_nvml_set_device_count(count: u32) -> NvmlReturn {
    ffi_status(|| {
        if count > MAX_DEVICES {
            return Err(NVML_ERROR_INVALID_ARGUMENT);
        }
        state().device_count = count;
        Ok(())
    })
}

/// Sets the bytes used on `device` by processes that NVML does not list.
/// Answers `NVML_ERROR_MEMORY` if the device would use more than it has.
#[unsafe(no_mangle)]
pub extern "C" fn fake_nvml_set_baseline(device: u32, bytes: u64) -> NvmlReturn {
    ffi_status(|| {
        let mut state = state();
        let device = state.device_mut(device)?;
        let processes: u64 = device.processes.values().sum();
        if bytes
            .checked_add(processes)
            .is_none_or(|used| used > TOTAL_BYTES)
        {
            return Err(NVML_ERROR_MEMORY);
        }
        device.baseline = bytes;
        Ok(())
    })
}

/// `pid` takes `bytes` more on `device`, as `cudaMalloc` would. Answers
/// `NVML_ERROR_MEMORY` if the device would use more than it has.
#[unsafe(no_mangle)]
pub extern "C" fn fake_nvml_alloc(device: u32, pid: u32, bytes: u64) -> NvmlReturn {
    ffi_status(|| {
        let mut state = state();
        let device = state.device_mut(device)?;
        if device
            .used()
            .checked_add(bytes)
            .is_none_or(|used| used > TOTAL_BYTES)
        {
            return Err(NVML_ERROR_MEMORY);
        }
        if bytes > 0 {
            *device.processes.entry(pid).or_default() += bytes;
        }
        Ok(())
    })
}

/// `pid` gives back `bytes` on `device`, as `cudaFree` would; at zero it
/// leaves the process list. Answers `NVML_ERROR_INVALID_ARGUMENT` if `pid`
/// holds fewer bytes than that.
#[unsafe(no_mangle)]
pub extern "C" fn fake_nvml_free(device: u32, pid: u32, bytes: u64) -> NvmlReturn {
    ffi_status(|| {
        let mut state = state();
        let device = state.device_mut(device)?;
        let held = device.processes.get(&pid).copied().unwrap_or(0);
        let left = held.checked_sub(bytes).ok_or(NVML_ERROR_INVALID_ARGUMENT)?;
        if left == 0 {
            device.processes.remove(&pid);
        } else {
            device.processes.insert(pid, left);
        }
        Ok(())
    })
}

/// After `n` more answered device queries (memory info or process list, the
/// count-only call included), every such query answers
/// `NVML_ERROR_GPU_IS_LOST`. Negative: never (the default).
#[unsafe(no_mangle)]
pub extern "C" fn fake_nvml_fail_after(n: i64) {
    ffi((), || state().fail_after = n);
}

/// Device queries (memory info or process list calls that reached a device,
/// those answered with `NVML_ERROR_GPU_IS_LOST` included) since the last reset.
#[unsafe(no_mangle)]
pub extern "C" fn fake_nvml_query_count() -> u64 {
    ffi(u64::MAX, || state().queries)
}

/// `nvmlInit*` calls not yet matched by `nvmlShutdown`, so a test can check
/// that NVML was shut down.
#[unsafe(no_mangle)]
pub extern "C" fn fake_nvml_live_inits() -> u32 {
    ffi(u32::MAX, || state().live_inits)
}
