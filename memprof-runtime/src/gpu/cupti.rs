//! Device allocations counted as they happen, through CUPTI's callback API.
//!
//! libcupti is loaded at run time (`MEMPROF_CUPTI_LIB`, then the sonames the
//! CUDA toolkit and the `nvidia-cuda-cupti-cu12` wheel install, on the
//! library path and then where those install them: see [`installed`]),
//! never linked: a program built with memprof runs where CUDA is absent. One
//! subscriber is registered on the driver API domain for the calls that
//! allocate or free device memory; each call's exit (allocations) or entry
//! (frees) goes to the [`Ledger`].
//!
//! The FFI (`cupti_ffi`) is our own and small. `scripts/cupti-abi` checks
//! every number in it against NVIDIA's headers. cudarc's
//! generated `cupti` module would add some 12 s to a cold build, and it
//! panics where no libcupti of its own CUDA major version is found.
//!
//! NOTE: the callback runs inside the driver, on the thread that called it.
//! It never unwinds into C (its body runs under `catch_unwind`) and its
//! bookkeeping allocates only through the untracked heap.

use super::cupti_ffi::{
    AllocFromPoolParams, AllocParams, AllocPitchParams, CUPTI_API_ENTER, CUPTI_API_EXIT,
    CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, CUPTI_SUCCESS,
    CallbackData, CallbackDomain, CallbackId, CreateParams, CuResult, CuptiResult, DevicePtr,
    FreeParams, ReleaseParams, cbid,
};
use super::ledger::{BlockKey, LEDGER, PendingFree};
use std::cell::Cell;
use std::ffi::{c_char, c_void};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

type Callback = unsafe extern "C" fn(*mut c_void, CallbackDomain, CallbackId, *const c_void);
type Subscribe = unsafe extern "C" fn(*mut *mut c_void, Callback, *mut c_void) -> CuptiResult;
type EnableCallback =
    unsafe extern "C" fn(u32, *mut c_void, CallbackDomain, CallbackId) -> CuptiResult;
type Unsubscribe = unsafe extern "C" fn(*mut c_void) -> CuptiResult;
type GetDeviceId = unsafe extern "C" fn(*mut c_void, *mut u32) -> CuptiResult;
type GetResultString = unsafe extern "C" fn(CuptiResult, *mut *const c_char) -> CuptiResult;

/// `cuptiGetDeviceId`, for the callback; set before the subscription.
static GET_DEVICE_ID: std::sync::OnceLock<GetDeviceId> = std::sync::OnceLock::new();

/// The sonames tried, in order, when `MEMPROF_CUPTI_LIB` is unset.
const SONAMES: [&str; 4] = [
    "libcupti.so",
    "libcupti.so.13",
    "libcupti.so.12",
    "libcupti.so.11.8",
];

/// Where CUDA installs put libcupti, which is often not on the library path:
/// the toolkit's `extras/CUPTI/lib64` (and `lib64`) under `CUDA_HOME`,
/// `CUDA_PATH` and `/usr/local/cuda`, and the `nvidia-cuda-cupti-cu12`
/// wheel that PyTorch installs (`site-packages/nvidia/cuda_cupti/lib`) in
/// the active virtual or conda environment, the user's and the system's
/// Pythons. Only files that exist, in that order.
fn installed() -> Vec<PathBuf> {
    let var = |name: &str| std::env::var_os(name).map(PathBuf::from);
    let toolkits = [
        var("CUDA_HOME"),
        var("CUDA_PATH"),
        Some("/usr/local/cuda".into()),
    ];
    let mut dirs: Vec<PathBuf> = toolkits
        .into_iter()
        .flatten()
        .flat_map(|root| [root.join("extras/CUPTI/lib64"), root.join("lib64")])
        .collect();
    let home_local = var("HOME").map(|home| home.join(".local"));
    let prefixes = [
        var("VIRTUAL_ENV"),
        var("CONDA_PREFIX"),
        home_local,
        Some("/usr/local".into()),
        Some("/usr".into()),
    ];
    for prefix in prefixes.into_iter().flatten() {
        // `lib/python3.X/{site,dist}-packages`, for each Python there.
        let Ok(entries) = std::fs::read_dir(prefix.join("lib")) else {
            continue;
        };
        let mut pythons: Vec<PathBuf> = entries
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with("python3"))
            .map(|e| e.path())
            .collect();
        pythons.sort();
        for python in pythons.iter().rev() {
            for packages in ["site-packages", "dist-packages"] {
                dirs.push(python.join(packages).join("nvidia/cuda_cupti/lib"));
            }
        }
    }
    dirs.iter()
        .flat_map(|dir| SONAMES.iter().map(move |name| dir.join(name)))
        .filter(|path| path.is_file())
        .collect()
}

/// Loads CUPTI and subscribes to device allocations. `Err` says, in a few
/// words, why counting cannot be had; nothing is left subscribed then.
pub(crate) fn subscribe(path: Option<&Path>) -> Result<(), String> {
    let library = match path {
        // SAFETY: loading CUPTI runs its initializers, which only set up
        // its own state.
        Some(path) => unsafe { libloading::Library::new(path) }
            .map_err(|e| format!("cannot load CUPTI ({e})"))?,
        None => SONAMES
            .iter()
            .map(PathBuf::from)
            .chain(installed())
            // SAFETY: as above.
            .find_map(|name| unsafe { libloading::Library::new(name) }.ok())
            .ok_or_else(|| {
                format!(
                    "cannot load CUPTI (none of {} found on the library path, in \
                     CUDA_HOME, CUDA_PATH, /usr/local/cuda or Python's nvidia-cuda-cupti \
                     packages; set MEMPROF_CUPTI_LIB)",
                    SONAMES.join(", ")
                )
            })?,
    };
    /// Copies a function pointer out of `library`.
    ///
    /// # Safety
    /// `T` is the C signature of `name`.
    unsafe fn function<T: Copy>(library: &libloading::Library, name: &str) -> Result<T, String> {
        // SAFETY: the caller vouches for `T`.
        unsafe { library.get::<T>(name.as_bytes()) }
            .map(|symbol| *symbol)
            .map_err(|e| format!("CUPTI lacks {name} ({e})"))
    }
    // SAFETY: each type is the signature cupti_callbacks.h gives that name.
    let (subscribe, enable, unsubscribe, device_id) = unsafe {
        (
            function::<Subscribe>(&library, "cuptiSubscribe")?,
            function::<EnableCallback>(&library, "cuptiEnableCallback")?,
            function::<Unsubscribe>(&library, "cuptiUnsubscribe")?,
            function::<GetDeviceId>(&library, "cuptiGetDeviceId")?,
        )
    };
    // SAFETY: as above. Optional: it only names errors.
    let result_string =
        unsafe { function::<GetResultString>(&library, "cuptiGetResultString") }.ok();
    let _ = GET_DEVICE_ID.set(device_id);
    // NOTE: from here on the library stays loaded for the life of the
    // process, failed or not: a subscription calls into it, and a failed
    // start may have left threads or handlers of CUPTI's behind.
    std::mem::forget(library);
    let error = |code: CuptiResult| describe(result_string, code);
    let mut subscriber: *mut c_void = std::ptr::null_mut();
    // SAFETY: `callback` has CUPTI's callback signature and never unwinds.
    let code = unsafe { subscribe(&mut subscriber, callback, std::ptr::null_mut()) };
    match code {
        CUPTI_SUCCESS => {}
        CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED => {
            return Err("another profiler holds CUPTI's only subscription \
                 (CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)"
                .to_owned());
        }
        code => return Err(format!("cuptiSubscribe failed ({})", error(code))),
    }
    for id in cbid::ALL {
        // SAFETY: `subscriber` was just returned by `cuptiSubscribe`.
        let code = unsafe { enable(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API, id) };
        if code != CUPTI_SUCCESS {
            // SAFETY: as above; nothing is counted past this point.
            unsafe { unsubscribe(subscriber) };
            return Err(format!(
                "cuptiEnableCallback failed for driver callback {id} ({})",
                error(code)
            ));
        }
    }
    Ok(())
}

/// CUPTI's name for `code` (`CUPTI_ERROR_NOT_INITIALIZED`), or its number
/// where the library has no name for it.
fn describe(result_string: Option<GetResultString>, code: CuptiResult) -> String {
    let mut name: *const c_char = std::ptr::null();
    // SAFETY: CUPTI's own function; it writes a static string or nothing.
    let named = result_string.is_some_and(|f| unsafe { f(code, &mut name) } == CUPTI_SUCCESS);
    if named && !name.is_null() {
        // SAFETY: a NUL-terminated string of CUPTI's, never freed.
        let name = unsafe { std::ffi::CStr::from_ptr(name) }.to_string_lossy();
        if !name.is_empty() {
            return name.into_owned();
        }
    }
    format!("CUPTI error {code}")
}

/// The subscriber's callback: see the module documentation.
unsafe extern "C" fn callback(
    _: *mut c_void,
    domain: CallbackDomain,
    id: CallbackId,
    data: *const c_void,
) {
    if domain != CUPTI_CB_DOMAIN_DRIVER_API || data.is_null() {
        return;
    }
    // SAFETY: for the driver domain CUPTI passes a `CUpti_CallbackData`,
    // valid for the duration of the callback.
    let data = unsafe { &*data.cast::<CallbackData>() };
    // A panic here would be a bug of ours; the driver call goes on regardless.
    let _ = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: the params are those of callback `id`, as CUPTI passes.
        unsafe { record(id, data) }
    }));
}

thread_local! {
    /// The block of the free this thread's driver call is running, between
    /// its entry and its exit.
    static PENDING_FREE: Cell<Option<PendingFree>> = const { Cell::new(None) };
}

/// Records one driver call in the ledger.
///
/// # Safety
/// `data` is what CUPTI passes for driver callback `id`.
unsafe fn record(id: CallbackId, data: &CallbackData) {
    let params = data.function_params;
    if params.is_null() {
        return;
    }
    let is_free = matches!(
        id,
        cbid::MEM_FREE_V2 | cbid::MEM_FREE_ASYNC | cbid::MEM_FREE_ASYNC_PTSZ | cbid::MEM_RELEASE
    );
    if data.callback_site == CUPTI_API_ENTER {
        if !is_free {
            return;
        }
        // NOTE: a free's block leaves the live ones at entry, before the
        // driver may hand the address to another thread's allocation; it is
        // counted at exit, and only if the free succeeded.
        let key = if id == cbid::MEM_RELEASE {
            // SAFETY: the params struct of that call.
            BlockKey::Handle(unsafe { (*params.cast::<ReleaseParams>()).handle })
        } else {
            // SAFETY: the params struct of that call.
            BlockKey::Address(unsafe { (*params.cast::<FreeParams>()).dptr })
        };
        if let Some(pending) = LEDGER.free_begins(key) {
            // A free whose exit never came (none does in CUDA) counts as done.
            if let Ok(Some(earlier)) = PENDING_FREE.try_with(|p| p.replace(Some(pending))) {
                LEDGER.free_ends(earlier, true);
            }
        }
        return;
    }
    if data.callback_site != CUPTI_API_EXIT {
        return;
    }
    // SAFETY: at exit the driver domain's return value is a `CUresult`.
    let succeeded = !data.function_return_value.is_null()
        && unsafe { *data.function_return_value.cast::<CuResult>() } == 0;
    if is_free {
        if let Ok(Some(pending)) = PENDING_FREE.try_with(Cell::take) {
            LEDGER.free_ends(pending, succeeded);
        }
        return;
    }
    if !succeeded {
        return;
    }
    // SAFETY (each arm): the params struct of that call, whose output
    // pointers the driver has written, since it succeeded.
    let (key, bytes, device) = unsafe {
        match id {
            cbid::MEM_ALLOC_V2
            | cbid::MEM_ALLOC_MANAGED
            | cbid::MEM_ALLOC_ASYNC
            | cbid::MEM_ALLOC_ASYNC_PTSZ => {
                let p = &*params.cast::<AllocParams>();
                (address(p.dptr), p.bytesize as u64, context_device(data))
            }
            cbid::MEM_ALLOC_FROM_POOL_ASYNC | cbid::MEM_ALLOC_FROM_POOL_ASYNC_PTSZ => {
                let p = &*params.cast::<AllocFromPoolParams>();
                (address(p.dptr), p.bytesize as u64, context_device(data))
            }
            cbid::MEM_ALLOC_PITCH_V2 => {
                let p = &*params.cast::<AllocPitchParams>();
                let pitch = if p.p_pitch.is_null() { 0 } else { *p.p_pitch };
                let bytes = (pitch as u64).saturating_mul(p.height as u64);
                (address(p.dptr), bytes, context_device(data))
            }
            cbid::MEM_CREATE => {
                let p = &*params.cast::<CreateParams>();
                let handle = (!p.handle.is_null()).then(|| BlockKey::Handle(*p.handle));
                let device = match p.prop.as_ref() {
                    Some(prop) => u32::try_from(prop.location_id).ok(),
                    None => None,
                };
                (handle, p.size as u64, device)
            }
            _ => return,
        }
    };
    if let (Some(key), Some(device)) = (key, device) {
        LEDGER.allocated(key, bytes, device);
    }
}

/// The address a successful allocation wrote.
///
/// # Safety
/// `dptr` is null or points to the written `CUdeviceptr`.
unsafe fn address(dptr: *mut DevicePtr) -> Option<BlockKey> {
    // SAFETY: the caller vouches for `dptr`.
    (!dptr.is_null()).then(|| BlockKey::Address(unsafe { *dptr }))
}

/// The device of the call's context.
fn context_device(data: &CallbackData) -> Option<u32> {
    let device_id = GET_DEVICE_ID.get()?;
    let mut device = 0u32;
    // SAFETY: CUPTI's own function, on the context CUPTI handed us.
    let code = unsafe { device_id(data.context, &mut device) };
    (code == CUPTI_SUCCESS).then_some(device)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_library_is_an_error_not_a_panic() {
        let missing = Path::new("/nonexistent/memprof/libcupti.so");
        let err = subscribe(Some(missing)).unwrap_err();
        assert!(err.starts_with("cannot load CUPTI ("), "{err}");
    }
}
