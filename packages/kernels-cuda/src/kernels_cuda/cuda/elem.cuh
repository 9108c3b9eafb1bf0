// elem.cuh: the element types and their conversions, which common.cuh (00-08) and rows.cuh (09-11)
// share.
//
// Self-contained like them (NVRTC has no include path, and no <cuda_fp16.h> or <cuda_bf16.h>): the
// 16-bit types are their bit patterns, converted in inline PTX. KL_DTYPE, a -D option codegen sets,
// picks elem_t; fp64 (KL_F64) is rows.cuh's alone, whose kernels reduce in the element type.
#pragma once

typedef long long i64;
typedef unsigned short u16;

#define KL_F32 0
#define KL_F16 1
#define KL_BF16 2
#define KL_F64 3

#if KL_DTYPE == KL_F64
typedef double elem_t;
#elif KL_DTYPE == KL_F32
typedef float elem_t;
__device__ __forceinline__ float to_f32(float v) { return v; }
__device__ __forceinline__ float from_f32(float f) { return f; }
#elif KL_DTYPE == KL_F16
typedef u16 elem_t;  // IEEE binary16, as its bit pattern
__device__ __forceinline__ float to_f32(u16 v) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(v));
  return f;
}
__device__ __forceinline__ u16 from_f32(float f) {
  u16 v;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(v) : "f"(f));
  return v;
}
#elif KL_DTYPE == KL_BF16
typedef u16 elem_t;  // bfloat16, as its bit pattern: the top half of an fp32
__device__ __forceinline__ float to_f32(u16 v) { return __uint_as_float(static_cast<unsigned>(v) << 16); }
__device__ __forceinline__ u16 from_f32(float f) {
  u16 v;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(v) : "f"(f));  // round to nearest even, NaN stays NaN (sm_80+)
  return v;
}
#else
#error "KL_DTYPE must be KL_F32, KL_F16, KL_BF16 or KL_F64"
#endif
