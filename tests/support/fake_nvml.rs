//! Builds the fake NVML library (`tests/fake-nvml`) and drives it, for tests of
//! the GPU columns on machines without a GPU. Include it with
//! `#[path = "support/fake_nvml.rs"] mod fake_nvml;`, beside
//! `support/fake_library.rs` as `mod fake_library`.
//!
//! Hand [`library`] to `Nvml::builder().lib_path(..)` (or to memprof through
//! `MEMPROF_NVML_LIB`), and steer what that NVML reports through
//! [`FakeNvml`]: both load the same path, so they share one copy of the
//! library's state.

// Each test crate that includes this file uses a different part of it.
#![allow(dead_code)]

use std::ffi::c_uint;
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard, OnceLock, PoisonError};

/// Bytes of memory on every fake device (80 GiB).
pub const TOTAL_BYTES: u64 = 80 << 30;

/// Return codes of the control functions, as NVML numbers them.
const NVML_SUCCESS: c_uint = 0;

/// The path of the fake `libnvidia-ml.so`, built on first use in this test
/// process. Panics with cargo's output if the build fails.
pub fn library() -> PathBuf {
    // A child test process is handed the library its parent built.
    if let Some(path) = std::env::var_os("MEMPROF_NVML_LIB") {
        return PathBuf::from(path);
    }
    static LIBRARY: OnceLock<PathBuf> = OnceLock::new();
    LIBRARY.get_or_init(build).clone()
}

fn build() -> PathBuf {
    crate::fake_library::build("memprof-fake-nvml", "memprof_fake_nvml")
}

/// The fake library's control functions, loaded from [`library`].
///
/// Its state is process-wide, so a `FakeNvml` also holds a lock that keeps the
/// tests of one binary from steering it at the same time: make one at the
/// start of a test and keep it to the end.
pub struct FakeNvml {
    reset: unsafe extern "C" fn(),
    set_device_count: unsafe extern "C" fn(u32) -> c_uint,
    set_baseline: unsafe extern "C" fn(u32, u64) -> c_uint,
    alloc: unsafe extern "C" fn(u32, u32, u64) -> c_uint,
    free: unsafe extern "C" fn(u32, u32, u64) -> c_uint,
    fail_after: unsafe extern "C" fn(i64),
    query_count: unsafe extern "C" fn() -> u64,
    live_inits: unsafe extern "C" fn() -> c_uint,
    /// Keeps the functions above loaded.
    _library: libloading::Library,
    _exclusive: MutexGuard<'static, ()>,
}

impl FakeNvml {
    /// Waits for other tests of this binary to finish with the fake, then
    /// loads it and resets it: 1 device, no processes, nothing failing.
    pub fn new() -> Self {
        static IN_USE: Mutex<()> = Mutex::new(());
        // A test that failed while holding the lock leaves nothing to repair:
        // the reset below starts over.
        let exclusive = IN_USE.lock().unwrap_or_else(PoisonError::into_inner);
        let path = library();
        // SAFETY: the fake has no constructors of its own; loading it runs
        // only std's initializers, which any Rust cdylib has.
        let library = unsafe { libloading::Library::new(&path) }
            .unwrap_or_else(|e| panic!("cannot load {}: {e}", path.display()));
        /// Copies a function pointer out of the library.
        ///
        /// # Safety
        ///
        /// `T` is the type of the function exported as `name`.
        unsafe fn function<T: Copy>(library: &libloading::Library, name: &str) -> T {
            // SAFETY: the caller vouches for `T`.
            let symbol = unsafe { library.get::<T>(name.as_bytes()) };
            *symbol.unwrap_or_else(|e| panic!("the fake nvml library lacks {name}: {e}"))
        }
        // SAFETY: each type is the signature of the `extern "C" fn` of that
        // name in tests/fake-nvml/src/lib.rs. The pointers outlive neither the
        // library nor `self`, which holds it.
        let fake = unsafe {
            Self {
                reset: function(&library, "fake_nvml_reset"),
                set_device_count: function(&library, "fake_nvml_set_device_count"),
                set_baseline: function(&library, "fake_nvml_set_baseline"),
                alloc: function(&library, "fake_nvml_alloc"),
                free: function(&library, "fake_nvml_free"),
                fail_after: function(&library, "fake_nvml_fail_after"),
                query_count: function(&library, "fake_nvml_query_count"),
                live_inits: function(&library, "fake_nvml_live_inits"),
                _library: library,
                _exclusive: exclusive,
            }
        };
        fake.reset();
        fake
    }

    /// 1 device, no processes, baselines 0, no failure scheduled, query count 0.
    pub fn reset(&self) {
        // SAFETY: loaded with its signature; `self` keeps the library loaded.
        unsafe { (self.reset)() }
    }

    /// How many devices NVML reports, at most 8.
    pub fn set_device_count(&self, count: u32) {
        // SAFETY: as in `reset`.
        let code = unsafe { (self.set_device_count)(count) };
        check(code, || format!("set_device_count({count})"));
    }

    /// Bytes used on `device` by processes that NVML does not list.
    pub fn set_baseline(&self, device: u32, bytes: u64) {
        // SAFETY: as in `reset`.
        let code = unsafe { (self.set_baseline)(device, bytes) };
        check(code, || {
            format!("set_baseline(device {device}, {bytes} bytes)")
        });
    }

    /// `pid` takes `bytes` more on `device`, like `cudaMalloc`.
    pub fn alloc(&self, device: u32, pid: u32, bytes: u64) {
        // SAFETY: as in `reset`.
        let code = unsafe { (self.alloc)(device, pid, bytes) };
        check(code, || {
            format!("alloc(device {device}, pid {pid}, {bytes} bytes)")
        });
    }

    /// `pid` gives back `bytes` on `device`, like `cudaFree`.
    pub fn free(&self, device: u32, pid: u32, bytes: u64) {
        // SAFETY: as in `reset`.
        let code = unsafe { (self.free)(device, pid, bytes) };
        check(code, || {
            format!("free(device {device}, pid {pid}, {bytes} bytes)")
        });
    }

    /// After `n` more device queries, they all fail with
    /// `NVML_ERROR_GPU_IS_LOST`; negative: never.
    pub fn fail_after(&self, n: i64) {
        // SAFETY: as in `reset`.
        unsafe { (self.fail_after)(n) }
    }

    /// Memory-info and process-list calls since the last reset, failed ones
    /// included. `Device::running_compute_processes` makes two when a process
    /// is listed (count, then list) and one when none is.
    pub fn query_count(&self) -> u64 {
        // SAFETY: as in `reset`.
        unsafe { (self.query_count)() }
    }

    /// `nvmlInit*` calls not yet matched by `nvmlShutdown`.
    pub fn live_inits(&self) -> u32 {
        // SAFETY: as in `reset`.
        unsafe { (self.live_inits)() }
    }
}

fn check(code: c_uint, call: impl FnOnce() -> String) {
    assert_eq!(
        code,
        NVML_SUCCESS,
        "the fake nvml library refused {}: nvml error {code}",
        call()
    );
}
