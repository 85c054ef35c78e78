//! The bindings to CUPTI's callback API that memprof uses: result codes,
//! the driver domain's callback ids for the calls that allocate or free
//! device memory, and those calls' parameter structs, up to the fields read.
//! Our own and small; `scripts/cupti-abi` checks every number here against
//! NVIDIA's headers ([`abi_lines`]).

use std::ffi::{c_char, c_int, c_uint, c_void};

/// `CUptiResult`.
pub(crate) type CuptiResult = c_uint;
pub(crate) const CUPTI_SUCCESS: CuptiResult = 0;
/// Another subscriber holds CUPTI (Nsight Systems or Compute, before
/// CUPTI 13.3).
pub(crate) const CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED: CuptiResult = 39;

/// `CUpti_CallbackDomain`.
pub(crate) type CallbackDomain = c_uint;
/// The driver API.
pub(crate) const CUPTI_CB_DOMAIN_DRIVER_API: CallbackDomain = 1;
/// `CUpti_ApiCallbackSite`.
pub(crate) type CallbackSite = c_uint;
pub(crate) const CUPTI_API_ENTER: CallbackSite = 0;
pub(crate) const CUPTI_API_EXIT: CallbackSite = 1;
/// `CUpti_CallbackId`.
pub(crate) type CallbackId = u32;

/// Driver callback ids (`CUpti_driver_api_trace_cbid`), stable across CUDA 12.
pub(crate) mod cbid {
    use super::CallbackId;

    pub(crate) const MEM_ALLOC_V2: CallbackId = 243;
    pub(crate) const MEM_ALLOC_PITCH_V2: CallbackId = 244;
    pub(crate) const MEM_FREE_V2: CallbackId = 245;
    pub(crate) const MEM_ALLOC_MANAGED: CallbackId = 371;
    pub(crate) const MEM_CREATE: CallbackId = 549;
    pub(crate) const MEM_RELEASE: CallbackId = 550;
    pub(crate) const MEM_ALLOC_ASYNC: CallbackId = 598;
    pub(crate) const MEM_ALLOC_ASYNC_PTSZ: CallbackId = 599;
    pub(crate) const MEM_FREE_ASYNC: CallbackId = 600;
    pub(crate) const MEM_FREE_ASYNC_PTSZ: CallbackId = 601;
    pub(crate) const MEM_ALLOC_FROM_POOL_ASYNC: CallbackId = 611;
    pub(crate) const MEM_ALLOC_FROM_POOL_ASYNC_PTSZ: CallbackId = 612;

    /// Every call the subscriber enables.
    pub(crate) const ALL: [CallbackId; 12] = [
        MEM_ALLOC_V2,
        MEM_ALLOC_PITCH_V2,
        MEM_FREE_V2,
        MEM_ALLOC_MANAGED,
        MEM_CREATE,
        MEM_RELEASE,
        MEM_ALLOC_ASYNC,
        MEM_ALLOC_ASYNC_PTSZ,
        MEM_FREE_ASYNC,
        MEM_FREE_ASYNC_PTSZ,
        MEM_ALLOC_FROM_POOL_ASYNC,
        MEM_ALLOC_FROM_POOL_ASYNC_PTSZ,
    ];
}

/// `CUdeviceptr`.
pub(crate) type DevicePtr = u64;
/// `CUmemGenericAllocationHandle`.
type AllocationHandle = u64;
/// `CUresult`: the driver domain's return value.
pub(crate) type CuResult = c_int;

/// `CUpti_CallbackData`.
#[repr(C)]
#[derive(Debug)]
pub(crate) struct CallbackData {
    pub(crate) callback_site: CallbackSite,
    pub(crate) function_name: *const c_char,
    pub(crate) function_params: *const c_void,
    /// A `CUresult` for the driver domain; set at exit.
    pub(crate) function_return_value: *mut c_void,
    pub(crate) symbol_name: *const c_char,
    pub(crate) context: *mut c_void,
    pub(crate) context_uid: u32,
    pub(crate) correlation_data: *mut u64,
    pub(crate) correlation_id: u32,
}

/// `cuMemAlloc_v2_params`, `cuMemAllocAsync(_ptsz)_params` (a stream
/// follows) and `cuMemAllocManaged_params` (flags follow): the fields read.
#[repr(C)]
#[derive(Debug)]
pub(crate) struct AllocParams {
    pub(crate) dptr: *mut DevicePtr,
    pub(crate) bytesize: usize,
}

/// `cuMemAllocPitch_v2_params`.
#[repr(C)]
#[derive(Debug)]
pub(crate) struct AllocPitchParams {
    pub(crate) dptr: *mut DevicePtr,
    pub(crate) p_pitch: *mut usize,
    pub(crate) width_in_bytes: usize,
    pub(crate) height: usize,
    pub(crate) element_size_bytes: c_uint,
}

/// `cuMemFree_v2_params` and `cuMemFreeAsync(_ptsz)_params` (a stream
/// follows).
#[repr(C)]
#[derive(Debug)]
pub(crate) struct FreeParams {
    pub(crate) dptr: DevicePtr,
}

/// `cuMemCreate_params`.
#[repr(C)]
#[derive(Debug)]
pub(crate) struct CreateParams {
    pub(crate) handle: *mut AllocationHandle,
    pub(crate) size: usize,
    pub(crate) prop: *const AllocationProp,
    pub(crate) flags: u64,
}

/// `CUmemAllocationProp`, up to its location: the fields read.
#[repr(C)]
#[derive(Debug)]
pub(crate) struct AllocationProp {
    pub(crate) kind: c_uint,
    pub(crate) requested_handle_types: c_uint,
    /// `CUmemLocation::type`.
    pub(crate) location_type: c_uint,
    /// `CUmemLocation::id`: the device ordinal for a device location.
    pub(crate) location_id: c_int,
}

/// `cuMemRelease_params`.
#[repr(C)]
#[derive(Debug)]
pub(crate) struct ReleaseParams {
    pub(crate) handle: AllocationHandle,
}

/// `cuMemAllocFromPoolAsync(_ptsz)_params`.
#[repr(C)]
#[derive(Debug)]
pub(crate) struct AllocFromPoolParams {
    pub(crate) dptr: *mut DevicePtr,
    pub(crate) bytesize: usize,
    pub(crate) pool: *mut c_void,
    pub(crate) stream: *mut c_void,
}

/// Every constant, callback id, type size and field read above, under the
/// names of NVIDIA's headers, one per line: `scripts/cupti-abi` prints the
/// same from cupti.h and generated_cuda_meta.h (tests/cupti-abi/abi.c) and
/// diffs the two. A struct declared whole has a `size` line; one declared
/// up to the fields read, or standing for several calls' params, lists
/// those fields under each call's struct.
#[cfg(test)]
pub(crate) fn abi_lines() -> Vec<String> {
    use std::mem::{offset_of, size_of};

    /// The size of the field that `field` projects to.
    fn size_of_field<T, F>(_field: for<'a> fn(&'a T) -> &'a F) -> usize {
        size_of::<F>()
    }
    macro_rules! lines {
        ($lines:ident; whole $c:expr => $rust:ty { $($body:tt)* }) => {
            $lines.push(format!("size {} {}", $c, size_of::<$rust>()));
            lines!($lines; $c => $rust { $($body)* });
        };
        ($lines:ident; $c:expr => $rust:ty { $($c_field:literal = $field:ident),* $(,)? }) => {
            $($lines.push(format!(
                "field {}.{} at {} size {}",
                $c,
                $c_field,
                offset_of!($rust, $field),
                size_of_field(|s: &$rust| &s.$field),
            ));)*
        };
    }
    let mut lines = vec![
        format!("const CUPTI_SUCCESS {CUPTI_SUCCESS}"),
        format!(
            "const CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED {}",
            CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED
        ),
        format!("const CUPTI_CB_DOMAIN_DRIVER_API {CUPTI_CB_DOMAIN_DRIVER_API}"),
        format!("const CUPTI_API_ENTER {CUPTI_API_ENTER}"),
        format!("const CUPTI_API_EXIT {CUPTI_API_EXIT}"),
    ];
    for (name, id) in [
        ("cuMemAlloc_v2", cbid::MEM_ALLOC_V2),
        ("cuMemAllocPitch_v2", cbid::MEM_ALLOC_PITCH_V2),
        ("cuMemFree_v2", cbid::MEM_FREE_V2),
        ("cuMemAllocManaged", cbid::MEM_ALLOC_MANAGED),
        ("cuMemCreate", cbid::MEM_CREATE),
        ("cuMemRelease", cbid::MEM_RELEASE),
        ("cuMemAllocAsync", cbid::MEM_ALLOC_ASYNC),
        ("cuMemAllocAsync_ptsz", cbid::MEM_ALLOC_ASYNC_PTSZ),
        ("cuMemFreeAsync", cbid::MEM_FREE_ASYNC),
        ("cuMemFreeAsync_ptsz", cbid::MEM_FREE_ASYNC_PTSZ),
        ("cuMemAllocFromPoolAsync", cbid::MEM_ALLOC_FROM_POOL_ASYNC),
        (
            "cuMemAllocFromPoolAsync_ptsz",
            cbid::MEM_ALLOC_FROM_POOL_ASYNC_PTSZ,
        ),
    ] {
        lines.push(format!("cbid {name} {id}"));
    }
    // The types of the signatures' arguments (abi.c checks the signatures).
    for (name, size) in [
        ("CUptiResult", size_of::<CuptiResult>()),
        ("CUpti_CallbackDomain", size_of::<CallbackDomain>()),
        ("CUpti_ApiCallbackSite", size_of::<CallbackSite>()),
        ("CUpti_CallbackId", size_of::<CallbackId>()),
        ("CUresult", size_of::<CuResult>()),
        ("CUdeviceptr", size_of::<DevicePtr>()),
        (
            "CUmemGenericAllocationHandle",
            size_of::<AllocationHandle>(),
        ),
    ] {
        lines.push(format!("size {name} {size}"));
    }
    lines!(lines; whole "CUpti_CallbackData" => CallbackData {
        "callbackSite" = callback_site,
        "functionName" = function_name,
        "functionParams" = function_params,
        "functionReturnValue" = function_return_value,
        "symbolName" = symbol_name,
        "context" = context,
        "contextUid" = context_uid,
        "correlationData" = correlation_data,
        "correlationId" = correlation_id,
    });
    lines!(lines; whole "cuMemAlloc_v2_params" => AllocParams { "dptr" = dptr, "bytesize" = bytesize });
    for c in [
        "cuMemAllocManaged_params",
        "cuMemAllocAsync_params",
        "cuMemAllocAsync_ptsz_params",
    ] {
        lines!(lines; c => AllocParams { "dptr" = dptr, "bytesize" = bytesize });
    }
    lines!(lines; whole "cuMemAllocPitch_v2_params" => AllocPitchParams {
        "dptr" = dptr,
        "pPitch" = p_pitch,
        "WidthInBytes" = width_in_bytes,
        "Height" = height,
        "ElementSizeBytes" = element_size_bytes,
    });
    lines!(lines; whole "cuMemFree_v2_params" => FreeParams { "dptr" = dptr });
    for c in ["cuMemFreeAsync_params", "cuMemFreeAsync_ptsz_params"] {
        lines!(lines; c => FreeParams { "dptr" = dptr });
    }
    for c in [
        "cuMemAllocFromPoolAsync_params",
        "cuMemAllocFromPoolAsync_ptsz_params",
    ] {
        lines!(lines; whole c => AllocFromPoolParams {
            "dptr" = dptr,
            "bytesize" = bytesize,
            "pool" = pool,
            "hStream" = stream,
        });
    }
    lines!(lines; whole "cuMemCreate_params" => CreateParams {
        "handle" = handle,
        "size" = size,
        "prop" = prop,
        "flags" = flags,
    });
    lines!(lines; "CUmemAllocationProp" => AllocationProp {
        "type" = kind,
        "requestedHandleTypes" = requested_handle_types,
        "location.type" = location_type,
        "location.id" = location_id,
    });
    lines!(lines; whole "cuMemRelease_params" => ReleaseParams { "handle" = handle });
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    /// For `scripts/cupti-abi`: writes [`abi_lines`] to the file named by
    /// `MEMPROF_CUPTI_ABI_OUT`.
    #[test]
    #[ignore = "scripts/cupti-abi runs it, to compare with NVIDIA's headers"]
    fn write_abi_lines() {
        let path = std::env::var_os("MEMPROF_CUPTI_ABI_OUT")
            .expect("MEMPROF_CUPTI_ABI_OUT names the file to write");
        let mut text = abi_lines().join("\n");
        text.push('\n');
        std::fs::write(&path, text).unwrap();
    }

    /// A callback enabled without its id in [`abi_lines`] would escape
    /// the check against the headers.
    #[test]
    fn every_enabled_callback_is_checked_against_the_headers() {
        let lines = abi_lines();
        for id in cbid::ALL {
            let suffix = format!(" {id}");
            assert!(
                lines
                    .iter()
                    .any(|l| l.starts_with("cbid ") && l.ends_with(&suffix)),
                "callback {id} is enabled but not in abi_lines"
            );
        }
    }
}
