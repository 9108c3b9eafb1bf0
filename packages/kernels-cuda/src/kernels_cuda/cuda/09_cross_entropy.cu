// 09 fused cross-entropy: the loss and its gradient from one read of the logits.
//
// llm.c's fused_classifier (dev/cuda) is the anchor: one block per row computes the row's
// softmax statistics, the loss, and writes the gradient (softmax - onehot) * scale in the same
// kernel, so the backward of the mean loss is a scalar multiply (skipped when the upstream
// gradient is 1). Where llm.c reads the row three times (max, sum, gradient) from L2, this reads
// it once from DRAM: the first pass takes the online max and sum of exp (and the sum of x for
// label smoothing) in fp32 (fp64 for fp64 rows) while keeping each thread's packs in shared memory
// (`staged` packs of the row, as many as fit); the second pass writes the gradient from that copy,
// re-reading from global memory (L2, as the row was just read) only the packs past it.
//
// Row `row`, target t, smoothing eps, V = N:
//   lse  = max + log(sum exp(x - max))
//   loss = lse - (1 - eps) x[t] - eps mean(x)      (0 where t == ignore_index; NaN where t is
//                                                    outside [0, N): torch raises, a kernel cannot)
//   grad = (exp(x - lse) - eps / V - (1 - eps) [j == t]) * scale, 0 in ignored rows;
//          scale = 1 / count[0] for the mean (count of rows not ignored, on the device: no sync), else 1
// With ENTROPY, the forward also writes the row's entropy and writes -loss (the target's
// log-probability) instead of the loss.
//
// Entry points:
//   cross_entropy_forward   loss, lse (and entropy) per row; the gradient too where grad != 0
//                           (grad may be the logits themselves: inplace_backward; every address
//                           of a row is read before it is written, by the thread that writes it,
//                           so even a read-only-path load the compiler picks sees the logits)
//   cross_entropy_backward  the gradient from the saved lse, for per-row upstream gradients
//                           (reduction="none"; token log-probabilities and entropy)
//   cross_entropy_scale     grad *= g[0] in place, every block returning at once when g[0] == 1
//                           (see there for a second backward through one forward)
//
// Constants: KL_THREADS, KL_VEC (elements a pack, divides N), KL_UNROLL (packs in flight a
// thread), KL_ENTROPY (0 / 1: the forward's entropy; 0 for the other entry points). See rows.cuh
// for the row layout and why it is batch invariant.
#include "rows.cuh"

constexpr int THREADS = KL_THREADS, VEC = KL_VEC, UNROLL = KL_UNROLL;
constexpr bool ENTROPY = KL_ENTROPY;

extern "C" __global__ void __launch_bounds__(THREADS)
    cross_entropy_forward(const elem_t* x, elem_t* grad, const i64* __restrict__ target, acc_t* __restrict__ loss,
                          acc_t* __restrict__ lse_out, acc_t* __restrict__ entropy_out, const i64* __restrict__ count,
                          i64 M, int N, i64 x_stride, i64 grad_stride, i64 ignore_index, acc_t smoothing, int staged) {
  extern __shared__ uint4 stage_raw[];
  __shared__ RowStats scratch[THREADS / 32 + 1];
  Pack<VEC>* stage = reinterpret_cast<Pack<VEC>*>(stage_raw);
  const int packs = N / VEC;

  for (i64 row = blockIdx.x; row < M; row += gridDim.x) {
    const elem_t* xr = x + row * x_stride;
    const i64 t = target[row];
    const bool ignored = t == ignore_index;
    const bool valid = !ignored && t >= 0 && t < N;
    // x[t], fetched before the pass so that its latency hides behind it (and before any
    // gradient is written over it)
    const acc_t xt = threadIdx.x == 0 && valid ? to_acc(xr[t]) : acc_t(0);

    RowStats st = stats_empty();
    read_row<THREADS, VEC, UNROLL>(xr, packs, stage, grad != nullptr ? staged : 0,
                                   [&](const Pack<VEC>(&v)[UNROLL], const bool(&in)[UNROLL]) {
                                     st = stats_add<true, ENTROPY>(st, v, in);
                                   });
    st = block_reduce<THREADS>(st, scratch, stats_empty(), [](RowStats a, RowStats b) { return stats_merge(a, b); });
    const acc_t log_s = log_acc(st.s);
    const acc_t lse = st.m + log_s;

    if (threadIdx.x == 0) {
      acc_t l = acc_t(0);
      if (!ignored) {
        // the smoothing term only where smoothing is on: 0 * sum(x) is NaN in a row holding -inf,
        // whose loss without smoothing is +inf (torch's)
        const acc_t smooth = smoothing != acc_t(0) ? smoothing * st.sx * rcp(static_cast<acc_t>(N)) : acc_t(0);
        l = valid ? lse - (acc_t(1) - smoothing) * xt - smooth : quiet_nan();
      }
      loss[row] = ENTROPY ? -l : l;
      lse_out[row] = lse;
      if constexpr (ENTROPY) entropy_out[row] = log_s - st.u * rcp(st.s);
    }

    if (grad != nullptr) {
      elem_t* gr = grad + row * grad_stride;
      const acc_t scale = count != nullptr ? rcp(static_cast<acc_t>(*count)) : acc_t(1);
      const acc_t shift = safe_shift(st.m);
      const acc_t inv_s = rcp(st.s);
      const acc_t off = smoothing * rcp(static_cast<acc_t>(N)), hit = acc_t(1) - smoothing;
      const acc_t bad = valid ? acc_t(0) : quiet_nan();  // NaN for a target out of range
      for (int p = threadIdx.x; p < packs; p += THREADS) {
        Pack<VEC> g;
        if (ignored) {
#pragma unroll
          for (int k = 0; k < VEC; ++k) g.e[k] = from_acc(acc_t(0));
        } else {
          const Pack<VEC> v = reread_pack<VEC>(xr, stage, p, staged);
#pragma unroll
          for (int k = 0; k < VEC; ++k) {
            const acc_t prob = exp_acc(to_acc(v.e[k]) - shift) * inv_s;
            const acc_t one_hot = static_cast<i64>(p) * VEC + k == t ? hit : acc_t(0);
            g.e[k] = from_acc((prob - off - one_hot + bad) * scale);
          }
        }
        store_pack<VEC>(gr + static_cast<i64>(p) * VEC, g);
      }
    }
    __syncthreads();  // scratch is written again by the next row
  }
}

// grad = g[row] (exp(x - lse) - eps / V - (1 - eps) [j == t])
//        (+ where entropy != 0: - g_entropy[row] p (x - lse + H), the entropy's gradient)
// One read of the row and one write; ignored rows get the entropy's part only (else 0), rows whose
// target is out of range NaN. (ENTROPY is not read here: the entropy's term is a branch taken
// the same way by every thread of a launch, on a pass bound by memory.)
extern "C" __global__ void __launch_bounds__(THREADS)
    cross_entropy_backward(const elem_t* __restrict__ x, elem_t* __restrict__ grad, const i64* __restrict__ target,
                           const acc_t* __restrict__ lse, const acc_t* __restrict__ g_loss,
                           const acc_t* __restrict__ entropy, const acc_t* __restrict__ g_entropy, i64 M, int N,
                           i64 x_stride, i64 grad_stride, i64 ignore_index, acc_t smoothing) {
  const int packs = N / VEC;
  for (i64 row = blockIdx.x; row < M; row += gridDim.x) {
    const elem_t* xr = x + row * x_stride;
    elem_t* gr = grad + row * grad_stride;
    const i64 t = target[row];
    const bool ignored = t == ignore_index;
    const bool valid = !ignored && t >= 0 && t < N;
    const acc_t r_lse = lse[row];
    const acc_t gl = ignored ? acc_t(0) : valid ? g_loss[row] : quiet_nan();
    const bool with_entropy = entropy != nullptr;
    const acc_t ge = with_entropy ? g_entropy[row] : acc_t(0);
    const acc_t h = with_entropy ? entropy[row] : acc_t(0);
    const acc_t off = smoothing * rcp(static_cast<acc_t>(N)), hit = acc_t(1) - smoothing;
    for (int p0 = 0; p0 < packs; p0 += THREADS * UNROLL) {
      Pack<VEC> v[UNROLL];
#pragma unroll
      for (int u = 0; u < UNROLL; ++u) {
        const int p = p0 + u * THREADS + static_cast<int>(threadIdx.x);
        if (p < packs) v[u] = load_pack<VEC>(xr + static_cast<i64>(p) * VEC);
      }
#pragma unroll
      for (int u = 0; u < UNROLL; ++u) {
        const int p = p0 + u * THREADS + static_cast<int>(threadIdx.x);
        if (p >= packs) continue;
        Pack<VEC> g;
#pragma unroll
        for (int k = 0; k < VEC; ++k) {
          const acc_t logp = to_acc(v[u].e[k]) - r_lse;
          const acc_t prob = exp_acc(logp);
          const acc_t one_hot = static_cast<i64>(p) * VEC + k == t ? hit : acc_t(0);
          acc_t d = ignored ? acc_t(0) : gl * (prob - off - one_hot);
          if (with_entropy) d -= prob == acc_t(0) ? acc_t(0) : ge * prob * (logp + h);
          g.e[k] = from_acc(d);
        }
        store_pack<VEC>(gr + static_cast<i64>(p) * VEC, g);
      }
    }
  }
}

// grad[i] *= g[0] / applied[0] over n contiguous elements, where applied[0] is the factor an
// earlier call through the same forward applied (1 at first): so a backward run again through one
// graph (retain_graph, gradcheck) scales to its own upstream gradient, and the usual one, g == 1,
// touches nothing at all (every block returns before any load of grad): the common backward costs
// one small launch. The host records g as the new `applied` after this launch, in stream order.
extern "C" __global__ void __launch_bounds__(THREADS)
    cross_entropy_scale(elem_t* __restrict__ grad, const acc_t* __restrict__ g, const acc_t* __restrict__ applied,
                        i64 n) {
  const acc_t factor = *g / *applied;
  if (factor == acc_t(1)) return;
  for (i64 i = blockIdx.x * static_cast<i64>(THREADS) + threadIdx.x; i < n; i += static_cast<i64>(gridDim.x) * THREADS)
    grad[i] = from_acc(to_acc(grad[i]) * factor);
}
