// 07 softmax backward over a thread-block cluster (sm_90): rows too long for registers.
//
// dx = y * (dy - sum(y * dy)), each row split over the C blocks of a cluster as in the forward
// cluster kernel (04): block `rank` owns the contiguous chunk of `chunk` elements starting at
// rank * chunk. Its chunk of y and its chunk of dy arrive in dynamic shared memory by two bulk
// copies (TMA) that complete one mbarrier phase together; the block sums y * dy over the chunk;
// the C partial sums are exchanged through distributed shared memory (a cluster barrier, then
// warp 0 of every block reads each block's sum with mapa + ld.shared::cluster); then each block
// writes its chunk of dx from shared memory. One read of y and dy and one write of dx per element,
// for rows up to C * ~113 KB per array. Two sum slots alternate by row, so one cluster barrier
// per row suffices (as in 04).
//
// Constants: KL_CLUSTER (blocks per cluster, compiled in with __cluster_dims__), KL_THREADS,
// KL_VEC (elements per 16-byte pack; divides N and chunk: rows must be 16-byte aligned).
#include "common.cuh"

constexpr int C = KL_CLUSTER, THREADS = KL_THREADS, VEC = KL_VEC;
constexpr int WARPS = THREADS / 32;
static_assert(C <= 32, "warp 0 reads one block's sum per lane");
static_assert(Pack<VEC>::BYTES == 16, "bulk copies move whole 16-byte packs");

extern "C" __global__ void __cluster_dims__(C, 1, 1) __launch_bounds__(THREADS)
    softmax_backward_cluster(const elem_t* __restrict__ y, const elem_t* __restrict__ dy, elem_t* __restrict__ dx,
                             i64 M, int N, i64 y_stride, i64 dy_stride, i64 dx_stride, int chunk) {
  extern __shared__ __align__(16) unsigned char smem[];
  const Pack<VEC>* held_y = reinterpret_cast<const Pack<VEC>*>(smem);  // chunk elements of y, then of dy
  const Pack<VEC>* held_dy = held_y + chunk / VEC;
  __shared__ __align__(8) unsigned long long chunk_landed;  // mbarrier: one phase per row
  __shared__ float warp_dots[WARPS];
  __shared__ float block_dot[2];  // this block's sum for the cluster to read; alternates by row
  __shared__ float row_dot;

  const unsigned rank = cluster_rank();
  const int begin = static_cast<int>(rank) * chunk;
  const int packs = max(0, min(chunk, N - begin)) / VEC;  // 0 for a block past the row's end
  const unsigned bytes = static_cast<unsigned>(packs) * sizeof(Pack<VEC>);
  if (threadIdx.x == 0) mbarrier_init(&chunk_landed);
  __syncthreads();
  int parity = 0;

  // Every block of a cluster runs the same rows, so the cluster barriers below always match up.
  for (i64 row = cluster_index(); row < M; row += cluster_count(), parity ^= 1) {
    if (bytes) {
      if (threadIdx.x == 0) {
        bulk_expect(&chunk_landed, 2 * bytes);
        bulk_copy(smem, y + row * y_stride + begin, bytes, &chunk_landed);
        bulk_copy(smem + static_cast<size_t>(chunk) * sizeof(elem_t), dy + row * dy_stride + begin, bytes,
                  &chunk_landed);
      }
      mbarrier_wait(&chunk_landed, parity);
    }
    float dot = 0.f;
#pragma unroll 4
    for (int p = threadIdx.x; p < packs; p += THREADS) {
      const Pack<VEC> a = held_y[p], b = held_dy[p];
#pragma unroll
      for (int k = 0; k < VEC; ++k) dot = fmaf(elem(a, k), elem(b, k), dot);
    }
    dot = block_sum_to_warp0<WARPS>(dot, warp_dots);
    if (threadIdx.x == 0) block_dot[parity] = dot;
    cluster_sync();
    if (threadIdx.x < 32) {
      float r = threadIdx.x < C ? dsmem_load_f32(dsmem_address(&block_dot[parity], threadIdx.x)) : 0.f;
      r = warp_sum<32>(r);
      if (threadIdx.x == 0) row_dot = r;
    }
    __syncthreads();
    const bool last_row = row + cluster_count() >= M;  // the same for the whole cluster
    if (last_row) cluster_arrive_relaxed();  // done with the other blocks' shared memory
    const float d = row_dot;

    elem_t* dxr = dx + row * dx_stride + begin;
#pragma unroll 4
    for (int p = threadIdx.x; p < packs; p += THREADS) {
      const Pack<VEC> a = held_y[p], b = held_dy[p];
      store_pack<VEC>(dxr + p * VEC, make_pack<VEC>([&](int k) { return elem(a, k) * (elem(b, k) - d); }));
    }
    __syncthreads();  // every read of the chunk (and of row_dot) is done before the next row's copies
  }
  if (cluster_index() >= M) cluster_arrive_relaxed();  // a cluster with no row (not launched by the host)
  cluster_wait();  // no block exits while another can still read its block_dot
}
