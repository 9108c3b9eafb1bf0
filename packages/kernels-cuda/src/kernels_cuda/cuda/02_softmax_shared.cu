// 02 shared-memory softmax: one block per row, block-wide tree reductions.
//
// The BLOCK threads of a block stride through their row together, so consecutive threads read
// consecutive elements: every load is coalesced, and a row's work is spread over a whole block.
// Each statistic (max, then sum of exp) is reduced across the block by a tree in shared memory:
// log2(BLOCK) halving steps with a __syncthreads after each. What it still leaves on the table:
// the row is read three times (the second and third reads mostly hit L2 for rows of a few KB,
// not for long rows), loads are one element wide, and each row pays ~2 log2(BLOCK) barriers.
//
// Constants: KL_BLOCK (threads per block, a power of two).
#include "common.cuh"

constexpr int BLOCK = KL_BLOCK;

// Reduce one value per thread over the block; every thread gets the result.
template <bool IS_MAX> __device__ __forceinline__ float block_reduce(float v, float* buf) {
  const int t = threadIdx.x;
  buf[t] = v;
  __syncthreads();
#pragma unroll
  for (int half = BLOCK / 2; half > 0; half >>= 1) {
    if (t < half) buf[t] = IS_MAX ? fmaxf(buf[t], buf[t + half]) : buf[t] + buf[t + half];
    __syncthreads();
  }
  const float r = buf[0];
  __syncthreads();  // buf is written again by the next reduction
  return r;
}

extern "C" __global__ void __launch_bounds__(BLOCK)
    softmax_shared(const elem_t* __restrict__ x, elem_t* __restrict__ y, i64 M, int N, i64 x_stride,
                   i64 y_stride) {
  __shared__ float buf[BLOCK];
  for (i64 row = blockIdx.x; row < M; row += gridDim.x) {
    const elem_t* xr = x + row * x_stride;
    elem_t* yr = y + row * y_stride;

    float m = KL_NEG_INF;
    for (int j = threadIdx.x; j < N; j += BLOCK) m = fmaxf(m, to_f32(xr[j]));
    m = block_reduce<true>(m, buf);

    float s = 0.f;
    for (int j = threadIdx.x; j < N; j += BLOCK) s += expf(to_f32(xr[j]) - m);
    s = block_reduce<false>(s, buf);

    for (int j = threadIdx.x; j < N; j += BLOCK) yr[j] = from_f32(expf(to_f32(xr[j]) - m) / s);
  }
}
