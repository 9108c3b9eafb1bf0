// 06 split softmax (sm_90): few long rows, each split over S independent blocks that exchange
// their (max, sum) pairs through global memory.
//
// Why not the cluster kernel: with few rows of 1 MB the cluster kernel needs 16-block clusters of
// 64 KB chunks, and a 16-block cluster must fit inside one GPC, so fewer clusters are resident
// than shared memory would allow blocks, and every block of a cluster waits at the per-row
// cluster barrier for the slowest of 16 chunks (the ncu reading is in
// experiments/notes/kernels-cuda.md). Here a row is S plain blocks (chunks of 32 KB or less)
// placed anywhere on the chip, so every SM holds as many chunks as its shared memory allows and
// no block waits for a GPC to have room.
//
// Each block: takes the next ticket from a global counter (ticket t = chunk t % S of row t / S), so
// the blocks of a row get consecutive tickets and run at the same time; brings its chunk into
// dynamic shared memory with one bulk copy (TMA) completing on an mbarrier; folds it into a
// (max, sum of exp) pair; publishes the pair in global memory and counts itself in the row's
// arrival counter; waits until all S blocks of the row have arrived; merges the S pairs (each block
// merges them itself: no second pass, no second launch); writes exp(x - max) / sum from shared
// memory. One read and one write per element, as in the cluster kernel.
//
// Why it cannot deadlock: a block takes its ticket only once it is running, and tickets are taken
// in order. If every running block waited, the lowest unfinished row would have untaken tickets
// only if no running block held a later ticket, i.e. every running block held one of that row's
// fewer than S tickets; the host launches this kernel only when more than S blocks fit on the GPU
// at once, so a slot would be free and the next block would take the next ticket of that row.
//
// The workspace's counters are zeroed by the host on the launch's stream before each launch.
// (A self-cleaning version, where the last reader of a row zeroed its counters, left them
// nonzero on the H100: measurements/2026-11-25-h100/kernels-cuda-kernels/run2-tests-tail.log.)
//
// Workspace layout (32-bit words): [0] ticket, [1] unused, [2, 2 + M) arrivals per row, [2 + M, 2 + 2M)
// unused, then (8-byte aligned: 2 + 2M is even) M * S Stats. Words [0, 2 + 2M) are zeroed per launch.
//
// Constants: KL_THREADS, KL_VEC (16-byte packs; N and chunk are multiples of it). S (`split`) and
// the chunk length are launch arguments: one specialization serves every row length.
#include "common.cuh"

constexpr int THREADS = KL_THREADS, VEC = KL_VEC;
constexpr int WARPS = THREADS / 32;
static_assert(Pack<VEC>::BYTES == 16, "bulk copies move whole 16-byte packs");

__device__ __forceinline__ unsigned load_volatile(const unsigned* p) {
  return *reinterpret_cast<const volatile unsigned*>(p);
}

extern "C" __global__ void __launch_bounds__(THREADS)
    softmax_split(const elem_t* __restrict__ x, elem_t* __restrict__ y, i64 M, int N, i64 x_stride, i64 y_stride,
                  int chunk, int split, unsigned* __restrict__ workspace) {
#if __CUDA_ARCH__ < 900
  __trap();  // bulk copies need sm_90; the host plans this kernel on sm_90 only
#else
  const int S = split;
  extern __shared__ __align__(16) unsigned char smem[];
  const Pack<VEC>* held = reinterpret_cast<const Pack<VEC>*>(smem);  // this block's chunk of the row
  __shared__ __align__(8) unsigned long long chunk_landed;  // mbarrier, one phase
  __shared__ Stats warp_stats[WARPS];
  __shared__ Stats row_stats;
  __shared__ i64 ticket_shared;

  unsigned* ticket = workspace;
  unsigned* arrived = workspace + 2;
  Stats* pairs = reinterpret_cast<Stats*>(workspace + 2 + 2 * M);

  if (threadIdx.x == 0) {
    mbarrier_init(&chunk_landed);
    ticket_shared = atomicAdd(ticket, 1u);
  }
  __syncthreads();
  const i64 row = ticket_shared / S;
  const int part = static_cast<int>(ticket_shared % S);
  const int begin = part * chunk;
  const int packs = max(0, min(chunk, N - begin)) / VEC;  // 0 for a block past the row's end
  const unsigned bytes = static_cast<unsigned>(packs) * sizeof(Pack<VEC>);

  // DRAM -> shared memory, then the chunk's (max, sum) from shared memory.
  if (bytes) {
    if (threadIdx.x == 0) bulk_load(smem, x + row * x_stride + begin, bytes, &chunk_landed);
    mbarrier_wait(&chunk_landed, 0);
  }
  Stats t = stats_empty();
#pragma unroll 4
  for (int p = threadIdx.x; p < packs; p += THREADS) t = stats_add<VEC>(t, held[p]);
  t = block_merge_to_warp0<WARPS>(t, warp_stats);

  // Publish the pair, then count this block in (the fence orders the pair before the count).
  if (threadIdx.x == 0) {
    pairs[row * S + part] = t;
    __threadfence();
    atomicAdd(&arrived[row], 1u);
  }
  // Warp 0 waits for the row's S arrivals, then merges the S pairs (L2 reads: __ldcg skips L1).
  if (threadIdx.x < 32) {
    unsigned sleep_ns = 32;
    while (load_volatile(&arrived[row]) < static_cast<unsigned>(S)) {
      __nanosleep(sleep_ns);
      sleep_ns = min(sleep_ns * 2, 1024u);
    }
    __threadfence();
    Stats r = stats_empty();
    for (int i = threadIdx.x; i < S; i += 32) {
      const float2 pair = __ldcg(reinterpret_cast<const float2*>(pairs + row * S + i));
      r = stats_merge(r, {pair.x, pair.y});
    }
    r = warp_merge<32>(r);
    if (threadIdx.x == 0) row_stats = r;
  }
  __syncthreads();
  const float shift = safe_shift(row_stats.m);
  const float sum = row_stats.s;
  const float inv_sum = 1.f / sum;

  // Shared memory -> DRAM.
  elem_t* yr = y + row * y_stride + begin;
#pragma unroll 4
  for (int p = threadIdx.x; p < packs; p += THREADS) {
    const Pack<VEC> v = held[p];
    const auto out = [&](int k) { return normalize(exp_shifted(elem(v, k), shift), sum, inv_sum); };
    store_pack<VEC>(yr + p * VEC, make_pack<VEC>(out));
  }
#endif
}
