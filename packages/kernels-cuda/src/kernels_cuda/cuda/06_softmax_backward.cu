// 06 softmax backward, rows held in registers: dx = y * (dy - sum(y * dy)) along each row.
//
// The backward of y = softmax(x) needs, per row, one number: the dot product of y and dy. The
// fastest possible kernel reads y and dy once and writes dx once: 3 accesses per element, and
// this kernel makes exactly those. It is the forward fused kernel (03) with two arrays: TPR threads
// own a row, each holding ITEMS packs of y and ITEMS packs of dy raw, as loaded (all 2 * ITEMS
// loads issued before any use); the dot is a warp-shuffle sum, merged across the row's warps
// through shared memory (one barrier per row); then each thread writes its packs of dx. The sum is
// accumulated in fp32 for every dtype, and y * (dy - dot) is formed in fp32 and rounded once.
//
// Two entry points, one per set of constants (codegen compiles the one a Spec names):
//   softmax_backward_fused    KL_TPR, KL_RPB, KL_ITEMS, KL_VEC: as above, rows up to TPR*ITEMS*VEC
//                             (KL_FULL, KL_STAGED: the launches of few rows, below).
//   softmax_backward_twopass  KL_THREADS, KL_VEC, KL_UNROLL: one block per row of any length, for
//                             rows past the fused kernel's registers where no cluster holds them
//                             (no clusters, or not whole 16-byte packs). Pass 1 streams y and dy
//                             for the dot, pass 2 streams them again (from L2 while they are there)
//                             and writes dx: 5 accesses per element.
#include "common.cuh"

#ifndef KL_LOG
#define KL_LOG 0
#endif
// KL_LOG (optional, 0 if not given): log_softmax's backward, dx = dy -
// exp(y) * sum(dy), y the log-probabilities: the same kernel with another dot and gradient.
constexpr bool LOG = KL_LOG;

// y * (dy - dot) (log_softmax's: dy - exp(y) * dot), element k of a pack pair.
template <int VEC> __device__ __forceinline__ float grad(const Pack<VEC>& y, const Pack<VEC>& dy, int k, float dot) {
  return LOG ? elem(dy, k) - exp_shifted(elem(y, k), 0.f) * dot : elem(y, k) * (elem(dy, k) - dot);
}
// acc + the pack's sum of y * dy (log_softmax's: of dy)
template <int VEC> __device__ __forceinline__ float pack_dot(float acc, const Pack<VEC>& y, const Pack<VEC>& dy) {
#pragma unroll
  for (int k = 0; k < VEC; ++k) acc = LOG ? acc + elem(dy, k) : fmaf(elem(y, k), elem(dy, k), acc);
  return acc;
}

#if defined(KL_TPR)
#ifndef KL_FULL
#define KL_FULL 0
#endif
#ifndef KL_STAGED
#define KL_STAGED 0
#endif
// FULL (optional): packs 0..FULL-1 of every thread lie inside the row (no bounds check), as in 03.
// STAGED (optional): y and dy arrive by cp.async copies into shared memory, each thread reading
// back its own, as QuACK loads them: the plan's launches of few rows (a warp or two a row, up to
// 5 packs of each array a thread) ran faster so; the ladder's did not
// (experiments/notes/kernels-cuda.md).
constexpr int TPR = KL_TPR, RPB = KL_RPB, ITEMS = KL_ITEMS, VEC = KL_VEC, FULL = KL_FULL;
constexpr bool STAGED = KL_STAGED;
constexpr int THREADS = TPR * RPB;
constexpr int WARPS_PER_ROW = TPR > 32 ? TPR / 32 : 1;
constexpr int SHUFFLE_WIDTH = TPR < 32 ? TPR : 32;

extern "C" __global__ void __launch_bounds__(THREADS)
    softmax_backward_fused(const elem_t* __restrict__ y, const elem_t* __restrict__ dy, elem_t* __restrict__ dx,
                           i64 M, int N, i64 y_stride, i64 dy_stride, i64 dx_stride) {
  __shared__ float warp_dots[RPB][WARPS_PER_ROW];
  __shared__ __align__(16) Pack<VEC> stage_y[STAGED ? ITEMS : 1][STAGED ? THREADS : 1];
  __shared__ __align__(16) Pack<VEC> stage_dy[STAGED ? ITEMS : 1][STAGED ? THREADS : 1];
  const int lane = threadIdx.x % TPR;
  const int slot = threadIdx.x / TPR;
  const int packs = N / VEC;
  const i64 groups = (M + RPB - 1) / RPB;

  // The loop bound is the same for every thread of the block, so the barriers below are safe.
  for (i64 group = blockIdx.x; group < groups; group += gridDim.x) {
    const i64 row = group * RPB + slot;
    const bool live = row < M;
    // This thread's first pack of the row in each array; pack i is a constant i * TPR * VEC
    // elements further (an immediate offset: one address computation a row, as in 03).
    // (A row past M reads row M - 1 into its full packs, never stored.)
    const i64 read_row = live ? row : M - 1;
    const i64 y_at = read_row * y_stride + lane * VEC, dy_at = read_row * dy_stride + lane * VEC;
    const i64 dx_at = row * dx_stride + lane * VEC;

    // Pack p of the row goes to thread p % TPR; slots past the row hold zeros (add 0 to the dot).
    Pack<VEC> a[ITEMS], b[ITEMS];
    if constexpr (STAGED) {  // dy's copies, then y's; a thread waits for its own and reads them back
#pragma unroll
      for (int i = 0; i < ITEMS; ++i)
        if (i < FULL || (live && i * TPR + lane < packs))
          copy_async_16_ca(&stage_dy[i][threadIdx.x], dy + dy_at + i * TPR * VEC);
#pragma unroll
      for (int i = 0; i < ITEMS; ++i)
        if (i < FULL || (live && i * TPR + lane < packs))
          copy_async_16_ca(&stage_y[i][threadIdx.x], y + y_at + i * TPR * VEC);
      copy_async_commit();
      copy_async_wait();
    }
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
      const bool in = i < FULL || (live && i * TPR + lane < packs);
      if constexpr (STAGED) {
        a[i] = in ? stage_y[i][threadIdx.x] : Pack<VEC>{};
        b[i] = in ? stage_dy[i][threadIdx.x] : Pack<VEC>{};
      } else {
        a[i] = in ? load_pack<VEC>(y + y_at + i * TPR * VEC) : Pack<VEC>{};
        b[i] = in ? load_pack<VEC>(dy + dy_at + i * TPR * VEC) : Pack<VEC>{};
      }
    }
    // Each pack's dot, then a tree over the packs (common.cuh's tree_reduce: a rounding error that
    // grows with log2(ITEMS), not ITEMS).
    float part[ITEMS];
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) part[i] = pack_dot(0.f, a[i], b[i]);
    float dot = warp_sum<SHUFFLE_WIDTH>(tree_reduce(part, [](float u, float w) { return u + w; }));
    if constexpr (WARPS_PER_ROW > 1) {
      if (lane % 32 == 0) warp_dots[slot][lane / 32] = dot;
      __syncthreads();
      dot = 0.f;
#pragma unroll
      for (int w = 0; w < WARPS_PER_ROW; ++w) dot += warp_dots[slot][w];
      __syncthreads();  // the next row group writes warp_dots again
    }

#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
      store_pack_if<VEC>(live && (i < FULL || i * TPR + lane < packs), dx + dx_at + i * TPR * VEC,
                         make_pack<VEC>([&](int k) { return grad(a[i], b[i], k, dot); }));
    }
  }
}
#endif

#if defined(KL_UNROLL)
constexpr int THREADS = KL_THREADS, VEC = KL_VEC, UNROLL = KL_UNROLL;
constexpr int WARPS = THREADS / 32;

extern "C" __global__ void __launch_bounds__(THREADS, 2)
    softmax_backward_twopass(const elem_t* __restrict__ y, const elem_t* __restrict__ dy, elem_t* __restrict__ dx,
                             i64 M, int N, i64 y_stride, i64 dy_stride, i64 dx_stride) {
  __shared__ float warp_dots[WARPS];
  __shared__ float row_dot;
  const int packs = N / VEC;

  for (i64 row = blockIdx.x; row < M; row += gridDim.x) {
    const elem_t* yr = y + row * y_stride;
    const elem_t* dyr = dy + row * dy_stride;
    elem_t* dxr = dx + row * dx_stride;

    float dot = 0.f;
    for (int p0 = 0; p0 < packs; p0 += THREADS * UNROLL) {
      Pack<VEC> a[UNROLL], b[UNROLL];
      load_strided<VEC, UNROLL, THREADS>(a, yr, p0, packs);
      load_strided<VEC, UNROLL, THREADS>(b, dyr, p0, packs);
#pragma unroll
      for (int u = 0; u < UNROLL; ++u)
        if (p0 + u * THREADS + threadIdx.x < packs) dot = pack_dot(dot, a[u], b[u]);
    }
    dot = block_sum_to_warp0<WARPS>(dot, warp_dots);
    if (threadIdx.x == 0) row_dot = dot;
    __syncthreads();  // also orders warp 0's reads of warp_dots before the next row's writes
    dot = row_dot;

    for (int p0 = 0; p0 < packs; p0 += THREADS * UNROLL) {
      Pack<VEC> a[UNROLL], b[UNROLL];
      load_strided<VEC, UNROLL, THREADS>(a, yr, p0, packs);
      load_strided<VEC, UNROLL, THREADS>(b, dyr, p0, packs);
#pragma unroll
      for (int u = 0; u < UNROLL; ++u) {
        const int p = p0 + u * THREADS + threadIdx.x;
        if (p < packs) store_pack<VEC>(dxr + p * VEC, make_pack<VEC>([&](int k) { return grad(a[u], b[u], k, dot); }));
      }
    }
    __syncthreads();  // every thread has read row_dot before the next row writes it
  }
}
#endif
