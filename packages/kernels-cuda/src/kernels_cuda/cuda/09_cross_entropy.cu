// 09 fused cross-entropy: the loss and its gradient from one read of the logits.
//
// llm.c's fused_classifier (dev/cuda) is the anchor: one block per row computes the row's
// softmax statistics, the loss, and writes the gradient (softmax - onehot) * scale in the same
// kernel, so the backward of the mean loss is a scalar multiply (skipped when the upstream
// gradient is 1). Where llm.c reads the row three times (max, sum, gradient) from L2, this reads
// it once from DRAM: the first pass takes the online max and sum of exp (and the sum of x for
// label smoothing) in fp32 (fp64 for fp64 rows), keeping what it read on chip; the second pass
// writes the gradient from that copy. A row belongs to a group of TPR threads (RPB rows a block
// for short rows, so a block stays 128-256 threads wide). A row of at most TPR ITEMS 16-byte
// packs (STEPS = 0) stays in its threads' registers: no shared memory and, at TPR <= 32, no
// barrier. A longer one (STEPS = 1: a block a row, ITEMS packs a thread a step) is kept in shared
// memory (`staged` packs, as many as fit), the rest read again from global memory (L2, as the
// row was just read): fewer registers than holding a step, so two 512-thread blocks share an SM
// where two rows fit in its shared memory (longer rows: 1024 threads, one block an SM). Packs
// count from the row's first 16-byte boundary (rows.cuh, split_row): rows of any length and
// address move in 16-byte accesses, the few elements before and after the packs one at a time.
//
// Row `row`, target t, smoothing eps, V = N:
//   lse  = max + log(sum exp(x - max))
//   loss = lse - (1 - eps) x[t] - eps mean(x)      (0 where t == ignore_index; NaN where t is
//                                                    outside [0, N): torch raises, a kernel cannot)
//   grad = (exp(x - lse) - eps / V - (1 - eps) [j == t]) * scale, 0 in ignored rows;
//          scale = 1 / count for the mean (the rows not ignored, counted on the device: no sync), else 1
//   the reduced loss = sum of the rows' losses (/ count for the mean), in an order fixed by M
// With ENTROPY, the forward also writes the row's entropy and writes -loss (the target's
// log-probability) instead of the loss.
//
// Entry points:
//   cross_entropy_count     counts[p] = the rows of chunk p whose target is not ignore_index (for
//                           the mean's gradient, before the forward); zeroes the reduce's ticket
//   cross_entropy_forward   loss, lse (where lse_out != 0) (and entropy) per row; the gradient too
//                           where grad != 0, scaled by 1 / (the counts' sum) where counts != 0;
//                           block 0 zeroes the reduce's ticket where ticket != 0 (the count did
//                           not run; ENTROPY builds, which feed no reduce, read neither)
//                           (grad may be the logits themselves: inplace_backward; every address
//                           of a row is read before it is written, by the thread that writes it,
//                           so even a read-only-path load the compiler picks sees the logits)
//   cross_entropy_backward  the gradient from the saved lse, for per-row upstream gradients
//                           (reduction="none"; token log-probabilities and entropy). lse is saved
//                           in fp64, max + log s exactly, and x - lse taken in fp64: in fp32 its
//                           rounding at the logits' magnitude (1e3: a 6e-5 step) would move p by
//                           as much, relative
//   cross_entropy_reduce    the rows' losses summed (divided by the count for the mean) into the
//                           loss in elem_t: each block its chunk into a partial, the last block to
//                           finish the partials, in an order fixed by M
//   cross_entropy_scale     grad *= g[0] in place, every block returning at once when g[0] == 1
//                           (see there for a second backward through one forward)
// count and reduce run on PARTS blocks, block p on chunk p (loss_parts.cuh): the rows [p c,
// (p + 1) c), c = cdiv(M, PARTS), as kernels_triton's xent_reduce.
// The gradient's row goes out in 16-byte stores where it lies at the logits' row's address mod 16
// (the host allocates it so), else an element at a time: the same values either way.
//
// Constants: KL_TPR (threads a row: a power of two, 8 or more), KL_RPB (rows a block), KL_ITEMS
// (packs a thread a step), KL_VEC (elements of a 16-byte pack), KL_STEPS (0: rows of at most
// TPR ITEMS packs, in registers; 1: any row, RPB = 1), KL_ENTROPY (0 / 1: the forward's entropy; 0
// for the other entry points). The host picks them from (N, dtype) alone: with the row's address
// mod 16, all a row's bits depend on (rows.cuh). A build holds the one entry point its spec names
// (KL_ENTRY_<name>, codegen): all five in every build took NVRTC several times as long.
#include "rows.cuh"
#include "loss_parts.cuh"

constexpr int TPR = KL_TPR, RPB = KL_RPB, ITEMS = KL_ITEMS, VEC = KL_VEC;
constexpr int THREADS = TPR * RPB;
constexpr bool STEPS = KL_STEPS, ENTROPY = KL_ENTROPY;
// Extra elements (head and tail) a thread: there are at most 2 (VEC - 1) <= 2 TPR of them.
constexpr int EXTRA = 2;
static_assert(TPR >= 8 && 2 * (VEC - 1) <= EXTRA * TPR, "a row's head and tail take two elements a thread");
static_assert(!STEPS || RPB == 1, "rows longer than a step have a block each");

// The gradient's pack at element `at` of row gr: one 16-byte store where gr lines up with the
// logits' row (`packed`), else VEC element stores.
__device__ __forceinline__ void put_pack(elem_t* gr, int at, const Pack<VEC>& g, bool packed) {
  if (packed) {
    store_pack<VEC>(gr + at, g);
  } else {
#pragma unroll
    for (int k = 0; k < VEC; ++k) gr[at + k] = g.e[k];
  }
}

#ifdef KL_ENTRY_cross_entropy_forward
extern "C" __global__ void __launch_bounds__(THREADS)
    cross_entropy_forward(const elem_t* x, elem_t* grad, const i64* __restrict__ target, acc_t* __restrict__ loss,
                          double* __restrict__ lse_out, acc_t* __restrict__ entropy_out,
                          const int* __restrict__ counts, int* __restrict__ ticket, i64 M, int N, i64 x_stride,
                          i64 grad_stride, i64 ignore_index, acc_t smoothing, int staged) {
  extern __shared__ uint4 stage_raw[];
  __shared__ RowStats scratch[RPB * (TPR / 32 + 1)];
  Pack<VEC>* stage = reinterpret_cast<Pack<VEC>*>(stage_raw);
  constexpr int STEP = TPR * ITEMS;  // packs a step
  const int lane = threadIdx.x % TPR;
  const i64 groups = (M + RPB - 1) / RPB;
  // the reduce that follows on the stream finds its ticket zeroed (the entropy's forward feeds none)
  if (!ENTROPY && ticket != nullptr && blockIdx.x == 0 && threadIdx.x == 0) *ticket = 0;
  // the mean's gradient scale, once (every lane of every warp: count_total's contract); the
  // entropy's forward writes no gradient
  const acc_t scale =
      !ENTROPY && counts != nullptr ? rcp(static_cast<acc_t>(count_total(counts))) : acc_t(1);

  // The loop bound is the same for every thread of the block, so the barriers in it are safe.
  for (i64 group = blockIdx.x; group < groups; group += gridDim.x) {
    const i64 row = group * RPB + threadIdx.x / TPR;
    const bool live = row < M;  // a slot past M reads nothing and writes nothing
    const elem_t* xr = x + (live ? row : 0) * x_stride;
    const RowSplit sp = split_row<VEC>(xr, N);
    const elem_t* body = xr + sp.head;

    // The row's loads first (the head and tail, then the body's first step), all issued before
    // any is used; then the target's, and x[t]'s, which waits on it: both behind the row's, not
    // a DRAM round trip before them. x[t] is read before any gradient is written over it.
    Pack<1> e[EXTRA];
    bool e_in[EXTRA];
#pragma unroll
    for (int k = 0; k < EXTRA; ++k) {
      const int j = lane + k * TPR;
      e_in[k] = live && j < sp.extras;
      if (e_in[k]) e[k] = load_pack<1>(xr + extra_index(sp, j, VEC));
    }
    Pack<VEC> v0[ITEMS];  // a row of one step, kept in registers
    bool in0[ITEMS];
    if constexpr (!STEPS) {
#pragma unroll
      for (int i = 0; i < ITEMS; ++i) {
        const int p = i * TPR + lane;
        in0[i] = live && p < sp.packs;
        if (in0[i]) v0[i] = load_pack<VEC>(body + static_cast<i64>(p) * VEC);
      }
    }
    const i64 t = live ? target[row] : ignore_index;
    const bool ignored = t == ignore_index;
    const bool valid = !ignored && t >= 0 && t < N;
    const acc_t xt = lane == 0 && valid ? to_acc(xr[t]) : acc_t(0);

    RowStats st = stats_add<true, ENTROPY>(stats_empty(), e, e_in);
    if constexpr (!STEPS) {
      st = stats_add<true, ENTROPY>(st, v0, in0);
    } else {
      // steps: packs below `staged` kept in shared memory (pack p at stage[p])
      for (int p0 = 0; p0 < sp.packs; p0 += STEP) {
        Pack<VEC> v[ITEMS];
        bool in[ITEMS];
#pragma unroll
        for (int i = 0; i < ITEMS; ++i) {
          const int p = p0 + i * TPR + lane;
          in[i] = p < sp.packs;
          if (in[i]) v[i] = load_pack<VEC>(body + static_cast<i64>(p) * VEC);
        }
#pragma unroll
        for (int i = 0; i < ITEMS; ++i) {
          const int p = p0 + i * TPR + lane;
          if (in[i] && p < staged) stage[p] = v[i];
        }
        st = stats_add<true, ENTROPY>(st, v, in);
      }
    }
    st = group_reduce<TPR, RPB>(st, scratch, stats_empty(), [](RowStats a, RowStats b) { return stats_merge(a, b); });

    if (grad != nullptr && live) {
      elem_t* gr = grad + row * grad_stride;
      const bool packed = same_offset(gr, xr);
      const acc_t shift = safe_shift(st.m);
      const acc_t inv_s = rcp(st.s);
      const acc_t off = smoothing * rcp(static_cast<acc_t>(N)), hit = acc_t(1) - smoothing;
      const acc_t bad = valid ? acc_t(0) : quiet_nan();  // NaN for a target out of range
      const int tj = valid ? static_cast<int>(t) : -1;       // the target as a row index (32 bits)
      // grad = exp(x - shift) * a + b, less hit * scale at the target: one multiply-add an element
      // past the exponential (this pass issues more instructions than the memory needs time for
      // at 16-bit rows of a few hundred columns), the target's term only in its pack.
      const acc_t a = inv_s * scale, b = (bad - off) * scale, hit_scaled = hit * scale;
      auto g_of = [&](elem_t xv) { return exp_acc(to_acc(xv) - shift) * a + b; };
      auto g_pack = [&](const Pack<VEC>& v, int p) {
        Pack<VEC> g;
        const int at = sp.head + p * VEC;
        acc_t gv[VEC];
#pragma unroll
        for (int k = 0; k < VEC; ++k) gv[k] = ignored ? acc_t(0) : g_of(v.e[k]);
        if (static_cast<unsigned>(tj - at) < static_cast<unsigned>(VEC)) {
#pragma unroll
          for (int k = 0; k < VEC; ++k)
            if (at + k == tj) gv[k] -= hit_scaled;
        }
#pragma unroll
        for (int k = 0; k < VEC; ++k) g.e[k] = from_acc(gv[k]);
        put_pack(gr, at, g, packed);
      };
#pragma unroll
      for (int k = 0; k < EXTRA; ++k) {
        if (!e_in[k]) continue;
        const int j = extra_index(sp, lane + k * TPR, VEC);
        gr[j] = from_acc(ignored ? acc_t(0) : g_of(e[k].e[0]) - (j == tj ? hit_scaled : acc_t(0)));
      }
      if constexpr (!STEPS) {
#pragma unroll
        for (int i = 0; i < ITEMS; ++i)
          if (in0[i]) g_pack(v0[i], i * TPR + lane);
      } else {
        for (int p = lane; p < sp.packs; p += TPR) {
          // one load through a generic pointer: selecting between a shared and a global load
          // made ptxas spill (rows.cuh, reread_pack)
          const Pack<VEC>* src =
              p < staged ? stage + p : reinterpret_cast<const Pack<VEC>*>(body + static_cast<i64>(p) * VEC);
          g_pack(*src, p);
        }
      }
    }
    // The row's outputs after the gradient, whose registers are free by then: fp64's log is a
    // call, around which they would be saved.
    if (live && lane == 0) {
      const acc_t log_s = log_acc(st.s);
      const acc_t lse = st.m + log_s;
      acc_t l = acc_t(0);
      if (!ignored) {
        // the smoothing term only where smoothing is on: 0 * sum(x) is NaN in a row holding -inf,
        // whose loss without smoothing is +inf (torch's)
        const acc_t smooth = smoothing != acc_t(0) ? smoothing * st.sx * rcp(static_cast<acc_t>(N)) : acc_t(0);
        l = valid ? lse - (acc_t(1) - smoothing) * xt - smooth : quiet_nan();
      }
      loss[row] = ENTROPY ? -l : l;
      if (lse_out != nullptr) lse_out[row] = static_cast<double>(st.m) + static_cast<double>(log_s);  // exact
      if constexpr (ENTROPY) entropy_out[row] = log_s - st.u * rcp(st.s);
    }

    if constexpr (TPR > 32) __syncthreads();  // scratch is written again by the next row group
  }
}
#endif

// grad = g[row] (exp(x - lse) - eps / V - (1 - eps) [j == t])
//        (+ where entropy != 0: - g_entropy[row] p (x - lse + H), the entropy's gradient)
// One read of the row and one write; ignored rows get the entropy's part only (else 0), rows whose
// target is out of range NaN. (ENTROPY is not read here: the entropy's term is a branch taken
// the same way by every thread of a launch, on a pass bound by memory.) No barriers: a slot
// past M leaves at once. (The explicit 1 of the launch bounds: with THREADS alone ptxas held some
// builds to 64 registers, with a spill.)
#ifdef KL_ENTRY_cross_entropy_backward
extern "C" __global__ void __launch_bounds__(THREADS, 1)
    cross_entropy_backward(const elem_t* __restrict__ x, elem_t* __restrict__ grad, const i64* __restrict__ target,
                           const double* __restrict__ lse, const acc_t* __restrict__ g_loss,
                           const acc_t* __restrict__ entropy, const acc_t* __restrict__ g_entropy, i64 M, int N,
                           i64 x_stride, i64 grad_stride, i64 ignore_index, acc_t smoothing) {
  const int lane = threadIdx.x % TPR;
  // once, before the loop: fp64's reciprocal is a call, around which live registers are saved
  const acc_t off = smoothing * rcp(static_cast<acc_t>(N)), hit = acc_t(1) - smoothing;
  for (i64 row = blockIdx.x * static_cast<i64>(RPB) + threadIdx.x / TPR; row < M;
       row += static_cast<i64>(gridDim.x) * RPB) {
    const elem_t* xr = x + row * x_stride;
    elem_t* gr = grad + row * grad_stride;
    const RowSplit sp = split_row<VEC>(xr, N);
    const elem_t* body = xr + sp.head;
    const bool packed = same_offset(gr, xr);
    const i64 t = target[row];
    const bool ignored = t == ignore_index;
    const bool valid = !ignored && t >= 0 && t < N;
    const double r_lse = lse[row];
    const acc_t gl = ignored ? acc_t(0) : valid ? g_loss[row] : quiet_nan();
    const bool with_entropy = entropy != nullptr;
    const acc_t ge = with_entropy ? g_entropy[row] : acc_t(0);
    const acc_t h = with_entropy ? entropy[row] : acc_t(0);
    const int tj = valid ? static_cast<int>(t) : -1;  // the target as a row index (32 bits)
    auto d_of = [&](elem_t xv, int j) {
      const acc_t logp = static_cast<acc_t>(static_cast<double>(to_acc(xv)) - r_lse);
      const acc_t prob = exp_acc(logp);
      const acc_t one_hot = j == tj ? hit : acc_t(0);
      acc_t d = ignored ? acc_t(0) : gl * (prob - off - one_hot);
      if (with_entropy) d -= prob == acc_t(0) ? acc_t(0) : ge * prob * (logp + h);
      return from_acc(d);
    };
    for (int j = lane; j < sp.extras; j += TPR) {
      const int at = extra_index(sp, j, VEC);
      gr[at] = d_of(xr[at], at);
    }
    for (int p0 = 0; p0 < sp.packs; p0 += TPR * ITEMS) {
      Pack<VEC> v[ITEMS];
#pragma unroll
      for (int u = 0; u < ITEMS; ++u) {
        const int p = p0 + u * TPR + lane;
        if (p < sp.packs) v[u] = load_pack<VEC>(body + static_cast<i64>(p) * VEC);
      }
#pragma unroll
      for (int u = 0; u < ITEMS; ++u) {
        const int p = p0 + u * TPR + lane;
        if (p >= sp.packs) continue;
        Pack<VEC> g;
        const int at = sp.head + p * VEC;
#pragma unroll
        for (int k = 0; k < VEC; ++k) g.e[k] = d_of(v[u].e[k], at + k);
        put_pack(gr, at, g, packed);
      }
    }
  }
}
#endif

// --- the reduced loss: PARTS blocks, a chunk of rows each (loss_parts.cuh) ------------------------

// counts[p] = the rows of chunk p whose target is not ignore_index (exact: the mean divides by
// their sum as acc_t, count_total). Block 0 zeroes the reduce's ticket: the reduce, launched after
// the forward, finds it 0 (the workspace holds anything before).
#ifdef KL_ENTRY_cross_entropy_count
extern "C" __global__ void __launch_bounds__(RT)
    cross_entropy_count(const i64* __restrict__ target, int* __restrict__ counts, int* __restrict__ ticket, i64 M,
                        i64 ignore_index) {
  __shared__ int part[RT / 32];
  const int n = count_chunk(chunk_of(M), target, ignore_index, part);
  if (threadIdx.x == 0) {
    counts[blockIdx.x] = n;
    if (blockIdx.x == 0) *ticket = 0;
  }
}
#endif

// out[0] = the sum of loss[0 .. M) in fp64, divided for the mean (counts not null) by the rows
// counted, as acc_t (as the forward's scale and torch divide): counts from cross_entropy_count,
// or, where target is not null, counted here, each block its chunk into counts[p]; NaN when the
// count is 0, as torch's 0 / 0. applied[0] = 1 (where applied is not null): the factor a fresh
// gradient carries (cross_entropy_scale).
// Block p sums its chunk into parts[p] and takes a ticket; the block that takes the last one
// (PARTS - 1) sums the partials in a fixed order, so the bits depend on M alone, never on which
// block finishes last. *ticket is 0 at the launch (zeroed by cross_entropy_count or the forward)
// and PARTS after it; nothing else is reset.
#ifdef KL_ENTRY_cross_entropy_reduce
extern "C" __global__ void __launch_bounds__(RT)
    cross_entropy_reduce(const acc_t* __restrict__ loss, const i64* __restrict__ target, int* counts, double* parts,
                         int* ticket, elem_t* __restrict__ out, acc_t* __restrict__ applied, i64 M, i64 ignore_index) {
  __shared__ double loss_part[RT / 32];
  __shared__ int count_part[RT / 32];
  __shared__ bool last;
  const Chunk c = chunk_of(M);
  const double s = chunk_sum<double>(c, [&](i64 r) { return loss[r]; }, loss_part);
  const int n = target != nullptr ? count_chunk(c, target, ignore_index, count_part) : 0;
  if (threadIdx.x == 0) {
    parts[blockIdx.x] = s;
    if (target != nullptr) counts[blockIdx.x] = n;
    __threadfence();  // release: this block's slots reach the device before its ticket does
    const bool mine = atomicAdd(ticket, 1) == PARTS - 1;
    if (mine) __threadfence();  // acquire: every other block's slots, released before its ticket
    last = mine;
  }
  __syncthreads();  // (thread 0's fence and the barrier order warp 0's loads below after the ticket)
  if (!last || threadIdx.x >= 32) return;
  // warp 0 of the last block; volatile loads, from L2: no stale line of L1 read
  const volatile double* vparts = parts;
  double sum = 0.0;
#pragma unroll
  for (int k = 0; k < PARTS / 32; ++k) sum += vparts[k * 32 + threadIdx.x];
  sum = warp_total(sum);
  const double n_all =
      counts != nullptr ? static_cast<double>(static_cast<acc_t>(count_total(static_cast<const volatile int*>(counts))))
                        : 1.0;
  if (threadIdx.x == 0) {
    out[0] = from_acc(static_cast<acc_t>(sum / n_all));
    if (applied != nullptr) applied[0] = acc_t(1);
  }
}
#endif

// grad[i] *= g[0] / applied[k] over n contiguous elements, where applied[k] is the factor grad
// carries: 1 from the forward, or g of an earlier call through the same forward (a backward run
// again through one graph: retain_graph, gradcheck), so that grad ends up scaled to this call's
// g. The usual call, g == 1 on a fresh gradient, touches nothing at all (every block returns before
// any load of grad): the common backward costs one small launch. Block 0 records g in
// applied[1 - k] for the next call (which the host makes with 1 - k): no block reads that slot in
// this launch, so the record races with no read.
#ifdef KL_ENTRY_cross_entropy_scale
extern "C" __global__ void __launch_bounds__(THREADS)
    cross_entropy_scale(elem_t* __restrict__ grad, const elem_t* __restrict__ g, acc_t* __restrict__ applied, int k,
                        i64 n) {
  const acc_t gv = to_acc(*g);
  const acc_t factor = gv / applied[k];
  if (blockIdx.x == 0 && threadIdx.x == 0) applied[1 - k] = gv;
  if (factor == acc_t(1)) return;
  for (i64 i = blockIdx.x * static_cast<i64>(THREADS) + threadIdx.x; i < n; i += static_cast<i64>(gridDim.x) * THREADS)
    grad[i] = from_acc(to_acc(grad[i]) * factor);
}
#endif
