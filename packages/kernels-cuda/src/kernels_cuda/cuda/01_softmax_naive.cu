// 01 naive softmax: one thread per row, three passes straight from global memory.
//
// Pass 1 finds the row's max, pass 2 sums exp(x - max), pass 3 writes exp(x - max) / sum. It is
// correct for any N and is the baseline every later version is measured against. It is slow by
// design: the 32 threads of a warp work on 32 different rows, so each load touches 32 cache lines
// (nothing is coalesced); every element is read three times; and a row's work is serial in one
// thread, so a long row is as slow as one thread reading it. Expect a small fraction of the copy
// bandwidth even for the short rows it is meant for.
#include "common.cuh"

extern "C" __global__ void softmax_naive(const elem_t* __restrict__ x, elem_t* __restrict__ y, i64 M, int N,
                                         i64 x_stride, i64 y_stride) {
  const i64 row = static_cast<i64>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (row >= M) return;
  const elem_t* xr = x + row * x_stride;
  elem_t* yr = y + row * y_stride;

  float m = KL_NEG_INF;
  for (int j = 0; j < N; ++j) m = fmaxf(m, to_f32(xr[j]));
  float s = 0.f;
  for (int j = 0; j < N; ++j) s += expf(to_f32(xr[j]) - m);  // -inf row: exp(NaN) -> NaN, like torch
  for (int j = 0; j < N; ++j) yr[j] = from_f32(expf(to_f32(xr[j]) - m) / s);
}
