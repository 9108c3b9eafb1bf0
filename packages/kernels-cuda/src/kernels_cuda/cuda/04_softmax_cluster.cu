// 04 cluster softmax (sm_90): rows too long for one block, split across a thread-block cluster.
//
// The C blocks of a cluster share a row: block `rank` owns the contiguous chunk of `chunk` elements
// starting at rank * chunk and keeps it in dynamic shared memory (up to ~227 KB a block on an
// H100) between its one read from DRAM and its one write. The read goes straight to shared
// memory (cp.async, 16 bytes an instruction): every thread issues the copies of all its packs at
// once, so the whole chunk is in flight together and no thread holds it in registers. (Loading
// through registers, 4 packs a thread at a time, took two dependent DRAM round trips for a 32 KB
// chunk and four for 64 KB; one bulk copy of the chunk issued by one thread, TMA's
// cp.async.bulk, was slower in the 16-32 KB chunks auto uses for long rows:
// experiments/notes/kernels-cuda.md.) Once its own copies have landed, each thread folds the
// packs it copied into a running (max, sum of exp) pair; the block merges its threads' pairs, and
// the C block pairs are exchanged through distributed shared memory: warp 0 of every block pushes the block's
// pair into every block's inbox (st.async, counted on the receiver's mbarrier; common.cuh says
// why not a cluster barrier), waits until all C pairs have landed in its own and merges them, so
// each block knows the row's max and sum without a second pass over DRAM.
// What it buys over v3: v3's one-read-one-write traffic for rows up to C * 227 KB, with each SM
// holding only its chunk of a row, so several rows stay in flight per SM even at N = 262144.
//
// Rows need not be whole 16-byte packs (an odd N, say, such as a 50257-token vocabulary): a row is
// its head (the elements before its first 16-byte boundary), its aligned body, and its tail (what
// is left after the last whole pack), the head and the tail fewer than VEC elements each. The body
// is split into chunks and moved as above; the last block of the cluster also takes the
// head and the tail, one element per thread, folded into its pair like its chunk. Without this,
// such rows went to the two-pass kernel (05) with element-wide loads, and few long rows (64 of
// them: 64 blocks on 132 SMs, 2-byte loads) ran far from the memory system's speed. The host
// sends only layouts whose x and y rows sit at the same offset from a 16-byte boundary, row for
// row, so one head length serves the read and the write.
//
// Held in registers (KL_ITEMS > 0): a launch of few rows is one wave of clusters whose every row
// waits on the whole chain, DRAM -> shared memory -> the pair -> the exchange -> shared memory ->
// DRAM. With ITEMS packs a thread, the chunk is loaded straight into registers (all ITEMS loads in
// flight before any is used, as in v3), each thread takes its max first and then its sum against
// it, keeps the exponentials in fp32 registers (an fp32 chunk's in place; a 16-bit one's in
// twice its packs' registers) and rescales them once after the exchange, and the output is
// written from the registers: no shared memory for the chunk, no barrier between rows, and one
// ex2 an element.
//
// log_softmax (KL_LOG = 1) is the same kernel with another epilogue, y = (x - max) - log(sum), for
// rows 10 would read twice or an element at a time (log_softmax_op.cluster_plan): the chunk in
// shared memory, where x is kept (held fp32 chunks keep their exponentials in place of x).
//
// Constants: KL_CLUSTER (blocks per cluster, compiled in with __cluster_dims__), KL_THREADS,
// KL_VEC (elements per 16-byte pack; divides chunk), KL_ITEMS (0: the chunk in shared memory;
// else packs a thread holds, ITEMS * THREADS >= chunk / VEC), KL_LOG (0 when not given).
#include "cluster.cuh"

#ifndef KL_LOG
#define KL_LOG 0
#endif
constexpr int C = KL_CLUSTER, THREADS = KL_THREADS, VEC = KL_VEC, ITEMS = KL_ITEMS;
constexpr bool LOG = KL_LOG;
static_assert(!LOG || ITEMS == 0, "log_softmax keeps x: its chunk goes through shared memory");
constexpr int WARPS = THREADS / 32;
constexpr int PACK_BYTES = static_cast<int>(sizeof(Pack<VEC>));
static_assert(C <= 32, "warp 0 reads one block's pair per lane");
static_assert(PACK_BYTES == 16, "cp.async moves whole 16-byte packs");
static_assert(2 * (VEC - 1) <= THREADS, "one thread per element of the head and the tail");

extern "C" __global__ void __cluster_dims__(C, 1, 1) __launch_bounds__(THREADS)
    softmax_cluster(const elem_t* __restrict__ x, elem_t* __restrict__ y, i64 M, int N, i64 x_stride,
                    i64 y_stride, int chunk) {
  extern __shared__ __align__(16) unsigned char smem[];
  const Pack<VEC>* held = reinterpret_cast<const Pack<VEC>*>(smem);  // this block's chunk of the row
  __shared__ Stats warp_stats[WARPS];
  __shared__ Stats inbox[2][C];  // every block's pair of the row, pushed by that block; alternates by row
  __shared__ __align__(8) unsigned long long inbox_full[2];  // mbarriers: a phase per use of an inbox
  __shared__ Stats row_stats;

  const unsigned rank = cluster_rank();
  const bool takes_edges = rank == C - 1;  // the block that also handles the head and the tail
  const int chunk_packs = chunk / VEC;
  const int first_pack = static_cast<int>(rank) * chunk_packs;  // of the body, this block's first
  if (threadIdx.x == 0) {
    mbarrier_init(&inbox_full[0]);
    mbarrier_init(&inbox_full[1]);
  }
  __syncthreads();
  // Pushes into a block need its inbox mbarriers initialised (mbarrier_init fences them for the
  // cluster): arrive here, wait just before the first push, so the first row's copy is in flight
  // meanwhile (a grid of one row a cluster pays this on every row).
  cluster_arrive_relaxed();
  bool first_row = true;
  int slot = 0;
  unsigned inbox_parity = 0;  // bit s: the parity of inbox_full[s]'s next phase

  // Every block of a cluster runs the same rows, so every push has a receiver waiting for it.
  for (i64 row = cluster_index(); row < M; row += cluster_count(), slot ^= 1) {
    const elem_t* xr = x + row * x_stride;
    elem_t* yr = y + row * y_stride;
    const RowParts<VEC> parts = row_parts<VEC>(xr, N);  // head, body and tail of this row
    const int head = parts.head, tail = parts.tail;
    const int packs = max(0, min(chunk_packs, parts.body_packs - first_pack));  // 0 past the body's end

    // DRAM -> shared memory or registers (in flight while the edge elements load), then the pair
    // of the chunk.
    const Pack<VEC>* chunk_src = reinterpret_cast<const Pack<VEC>*>(xr + head + first_pack * VEC);
    Pack<VEC> v[ITEMS > 0 ? ITEMS : 1];  // held: pack i * THREADS + threadIdx.x of the chunk
    float e[ITEMS > 0 ? ITEMS : 1][VEC];  // held, 16-bit: exp(x - this thread's max) (fp32: in v)
    if constexpr (ITEMS > 0) {
#pragma unroll
      for (int i = 0; i < ITEMS; ++i) {
        const int p = i * THREADS + static_cast<int>(threadIdx.x);
        v[i] = p < packs ? load_pack<VEC>(xr + head + (first_pack + p) * VEC) : neg_inf_pack<VEC>();
      }
    } else {
#pragma unroll 8
      for (int p = threadIdx.x; p < packs; p += THREADS) copy_async_16(smem + p * PACK_BYTES, chunk_src + p);
      copy_async_commit();
    }
    const int edge = static_cast<int>(threadIdx.x);  // this thread's edge element, if any
    const bool has_edge = takes_edges && edge < head + tail;
    const int edge_col = parts.edge_col(edge, N);
    const Pack<1> edge_value = has_edge ? load_pack<1>(xr + edge_col) : neg_inf_pack<1>();
    Stats t = stats_empty();
    if constexpr (ITEMS > 0) {
      // this thread's max, then its sum against it: one ex2 an element and no running rescale
      const float m = held_max(pack_max<1>(KL_NEG_INF, edge_value), v);
      const float shift = safe_shift(m);
      const float edge_e = has_edge ? exp_shifted(elem(edge_value, 0), shift) : 0.f;
      t = {m, held_exp_sum<THREADS>(v, shift, static_cast<int>(threadIdx.x), packs, edge_e, e)};
    } else {
      if (has_edge) t = stats_add<1>(t, edge_value);
      // Each thread reads only the packs it copied (the loops below stride as the copies did), and
      // a thread's own copies are visible to it once it has waited for them: no block barrier here.
      copy_async_wait();
#pragma unroll 4
      for (int p = threadIdx.x; p < packs; p += THREADS) t = stats_add<VEC>(t, held[p]);
    }
    const float thread_max = t.m;  // held exponentials are relative to it

    // Block pair -> every block's inbox; once all C pairs are in this block's, merge them.
    t = block_merge_to_warp0<WARPS>(t, warp_stats);  // every lane of warp 0 holds the block's pair
    if (first_row) {
      cluster_wait();  // every block's inbox is ready
      first_row = false;
    }
    if (threadIdx.x < 32) {
      const Stats r = exchange_stats<C>(t, inbox[slot], &inbox_full[slot], inbox_parity >> slot & 1, rank);
      if (threadIdx.x == 0) row_stats = r;
    }
    inbox_parity ^= 1u << slot;
    __syncthreads();
    const bool last_row = row + cluster_count() >= M;  // the same for the whole cluster
    if (last_row) cluster_arrive_relaxed();  // every push into this block has landed
    const float shift = safe_shift(row_stats.m);
    const float inv_sum = 1.f / row_stats.s;
    const float log_sum = logf(row_stats.s);  // (log_softmax) at full precision, once a row
    // the epilogue of an element x: softmax's exp(x - max) / sum, log_softmax's (x - max) - log(sum)
    auto out = [&](float x) { return LOG ? (x - shift) - log_sum : exp_shifted(x, shift) * inv_sum; };

    // Shared memory or registers -> DRAM; y's row has the same head as x's (the host checks), so its
    // body is aligned too.
    elem_t* yb = yr + head + first_pack * VEC;
    if constexpr (ITEMS > 0) {
      // held exponentials: rescaled from this thread's max to the row's (0 for a thread that saw
      // only -inf; NaN when the whole row is -inf, as in torch)
      const float scale = exp_shifted(thread_max, shift) * inv_sum;
#pragma unroll
      for (int i = 0; i < ITEMS; ++i) {
        const int p = i * THREADS + static_cast<int>(threadIdx.x);
        if (p < packs) {
          store_pack<VEC>(yb + p * VEC, make_pack<VEC>([&](int k) {
            if constexpr (EXP_IN_PLACE) return elem(v[i], k) * scale;
            else return e[i][k] * scale;
          }));
        }
      }
    } else {
#pragma unroll 4
      for (int p = threadIdx.x; p < packs; p += THREADS) {
        const Pack<VEC> pack = held[p];
        store_pack<VEC>(yb + p * VEC, make_pack<VEC>([&](int k) { return out(elem(pack, k)); }));
      }
    }
    if (has_edge) {
      store_pack<1>(yr + edge_col, make_pack<1>([&](int) { return out(elem(edge_value, 0)); }));
    }
    // Every read of the chunk in shared memory (and of row_stats) is done before the next row's
    // copy. Held in registers, the next write of row_stats comes after the next block merge's
    // barrier, which every thread reaches only after its read of this one.
    if constexpr (ITEMS == 0) __syncthreads();
  }
  if (cluster_index() >= M) {  // a cluster with no row (not launched by the host): the row loop's barrier halves
    cluster_wait();
    cluster_arrive_relaxed();
  }
  cluster_wait();  // no block exits while a push into its shared memory may still be in flight
}
