// 08 softmax backward over a thread-block cluster, pipelined across rows (sm_90).
//
// dx = y * (dy - sum(y * dy)) with 07's row split: block `rank` of a C-block cluster owns the
// chunk of `chunk` elements starting at rank * chunk, y and dy arrive in shared memory by bulk
// copies (TMA) completing on mbarriers, the C partial dots are exchanged through distributed
// shared memory, and each element is read once from y and dy and written once to dx.
//
// What changes: in 07 a block takes one row through its phases in order (bulk loads, sum, cluster
// exchange, write dx) and asks for the next row's data only when the row is written. Where the
// chunks are large (a 1 MB fp32 row over 16 blocks: 64 KB of each array, 128 KB of shared memory
// a block) one block fills an SM and nothing else overlaps those phases: the SM reads nothing
// while it sums, waits for the other blocks and writes. Here a persistent grid (the host launches
// only as many clusters as fit the GPU at once, each taking every cluster_count()-th row) streams
// each block's chunks of its rows through a ring of `slots` slots of dynamic shared memory:
//   - a slot holds one piece: `piece` elements of y and the same elements of dy, brought by two
//     bulk copies that complete one phase of the slot's own mbarrier;
//   - the block's pieces form one sequence (its rows in order, each row's pieces in order);
//     piece k goes to slot k % slots, on that slot's (k / slots)-th phase (parity (k / slots) & 1);
//   - thread 0 issues pieces 0 .. slots-1 at the start; when the write pass of a row has read the
//     piece in a slot (a __syncthreads), thread 0 issues the piece `slots` further on into it;
//   - the ring holds a whole chunk (pieces <= slots) plus slots - pieces pieces of what follows.
// So the next row's first pieces are in flight while this row is summed and exchanged, its other
// pieces are issued one by one as this row's are written (loads of row r + 1 overlap stores of
// row r), and a row's sum starts as soon as its first piece has landed. One row at a time is
// summed and written, so the exchange is 07's: one cluster barrier per row, two sum slots
// alternating by row.
//
// Why a ring rather than holding one of the arrays in registers (to fit two blocks an SM): two
// blocks overlap only while their phases happen to drift apart, and each still stops loading from
// its bulk wait until its write pass; the ring keeps every block's loads in flight through its own
// exchange and write, with one block per SM and no registers held across a row.
//
// Invariants (host and kernel):
//   - pieces <= slots <= MAX_SLOTS; a launch that breaks this would wait on a piece the ring cannot
//     hold, so the kernel traps instead of hanging;
//   - a slot is refilled only after every thread has finished reading it (the __syncthreads after
//     writing it; bulk_expect's proxy fence then orders those reads before the copy engine's
//     writes); so piece k + slots is issued after piece k was consumed, and a thread waiting on
//     piece k's parity never sees its slot a second phase ahead;
//   - each issued piece completes exactly one phase (one arrival: thread 0's expect_tx with the
//     piece's byte total, then the bytes); only pieces of rows < M are issued and every one is
//     consumed, so no copy is in flight when a block exits;
//   - the pieces a row has in a block depend only on the block (the last blocks of a row may hold
//     a shorter chunk or none), so each block's ring is its own; the cluster barriers match up
//     because every block of a cluster runs the same rows;
//   - any grid is correct (rows are grid-strided by cluster); one larger than the clusters that fit
//     at once only runs slower.
//
// Constants: KL_CLUSTER (blocks per cluster, compiled in with __cluster_dims__), KL_THREADS,
// KL_VEC (elements per 16-byte pack; divides N, chunk and piece: rows must be 16-byte aligned).
// Arguments past the strides: chunk (elements of a row per block), piece (elements of each array
// per slot; the last piece of a chunk may be shorter), slots (pieces the ring holds).
#include "common.cuh"

constexpr int C = KL_CLUSTER, THREADS = KL_THREADS, VEC = KL_VEC;
constexpr int WARPS = THREADS / 32;
constexpr int MAX_SLOTS = 32;  // mbarriers in static shared memory; softmax_backward.py plans within it
static_assert(C <= 32, "warp 0 reads one block's sum per lane");
static_assert(MAX_SLOTS <= THREADS, "one thread initializes each slot's mbarrier");
static_assert(Pack<VEC>::BYTES == 16, "bulk copies move whole 16-byte packs");

// Where the ring is: the slot of the current piece and the parity of the phase that brings it.
struct RingPos {
  int slot;
  unsigned parity;
};
__device__ __forceinline__ void ring_next(RingPos& r, int slots) {
  if (++r.slot == slots) r.slot = 0, r.parity ^= 1u;
}

extern "C" __global__ void __cluster_dims__(C, 1, 1) __launch_bounds__(THREADS, 1)
    softmax_backward_cluster_pipelined(const elem_t* __restrict__ y, const elem_t* __restrict__ dy,
                                       elem_t* __restrict__ dx, i64 M, int N, i64 y_stride, i64 dy_stride,
                                       i64 dx_stride, int chunk, int piece, int slots) {
  extern __shared__ __align__(16) unsigned char smem[];  // slots x (piece of y, piece of dy)
  __shared__ __align__(8) unsigned long long landed[MAX_SLOTS];  // slot s: one phase per piece it receives
  __shared__ float warp_dots[WARPS];
  __shared__ float block_dot[2];  // this block's sum for the cluster to read; alternates by row
  __shared__ float row_dot;

  const unsigned rank = cluster_rank();
  const int begin = static_cast<int>(rank) * chunk;
  const int packs = max(0, min(chunk, N - begin)) / VEC;  // of each row in this block; 0 past the row's end
  const int piece_packs = piece / VEC;
  const int pieces = (packs + piece_packs - 1) / piece_packs;  // of each row in this block
  const Pack<VEC>* ring = reinterpret_cast<const Pack<VEC>*>(smem);
  const i64 first = cluster_index(), step = cluster_count();
  if (pieces > slots || slots > MAX_SLOTS) __trap();  // the ring could not hold a row: see the invariants
  if (threadIdx.x < slots) mbarrier_init(&landed[threadIdx.x]);
  __syncthreads();

  // Thread 0's issue cursor: the next piece of the sequence not yet issued.
  i64 next_row = first;
  int next_piece = 0;
  auto issue = [&](int slot) {  // thread 0 only: the next piece into `slot`, if any row is left
    if (next_row >= M) return;
    const int off = next_piece * piece_packs;
    const unsigned bytes = static_cast<unsigned>(min(piece_packs, packs - off)) * sizeof(Pack<VEC>);
    unsigned char* dst = smem + static_cast<size_t>(slot) * 2 * piece_packs * sizeof(Pack<VEC>);
    const i64 col = begin + static_cast<i64>(off) * VEC;
    bulk_expect(&landed[slot], 2 * bytes);
    bulk_copy(dst, y + next_row * y_stride + col, bytes, &landed[slot]);
    bulk_copy(dst + piece_packs * sizeof(Pack<VEC>), dy + next_row * dy_stride + col, bytes, &landed[slot]);
    if (++next_piece == pieces) next_piece = 0, next_row += step;
  };
  if (threadIdx.x == 0 && pieces > 0) {
    for (int s = 0; s < slots; ++s) issue(s);
  }

  RingPos row_start = {0, 0u};  // where this row's first piece is
  int parity = 0;  // of the row: selects block_dot's slot
  // Every block of a cluster runs the same rows, so the cluster barriers below always match up.
  for (i64 row = first; row < M; row += step, parity ^= 1) {
    // Sum y * dy piece by piece, each as soon as it has landed.
    float dot = 0.f;
    RingPos r = row_start;
    for (int p = 0; p < pieces; ++p, ring_next(r, slots)) {
      mbarrier_wait(&landed[r.slot], r.parity);
      const Pack<VEC>* held_y = ring + static_cast<size_t>(r.slot) * 2 * piece_packs;
      const Pack<VEC>* held_dy = held_y + piece_packs;
      const int n = min(piece_packs, packs - p * piece_packs);
#pragma unroll 4
      for (int q = threadIdx.x; q < n; q += THREADS) {
        const Pack<VEC> a = held_y[q], b = held_dy[q];
#pragma unroll
        for (int k = 0; k < VEC; ++k) dot = fmaf(elem(a, k), elem(b, k), dot);
      }
    }

    // Block sum -> this block's slot; cluster barrier; every block adds all C sums (as in 07).
    dot = block_sum_to_warp0<WARPS>(dot, warp_dots);
    if (threadIdx.x == 0) block_dot[parity] = dot;
    cluster_sync();
    if (threadIdx.x < 32) {
      float t = threadIdx.x < C ? dsmem_load_f32(dsmem_address(&block_dot[parity], threadIdx.x)) : 0.f;
      t = warp_sum<32>(t);
      if (threadIdx.x == 0) row_dot = t;
    }
    __syncthreads();
    const bool last_row = row + step >= M;  // the same for the whole cluster
    if (last_row) cluster_arrive_relaxed();  // done with the other blocks' shared memory
    const float d = row_dot;  // written again only after the next row's cluster barrier

    // Write dx piece by piece; each piece's slot, once every thread has read it, takes the piece
    // `slots` further on in the sequence (this block's next rows).
    elem_t* dxr = dx + row * dx_stride + begin;
    r = row_start;
    for (int p = 0; p < pieces; ++p, ring_next(r, slots)) {
      const Pack<VEC>* held_y = ring + static_cast<size_t>(r.slot) * 2 * piece_packs;
      const Pack<VEC>* held_dy = held_y + piece_packs;
      const int off = p * piece_packs;
      const int n = min(piece_packs, packs - off);
#pragma unroll 4
      for (int q = threadIdx.x; q < n; q += THREADS) {
        const Pack<VEC> a = held_y[q], b = held_dy[q];
        store_pack<VEC>(dxr + static_cast<i64>(off + q) * VEC,
                        make_pack<VEC>([&](int k) { return elem(a, k) * (elem(b, k) - d); }));
      }
      __syncthreads();  // every read of this slot is done before its next copy is issued
      if (threadIdx.x == 0) issue(r.slot);
    }
    row_start = r;
  }
  if (first >= M) cluster_arrive_relaxed();  // a cluster with no row (not launched by the host)
  cluster_wait();  // no block exits while another can still read its block_dot
}
