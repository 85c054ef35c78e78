//! Builds the fake CUPTI library (`tests/fake-cupti`) and drives it, for tests
//! of counted GPU columns on machines without a GPU. Include it with
//! `#[path = "support/fake_cupti.rs"] mod fake_cupti;`, beside
//! `support/fake_library.rs` as `mod fake_library`.
//!
//! Hand [`library`] to memprof through `MEMPROF_CUPTI_LIB`; [`FakeCupti`]
//! loads the same path, so both share one copy of the library's state, and
//! each of its calls plays one driver call on the calling thread.

// Each test crate that includes this file uses a different part of it.
#![allow(dead_code)]

use std::ffi::c_int;
use std::path::PathBuf;
use std::sync::OnceLock;

/// Driver callback ids, as CUPTI numbers them.
pub mod cbid {
    pub const MEM_ALLOC_V2: u32 = 243;
    pub const MEM_ALLOC_PITCH_V2: u32 = 244;
    pub const MEM_FREE_V2: u32 = 245;
    pub const MEM_ALLOC_MANAGED: u32 = 371;
    pub const MEM_CREATE: u32 = 549;
    pub const MEM_RELEASE: u32 = 550;
    pub const MEM_ALLOC_ASYNC: u32 = 598;
    pub const MEM_ALLOC_ASYNC_PTSZ: u32 = 599;
    pub const MEM_FREE_ASYNC: u32 = 600;
    pub const MEM_FREE_ASYNC_PTSZ: u32 = 601;
    pub const MEM_ALLOC_FROM_POOL_ASYNC: u32 = 611;
    pub const MEM_ALLOC_FROM_POOL_ASYNC_PTSZ: u32 = 612;
}

/// `CUDA_ERROR_OUT_OF_MEMORY`.
pub const CUDA_ERROR_OUT_OF_MEMORY: c_int = 2;

/// `CUDA_ERROR_INVALID_VALUE`.
pub const CUDA_ERROR_INVALID_VALUE: c_int = 1;

/// The path of the fake `libcupti.so`, built on first use in this test
/// process. Panics with cargo's output if the build fails.
pub fn library() -> PathBuf {
    if let Some(path) = std::env::var_os("MEMPROF_CUPTI_LIB") {
        return PathBuf::from(path);
    }
    static LIBRARY: OnceLock<PathBuf> = OnceLock::new();
    LIBRARY.get_or_init(build).clone()
}

fn build() -> PathBuf {
    crate::fake_library::build("memprof-fake-cupti", "memprof_fake_cupti")
}

/// The fake library's driver calls, loaded from [`library`].
pub struct FakeCupti {
    alloc: unsafe extern "C" fn(u32, u32, u64, c_int) -> u64,
    alloc_pitch: unsafe extern "C" fn(u32, u64, u64, c_int) -> u64,
    free: unsafe extern "C" fn(u32, u32, u64, c_int),
    enabled: unsafe extern "C" fn(u32) -> u32,
    subscriptions: unsafe extern "C" fn() -> u32,
    /// Keeps the functions above loaded.
    _library: libloading::Library,
}

impl FakeCupti {
    pub fn new() -> Self {
        let path = library();
        // SAFETY: the fake has no constructors of its own.
        let library = unsafe { libloading::Library::new(&path) }
            .unwrap_or_else(|e| panic!("cannot load {}: {e}", path.display()));
        /// # Safety
        /// `T` is the type of the function exported as `name`.
        unsafe fn function<T: Copy>(library: &libloading::Library, name: &str) -> T {
            // SAFETY: the caller vouches for `T`.
            let symbol = unsafe { library.get::<T>(name.as_bytes()) };
            *symbol.unwrap_or_else(|e| panic!("the fake cupti library lacks {name}: {e}"))
        }
        // SAFETY: each type is the signature of the `extern "C" fn` of that
        // name in tests/fake-cupti/src/lib.rs; `self` keeps the library.
        unsafe {
            Self {
                alloc: function(&library, "fake_cupti_alloc"),
                alloc_pitch: function(&library, "fake_cupti_alloc_pitch"),
                free: function(&library, "fake_cupti_free"),
                enabled: function(&library, "fake_cupti_enabled"),
                subscriptions: function(&library, "fake_cupti_subscriptions"),
                _library: library,
            }
        }
    }

    /// Driver call `cbid` allocates `bytes` on `device`; the new address
    /// (or handle).
    pub fn alloc(&self, cbid: u32, device: u32, bytes: u64) -> u64 {
        // SAFETY: loaded with its signature; `self` keeps the library loaded.
        unsafe { (self.alloc)(cbid, device, bytes, 0) }
    }

    /// Driver call `cbid` fails with `code`.
    pub fn alloc_failing(&self, cbid: u32, device: u32, bytes: u64, code: c_int) {
        // SAFETY: as in `alloc`.
        unsafe { (self.alloc)(cbid, device, bytes, code) };
    }

    /// `cuMemAllocPitch_v2`: `height` rows of `width` bytes, each row padded
    /// to 512 bytes.
    pub fn alloc_pitch(&self, device: u32, width: u64, height: u64) -> u64 {
        // SAFETY: as in `alloc`.
        unsafe { (self.alloc_pitch)(device, width, height, 0) }
    }

    /// Driver call `cbid` frees `address` (or releases a handle).
    pub fn free(&self, cbid: u32, device: u32, address: u64) {
        // SAFETY: as in `alloc`.
        unsafe { (self.free)(cbid, device, address, 0) }
    }

    /// Driver call `cbid` refuses to free `address` (or release a handle),
    /// returning `code`.
    pub fn free_failing(&self, cbid: u32, device: u32, address: u64, code: c_int) {
        // SAFETY: as in `alloc`.
        unsafe { (self.free)(cbid, device, address, code) }
    }

    /// Whether driver call `cbid` has its callback enabled.
    pub fn enabled(&self, cbid: u32) -> bool {
        // SAFETY: as in `alloc`.
        unsafe { (self.enabled)(cbid) == 1 }
    }

    /// Live subscriptions.
    pub fn subscriptions(&self) -> u32 {
        // SAFETY: as in `alloc`.
        unsafe { (self.subscriptions)() }
    }
}
