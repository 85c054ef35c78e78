//! A fake `libnvidia-ml.so` for memprof's tests. It is a test stand-in written
//! for this repository, not NVIDIA code, and it talks to no GPU.
//!
//! CI has no GPU and no driver, so the GPU columns are tested against this
//! library instead: `nvml-wrapper` loads it with
//! `Nvml::builder().lib_path(..)`, and the test loads the same path with
//! `libloading`. `dlopen` of one path returns one handle, so both see the same
//! statics, and the test steers what NVML reports through the `fake_nvml_*`
//! functions of `control.rs`.
//!
//! Only the symbols that memprof's calls into `nvml-wrapper` 0.13 reach are
//! exported. `nvml-wrapper-sys` looks every symbol up at load time but keeps
//! each as a `Result`, so a missing one fails only when it is called: as
//! `NvmlError::FailedToLoadSymbol` from `nvml-wrapper`'s methods, but as a
//! panic from `Nvml`'s `Drop`, which calls `nvmlShutdown` through the
//! `expect`ing accessor. That is why `nvmlShutdown` must be here.
//!
//! The model: up to [`MAX_DEVICES`] devices, each with [`TOTAL_BYTES`] of
//! memory, a `baseline` used by processes the test does not name, and the
//! bytes each named pid holds. `used` is the baseline plus the pids' bytes,
//! `free` is the rest, `reserved` is 0.
//!
//! Environment, read at every `nvmlInit*`, so a child process can be set up
//! without code: `FAKE_NVML_DEVICES=<0..=8>` sets the device count (and wins
//! over `fake_nvml_set_device_count`), `FAKE_NVML_FAIL_INIT=1` makes init
//! return `NVML_ERROR_DRIVER_NOT_LOADED`, and
//! `FAKE_NVML_LATE_CHILDREN=<other MiB>:<MiB>:<moved>:<listed>` plays a
//! program, run by the process that loaded this library (`mprof run`),
//! that makes its CUDA context late: device 0 holds `<other MiB>` of
//! unlisted processes; from the `<moved>`th process-list query on, `<MiB>`
//! more, still unlisted (the context being made); from the `<listed>`th
//! on, the loader's child processes are listed with `<MiB>` each; with a
//! fifth field `:<released>`, from that query on they are unlisted again
//! and the driver keeps 3 MiB (their contexts ended).
//!
//! NOTE: nothing here may unwind into the C caller. Every export runs its body
//! under `catch_unwind` and answers `NVML_ERROR_UNKNOWN` if it panicked, and
//! the state lock ignores poisoning.

#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

use std::ffi::{CStr, c_char, c_uint, c_ulonglong, c_void};
use std::io::Write;
use std::mem::{offset_of, size_of};
use std::panic::{AssertUnwindSafe, catch_unwind};

mod control;
mod state;

use state::{LateChildren, state};

/// `nvmlReturn_t`: a C enum, passed as `unsigned int`.
pub type NvmlReturn = c_uint;

// The values of `nvmlReturn_t` that this library returns, as nvml.h numbers them.
const NVML_SUCCESS: NvmlReturn = 0;
const NVML_ERROR_UNINITIALIZED: NvmlReturn = 1;
const NVML_ERROR_INVALID_ARGUMENT: NvmlReturn = 2;
const NVML_ERROR_INSUFFICIENT_SIZE: NvmlReturn = 7;
const NVML_ERROR_DRIVER_NOT_LOADED: NvmlReturn = 9;
const NVML_ERROR_GPU_IS_LOST: NvmlReturn = 15;
const NVML_ERROR_MEMORY: NvmlReturn = 20;
const NVML_ERROR_ARGUMENT_VERSION_MISMATCH: NvmlReturn = 25;
const NVML_ERROR_UNKNOWN: NvmlReturn = 999;

/// `nvmlDevice_t`: an opaque pointer that this library never dereferences.
pub type NvmlDevice = *mut c_void;

/// The most devices the fake can show.
pub const MAX_DEVICES: u32 = 8;

/// Memory of every fake device: 80 GiB, as on an H100 or A100 80GB.
pub const TOTAL_BYTES: u64 = 80 << 30;

/// What `nvmlSystemGetDriverVersion` reports. It parses as major version 0, so
/// `nvml-wrapper` keeps its default (v12) field-id numbering.
const DRIVER_VERSION: &str = "0.0.0-fake";

/// `nvmlMemory_v2_t`.
#[repr(C)]
pub struct MemoryV2 {
    version: c_uint,
    total: c_ulonglong,
    reserved: c_ulonglong,
    free: c_ulonglong,
    used: c_ulonglong,
}

/// nvml.h's `NVML_STRUCT_VERSION(Memory, 2)`: the struct size with the
/// version number in the top byte. Callers must set it, and NVML refuses others.
const MEMORY_V2_VERSION: c_uint = size_of::<MemoryV2>() as c_uint | (2 << 24);

/// `nvmlProcessInfo_t` (the same layout as `nvmlProcessInfo_v2_t`), which
/// `nvmlDeviceGetComputeRunningProcesses_v3` fills.
#[repr(C)]
pub struct ProcessInfo {
    pid: c_uint,
    used_gpu_memory: c_ulonglong,
    gpu_instance_id: c_uint,
    compute_instance_id: c_uint,
}

/// What NVML puts in the instance ids when MIG is off.
const NO_INSTANCE: c_uint = 0xFFFF_FFFF;

// The C layouts (x86-64 and aarch64 Linux), so that a field moved by mistake
// fails the build instead of shifting numbers in a test.
const _: () = {
    assert!(size_of::<MemoryV2>() == 40);
    assert!(offset_of!(MemoryV2, total) == 8);
    assert!(offset_of!(MemoryV2, reserved) == 16);
    assert!(offset_of!(MemoryV2, free) == 24);
    assert!(offset_of!(MemoryV2, used) == 32);
    assert!(MEMORY_V2_VERSION == 0x0200_0028);
    assert!(size_of::<ProcessInfo>() == 24);
    assert!(offset_of!(ProcessInfo, used_gpu_memory) == 8);
    assert!(offset_of!(ProcessInfo, gpu_instance_id) == 16);
    assert!(offset_of!(ProcessInfo, compute_instance_id) == 20);
};

/// Runs an export's body so that a panic becomes `fallback` instead of
/// unwinding into C.
fn ffi<T>(fallback: T, body: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(body)).unwrap_or(fallback)
}

fn ffi_status(body: impl FnOnce() -> Result<(), NvmlReturn>) -> NvmlReturn {
    ffi(NVML_ERROR_UNKNOWN, || match body() {
        Ok(()) => NVML_SUCCESS,
        Err(code) => code,
    })
}

// Handles are the device index plus one, so that none is null. They carry no
// provenance because nothing ever reads through them.
fn index_handle(index: u32) -> NvmlDevice {
    std::ptr::without_provenance_mut(index as usize + 1)
}

fn handle_index(handle: NvmlDevice) -> Option<u32> {
    (handle.addr() as u64)
        .checked_sub(1)
        .and_then(|index| u32::try_from(index).ok())
}

/// Copies `text` and a NUL into a caller's buffer of `length` bytes, the way
/// NVML's string getters do.
///
/// # Safety
///
/// `buffer` is null or valid for writes of `length` bytes.
unsafe fn write_c_string(
    text: &str,
    buffer: *mut c_char,
    length: c_uint,
) -> Result<(), NvmlReturn> {
    if buffer.is_null() {
        return Err(NVML_ERROR_INVALID_ARGUMENT);
    }
    if text.len() >= length as usize {
        return Err(NVML_ERROR_INSUFFICIENT_SIZE);
    }
    // SAFETY: the caller gave `length` writable bytes and `text.len() + 1`
    // fits in them; a Rust string cannot overlap a buffer that C owns.
    unsafe {
        std::ptr::copy_nonoverlapping(text.as_ptr().cast::<c_char>(), buffer, text.len());
        buffer.add(text.len()).write(0);
    }
    Ok(())
}

/// Applies `FAKE_NVML_*` and counts one more live init.
fn init() -> Result<(), NvmlReturn> {
    if std::env::var_os("FAKE_NVML_FAIL_INIT").is_some_and(|v| v == "1") {
        return Err(NVML_ERROR_DRIVER_NOT_LOADED);
    }
    let mut state = state();
    if let Some(value) = std::env::var_os("FAKE_NVML_DEVICES") {
        match value.to_str().and_then(|v| v.parse::<u32>().ok()) {
            Some(count) if count <= MAX_DEVICES => state.device_count = count,
            _ => {
                // NOTE: init has no argument to blame, so say why on stderr
                // rather than leave a bare NVML_ERROR_UNKNOWN to puzzle over.
                let _ = writeln!(
                    std::io::stderr(),
                    "fake-nvml: FAKE_NVML_DEVICES={value:?} is not a device count from 0 to {MAX_DEVICES}"
                );
                return Err(NVML_ERROR_UNKNOWN);
            }
        }
    }
    if let Some(value) = std::env::var_os("FAKE_NVML_LATE_CHILDREN") {
        let late = value.to_str().and_then(LateChildren::parse);
        if late.is_none() {
            let _ = writeln!(
                std::io::stderr(),
                "fake-nvml: FAKE_NVML_LATE_CHILDREN={value:?} is not <other MiB>:<MiB>:<moved>:<listed>[:<released>]"
            );
            return Err(NVML_ERROR_UNKNOWN);
        }
        state.late = late;
        if let (Some(late), Ok(device)) = (late, state.device_mut(0)) {
            device.baseline = late.other;
        }
    }
    state.live_inits += 1;
    Ok(())
}

/// `nvmlInit_v2`, which `Nvml::init` and `NvmlBuilder::init` call.
#[unsafe(no_mangle)]
pub extern "C" fn nvmlInit_v2() -> NvmlReturn {
    ffi_status(init)
}

/// `nvmlInitWithFlags`, which `NvmlBuilder::init` calls when flags are set.
/// The fake has no GPUs to attach, so every flag is accepted and ignored.
#[unsafe(no_mangle)]
pub extern "C" fn nvmlInitWithFlags(_flags: c_uint) -> NvmlReturn {
    ffi_status(init)
}

/// `nvmlShutdown`, which `Nvml`'s `Drop` and `Nvml::shutdown` call.
#[unsafe(no_mangle)]
pub extern "C" fn nvmlShutdown() -> NvmlReturn {
    ffi_status(|| {
        let mut state = state();
        state.live_inits = state
            .live_inits
            .checked_sub(1)
            .ok_or(NVML_ERROR_UNINITIALIZED)?;
        Ok(())
    })
}

/// `nvmlErrorString`: a static description of a return code. `nvml-wrapper`
/// never calls it itself; it is reachable through `Nvml::lib()`.
#[unsafe(no_mangle)]
pub extern "C" fn nvmlErrorString(result: NvmlReturn) -> *const c_char {
    let text: &CStr = match result {
        NVML_SUCCESS => c"success",
        NVML_ERROR_UNINITIALIZED => c"nvml is not initialized",
        NVML_ERROR_INVALID_ARGUMENT => c"an argument is invalid",
        NVML_ERROR_INSUFFICIENT_SIZE => c"the buffer is too small",
        NVML_ERROR_DRIVER_NOT_LOADED => c"the driver is not loaded (FAKE_NVML_FAIL_INIT)",
        NVML_ERROR_GPU_IS_LOST => c"the gpu is lost (fake_nvml_fail_after)",
        NVML_ERROR_MEMORY => c"not enough device memory",
        NVML_ERROR_ARGUMENT_VERSION_MISMATCH => c"the struct version is not supported",
        _ => c"unknown error",
    };
    text.as_ptr()
}

/// `nvmlSystemGetDriverVersion`, which `Nvml::sys_driver_version` calls, and
/// `Nvml`'s init too, to pick a field-id numbering.
///
/// # Safety
///
/// `version` is null or valid for writes of `length` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlSystemGetDriverVersion(
    version: *mut c_char,
    length: c_uint,
) -> NvmlReturn {
    ffi_status(|| {
        if state().live_inits == 0 {
            return Err(NVML_ERROR_UNINITIALIZED);
        }
        // SAFETY: the caller's contract is the one `write_c_string` needs.
        unsafe { write_c_string(DRIVER_VERSION, version, length) }
    })
}

/// `nvmlDeviceGetCount_v2`, which `Nvml::device_count` calls.
///
/// # Safety
///
/// `device_count` is null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetCount_v2(device_count: *mut c_uint) -> NvmlReturn {
    ffi_status(|| {
        let state = state();
        if state.live_inits == 0 {
            return Err(NVML_ERROR_UNINITIALIZED);
        }
        if device_count.is_null() {
            return Err(NVML_ERROR_INVALID_ARGUMENT);
        }
        // SAFETY: non-null, and the caller promised it is writable.
        unsafe { device_count.write(state.device_count) };
        Ok(())
    })
}

/// `nvmlDeviceGetHandleByIndex_v2`, which `Nvml::device_by_index` calls.
///
/// # Safety
///
/// `device` is null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetHandleByIndex_v2(
    index: c_uint,
    device: *mut NvmlDevice,
) -> NvmlReturn {
    ffi_status(|| {
        let state = state();
        if state.live_inits == 0 {
            return Err(NVML_ERROR_UNINITIALIZED);
        }
        if index >= state.device_count || device.is_null() {
            return Err(NVML_ERROR_INVALID_ARGUMENT);
        }
        // SAFETY: non-null, and the caller promised it is writable.
        unsafe { device.write(index_handle(index)) };
        Ok(())
    })
}

/// `nvmlDeviceGetName`, which `Device::name` calls: `Fake GPU <index>`.
///
/// # Safety
///
/// `name` is null or valid for writes of `length` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetName(
    device: NvmlDevice,
    name: *mut c_char,
    length: c_uint,
) -> NvmlReturn {
    ffi_status(|| {
        state().device(device)?;
        let index = handle_index(device).unwrap_or_default();
        // SAFETY: the caller's contract is the one `write_c_string` needs.
        unsafe { write_c_string(&format!("Fake GPU {index}"), name, length) }
    })
}

/// `nvmlDeviceGetUUID`, which `Device::uuid` calls: a well-formed UUID whose
/// first group spells "fa4e" and whose last digits are the index.
///
/// # Safety
///
/// `uuid` is null or valid for writes of `length` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetUUID(
    device: NvmlDevice,
    uuid: *mut c_char,
    length: c_uint,
) -> NvmlReturn {
    ffi_status(|| {
        state().device(device)?;
        let index = handle_index(device).unwrap_or_default();
        let text = format!("GPU-fa4e0000-0000-0000-0000-{index:012}");
        // SAFETY: the caller's contract is the one `write_c_string` needs.
        unsafe { write_c_string(&text, uuid, length) }
    })
}

/// `nvmlDeviceGetMemoryInfo_v2`, which `Device::memory_info` calls.
///
/// # Safety
///
/// `memory` is null or valid for reads and writes of an `nvmlMemory_v2_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetMemoryInfo_v2(
    device: NvmlDevice,
    memory: *mut MemoryV2,
) -> NvmlReturn {
    ffi_status(|| {
        let mut state = state();
        state.device(device)?;
        if memory.is_null() {
            return Err(NVML_ERROR_INVALID_ARGUMENT);
        }
        // SAFETY: non-null, and the caller promised a readable struct.
        if unsafe { (*memory).version } != MEMORY_V2_VERSION {
            return Err(NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
        }
        state.device_query()?;
        let used = state.device(device)?.used();
        // SAFETY: non-null, and the caller promised a writable struct.
        unsafe {
            memory.write(MemoryV2 {
                version: MEMORY_V2_VERSION,
                total: TOTAL_BYTES,
                reserved: 0,
                free: TOTAL_BYTES - used,
                used,
            });
        }
        Ok(())
    })
}

/// `nvmlDeviceGetComputeRunningProcesses_v3`, which
/// `Device::running_compute_processes` and
/// `Device::running_compute_processes_count` call: every pid with bytes on
/// the device, in pid order.
///
/// NVML's size protocol: `*info_count` is the room in `infos` on the way in
/// and the number of processes on the way out. Too little room answers
/// `NVML_ERROR_INSUFFICIENT_SIZE` and writes nothing else, which is how
/// callers ask for the count with `*info_count == 0` and a null `infos`.
///
/// # Safety
///
/// `info_count` is null or valid for reads and writes; `infos` is null or
/// valid for writes of `*info_count` entries.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetComputeRunningProcesses_v3(
    device: NvmlDevice,
    info_count: *mut c_uint,
    infos: *mut ProcessInfo,
) -> NvmlReturn {
    ffi_status(|| {
        let mut state = state();
        state.device(device)?;
        if info_count.is_null() {
            return Err(NVML_ERROR_INVALID_ARGUMENT);
        }
        // SAFETY: non-null, and the caller promised it is readable.
        let room = unsafe { info_count.read() };
        state.device_query()?;
        if let Some(mut late) = state.late
            && handle_index(device) == Some(0)
        {
            late.step(state.device_mut(0)?);
            state.late = Some(late);
        }
        let processes = &state.device(device)?.processes;
        // Bounded by the pids a test allocated for, far below u32::MAX.
        let count = processes.len() as c_uint;
        // SAFETY: non-null, and the caller promised it is writable.
        unsafe { info_count.write(count) };
        if count > room {
            return Err(NVML_ERROR_INSUFFICIENT_SIZE);
        }
        if count > 0 && infos.is_null() {
            return Err(NVML_ERROR_INVALID_ARGUMENT);
        }
        for (slot, (&pid, &bytes)) in processes.iter().enumerate() {
            let info = ProcessInfo {
                pid,
                used_gpu_memory: bytes,
                gpu_instance_id: NO_INSTANCE,
                compute_instance_id: NO_INSTANCE,
            };
            // SAFETY: `slot < count <= room`, and the caller promised `room`
            // writable entries at a non-null `infos`.
            unsafe { infos.add(slot).write(info) };
        }
        Ok(())
    })
}
