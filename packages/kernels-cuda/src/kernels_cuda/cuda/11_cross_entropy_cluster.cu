// 11 cluster cross-entropy (sm_90): 09's forward for rows too long for one block's registers,
// a row over the C blocks of a thread-block cluster, held in registers.
//
// 09 takes such a row with one block (KL_STEPS = 1): the block reads the whole row, keeping it in
// shared memory, and writes the gradient from there; a row's whole chain (read, block reduction,
// write) runs on one SM, at most two rows an SM. Here the row is split as 04 splits it (its
// register-held form, KL_ITEMS > 0): block `rank` holds chunk `rank` of the row's 16-byte packs in
// its threads' registers, loaded all at once; each thread takes its max, then its sum of
// exponentials against it (an fp32 chunk's exponentials kept in place of x; a 16-bit chunk keeps
// x, and takes the exponentials again at the store, so that its registers hold as many packs as
// fp32's); the block's pair (max, sum) goes to every block of the cluster through distributed
// shared memory (exchange_stats, cluster.cuh); every block merges the same C pairs in the same
// order and writes its chunk's gradient from registers. What it buys over 09: the logits read once
// from DRAM and the gradient written once, the row spread over C SMs, several rows an SM in
// flight, no shared-memory copy of the row and no second pass over it.
//
// Row `row`, target t (04's split: the head, the elements before the row's first 16-byte
// boundary, and the tail, after its last whole pack, fewer than VEC each, go to the last block,
// one element a thread):
//   lse  = m + log s, (m, s) the row's max and sum of exp(x - m)   (written by block 0)
//   loss = (m - x[t]) + log s   (0 where t == ignore_index; NaN where t is outside [0, N); written by the
//                         thread holding column t, else by block 0)
//   grad = (p - [j == t]) * scale, p = exp(x - m) / s; 0 in ignored rows, NaN throughout where t
//          is out of range; scale = 1 / count for the mean, count the sum of 09's PARTS chunk
//          counts (counts null: 1)
// which is 09's forward without label smoothing and entropy (the host routes neither here). Block 0
// zeroes the reduce's ticket where ticket is not null, as 09's forward. The entry's parameters are
// 09's cross_entropy_forward's (entropy_out unused), chunk (packs a block) in place of smoothing
// and staged, so that the host launches either one the same way.
//
// Invariants. Batch invariance: a row's split (C, chunk, head) and every sum's order follow N, the
// dtype and the row's address mod 16, never the rest of the batch; every block merges the C pairs
// in the same order (the same bits in each). grad may be x itself (inplace): every element is read
// (the target's twice) by the thread that later writes it, before it writes anything, and no
// thread reads an element another thread writes (through the coherent path: load_x). The gradient
// goes out in 16-byte stores where its row lies at x's row's address mod 16 (the host allocates
// it so), else an element at a time: the same values either way.
//
// Constants: KL_CLUSTER (blocks a cluster, compiled in with __cluster_dims__), KL_THREADS,
// KL_VEC (elements of a 16-byte pack), KL_ITEMS (packs a thread holds: ITEMS * THREADS >= chunk).
#include "cluster.cuh"
#include "loss_parts.cuh"  // PARTS, count_total: the mean's count, as 09's forward sums it

constexpr int C = KL_CLUSTER, THREADS = KL_THREADS, VEC = KL_VEC, ITEMS = KL_ITEMS;
constexpr int WARPS = THREADS / 32;
static_assert(C <= 32, "warp 0 pushes and merges one block's pair a lane");
static_assert(sizeof(Pack<VEC>) == 16, "the body moves in 16-byte packs");
static_assert(2 * (VEC - 1) <= THREADS, "one thread an element of the head and the tail");
// A pack of x (or one element) through the coherent path, ld.global, not common.cuh's read-only
// ld.global.nc: grad may be x itself, and the compiler may take a read-only load's memory as never
// written, free to move the load past the stores that write over it.
template <int V> __device__ __forceinline__ Pack<V> load_x(const elem_t* p) {
  Pack<V> v;
  if constexpr (Pack<V>::BYTES == 16) {
    const uint4 w = *reinterpret_cast<const uint4*>(p);
    v.w[0] = w.x, v.w[1] = w.y, v.w[2] = w.z, v.w[3] = w.w;
  } else if constexpr (Pack<V>::BYTES == 4) {
    v.w[0] = *reinterpret_cast<const unsigned*>(p);
  } else {
    static_assert(V == 1 && sizeof(elem_t) == 2, "a 16-byte pack or one element");
    v.w[0] = *p;
  }
  return v;
}

// The gradient's pack at gr (a pack of x's body): one 16-byte store where the gradient's row lies
// at x's row's offset (`packed`), else VEC element stores.
__device__ __forceinline__ void put_pack(elem_t* gr, const Pack<VEC>& g, bool packed) {
  if (packed) {
    store_pack<VEC>(gr, g);
  } else {
#pragma unroll
    for (int k = 0; k < VEC; ++k) store_pack<1>(gr + k, make_pack<1>([&](int) { return elem(g, k); }));
  }
}

extern "C" __global__ void __cluster_dims__(C, 1, 1) __launch_bounds__(THREADS)
    cross_entropy_cluster_forward(const elem_t* x, elem_t* grad, const i64* __restrict__ target,
                                  float* __restrict__ loss, double* __restrict__ lse_out,
                                  const float* __restrict__ entropy_out, const int* __restrict__ counts,
                                  int* __restrict__ ticket, i64 M, int N, i64 x_stride, i64 grad_stride,
                                  i64 ignore_index, int chunk) {
  __shared__ Stats warp_stats[WARPS];
  __shared__ Stats inbox[C];  // every block's pair of the row, pushed by that block
  __shared__ __align__(8) unsigned long long inbox_full;  // mbarrier: complete once all C have landed
  __shared__ Stats row_stats;

  // the reduce that follows on the stream finds its ticket zeroed (09's cross_entropy_reduce)
  if (ticket != nullptr && blockIdx.x == 0 && threadIdx.x == 0) *ticket = 0;
  const i64 row = cluster_index();  // the host launches M clusters: a cluster a row
  if (row >= M) return;  // (every block of a cluster alike, before any barrier)
  const unsigned rank = cluster_rank();
  if (threadIdx.x == 0) mbarrier_init(&inbox_full);
  __syncthreads();
  // Pushes into a block need its mbarrier initialised (mbarrier_init fences it for the cluster):
  // arrive here, wait just before the push, so that the row's loads are in flight meanwhile.
  cluster_arrive_relaxed();

  const elem_t* xr = x + row * x_stride;
  const RowParts<VEC> parts = row_parts<VEC>(xr, N);
  const int head = parts.head, tail = parts.tail;
  const int first_pack = static_cast<int>(rank) * chunk;  // this block's first pack of the body
  const int packs = max(0, min(chunk, parts.body_packs - first_pack));  // 0 past the body's end
  const int tid = static_cast<int>(threadIdx.x);

  // DRAM -> registers: every load of the chunk in flight before any is used.
  Pack<VEC> v[ITEMS];  // pack i * THREADS + tid of the chunk; -inf past it
#pragma unroll
  for (int i = 0; i < ITEMS; ++i) {
    const int p = i * THREADS + tid;
    v[i] = p < packs ? load_x<VEC>(xr + head + (first_pack + p) * VEC) : neg_inf_pack<VEC>();
  }
  const bool has_edge = rank == C - 1 && tid < head + tail;  // the last block: head and tail
  const int edge_col = parts.edge_col(tid, N);
  const Pack<1> edge = has_edge ? load_x<1>(xr + edge_col) : neg_inf_pack<1>();

  const i64 t = target[row];
  const bool ignored = t == ignore_index;
  const bool valid = !ignored && t >= 0 && t < N;
  // The thread holding column t (its pack's or its edge element's) reads x[t] and writes the loss
  // and the target's gradient; no thread where t is ignored or out of range.
  bool owner = false;
  if (valid) {
    const int tc = static_cast<int>(t), body_end = head + parts.body_packs * VEC;
    if (tc >= head && tc < body_end) {
      const int p = (tc - head) / VEC - first_pack;  // the pack in this block's chunk
      owner = p >= 0 && p < packs && p % THREADS == tid;
    } else {
      owner = rank == C - 1 && tid == (tc < head ? tc : head + tc - body_end);
    }
  }
  const float xt = owner ? elem(load_x<1>(xr + t), 0) : 0.f;
  // the mean's scale, the count summed by every warp, whole here: its loads wait alongside the row's
  const float scale = counts != nullptr ? __frcp_rn(static_cast<float>(count_total(counts))) : 1.f;

  // The thread's max, then its sum against it (fp32: each x becoming its exponential, in place).
  const float thread_max = held_max(pack_max<1>(KL_NEG_INF, edge), v);
  const float edge_e = has_edge ? exp_shifted(elem(edge, 0), safe_shift(thread_max)) : 0.f;
  Stats st = {thread_max, held_exp_sum<THREADS>(v, safe_shift(thread_max), tid, packs, edge_e)};

  // The block's pair -> every block; the C pairs merged in every block alike.
  st = block_merge_to_warp0<WARPS>(st, warp_stats);
  cluster_wait();  // every block's mbarrier is ready
  if (threadIdx.x < 32) {
    const Stats r = exchange_stats<C>(st, inbox, &inbox_full, 0, rank);
    if (threadIdx.x == 0) row_stats = r;
  }
  __syncthreads();
  cluster_arrive_relaxed();  // every push into this block has landed
  const float m = row_stats.m, s = row_stats.s, shift = safe_shift(m), inv_s = __frcp_rn(s);

  if (grad != nullptr) {
    elem_t* gr = grad + row * grad_stride;
    const auto address = [](const void* p) { return reinterpret_cast<unsigned long long>(p); };
    const bool packed = (address(gr) ^ address(xr)) % 16 == 0;
    // valid: scale; ignored: 0 (exact zeros, whatever the row holds); out of range: NaN
    const float row_scale = ignored ? 0.f : valid ? scale : __int_as_float(0x7fc00000);
    // p * scale = exp(x - m) * p_scale. fp32 holds exp(x - thread_max): rescaled by held_scale
    // (0 for a thread that saw only -inf; NaN throughout a row that is all -inf, as torch); 16-bit
    // holds x, its exponential taken again (held beside x, the exponentials would take twice the
    // packs' registers: half the blocks an SM).
    const float p_scale = inv_s * row_scale, held_scale = exp_shifted(thread_max, shift) * p_scale;
    auto g_of = [&](float held) {
      if (ignored) return 0.f;
      return EXP_IN_PLACE ? held * held_scale : exp_shifted(held, shift) * p_scale;
    };
    elem_t* gb = gr + head + first_pack * VEC;
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
      const int p = i * THREADS + tid;
      if (p < packs) {
        put_pack(gb + p * VEC, make_pack<VEC>([&](int k) { return g_of(elem(v[i], k)); }), packed);
      }
    }
    if (has_edge) {
      const float g = g_of(EXP_IN_PLACE ? edge_e : elem(edge, 0));
      store_pack<1>(gr + edge_col, make_pack<1>([&](int) { return g; }));
    }
    // the target's element again, by the thread that just wrote it (program order: this store
    // lands last)
    if (owner) {
      const float g_t = (exp_shifted(xt, shift) * inv_s - 1.f) * scale;
      store_pack<1>(gr + t, make_pack<1>([&](int) { return g_t; }));
    }
  }
  // The row's outputs after the gradient (logf's registers are free by then).
  if (owner || (rank == 0 && threadIdx.x == 0)) {
    const float log_s = logf(s);
    // (m - x[t]) first: exact for logits near each other, where lse - x[t] would lose the digits
    // that lse's rounding at the logits' magnitude (1e4: a 1e-3 step) drops
    if (owner) loss[row] = (m - xt) + log_s;
    if (rank == 0 && threadIdx.x == 0) {
      if (!valid) loss[row] = ignored ? 0.f : __int_as_float(0x7fc00000);
      if (lse_out != nullptr) lse_out[row] = static_cast<double>(m) + static_cast<double>(log_s);  // exact
    }
  }
  cluster_wait();  // no block exits while a push into its shared memory may still be in flight
}
