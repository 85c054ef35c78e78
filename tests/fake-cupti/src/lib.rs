//! A fake `libcupti.so` for memprof's tests. It is a test stand-in written for
//! this repository, not NVIDIA code, and it talks to no GPU or driver.
//!
//! memprof loads it through `MEMPROF_CUPTI_LIB` and subscribes as it would to
//! the real CUPTI; the test loads the same path and plays the driver: each
//! `fake_cupti_*` call below stands for one driver call, and runs the
//! subscriber's callback at its entry and exit, on the calling thread, with
//! the parameter struct that call has in CUDA's `generated_cuda_meta.h`.
//!
//! Contexts are fake pointers that encode their device, so that
//! `cuptiGetDeviceId` can answer; addresses and handles come from one
//! counter, never reused.
//!
//! Environment, read at `cuptiSubscribe`: `FAKE_CUPTI_SUBSCRIBE_ERROR=<n>`
//! makes it fail with CUPTI error `n` (39 is
//! `CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED`).
//!
//! NOTE: nothing here may unwind into the C caller: the exports run their
//! bodies under `catch_unwind`, and the state lock ignores poisoning.

#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

use std::ffi::{c_int, c_uint, c_void};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Mutex, MutexGuard, PoisonError};

/// `CUptiResult`.
pub type CuptiResult = c_uint;
const CUPTI_SUCCESS: CuptiResult = 0;
const CUPTI_ERROR_INVALID_PARAMETER: CuptiResult = 1;
const CUPTI_ERROR_UNKNOWN: CuptiResult = 999;
const DRIVER_DOMAIN: c_uint = 1;
const API_ENTER: c_uint = 0;
const API_EXIT: c_uint = 1;

/// `CUpti_CallbackFunc`.
pub type Callback = unsafe extern "C" fn(*mut c_void, c_uint, u32, *const c_void);

/// `CUpti_CallbackData`.
#[repr(C)]
struct CallbackData {
    callback_site: c_uint,
    function_name: *const u8,
    function_params: *const c_void,
    function_return_value: *mut c_void,
    symbol_name: *const u8,
    context: *mut c_void,
    context_uid: u32,
    correlation_data: *mut u64,
    correlation_id: u32,
}

/// `cuMemAlloc_v2_params`, `cuMemAllocManaged_params`,
/// `cuMemAllocAsync(_ptsz)_params`, `cuMemAllocFromPoolAsync(_ptsz)_params`:
/// a pointer to the result, the size, then two words the fake leaves zero.
#[repr(C)]
struct AllocParams {
    dptr: *mut u64,
    bytesize: usize,
    third: usize,
    fourth: usize,
}

/// `cuMemAllocPitch_v2_params`.
#[repr(C)]
struct AllocPitchParams {
    dptr: *mut u64,
    p_pitch: *mut usize,
    width_in_bytes: usize,
    height: usize,
    element_size_bytes: c_uint,
}

/// `cuMemFree_v2_params`, `cuMemFreeAsync(_ptsz)_params`,
/// `cuMemRelease_params`: the pointer or handle, then a stream.
#[repr(C)]
struct FreeParams {
    dptr: u64,
    stream: usize,
}

/// `CUmemAllocationProp`.
#[repr(C)]
struct AllocationProp {
    kind: c_uint,
    requested_handle_types: c_uint,
    location_type: c_uint,
    location_id: c_int,
    win32_metadata: *mut c_void,
    flags: [u8; 8],
}

/// `cuMemCreate_params`.
#[repr(C)]
struct CreateParams {
    handle: *mut u64,
    size: usize,
    prop: *const AllocationProp,
    flags: u64,
}

const MEM_ALLOC_PITCH_V2: u32 = 244;
/// Callback ids from 0 up to this one (excluded) can be enabled.
const MAX_CBID: usize = 1024;
const MEM_CREATE: u32 = 549;

struct State {
    callback: Option<Callback>,
    userdata: usize,
    /// Whether each callback id below [`MAX_CBID`] is enabled. NOTE: an
    /// array, not a set: the fake is built unoptimized, and a set's lookup
    /// there would dwarf the subscriber's own cost in the benchmark.
    enabled: [bool; MAX_CBID],
    next_address: u64,
    subscriptions: u32,
}

static STATE: Mutex<State> = Mutex::new(State {
    callback: None,
    userdata: 0,
    enabled: [false; MAX_CBID],
    next_address: 0x7f00_0000_0000,
    subscriptions: 0,
});

fn state() -> MutexGuard<'static, State> {
    STATE.lock().unwrap_or_else(PoisonError::into_inner)
}

fn guarded(f: impl FnOnce() -> CuptiResult) -> CuptiResult {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or(CUPTI_ERROR_UNKNOWN)
}

/// The fake context of `device`: a pointer value that encodes it.
fn context(device: u32) -> *mut c_void {
    ((u64::from(device) + 1) << 32) as usize as *mut c_void
}

/// `cuptiSubscribe`.
///
/// # Safety
/// `subscriber` is null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuptiSubscribe(
    subscriber: *mut *mut c_void,
    callback: Option<Callback>,
    userdata: *mut c_void,
) -> CuptiResult {
    guarded(|| {
        if let Some(code) = std::env::var("FAKE_CUPTI_SUBSCRIBE_ERROR")
            .ok()
            .and_then(|v| v.parse().ok())
        {
            return code;
        }
        if subscriber.is_null() || callback.is_none() {
            return CUPTI_ERROR_INVALID_PARAMETER;
        }
        let mut s = state();
        s.callback = callback;
        s.userdata = userdata as usize;
        s.subscriptions += 1;
        // SAFETY: checked non-null; the caller vouches it is writable.
        unsafe { *subscriber = 0x5b5 as *mut c_void };
        CUPTI_SUCCESS
    })
}

/// `cuptiUnsubscribe`.
#[unsafe(no_mangle)]
pub extern "C" fn cuptiUnsubscribe(_subscriber: *mut c_void) -> CuptiResult {
    guarded(|| {
        let mut s = state();
        s.callback = None;
        s.enabled = [false; MAX_CBID];
        s.subscriptions = s.subscriptions.saturating_sub(1);
        CUPTI_SUCCESS
    })
}

/// `cuptiEnableCallback`. Fails for ids listed in
/// `FAKE_CUPTI_REFUSE_CBID` (comma-separated).
#[unsafe(no_mangle)]
pub extern "C" fn cuptiEnableCallback(
    enable: u32,
    _subscriber: *mut c_void,
    domain: c_uint,
    cbid: u32,
) -> CuptiResult {
    guarded(|| {
        if domain != DRIVER_DOMAIN {
            return CUPTI_ERROR_INVALID_PARAMETER;
        }
        let refused = std::env::var("FAKE_CUPTI_REFUSE_CBID").unwrap_or_default();
        if refused.split(',').any(|id| id.trim() == cbid.to_string()) {
            return CUPTI_ERROR_INVALID_PARAMETER;
        }
        let mut s = state();
        match s.enabled.get_mut(cbid as usize) {
            Some(slot) => *slot = enable != 0,
            None => return CUPTI_ERROR_INVALID_PARAMETER,
        }
        CUPTI_SUCCESS
    })
}

/// `cuptiGetDeviceId`: the device a fake context encodes.
///
/// # Safety
/// `device` is null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuptiGetDeviceId(context: *mut c_void, device: *mut u32) -> CuptiResult {
    let encoded = (context as usize as u64) >> 32;
    if encoded == 0 || device.is_null() {
        return CUPTI_ERROR_INVALID_PARAMETER;
    }
    // SAFETY: checked non-null; the caller vouches it is writable.
    unsafe { *device = (encoded - 1) as u32 };
    CUPTI_SUCCESS
}

/// Runs the subscriber's callback for driver call `cbid` at `site`, if that
/// call is enabled. Never under the state lock: the callback may call back.
fn call(cbid: u32, site: c_uint, device: u32, params: *const c_void, result: &mut c_int) {
    let (callback, userdata) = {
        let s = state();
        match s.callback {
            Some(callback) if s.enabled.get(cbid as usize) == Some(&true) => (callback, s.userdata),
            _ => return,
        }
    };
    let data = CallbackData {
        callback_site: site,
        function_name: std::ptr::null(),
        function_params: params,
        function_return_value: (result as *mut c_int).cast(),
        symbol_name: std::ptr::null(),
        context: context(device),
        context_uid: device + 1,
        correlation_data: std::ptr::null_mut(),
        correlation_id: 0,
    };
    // SAFETY: the subscriber's callback, with data valid for the call.
    unsafe {
        callback(
            userdata as *mut c_void,
            DRIVER_DOMAIN,
            cbid,
            (&data as *const CallbackData).cast(),
        )
    };
}

fn fresh_address(bytes: u64) -> u64 {
    let mut s = state();
    let address = s.next_address;
    s.next_address += bytes.max(1).next_multiple_of(1 << 21);
    address
}

/// Plays driver call `cbid` allocating `bytes` on `device`, returning
/// `result` (a `CUresult`, 0 for success). Returns the new address (or
/// handle, for `cuMemCreate`), 0 when `result` is a failure.
#[unsafe(no_mangle)]
pub extern "C" fn fake_cupti_alloc(cbid: u32, device: u32, bytes: u64, result: c_int) -> u64 {
    catch_unwind(AssertUnwindSafe(|| {
        let mut out = 0u64;
        let mut code = 0;
        if cbid == MEM_CREATE {
            let prop = AllocationProp {
                kind: 1,
                requested_handle_types: 0,
                location_type: 1,
                location_id: device as c_int,
                win32_metadata: std::ptr::null_mut(),
                flags: [0; 8],
            };
            let params = CreateParams {
                handle: &mut out,
                size: bytes as usize,
                prop: &prop,
                flags: 0,
            };
            let params = (&params as *const CreateParams).cast();
            // The context is not the allocation's device: cuMemCreate names it.
            call(cbid, API_ENTER, u32::MAX - 1, params, &mut code);
            if result == 0 {
                out = fresh_address(bytes);
            }
            code = result;
            call(cbid, API_EXIT, u32::MAX - 1, params, &mut code);
            return out;
        }
        let params = AllocParams {
            dptr: &mut out,
            bytesize: bytes as usize,
            third: 0,
            fourth: 0,
        };
        let params = (&params as *const AllocParams).cast();
        call(cbid, API_ENTER, device, params, &mut code);
        if result == 0 {
            out = fresh_address(bytes);
        }
        code = result;
        call(cbid, API_EXIT, device, params, &mut code);
        out
    }))
    .unwrap_or(0)
}

/// Plays `cuMemAllocPitch_v2` of `height` rows of `width` bytes on
/// `device`; the pitch is `width` rounded up to 512 bytes. Returns the
/// address, 0 on failure.
#[unsafe(no_mangle)]
pub extern "C" fn fake_cupti_alloc_pitch(
    device: u32,
    width: u64,
    height: u64,
    result: c_int,
) -> u64 {
    catch_unwind(AssertUnwindSafe(|| {
        let mut out = 0u64;
        let mut pitch = 0usize;
        let mut code = 0;
        let params = AllocPitchParams {
            dptr: &mut out,
            p_pitch: &mut pitch,
            width_in_bytes: width as usize,
            height: height as usize,
            element_size_bytes: 4,
        };
        let params = (&params as *const AllocPitchParams).cast();
        call(MEM_ALLOC_PITCH_V2, API_ENTER, device, params, &mut code);
        if result == 0 {
            pitch = width.next_multiple_of(512) as usize;
            out = fresh_address(pitch as u64 * height);
        }
        code = result;
        call(MEM_ALLOC_PITCH_V2, API_EXIT, device, params, &mut code);
        out
    }))
    .unwrap_or(0)
}

/// Plays driver call `cbid` freeing `address` (or releasing a handle) on
/// `device`, returning `result`.
#[unsafe(no_mangle)]
pub extern "C" fn fake_cupti_free(cbid: u32, device: u32, address: u64, result: c_int) {
    let _ = catch_unwind(AssertUnwindSafe(|| {
        let mut code = 0;
        let params = FreeParams {
            dptr: address,
            stream: 0,
        };
        let params = (&params as *const FreeParams).cast();
        call(cbid, API_ENTER, device, params, &mut code);
        code = result;
        call(cbid, API_EXIT, device, params, &mut code);
    }));
}

/// Whether driver call `cbid` is enabled: 1 or 0.
#[unsafe(no_mangle)]
pub extern "C" fn fake_cupti_enabled(cbid: u32) -> u32 {
    catch_unwind(|| u32::from(state().enabled.get(cbid as usize) == Some(&true))).unwrap_or(0)
}

/// Live subscriptions.
#[unsafe(no_mangle)]
pub extern "C" fn fake_cupti_subscriptions() -> u32 {
    catch_unwind(|| state().subscriptions).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{offset_of, size_of};

    #[test]
    fn layouts_are_cuda_s() {
        assert_eq!(size_of::<CallbackData>(), 72);
        assert_eq!(offset_of!(CallbackData, context), 40);
        assert_eq!(size_of::<AllocPitchParams>(), 40);
        assert_eq!(size_of::<AllocationProp>(), 32);
        assert_eq!(offset_of!(CreateParams, prop), 16);
    }
}
