// 10 log_softmax and its backward: the softmax's reduction with another epilogue.
//
// log_softmax_op runs the softmax's own kernels with a log epilogue where the softmax's rule runs
// them (03 and 06 for rows held in registers; 04 and 07 over a cluster); 10 takes the rest: fp64,
// rows past the registers that one block stages, and odd rows no cluster takes.
//
// One block per row (a warp for short rows; rows.cuh's layout, so the result is batch
// invariant). The forward's first pass takes the online max and sum of exp in fp32 (fp64 for fp64
// rows), keeping each thread's packs in shared memory (`staged` packs, as many as fit); the
// second writes y = (x - max) - log(sum) from that copy, so a row that fits is read from DRAM
// once. The subtraction of the max comes first, so x near the max loses nothing to rounding.
//
//   log_softmax_forward   y = x - max - log(sum exp(x - max))
//   log_softmax_backward  dx = dy - exp(y) sum(dy): the first pass sums dy (kept in shared
//                         memory), the second reads y and writes dx
//
// Rows of all -inf give NaN, a +inf or NaN anywhere in a row makes the row NaN: as torch.
// Constants: KL_THREADS, KL_VEC (elements a pack, divides N), KL_UNROLL (packs in flight a thread).
#include "rows.cuh"

constexpr int THREADS = KL_THREADS, VEC = KL_VEC, UNROLL = KL_UNROLL;

#ifdef KL_ENTRY_log_softmax_forward
extern "C" __global__ void __launch_bounds__(THREADS)
    log_softmax_forward(const elem_t* __restrict__ x, elem_t* __restrict__ y, i64 M, int N, i64 x_stride,
                        i64 y_stride, int staged) {
  extern __shared__ uint4 stage_raw[];
  __shared__ RowStats scratch[THREADS / 32 + 1];
  Pack<VEC>* stage = reinterpret_cast<Pack<VEC>*>(stage_raw);
  const int packs = N / VEC;

  for (i64 row = blockIdx.x; row < M; row += gridDim.x) {
    const elem_t* xr = x + row * x_stride;
    elem_t* yr = y + row * y_stride;
    RowStats st = stats_empty();
    read_row<THREADS, VEC, UNROLL>(xr, packs, stage, staged,
                                   [&](const Pack<VEC>(&v)[UNROLL], const bool(&in)[UNROLL]) {
                                     st = stats_add<false, false>(st, v, in);
                                   });
    st = block_reduce<THREADS>(st, scratch, stats_empty(), [](RowStats a, RowStats b) { return stats_merge(a, b); });
    const acc_t shift = safe_shift(st.m);
    const acc_t log_s = log_acc(st.s);
    for (int p = threadIdx.x; p < packs; p += THREADS) {
      const Pack<VEC> v = reread_pack<VEC>(xr, stage, p, staged);
      Pack<VEC> out;
#pragma unroll
      for (int k = 0; k < VEC; ++k) out.e[k] = from_acc((to_acc(v.e[k]) - shift) - log_s);
      store_pack<VEC>(yr + static_cast<i64>(p) * VEC, out);
    }
    __syncthreads();  // scratch is written again by the next row
  }
}
#endif

#ifdef KL_ENTRY_log_softmax_backward
extern "C" __global__ void __launch_bounds__(THREADS)
    log_softmax_backward(const elem_t* __restrict__ y, const elem_t* __restrict__ dy, elem_t* __restrict__ dx, i64 M,
                         int N, i64 y_stride, i64 dy_stride, i64 dx_stride, int staged) {
  extern __shared__ uint4 stage_raw[];
  __shared__ acc_t scratch[THREADS / 32 + 1];
  Pack<VEC>* stage = reinterpret_cast<Pack<VEC>*>(stage_raw);
  const int packs = N / VEC;

  for (i64 row = blockIdx.x; row < M; row += gridDim.x) {
    const elem_t* yr = y + row * y_stride;
    const elem_t* dyr = dy + row * dy_stride;
    elem_t* dxr = dx + row * dx_stride;
    acc_t sum = 0;
    read_row<THREADS, VEC, UNROLL>(dyr, packs, stage, staged,
                                   [&](const Pack<VEC>(&v)[UNROLL], const bool(&in)[UNROLL]) {
#pragma unroll
                                     for (int u = 0; u < UNROLL; ++u)
#pragma unroll
                                       for (int k = 0; k < VEC; ++k)
                                         if (in[u]) sum += to_acc(v[u].e[k]);
                                   });
    sum = block_reduce<THREADS>(sum, scratch, acc_t(0), [](acc_t a, acc_t b) { return a + b; });
    for (int p = threadIdx.x; p < packs; p += THREADS) {
      const Pack<VEC> g = reread_pack<VEC>(dyr, stage, p, staged);
      const Pack<VEC> v = load_pack<VEC>(yr + static_cast<i64>(p) * VEC);
      Pack<VEC> out;
#pragma unroll
      for (int k = 0; k < VEC; ++k) out.e[k] = from_acc(to_acc(g.e[k]) - exp_acc(to_acc(v.e[k])) * sum);
      store_pack<VEC>(dxr + static_cast<i64>(p) * VEC, out);
    }
    __syncthreads();  // scratch is written again by the next row
  }
}
#endif
