/*
 * What NVIDIA's CUPTI headers say about every number memprof-runtime's own
 * CUPTI bindings (memprof-runtime/src/gpu/cupti.rs) take from them:
 * constants, driver callback ids, type sizes, and the offset and size of
 * each field the runtime reads. One line per item, in the format of
 * `abi_lines` in cupti.rs; scripts/cupti-abi compiles this against the
 * headers of the `nvidia-cuda-cupti-cu12` wheel and diffs the two.
 *
 * A struct the runtime declares whole gets a `size` line; one it declares
 * only up to the fields it reads (a prefix) gets its fields alone.
 */
#include <stddef.h>
#include <stdio.h>

#include <cupti.h> /* includes generated_cuda_meta.h, which has no guard */

#define CONST(name) printf("const %s %lld\n", #name, (long long)(name))
#define CBID(fn) printf("cbid %s %d\n", #fn, (int)CUPTI_DRIVER_TRACE_CBID_##fn)
#define SIZE(type) printf("size %s %zu\n", #type, sizeof(type))
#define FIELD(type, field)                                                   \
    printf("field %s.%s at %zu size %zu\n", #type, #field,                  \
           offsetof(type, field), sizeof(((type *)0)->field))

/*
 * The signatures cupti.rs declares, written as C: the build fails if the
 * headers' prototypes differ. Their argument types' sizes are among the
 * lines below. (GCC's __builtin_types_compatible_p, so no symbol is linked.)
 */
#define SIGNATURE(fn, type)                                                   \
    _Static_assert(__builtin_types_compatible_p(__typeof__(&fn), type),     \
                   #fn " is not " #type)
SIGNATURE(cuptiSubscribe,
          CUptiResult (*)(CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *));
SIGNATURE(cuptiEnableCallback,
          CUptiResult (*)(uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain,
                          CUpti_CallbackId));
SIGNATURE(cuptiUnsubscribe, CUptiResult (*)(CUpti_SubscriberHandle));
SIGNATURE(cuptiGetDeviceId, CUptiResult (*)(CUcontext, uint32_t *));
SIGNATURE(cuptiGetResultString, CUptiResult (*)(CUptiResult, const char **));
_Static_assert(__builtin_types_compatible_p(
                   CUpti_CallbackFunc,
                   void (*)(void *, CUpti_CallbackDomain, CUpti_CallbackId,
                            const void *)),
               "CUpti_CallbackFunc changed");

int main(void) {
    CONST(CUPTI_SUCCESS);
    CONST(CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
    CONST(CUPTI_CB_DOMAIN_DRIVER_API);
    CONST(CUPTI_API_ENTER);
    CONST(CUPTI_API_EXIT);

    CBID(cuMemAlloc_v2);
    CBID(cuMemAllocPitch_v2);
    CBID(cuMemFree_v2);
    CBID(cuMemAllocManaged);
    CBID(cuMemCreate);
    CBID(cuMemRelease);
    CBID(cuMemAllocAsync);
    CBID(cuMemAllocAsync_ptsz);
    CBID(cuMemFreeAsync);
    CBID(cuMemFreeAsync_ptsz);
    CBID(cuMemAllocFromPoolAsync);
    CBID(cuMemAllocFromPoolAsync_ptsz);

    SIZE(CUptiResult);
    SIZE(CUpti_CallbackDomain);
    SIZE(CUpti_ApiCallbackSite);
    SIZE(CUpti_CallbackId);
    SIZE(CUresult);
    SIZE(CUdeviceptr);
    SIZE(CUmemGenericAllocationHandle);

    SIZE(CUpti_CallbackData);
    FIELD(CUpti_CallbackData, callbackSite);
    FIELD(CUpti_CallbackData, functionName);
    FIELD(CUpti_CallbackData, functionParams);
    FIELD(CUpti_CallbackData, functionReturnValue);
    FIELD(CUpti_CallbackData, symbolName);
    FIELD(CUpti_CallbackData, context);
    FIELD(CUpti_CallbackData, contextUid);
    FIELD(CUpti_CallbackData, correlationData);
    FIELD(CUpti_CallbackData, correlationId);

    SIZE(cuMemAlloc_v2_params);
    FIELD(cuMemAlloc_v2_params, dptr);
    FIELD(cuMemAlloc_v2_params, bytesize);
    FIELD(cuMemAllocManaged_params, dptr);
    FIELD(cuMemAllocManaged_params, bytesize);
    FIELD(cuMemAllocAsync_params, dptr);
    FIELD(cuMemAllocAsync_params, bytesize);
    FIELD(cuMemAllocAsync_ptsz_params, dptr);
    FIELD(cuMemAllocAsync_ptsz_params, bytesize);

    SIZE(cuMemAllocPitch_v2_params);
    FIELD(cuMemAllocPitch_v2_params, dptr);
    FIELD(cuMemAllocPitch_v2_params, pPitch);
    FIELD(cuMemAllocPitch_v2_params, WidthInBytes);
    FIELD(cuMemAllocPitch_v2_params, Height);
    FIELD(cuMemAllocPitch_v2_params, ElementSizeBytes);

    SIZE(cuMemFree_v2_params);
    FIELD(cuMemFree_v2_params, dptr);
    FIELD(cuMemFreeAsync_params, dptr);
    FIELD(cuMemFreeAsync_ptsz_params, dptr);

    SIZE(cuMemAllocFromPoolAsync_params);
    FIELD(cuMemAllocFromPoolAsync_params, dptr);
    FIELD(cuMemAllocFromPoolAsync_params, bytesize);
    FIELD(cuMemAllocFromPoolAsync_params, pool);
    FIELD(cuMemAllocFromPoolAsync_params, hStream);
    SIZE(cuMemAllocFromPoolAsync_ptsz_params);
    FIELD(cuMemAllocFromPoolAsync_ptsz_params, dptr);
    FIELD(cuMemAllocFromPoolAsync_ptsz_params, bytesize);
    FIELD(cuMemAllocFromPoolAsync_ptsz_params, pool);
    FIELD(cuMemAllocFromPoolAsync_ptsz_params, hStream);

    SIZE(cuMemCreate_params);
    FIELD(cuMemCreate_params, handle);
    FIELD(cuMemCreate_params, size);
    FIELD(cuMemCreate_params, prop);
    FIELD(cuMemCreate_params, flags);
    FIELD(CUmemAllocationProp, type);
    FIELD(CUmemAllocationProp, requestedHandleTypes);
    FIELD(CUmemAllocationProp, location.type);
    FIELD(CUmemAllocationProp, location.id);

    SIZE(cuMemRelease_params);
    FIELD(cuMemRelease_params, handle);
    return 0;
}
