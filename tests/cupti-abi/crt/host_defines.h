/*
 * A stand-in for the CUDA toolkit's crt/host_defines.h, which the
 * `nvidia-cuda-runtime-cu12` wheel's builtin_types.h includes but does not
 * ship (it comes with nvcc). It only defines the attribute macros that
 * cupti_callbacks.h's include chain uses; none changes a layout except
 * __align__, which is GCC's aligned attribute, as in the real file.
 * Written for memprof's ABI check (scripts/cupti-abi), not NVIDIA's.
 */
#ifndef MEMPROF_CUPTI_ABI_HOST_DEFINES_H
#define MEMPROF_CUPTI_ABI_HOST_DEFINES_H
#define __host__
#define __device__
#define __device_builtin__
#define __device_builtin_texture_type__
#define __device_builtin_surface_type__
#define __cudart_builtin__
#define CUDARTAPI
#define CUDARTAPI_CDECL
#define __align__(n) __attribute__((aligned(n)))
#define __builtin_align__(n) __attribute__((aligned(n)))
#endif
