// loss_parts.cuh: the cross-entropy's rows in PARTS chunks, what 09's cross_entropy_count and
// cross_entropy_reduce and its forward's mean scale share. Block p of a PARTS-block launch takes
// chunk p, the rows [p c, (p + 1) c) with c = cdiv(M, PARTS) (the last chunks short or empty), as
// kernels_triton's xent_reduce: every order of summation here follows M alone.
//
// Included after rows.cuh or common.cuh (i64, KL_FULL_MASK); NVRTC has no include path, so it names
// nothing else. 11's forward takes PARTS and count_total from here too.
#pragma once

// Blocks of cross_entropy_count and cross_entropy_reduce, a chunk each (the host holds the same
// number: row_kernels.REDUCE_PARTS). A chunk's count fits an int32: M int64 targets in a device's
// memory (under 2^40 bytes) keep M under 2^37, a chunk of cdiv(M, PARTS) rows under 2^31.
constexpr int PARTS = 64;
static_assert(PARTS % 32 == 0, "a warp's lanes take the counts and partials in turn");

// v summed over the warp's lanes in a fixed butterfly, every lane getting the same bits (each
// step adds the same two values in every lane of a pair). Every lane of the warp must call it.
template <class T> __device__ __forceinline__ T warp_total(T v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(KL_FULL_MASK, v, o);
  return v;
}

// The rows counted: the PARTS chunk counts summed by a whole warp, every lane getting the int64
// total (it need not fit an int32). Lane l adds counts l and l + 32 (under 2^32: each is under
// 2^31); the lanes' sums meet in two redux instructions, a 16-bit half each (under 2^21): fewer
// registers than a shuffle tree of int64, which 11's blocks, holding their chunk, cannot spare.
// P: a plain pointer where the counts come from an earlier launch, a pointer to volatile where
// other blocks of this launch wrote them. Every lane of the warp must call it.
template <class P> __device__ __forceinline__ i64 count_total(P counts) {
  static_assert(PARTS == 64, "a lane adds two counts");
  const unsigned lane = threadIdx.x % 32, c = counts[lane] + static_cast<unsigned>(counts[lane + 32]);
  unsigned hi, lo;
  asm volatile("redux.sync.add.u32 %0, %1, 0xffffffff;" : "=r"(hi) : "r"(c >> 16));
  asm volatile("redux.sync.add.u32 %0, %1, 0xffffffff;" : "=r"(lo) : "r"(c & 0xffffu));
  return (static_cast<i64>(hi) << 16) + lo;
}

// --- a block's chunk: RT threads, RU loads in flight a thread ------------------------------------
// A round of a block's loads (RT RU rows) holds a whole chunk up to M = PARTS RT RU: wider blocks
// would add threads that load nothing at the usual M, and warps to the block's tree.
constexpr int RT = 256, RU = 16;
static_assert(RT % 32 == 0 && RT / 32 <= 32, "warp 0 sums the warps' sums");

struct Chunk {
  i64 start, end;
};

// This block's rows [start, end): from M and the block's index alone.
__device__ __forceinline__ Chunk chunk_of(i64 M) {
  const i64 size = (M + PARTS - 1) / PARTS;
  const i64 start = min(static_cast<i64>(blockIdx.x) * size, M);
  return {start, min(start + size, M)};
}

// The sum over the chunk's rows r of value(r) by the block: thread i adds rows start + i,
// start + i + RT, ... in turn, then the threads' sums meet in fixed trees (warps, then warp 0): the
// order depends on M alone. Every thread of the block calls it; warp 0's threads get the sum. The
// RU values in flight are held as loaded (an fp32 loss: one register each, not a double's two)
// and widened to T as they are added. part: RT / 32 entries of shared memory, this call's own.
template <class T, class Value> __device__ __forceinline__ T chunk_sum(Chunk c, Value value, T* part) {
  using Loaded = decltype(value(i64(0)));
  T s = T(0);
  for (i64 r0 = c.start + threadIdx.x; r0 < c.end; r0 += static_cast<i64>(RT) * RU) {
    Loaded v[RU];
#pragma unroll
    for (int u = 0; u < RU; ++u) v[u] = r0 + u * RT < c.end ? value(r0 + u * RT) : Loaded(0);
#pragma unroll
    for (int u = 0; u < RU; ++u) s += static_cast<T>(v[u]);
  }
  s = warp_total(s);
  if (threadIdx.x % 32 == 0) part[threadIdx.x / 32] = s;
  __syncthreads();
  return threadIdx.x < 32 ? warp_total(threadIdx.x < RT / 32 ? part[threadIdx.x] : T(0)) : T(0);
}

__device__ __forceinline__ int count_chunk(Chunk c, const i64* __restrict__ target, i64 ignore_index, int* part) {
  return chunk_sum<int>(c, [&](i64 r) { return int(target[r] != ignore_index); }, part);
}
