// 04 cluster softmax (sm_90): rows too long for one block, split across a thread-block cluster.
//
// The C blocks of a cluster share a row: block `rank` owns the contiguous chunk of `chunk` elements
// starting at rank * chunk and keeps it in dynamic shared memory (up to ~227 KB a block on an
// H100) between its one read from DRAM and its one write. The read is one bulk copy (TMA,
// cp.async.bulk) issued by one thread and completing on an mbarrier: the whole chunk is in flight
// at once and no thread holds it in registers. (The first version loaded through registers, 4
// packs a thread at a time: a 32 KB chunk took two dependent DRAM round trips, a 64 KB one four,
// and the long-row shapes stalled at 82-94% of copy.) Once it has landed, each thread folds its
// packs into a running (max, sum of exp) pair; the block merges its threads' pairs, and the C block
// pairs are exchanged through distributed shared memory: after a cluster barrier, warp 0 of every
// block reads each block's pair with mapa + ld.shared::cluster and merges them, so each block knows
// the row's max and sum without a second pass over DRAM. Two pair slots alternate by row, so one
// cluster barrier per row suffices (a block can only overwrite a slot after every block has passed
// the next barrier, i.e. after every reader of that slot is done).
// What it buys over v3: v3's one-read-one-write traffic for rows up to C * 227 KB, with each SM
// holding only its chunk of a row, so several rows stay in flight per SM even at N = 262144.
//
// Constants: KL_CLUSTER (blocks per cluster, compiled in with __cluster_dims__), KL_THREADS,
// KL_VEC (elements per 16-byte pack; divides N and chunk: rows must be 16-byte aligned).
#include "common.cuh"

constexpr int C = KL_CLUSTER, THREADS = KL_THREADS, VEC = KL_VEC;
constexpr int WARPS = THREADS / 32;
static_assert(C <= 32, "warp 0 reads one block's pair per lane");
static_assert(Pack<VEC>::BYTES == 16, "bulk copies move whole 16-byte packs");

extern "C" __global__ void __cluster_dims__(C, 1, 1) __launch_bounds__(THREADS)
    softmax_cluster(const elem_t* __restrict__ x, elem_t* __restrict__ y, i64 M, int N, i64 x_stride,
                    i64 y_stride, int chunk) {
  extern __shared__ __align__(16) unsigned char smem[];
  const Pack<VEC>* held = reinterpret_cast<const Pack<VEC>*>(smem);  // this block's chunk of the row
  __shared__ __align__(8) unsigned long long chunk_landed;  // mbarrier: one phase per row
  __shared__ Stats warp_stats[WARPS];
  __shared__ Stats block_stats[2];  // this block's pair for the cluster to read; alternates by row
  __shared__ Stats row_stats;

  const unsigned rank = cluster_rank();
  const int begin = static_cast<int>(rank) * chunk;
  const int packs = max(0, min(chunk, N - begin)) / VEC;  // 0 for a block past the row's end
  const unsigned bytes = static_cast<unsigned>(packs) * sizeof(Pack<VEC>);
  if (threadIdx.x == 0) mbarrier_init(&chunk_landed);
  __syncthreads();
  int parity = 0;

  // Every block of a cluster runs the same rows, so the cluster barriers below always match up.
  for (i64 row = cluster_index(); row < M; row += cluster_count(), parity ^= 1) {
    // DRAM -> shared memory, then the chunk's (max, sum) from shared memory.
    if (bytes) {
      if (threadIdx.x == 0) bulk_load(smem, x + row * x_stride + begin, bytes, &chunk_landed);
      mbarrier_wait(&chunk_landed, parity);
    }
    Stats t = stats_empty();
#pragma unroll 4
    for (int p = threadIdx.x; p < packs; p += THREADS) t = stats_add<VEC>(t, held[p]);

    // Block pair -> this block's slot; cluster barrier; every block merges all C slots.
    t = block_merge_to_warp0<WARPS>(t, warp_stats);
    if (threadIdx.x == 0) block_stats[parity] = t;
    cluster_sync();
    if (threadIdx.x < 32) {
      Stats r = stats_empty();
      if (threadIdx.x < C) r = dsmem_load_stats(dsmem_address(&block_stats[parity], threadIdx.x));
      r = warp_merge<32>(r);
      if (threadIdx.x == 0) row_stats = r;
    }
    __syncthreads();
    const bool last_row = row + cluster_count() >= M;  // the same for the whole cluster
    if (last_row) cluster_arrive_relaxed();  // done with the other blocks' shared memory
    const float shift = safe_shift(row_stats.m);
    const float inv_sum = 1.f / row_stats.s;

    // Shared memory -> DRAM.
    elem_t* yr = y + row * y_stride + begin;
#pragma unroll 4
    for (int p = threadIdx.x; p < packs; p += THREADS) {
      const Pack<VEC> v = held[p];
      store_pack<VEC>(yr + p * VEC, make_pack<VEC>([&](int k) { return exp_shifted(elem(v, k), shift) * inv_sum; }));
    }
    __syncthreads();  // every read of the chunk (and of row_stats) is done before the next row's copy
  }
  if (cluster_index() >= M) cluster_arrive_relaxed();  // a cluster with no row (not launched by the host)
  cluster_wait();  // no block exits while another can still read its block_stats
}
