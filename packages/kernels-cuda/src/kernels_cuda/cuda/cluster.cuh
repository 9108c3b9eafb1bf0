// cluster.cuh: what the cluster kernels (04, 07, 11) share on top of common.cuh: thread-block
// clusters and distributed shared memory, bulk copies completing on an mbarrier, rows split into
// head, aligned body and tail, and one value a block exchanged across a cluster (sm_90).
//
// Self-contained in the same way as common.cuh (inline PTX, no CUDA headers); codegen hands both
// to NVRTC as in-memory headers.
#pragma once
#include "common.cuh"

// ---- thread-block clusters and distributed shared memory (sm_90) -------------------------------

#if __CUDA_ARCH__ >= 900
__device__ __forceinline__ unsigned cluster_rank() {
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}
__device__ __forceinline__ unsigned cluster_index() {
  unsigned r;
  asm volatile("mov.u32 %0, %%clusterid.x;" : "=r"(r));
  return r;
}
__device__ __forceinline__ unsigned cluster_count() {
  unsigned r;
  asm volatile("mov.u32 %0, %%nclusterid.x;" : "=r"(r));
  return r;
}
// Every thread of every block of the cluster arrives; shared-memory writes before it are visible
// to loads from any block of the cluster after it.
__device__ __forceinline__ void cluster_sync() {
  asm volatile(
      "barrier.cluster.arrive.release.aligned;\n\t"
      "barrier.cluster.wait.acquire.aligned;" ::: "memory");
}
// cluster_sync in two halves, for a block's last use of other blocks' shared memory: arrive once
// its reads are done (relaxed: this block publishes nothing with it), wait just before exiting, so
// that no block exits while another may still read its shared memory. The release form here waited
// for every global store before it to complete (ncu: the top "membar" stall at exit).
__device__ __forceinline__ void cluster_arrive_relaxed() {
  asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
}
__device__ __forceinline__ void cluster_wait() { asm volatile("barrier.cluster.wait.aligned;" ::: "memory"); }
// The address of `p` (a variable in this block's shared memory) inside block `rank`'s shared memory.
__device__ __forceinline__ unsigned dsmem_address(const void* p, unsigned rank) {
  const unsigned local = static_cast<unsigned>(__cvta_generic_to_shared(p));
  unsigned remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(local), "r"(rank));
  return remote;
}
// ---- bulk copies from global memory into shared memory, completing on an mbarrier (sm_90) --------
// One thread hands the copy engine (TMA) a contiguous range; every byte of it is in flight at once,
// with no registers held, and the mbarrier's phase flips when the last byte has landed.

// One arrival per phase: the thread that issues the copy.
__device__ __forceinline__ void mbarrier_init(unsigned long long* bar) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem_address(bar)) : "memory");
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");  // visible to the copy engine
}
// The calling thread's one arrival on bar, announcing that `bytes` will land (from bulk copies or
// other blocks' pushes) before its phase can complete.
__device__ __forceinline__ void mbarrier_expect(unsigned long long* bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_address(bar)), "r"(bytes)
               : "memory");
}
// mbarrier_expect before bulk copies. Several copies may complete one phase: announce their total
// once, before the first copy (announcing each copy separately could complete the phase when the
// first lands). The fence orders this block's earlier reads of the destinations (ordinary loads,
// after a barrier) before the copy engine's writes to them.
__device__ __forceinline__ void bulk_expect(unsigned long long* bar, unsigned bytes) {
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  mbarrier_expect(bar, bytes);
}
// bytes (a multiple of 16) from src to dst (both 16-byte aligned), counted against bar's announced total.
__device__ __forceinline__ void bulk_copy(void* dst, const void* src, unsigned bytes, unsigned long long* bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                   smem_address(dst)),
               "l"(src), "r"(bytes), "r"(smem_address(bar))
               : "memory");
}
// Wait until bar has completed the phase with this parity (0 for its first phase, then 1, 0, ...).
// Acquire::cluster where the bytes completing the phase came from other blocks (st.async pushes);
// the default, CTA scope, for this block's own bulk copies.
enum class Acquire { cta, cluster };
template <Acquire SCOPE = Acquire::cta>
__device__ __forceinline__ void mbarrier_wait(unsigned long long* bar, unsigned parity) {
  unsigned done;
  do {
    if constexpr (SCOPE == Acquire::cluster) {
      asm volatile(
          "{\n\t.reg .pred p;\n\tmbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2;\n\t"
          "selp.u32 %0, 1, 0, p;\n\t}"
          : "=r"(done)
          : "r"(smem_address(bar)), "r"(parity)
          : "memory");
    } else {
      asm volatile(
          "{\n\t.reg .pred p;\n\tmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\tselp.u32 %0, 1, 0, p;\n\t}"
          : "=r"(done)
          : "r"(smem_address(bar)), "r"(parity)
          : "memory");
    }
  } while (!done);
}
// ---- rows moved in bulk: head, aligned body, tail (04, 07, 11) ---------------------------------
// A row of N elements that starts anywhere: its head (the elements before its first 16-byte
// boundary), its body of whole 16-byte packs, and its tail (what is left), the head and the tail
// fewer than VEC elements each. Bulk copies move the body; the head and the tail go one element a
// thread. The split depends on where the row starts (rows of odd length start at every offset in
// turn); every thread computes the same one.
template <int VEC> struct RowParts {
  int head, body_packs, tail;
  // Edge element e (0 <= e < head + tail): the head's element e, or the tail's element e - head.
  __device__ __forceinline__ int edge_col(int e, int N) const { return e < head ? e : N - tail + (e - head); }
};
template <int VEC> __device__ __forceinline__ RowParts<VEC> row_parts(const elem_t* row, int N) {
  constexpr int PACK_BYTES = static_cast<int>(sizeof(Pack<VEC>));
  const int misaligned = static_cast<int>(reinterpret_cast<unsigned long long>(row) % PACK_BYTES);
  const int head = min(N, (PACK_BYTES - misaligned) % PACK_BYTES / static_cast<int>(sizeof(elem_t)));
  const int body_packs = (N - head) / VEC;
  return {head, body_packs, N - head - body_packs * VEC};
}

// ---- one value a block, exchanged across a cluster without a cluster barrier (04, 07, 11) ------
// Every block pushes its value into its own slot of every block's inbox with st.async, which counts
// the bytes it delivers on the receiving block's mbarrier; a block reads its inbox once that
// mbarrier's phase has completed, i.e. once every block's value has landed. A cluster barrier with
// release semantics (barrier.cluster.arrive.release) also orders the block's earlier stores to
// global memory, a GPU-scope fence (MEMBAR.ALL.GPU) that waits for the previous row's writes:
// ncu's top stalls after the loads. A push waits for nothing.
//
// Protocol, per row: thread 0 announces the C values' bytes on the block's own mbarrier
// (mbarrier_expect: its one arrival of the phase; a peer's bytes may land before it, the count may
// go below zero); C lanes push the block's value, one to each block (itself included); the block
// waits for the phase (mbarrier_wait<Acquire::cluster>). Inboxes alternate by row: a block writes a
// peer's slot s again only two rows later, after it has received that peer's value of the row
// between, which the peer pushed after reading slot s.
// t into block `rank`'s copy of *slot, counted on block `rank`'s copy of bar.
__device__ __forceinline__ void push_stats(const Stats* slot, Stats t, unsigned long long* bar, unsigned rank) {
  asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v2.f32 [%0], {%1, %2}, [%3];" ::"r"(
                   dsmem_address(slot, rank)),
               "f"(t.m), "f"(t.s), "r"(dsmem_address(bar, rank))
               : "memory");
}
// One row's exchange, by warp 0 of every block (t: the block's pair, in every lane of warp 0, as
// block_merge_to_warp0 leaves it): push t into slot `rank` of every block's inbox, wait for the
// phase `parity` of this block's `full`, merge the C pairs in lane order. Every block merges the
// same pairs in the same order: the same bits in each. The result is in every lane of warp 0.
template <int C>
__device__ __forceinline__ Stats exchange_stats(Stats t, const Stats (&inbox)[C], unsigned long long* full,
                                                unsigned parity, unsigned rank) {
  if (threadIdx.x == 0) mbarrier_expect(full, C * sizeof(Stats));
  if (threadIdx.x < C) push_stats(&inbox[rank], t, full, threadIdx.x);
  mbarrier_wait<Acquire::cluster>(full, parity);
  return warp_merge<32>(threadIdx.x < C ? inbox[threadIdx.x] : stats_empty());
}
__device__ __forceinline__ void push_f32(const float* slot, float v, unsigned long long* bar, unsigned rank) {
  asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.f32 [%0], %1, [%2];" ::"r"(
                   dsmem_address(slot, rank)),
               "f"(v), "r"(dsmem_address(bar, rank))
               : "memory");
}
#endif
