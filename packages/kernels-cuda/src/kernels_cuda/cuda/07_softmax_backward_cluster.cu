// 07 softmax backward over a thread-block cluster (sm_90): rows too long for registers.
//
// dx = y * (dy - sum(y * dy)), each row split over the C blocks of a cluster as in the forward
// cluster kernel (04): block `rank` owns the contiguous chunk of `chunk` elements starting at
// rank * chunk of the row's 16-byte-aligned body (below). Its chunk of y and its chunk of dy arrive in dynamic shared memory by two bulk
// copies (TMA) that complete one mbarrier phase together; the block sums y * dy over the chunk;
// the C partial sums are exchanged through distributed shared memory as in 04 (warp 0 of every
// block pushes the block's sum into every block's inbox with st.async and waits for all C in its
// own); then each block writes its chunk of dx from shared memory. One read of y and dy and one
// write of dx per element, for rows up to C * ~113 KB per array.
//
// Where both chunks take more than half of an SM's shared memory (64 KB of each array at
// 256x262144 fp32), one block an SM has nothing in flight while it exchanges and writes, and in
// 16-block clusters (a cluster stays inside a GPC) only 7 fit the GPU. With KL_DY_PACKS > 0 each
// thread instead holds its packs of dy in registers (loaded while y's bulk copy flies, at most
// DY_PACKS a thread), shared memory holds y's chunk alone, and two blocks share an SM: one's loads
// overlap the other's exchange and writes.
//
// Rows need not be whole 16-byte packs (an odd N such as a 50257-token vocabulary): as in 04, a
// row is its head (the elements before its first 16-byte boundary), its aligned body and its tail,
// the head and the tail fewer than VEC elements each. The body is split into chunks and moved in
// bulk; the last block of the cluster also takes the head and the tail, one element per thread,
// added to its sum like its chunk. The host sends only layouts whose y, dy and dx rows sit at the
// same offset from a 16-byte boundary, row for row, so one split serves both reads and the write.
//
// log_softmax's backward (KL_LOG = 1), dx = dy - exp(y) * sum(dy), y the log-probabilities, is
// the same kernel summing dy alone, with that epilogue.
//
// Constants: KL_CLUSTER (blocks per cluster, compiled in with __cluster_dims__), KL_THREADS,
// KL_VEC (elements per 16-byte pack; divides chunk), KL_DY_PACKS (0: dy in shared memory),
// KL_LOG (0 when not given).
#include "cluster.cuh"

#ifndef KL_LOG
#define KL_LOG 0
#endif
constexpr int C = KL_CLUSTER, THREADS = KL_THREADS, VEC = KL_VEC, DY_PACKS = KL_DY_PACKS;
constexpr bool LOG = KL_LOG;
// a row's partial: softmax's y * dy, log_softmax's dy
__device__ __forceinline__ float term(float y, float dy, float acc) { return LOG ? acc + dy : fmaf(y, dy, acc); }
// dx from an element's y and dy and the row's sum
__device__ __forceinline__ float grad(float y, float dy, float d) {
  return LOG ? dy - exp_shifted(y, 0.f) * d : y * (dy - d);
}
// dy in registers: room for two blocks an SM (at most 128 registers a thread). Otherwise no minimum:
// a minimum of one block lets the compiler take up to 255 registers, and it nearly doubled them,
// which halved the blocks an SM.
#if KL_DY_PACKS
#define KL_BOUNDS __launch_bounds__(THREADS, 2)
#else
#define KL_BOUNDS __launch_bounds__(THREADS)
#endif
constexpr int WARPS = THREADS / 32;
constexpr int PACK_BYTES = static_cast<int>(sizeof(Pack<VEC>));
static_assert(C <= 32, "warp 0 reads one block's sum per lane");
static_assert(PACK_BYTES == 16, "bulk copies move whole 16-byte packs");
static_assert(2 * (VEC - 1) <= THREADS, "one thread per element of the head and the tail");

extern "C" __global__ void __cluster_dims__(C, 1, 1) KL_BOUNDS
    softmax_backward_cluster(const elem_t* __restrict__ y, const elem_t* __restrict__ dy, elem_t* __restrict__ dx,
                             i64 M, int N, i64 y_stride, i64 dy_stride, i64 dx_stride, int chunk) {
  extern __shared__ __align__(16) unsigned char smem[];
  const Pack<VEC>* held_y = reinterpret_cast<const Pack<VEC>*>(smem);  // chunk elements of y, then of dy
  const Pack<VEC>* held_dy = held_y + chunk / VEC;                       // (unless DY_PACKS: y alone)
  __shared__ __align__(8) unsigned long long chunk_landed;  // mbarrier: one phase per row's copies
  __shared__ float warp_dots[WARPS];
  __shared__ float inbox[2][C];  // every block's sum of the row, pushed by that block; alternates by row
  __shared__ __align__(8) unsigned long long inbox_full[2];  // mbarriers: a phase per use of an inbox
  __shared__ float row_dot;

  const unsigned rank = cluster_rank();
  const bool takes_edges = rank == C - 1;  // the block that also handles the head and the tail
  const int chunk_packs = chunk / VEC;
  const int first_pack = static_cast<int>(rank) * chunk_packs;  // of the body, this block's first
  const int tid = static_cast<int>(threadIdx.x);
  if (threadIdx.x == 0) {
    mbarrier_init(&chunk_landed);
    mbarrier_init(&inbox_full[0]);
    mbarrier_init(&inbox_full[1]);
  }
  __syncthreads();
  // Pushes into a block need its inbox mbarriers initialised (mbarrier_init fences them for the
  // cluster): arrive here, wait just before the first push, so the first row's copy is in flight
  // meanwhile (a grid of one row a cluster pays this on every row).
  cluster_arrive_relaxed();
  bool first_row = true;
  int copy_parity = 0;  // chunk_landed's phase parity; flips with each row's copies (a body may miss a block)
  int slot = 0;
  unsigned inbox_parity = 0;  // bit s: the parity of inbox_full[s]'s next phase

  // Every block of a cluster runs the same rows, so every push has a receiver waiting for it.
  for (i64 row = cluster_index(); row < M; row += cluster_count(), slot ^= 1) {
    const elem_t* yr = y + row * y_stride;
    const elem_t* dyr = dy + row * dy_stride;
    elem_t* dxr = dx + row * dx_stride;
    const RowParts<VEC> parts = row_parts<VEC>(yr, N);  // head, body and tail of this row
    const int head = parts.head, tail = parts.tail;
    const int packs = max(0, min(chunk_packs, parts.body_packs - first_pack));  // 0 past the body's end
    const int begin = head + first_pack * VEC;
    const unsigned bytes = static_cast<unsigned>(packs) * PACK_BYTES;

    if (packs && threadIdx.x == 0) {
      bulk_expect(&chunk_landed, (DY_PACKS ? 1 : 2) * bytes);
      bulk_copy(smem, yr + begin, bytes, &chunk_landed);
      if constexpr (!DY_PACKS) {
        bulk_copy(smem + static_cast<size_t>(chunk) * sizeof(elem_t), dyr + begin, bytes, &chunk_landed);
      }
    }
    // DY_PACKS: dy_held[i] is pack tid + i * THREADS of this block's chunk of dy, i < mine; all
    // loads in flight at once, addressed from one base with constant offsets.
    const int mine = DY_PACKS && packs > tid ? (packs - tid + THREADS - 1) / THREADS : 0;
    Pack<VEC> dy_held[DY_PACKS ? DY_PACKS : 1];
    if constexpr (DY_PACKS) {
      const elem_t* dyb = dyr + begin + tid * VEC;
#pragma unroll
      for (int i = 0; i < DY_PACKS; ++i) {
        if (i < mine) dy_held[i] = load_pack<VEC>(dyb + i * THREADS * VEC);
      }
    }
    // element tid of the head and the tail, loaded while the copies fly
    const bool has_edge = takes_edges && tid < head + tail;
    const int edge_col = parts.edge_col(tid, N);
    const float edge_y = has_edge ? elem(load_pack<1>(yr + edge_col), 0) : 0.f;
    const float edge_dy = has_edge ? elem(load_pack<1>(dyr + edge_col), 0) : 0.f;
    float dot = LOG ? edge_dy : edge_y * edge_dy;
    if (packs) {
      mbarrier_wait(&chunk_landed, copy_parity);
      copy_parity ^= 1;
    }
    // The dot and the store below each have two loops over this thread's packs (dy in registers
    // or in shared memory), written out: one helper taking the loop body as a lambda made ptxas
    // spill 28-36 bytes in DY_PACKS builds.
    if constexpr (DY_PACKS) {
#pragma unroll
      for (int i = 0; i < DY_PACKS; ++i) {
        if (i < mine) {
          const Pack<VEC> a = held_y[tid + i * THREADS];
#pragma unroll
          for (int k = 0; k < VEC; ++k) dot = term(elem(a, k), elem(dy_held[i], k), dot);
        }
      }
    } else {
#pragma unroll 4
      for (int p = tid; p < packs; p += THREADS) {
        const Pack<VEC> a = held_y[p], b = held_dy[p];
#pragma unroll
        for (int k = 0; k < VEC; ++k) dot = term(elem(a, k), elem(b, k), dot);
      }
    }
    dot = block_sum_to_warp0<WARPS>(dot, warp_dots);  // every lane of warp 0 holds the block's sum
    if (first_row) {
      cluster_wait();  // every block's inbox is ready
      first_row = false;
    }
    if (threadIdx.x < 32) {
      if (threadIdx.x == 0) mbarrier_expect(&inbox_full[slot], C * sizeof(float));
      if (threadIdx.x < C) push_f32(&inbox[slot][rank], dot, &inbox_full[slot], threadIdx.x);
      mbarrier_wait<Acquire::cluster>(&inbox_full[slot], inbox_parity >> slot & 1);
      float r = threadIdx.x < C ? inbox[slot][threadIdx.x] : 0.f;
      r = warp_sum<32>(r);
      if (threadIdx.x == 0) row_dot = r;
    }
    inbox_parity ^= 1u << slot;
    __syncthreads();
    const bool last_row = row + cluster_count() >= M;  // the same for the whole cluster
    if (last_row) cluster_arrive_relaxed();  // every push into this block has landed
    const float d = row_dot;

    elem_t* dxb = dxr + begin;  // dx's row has y's head (the host checks), so its body is aligned too
    if constexpr (DY_PACKS) {
      elem_t* dxt = dxb + tid * VEC;
#pragma unroll
      for (int i = 0; i < DY_PACKS; ++i) {
        if (i < mine) {
          const Pack<VEC> a = held_y[tid + i * THREADS], b = dy_held[i];
          store_pack<VEC>(dxt + i * THREADS * VEC, make_pack<VEC>([&](int k) { return grad(elem(a, k), elem(b, k), d); }));
        }
      }
    } else {
#pragma unroll 4
      for (int p = tid; p < packs; p += THREADS) {
        const Pack<VEC> a = held_y[p], b = held_dy[p];
        store_pack<VEC>(dxb + p * VEC, make_pack<VEC>([&](int k) { return grad(elem(a, k), elem(b, k), d); }));
      }
    }
    if (has_edge) store_pack<1>(dxr + edge_col, make_pack<1>([&](int) { return grad(edge_y, edge_dy, d); }));
    __syncthreads();  // every read of the chunk (and of row_dot) is done before the next row's copies
  }
  if (cluster_index() >= M) {  // a cluster with no row (not launched by the host): the row loop's barrier halves
    cluster_wait();
    cluster_arrive_relaxed();
  }
  cluster_wait();  // no block exits while a push into its shared memory may still be in flight
}
