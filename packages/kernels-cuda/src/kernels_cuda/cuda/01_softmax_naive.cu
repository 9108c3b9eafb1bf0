// 01 naive softmax: one thread per row, three passes straight from global memory.
//
// Pass 1 finds the row's max, pass 2 sums exp(x - max), pass 3 writes exp(x - max) / sum. It is
// correct for any N and is the baseline every later version is measured against. It is slow by
// design: the 32 threads of a warp work on 32 different rows, so each load touches 32 cache lines
// (nothing is coalesced); every element is read three times; and a row's work is serial in one
// thread, so a long row is as slow as one thread reading it. Expect a small fraction of the copy
// bandwidth at any shape. It runs at any N: the sum is compensated (Kahan), so its error stays
// at fp32 rounding instead of growing with the row length, as a plain serial fp32 sum's would.
#include "common.cuh"

extern "C" __global__ void softmax_naive(const elem_t* __restrict__ x, elem_t* __restrict__ y, i64 M, int N,
                                         i64 x_stride, i64 y_stride) {
  const i64 row = static_cast<i64>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (row >= M) return;
  const elem_t* xr = x + row * x_stride;
  elem_t* yr = y + row * y_stride;

  float m = KL_NEG_INF;
  for (int j = 0; j < N; ++j) m = fmaxf(m, to_f32(xr[j]));
  float s = 0.f, lost = 0.f;  // lost: the low-order part the last addition to s rounded away
  for (int j = 0; j < N; ++j) {
    const float term = expf(to_f32(xr[j]) - m) - lost;  // -inf row: exp(NaN) -> NaN, like torch
    const float next = s + term;
    lost = (next - s) - term;
    s = next;
  }
  for (int j = 0; j < N; ++j) yr[j] = from_f32(expf(to_f32(xr[j]) - m) / s);
}
