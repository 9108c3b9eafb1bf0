// 03 fused softmax: one read and one write per element, the row held in registers in between.
//
// TPR threads own a row (part of a warp for short rows, a warp, or up to a whole block of warps
// for long ones); each holds ITEMS packs of VEC elements (VEC * sizeof(elem) = 16 bytes whenever
// the row layout allows it), converted to fp32. All ITEMS loads are issued before the first is
// used, so every thread has ITEMS 16-byte loads in flight and a warp's accesses are 512 contiguous
// bytes. The max and the sum of exp are warp-shuffle reductions over the registers; when a row
// spans several warps, each warp's (max, sum) pair is merged once through shared memory with the
// online-softmax identity (one barrier per row, not one per tree level). exp is one MUFU.EX2 of
// (x - max) * log2(e). For short rows RPB rows share a block, so blocks stay 128-256 threads wide.
// What it buys over v2: DRAM traffic falls from ~3 reads + 1 write per element to 1 + 1 and every
// access is 16 bytes wide: the target is the copy bandwidth. Its limit is the register file:
// TPR * ITEMS * VEC <= 1024 * 32 elements, and past ~32 KB a row leaves too few rows in flight per SM.
//
// Constants: KL_TPR (threads per row, power of two <= 1024), KL_RPB (rows per block),
// KL_ITEMS (packs per thread), KL_VEC (elements per pack; divides N).
#include "common.cuh"

constexpr int TPR = KL_TPR, RPB = KL_RPB, ITEMS = KL_ITEMS, VEC = KL_VEC;
constexpr int THREADS = TPR * RPB;
constexpr int WARPS_PER_ROW = TPR > 32 ? TPR / 32 : 1;
constexpr int SHUFFLE_WIDTH = TPR < 32 ? TPR : 32;

extern "C" __global__ void __launch_bounds__(THREADS)
    softmax_fused(const elem_t* __restrict__ x, elem_t* __restrict__ y, i64 M, int N, i64 x_stride,
                  i64 y_stride) {
  __shared__ Stats warp_stats[RPB][WARPS_PER_ROW];
  const int lane = threadIdx.x % TPR;  // this thread's place within its row
  const int slot = threadIdx.x / TPR;  // which of the block's RPB rows
  const int packs = N / VEC;
  const i64 groups = (M + RPB - 1) / RPB;

  // The loop bound is the same for every thread of the block, so the barriers below are safe.
  for (i64 group = blockIdx.x; group < groups; group += gridDim.x) {
    const i64 row = group * RPB + slot;
    const bool live = row < M;

    // Pack p of the row goes to thread p % TPR: consecutive threads, consecutive 16-byte packs.
    float v[ITEMS][VEC];
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
      const int p = i * TPR + lane;
      if (live && p < packs) {
        const Pack<VEC> pk = load_pack<VEC>(x + row * x_stride + p * VEC);
#pragma unroll
        for (int k = 0; k < VEC; ++k) v[i][k] = to_f32(pk.e[k]);
      } else {
#pragma unroll
        for (int k = 0; k < VEC; ++k) v[i][k] = KL_NEG_INF;  // contributes exp(-inf) = 0
      }
    }

    float m = KL_NEG_INF;
#pragma unroll
    for (int i = 0; i < ITEMS; ++i)
#pragma unroll
      for (int k = 0; k < VEC; ++k) m = fmaxf(m, v[i][k]);
    m = warp_max<SHUFFLE_WIDTH>(m);

    const float shift = safe_shift(m);
    float s = 0.f;
#pragma unroll
    for (int i = 0; i < ITEMS; ++i)
#pragma unroll
      for (int k = 0; k < VEC; ++k) {
        v[i][k] = exp_shifted(v[i][k], shift);
        s += v[i][k];
      }
    s = warp_sum<SHUFFLE_WIDTH>(s);

    // y = v * scale, where v = exp(x - this warp's max). One warp per row: scale = 1 / sum.
    // Several: merge the warps' (max, sum) pairs, then scale = exp(warp max - row max) / row sum
    // (0 for a warp that saw only -inf; NaN when the whole row is -inf, as in torch).
    float scale;
    if constexpr (WARPS_PER_ROW == 1) {
      scale = 1.f / s;
    } else {
      if (lane % 32 == 0) warp_stats[slot][lane / 32] = {m, s};
      __syncthreads();
      Stats row_stats = warp_stats[slot][0];
#pragma unroll
      for (int w = 1; w < WARPS_PER_ROW; ++w) row_stats = stats_merge(row_stats, warp_stats[slot][w]);
      __syncthreads();  // the next row group writes warp_stats again
      scale = exp_shifted(m, safe_shift(row_stats.m)) / row_stats.s;
    }

    if (live) {
#pragma unroll
      for (int i = 0; i < ITEMS; ++i) {
        const int p = i * TPR + lane;
        if (p < packs) {
          Pack<VEC> out;
#pragma unroll
          for (int k = 0; k < VEC; ++k) out.e[k] = from_f32(v[i][k] * scale);
          store_pack<VEC>(y + row * y_stride + p * VEC, out);
        }
      }
    }
  }
}
