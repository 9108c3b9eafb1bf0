// 03 fused softmax: one read and one write per element, the row held in registers in between.
//
// TPR threads own a row (part of a warp for short rows, a warp, or up to a whole block of warps
// for long ones); each holds ITEMS packs of VEC elements (VEC * sizeof(elem) = 16 bytes whenever
// the row layout allows it) exactly as they came from memory. All ITEMS loads are issued before
// any is used, so every thread has ITEMS 16-byte loads in flight and a warp's accesses are 512
// contiguous bytes. The max and the sum of exp are warp-shuffle reductions over the registers; when
// a row spans several warps, the warps' (max, sum) pairs are merged once through shared memory with
// the online-softmax identity (stats_merge_all: one exponential a warp; two barriers a row group,
// not one per tree level). exp is one MUFU.EX2 of (x - max) * log2(e). For short rows RPB rows
// share a block, so blocks stay 128-256 threads wide.
//
// The packs stay raw (not converted to fp32 at load) for two reasons: converting inside the load
// loop makes NVVM wait for each bf16 load before issuing the next (ITEMS DRAM round trips per row
// instead of one, seen in the SASS), and a raw bf16 pack is 4 registers where its fp32 values are
// 8, so a bf16 thread can hold as many BYTES in flight as an fp32 thread. The price for 16-bit
// types is a second ex2 per element in the store pass (fp32 rows keep exp(x - max) in place
// instead), which the MUFU rate hides behind memory at the bf16 copy rate.
// What it buys over v2: DRAM traffic falls from ~3 reads + 1 write per element to 1 + 1 and every
// access is 16 bytes wide: the target is the copy bandwidth. Its limit is the register file:
// TPR * ITEMS packs of 16 bytes <= 1024 * 8, and past ~32 KB a row leaves too few rows in flight per SM.
//
// Constants: KL_TPR (threads per row, power of two <= 1024), KL_RPB (rows per block),
// KL_ITEMS (packs per thread), KL_VEC (elements per pack; divides N); KL_FULL (optional, 0 if
// not given): packs 0..FULL-1 of every thread lie inside the row (the plan knows N: FULL * TPR
// <= N / VEC), so they take no bounds check, no padding and no branch. KL_LOG (optional, 0 if not
// given): log_softmax, the same kernel with another epilogue, y = (x - max) - log(sum), for
// log_softmax_op's rows that the softmax would hold in registers (x is kept as loaded, in fp32 too).
#include "common.cuh"

#ifndef KL_FULL
#define KL_FULL 0
#endif
#ifndef KL_LOG
#define KL_LOG 0
#endif
constexpr int TPR = KL_TPR, RPB = KL_RPB, ITEMS = KL_ITEMS, VEC = KL_VEC, FULL = KL_FULL;
constexpr bool LOG = KL_LOG;
constexpr bool IN_PLACE = EXP_IN_PLACE && !LOG;  // v becomes exp(x - max): softmax's fp32 rows
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
    // Where this thread's first pack of the row lies in x and in y. Its pack i is i * TPR * VEC
    // elements further: a constant the loads and stores carry as an immediate offset, so a row
    // costs one 64-bit address computation, not one per pack (a launch of few short rows waits
    // on every instruction its SMs issue).
    // A row past M reads row M - 1 into its full packs (never stored): no check on their loads.
    const i64 x_at = (live ? row : M - 1) * x_stride + lane * VEC, y_at = row * y_stride + lane * VEC;

    // Pack p of the row goes to thread p % TPR: consecutive threads, consecutive 16-byte packs.
    // Nothing reads v until every load is issued; slots past the row hold -inf (exp(-inf) = 0).
    Pack<VEC> v[ITEMS];
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
      const int p = i * TPR + lane;
      const elem_t* const at = x + x_at + i * TPR * VEC;
      v[i] = i < FULL ? load_pack<VEC>(at) : live && p < packs ? load_pack<VEC>(at) : neg_inf_pack<VEC>();
    }

    const float m = warp_max<SHUFFLE_WIDTH>(held_max(KL_NEG_INF, v));
    const float s = warp_sum<SHUFFLE_WIDTH>(held_exp_sum<TPR, FULL, IN_PLACE>(v, safe_shift(m), lane, packs));

    // The row's (max, sum). One warp per row: this warp's. Several: the merge of the warps' pairs.
    Stats row_stats = {m, s};
    if constexpr (WARPS_PER_ROW > 1) {
      if (lane % 32 == 0) warp_stats[slot][lane / 32] = row_stats;
      __syncthreads();
      row_stats = stats_merge_all(warp_stats[slot]);
      __syncthreads();  // the next row group writes warp_stats again
    }
    // y = exp(x - row max) / row sum. In place, v holds exp(x - this warp's max): scale by
    // exp(warp max - row max) (0 for a warp that saw only -inf; NaN when the whole row is -inf, as
    // in torch). Otherwise exp is taken again from the raw packs.
    const float row_shift = safe_shift(row_stats.m);
    const float inv_sum = 1.f / row_stats.s;
    const float scale = IN_PLACE && WARPS_PER_ROW > 1 ? exp_shifted(m, row_shift) * inv_sum : inv_sum;
    const float log_sum = logf(row_stats.s);  // (log_softmax) at full precision, once a row

    // fp32: one predicated store a pack (no branch). 16-bit: exp again, so not for padding.
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
      const bool in = live && (i < FULL || i * TPR + lane < packs);
      elem_t* const out = y + y_at + i * TPR * VEC;
      if constexpr (LOG) {
        store_pack_if<VEC>(in, out, make_pack<VEC>([&](int k) { return (elem(v[i], k) - row_shift) - log_sum; }));
      } else if constexpr (IN_PLACE) {
        store_pack_if<VEC>(in, out, make_pack<VEC>([&](int k) { return elem(v[i], k) * scale; }));
      } else if (in) {
        store_pack<VEC>(out, make_pack<VEC>([&](int k) { return exp_shifted(elem(v[i], k), row_shift) * scale; }));
      }
    }
  }
}
