// 05 online softmax: any row length on any GPU, two passes over DRAM.
//
// For GPUs without clusters (sm_80) and for rows longer than a cluster's shared memory holds. One
// block per row. Pass 1 streams the row once with UNROLL 16-byte loads in flight per thread,
// keeping a running (max, sum of exp) per thread, where the sum is rescaled whenever the max grows
// (the online-softmax identity), so there is no separate max pass; the block merges the pairs.
// Pass 2 streams the row again and writes exp(x - max) / sum. Three accesses per element where v3
// and the cluster kernel make two: ~1.5x their bytes once the second read misses L2, which it does when the
// rows in flight outgrow L2 (an H100 keeps ~132 rows in flight in 50 MB: rows over ~300 KB miss).
//
// Constants: KL_THREADS, KL_VEC (elements per pack; divides N), KL_UNROLL (packs in flight).
#include "common.cuh"

constexpr int THREADS = KL_THREADS, VEC = KL_VEC, UNROLL = KL_UNROLL;
constexpr int WARPS = THREADS / 32;

// Two blocks per SM (<= 64 registers at 512 threads): one block's reduction between its passes
// then overlaps the other's streaming.
extern "C" __global__ void __launch_bounds__(THREADS, 2)
    softmax_online(const elem_t* __restrict__ x, elem_t* __restrict__ y, i64 M, int N, i64 x_stride,
                   i64 y_stride) {
  __shared__ Stats warp_stats[WARPS];
  __shared__ Stats row_stats;
  const int packs = N / VEC;

  for (i64 row = blockIdx.x; row < M; row += gridDim.x) {
    const elem_t* xr = x + row * x_stride;
    elem_t* yr = y + row * y_stride;

    Stats t = stats_empty();
    for (int p0 = 0; p0 < packs; p0 += THREADS * UNROLL) {
      Pack<VEC> v[UNROLL];
      load_strided<VEC, UNROLL, THREADS>(v, xr, p0, packs);
#pragma unroll
      for (int u = 0; u < UNROLL; ++u)
        if (p0 + u * THREADS + threadIdx.x < packs) t = stats_add<VEC>(t, v[u]);
    }
    t = block_merge_to_warp0<WARPS>(t, warp_stats);
    if (threadIdx.x == 0) row_stats = t;
    __syncthreads();  // also orders warp 0's reads of warp_stats before the next row's writes
    const float shift = safe_shift(row_stats.m);
    const float inv_sum = 1.f / row_stats.s;

    for (int p0 = 0; p0 < packs; p0 += THREADS * UNROLL) {
      Pack<VEC> v[UNROLL];
      load_strided<VEC, UNROLL, THREADS>(v, xr, p0, packs);  // a second read: from L2 if still there
#pragma unroll
      for (int u = 0; u < UNROLL; ++u) {
        const int p = p0 + u * THREADS + threadIdx.x;
        if (p < packs) {
          store_pack<VEC>(yr + p * VEC,
                          make_pack<VEC>([&](int k) { return exp_shifted(elem(v[u], k), shift) * inv_sum; }));
        }
      }
    }
  }
}
