// common.cuh: what every kernel of kernels_cuda shares.
//
// Self-contained on purpose: NVRTC on the GPU machine has no CUDA include path, so there is no
// <cuda_fp16.h>, <cuda_bf16.h> or <cooperative_groups.h>. The few conversions, the fast exp2 and
// the cluster operations needed are written here in inline PTX (the element types in elem.cuh). codegen hands this file to NVRTC
// as an in-memory header, so `#include "common.cuh"` needs no file system either.
//
// codegen sets the compile-time constants as -D options: KL_DTYPE picks the element type, and each
// kernel reads its own KL_* sizes (see the kernel's header).
#pragma once

#include "elem.cuh"

// ---- element type: elem_t in memory, fp32 in registers ------------------------------------------

#if KL_DTYPE == KL_F32
#define KL_NEG_INF_WORD 0xff800000u
#elif KL_DTYPE == KL_F16
#define KL_NEG_INF_WORD 0xfc00fc00u  // two -inf halves
#define KL_X2 "f16x2"                // the PTX type of a word of two elements
#elif KL_DTYPE == KL_BF16
#define KL_NEG_INF_WORD 0xff80ff80u  // two -inf halves
#define KL_X2 "bf16x2"
#else
#error "common.cuh: KL_DTYPE must be KL_F32, KL_F16 or KL_BF16"
#endif

#if KL_DTYPE != KL_F32
// (lo, hi) -> one word, lo in the low half.
__device__ __forceinline__ unsigned from_f32x2(float lo, float hi) {
  unsigned w;
  asm("cvt.rn." KL_X2 ".f32 %0, %1, %2;" : "=r"(w) : "f"(hi), "f"(lo));
  return w;
}
// Both halves' max at once.
__device__ __forceinline__ unsigned max_x2(unsigned a, unsigned b) {
  unsigned w;
  asm("max." KL_X2 " %0, %1, %2;" : "=r"(w) : "r"(a), "r"(b));
  return w;
}
#endif

// ---- packs: VEC elements moved by one access of VEC * sizeof(elem_t) bytes (16 at most) ----------
// A pack is held as the 32-bit words it travels in, never as separate 16-bit values: a 16-byte pack
// is always one LDG.128 / STG.128 (the offline tests check the PTX for it), holding it raw costs 4
// registers whatever the dtype, and NVVM has no 16-bit pieces to shuffle around (holding bf16 packs
// as u16 arrays made it split each load into halves and wait on the first load before issuing the
// rest). A one-element pack of a 16-bit type keeps the element in the low half of its word.

template <int VEC> struct Pack {
  static constexpr int BYTES = VEC * static_cast<int>(sizeof(elem_t));
  static constexpr int WORDS = BYTES < 4 ? 1 : BYTES / 4;
  unsigned w[WORDS];
};

// Element k of a pack, as fp32.
template <int VEC> __device__ __forceinline__ float elem(const Pack<VEC>& v, int k) {
#if KL_DTYPE == KL_F32
  return __uint_as_float(v.w[k]);
#else
  const unsigned w = v.w[k / 2];
  return to_f32(static_cast<u16>(k % 2 ? w >> 16 : w & 0xffffu));
#endif
}

// max(m, every element of v). 16-bit types compare raw halves two at a time (HMNMX2; like fmaxf,
// a NaN loses to a number), so this makes no fp32 value of the pack the compiler could keep for later.
template <int VEC> __device__ __forceinline__ float pack_max(float m, const Pack<VEC>& v) {
  if constexpr (KL_DTYPE == KL_F32 || VEC == 1) {
#pragma unroll
    for (int k = 0; k < VEC; ++k) m = fmaxf(m, elem(v, k));
  } else {
    Pack<2> pair{v.w[0]};
#pragma unroll
    for (int i = 1; i < Pack<VEC>::WORDS; ++i) pair.w[0] = max_x2(pair.w[0], v.w[i]);
    m = fmaxf(m, fmaxf(elem(pair, 0), elem(pair, 1)));
  }
  return m;
}

// The pack whose element k is f(k), rounded to elem_t; 16-bit pairs in one cvt (F2FP.PACK_AB).
template <int VEC, class F> __device__ __forceinline__ Pack<VEC> make_pack(F f) {
  Pack<VEC> v;
#if KL_DTYPE == KL_F32
#pragma unroll
  for (int k = 0; k < VEC; ++k) v.w[k] = __float_as_uint(f(k));
#else
  if constexpr (VEC == 1) {
    v.w[0] = from_f32(f(0));
  } else {
#pragma unroll
    for (int k = 0; k < VEC; k += 2) v.w[k / 2] = from_f32x2(f(k), f(k + 1));
  }
#endif
  return v;
}

// Every element -inf: the padding that adds exp(-inf) = 0 to a sum.
template <int VEC> __device__ __forceinline__ Pack<VEC> neg_inf_pack() {
  Pack<VEC> v;
#pragma unroll
  for (int i = 0; i < Pack<VEC>::WORDS; ++i) v.w[i] = KL_NEG_INF_WORD;
  return v;
}

// p must be aligned to the pack's width (the host picks VEC so that it is). Read-only path (LDG.NC).
template <int VEC> __device__ __forceinline__ Pack<VEC> load_pack(const elem_t* p) {
  Pack<VEC> v;
  if constexpr (Pack<VEC>::BYTES == 16) {
    const uint4 w = __ldg(reinterpret_cast<const uint4*>(p));
    v.w[0] = w.x, v.w[1] = w.y, v.w[2] = w.z, v.w[3] = w.w;
  } else if constexpr (Pack<VEC>::BYTES == 8) {
    const uint2 w = __ldg(reinterpret_cast<const uint2*>(p));
    v.w[0] = w.x, v.w[1] = w.y;
  } else if constexpr (Pack<VEC>::BYTES == 4) {
    v.w[0] = __ldg(reinterpret_cast<const unsigned*>(p));
  } else {
    static_assert(VEC == 1, "packs are 16, 8 or 4 bytes, or one element");
    v.w[0] = __ldg(p);
  }
  return v;
}
template <int VEC> __device__ __forceinline__ void store_pack(elem_t* p, const Pack<VEC>& v) {
  // Inline PTX: NVVM was seen splitting a plain uint4 store into four 32-bit stores (online kernel).
  if constexpr (Pack<VEC>::BYTES == 16) {
    asm volatile("st.global.v4.b32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(v.w[0]), "r"(v.w[1]), "r"(v.w[2]),
                 "r"(v.w[3]));
  } else if constexpr (Pack<VEC>::BYTES == 8) {
    asm volatile("st.global.v2.b32 [%0], {%1, %2};" ::"l"(p), "r"(v.w[0]), "r"(v.w[1]));
  } else if constexpr (Pack<VEC>::BYTES == 4) {
    *reinterpret_cast<unsigned*>(p) = v.w[0];
  } else {
    static_assert(VEC == 1, "packs are 16, 8 or 4 bytes, or one element");
    p[0] = static_cast<elem_t>(v.w[0]);
  }
}

// store_pack where `in` holds, as one predicated store: no branch around it (NVVM cannot
// predicate an inline-asm store, so `if (in) store_pack(...)` costs a branch and a reconvergence
// a pack; p may lie past the row where `in` is false, it is not dereferenced then).
template <int VEC> __device__ __forceinline__ void store_pack_if(bool in, elem_t* p, const Pack<VEC>& v) {
  if constexpr (Pack<VEC>::BYTES == 16) {
    asm volatile("{ .reg .pred q; setp.ne.b32 q, %5, 0; @q st.global.v4.b32 [%0], {%1, %2, %3, %4}; }" ::"l"(p),
                 "r"(v.w[0]), "r"(v.w[1]), "r"(v.w[2]), "r"(v.w[3]), "r"(static_cast<int>(in)));
  } else if constexpr (Pack<VEC>::BYTES == 8) {
    asm volatile("{ .reg .pred q; setp.ne.b32 q, %3, 0; @q st.global.v2.b32 [%0], {%1, %2}; }" ::"l"(p), "r"(v.w[0]),
                 "r"(v.w[1]), "r"(static_cast<int>(in)));
  } else if (in) {
    store_pack<VEC>(p, v);
  }
}

// A block-strided pass over a row of `packs` packs, UNROLL packs per thread per step: pack
// p0 + u * THREADS + threadIdx.x goes to v[u]. All UNROLL loads are issued before any is used.
template <int VEC, int UNROLL, int THREADS>
__device__ __forceinline__ void load_strided(Pack<VEC> (&v)[UNROLL], const elem_t* row, int p0, int packs) {
#pragma unroll
  for (int u = 0; u < UNROLL; ++u) {
    const int p = p0 + u * THREADS + static_cast<int>(threadIdx.x);
    if (p < packs) v[u] = load_pack<VEC>(row + p * VEC);
  }
}

// ---- softmax arithmetic ------------------------------------------------------------------------

#define KL_NEG_INF __int_as_float(0xff800000)
#define KL_LOG2E 1.4426950408889634f
#define KL_FULL_MASK 0xffffffffu

// 2^x in one MUFU.EX2 (relative error ~2^-22; results below 2^-126 flush to 0).
__device__ __forceinline__ float ex2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// exp(x - ref). The subtraction comes first, so x near the max loses nothing to rounding.
__device__ __forceinline__ float exp_shifted(float x, float ref) { return ex2((x - ref) * KL_LOG2E); }

// The shift to use for a running max m: m itself, or 0 while everything seen is -inf, so that
// exp(-inf - shift) is 0 and not NaN. A row that is -inf throughout then ends with sum 0 and
// 0 * (1/0) = NaN outputs, which is what torch returns.
__device__ __forceinline__ float safe_shift(float m) { return m == KL_NEG_INF ? 0.f : m; }

// Softmax statistics of some elements: their max m and s = sum of exp(x - m). Two such pairs merge
// into the pair of the union without revisiting the elements (the "online softmax" identity).
struct alignas(8) Stats {  // 8-aligned: read from another block as one ld.shared::cluster.v2.f32
  float m, s;
};
__device__ __forceinline__ Stats stats_empty() { return {KL_NEG_INF, 0.f}; }
__device__ __forceinline__ Stats stats_merge(Stats a, Stats b) {
  const float m = fmaxf(a.m, b.m);
  const float shift = safe_shift(m);
  return {m, a.s * exp_shifted(a.m, shift) + b.s * exp_shifted(b.m, shift)};
}
// Fold VEC more elements into a running pair: one rescale of the old sum, one exp per element.
// fmaxf drops NaN, but a NaN element still makes its exp, and so the row's sum, NaN.
template <int VEC> __device__ __forceinline__ Stats stats_add(Stats t, const Pack<VEC>& v) {
  const float m = pack_max(t.m, v);
  const float shift = safe_shift(m);
  float s = t.s * exp_shifted(t.m, shift);
#pragma unroll
  for (int k = 0; k < VEC; ++k) s += exp_shifted(elem(v, k), shift);
  return {m, s};
}

// ---- packs held in registers (03, and 04 with ITEMS > 0) ----------------------------------------
// A thread holds ITEMS packs of a row, its pack i being the row's pack first + i * STRIDE; those
// past the row's `packs` are padding (-inf, as loaded).
constexpr bool EXP_IN_PLACE = sizeof(elem_t) == sizeof(float);

// Pairwise reduction of a[0..N) by op, in place: log2(N) dependent steps instead of N - 1, and for
// a sum a rounding error that grows with log2(N), not N (a thread holding a row's largest
// exponential adds the others to it).
template <int N, typename Op> __device__ __forceinline__ float tree_reduce(float (&a)[N], Op op) {
#pragma unroll
  for (int width = 1; width < N; width *= 2) {
#pragma unroll
    for (int i = 0; i + width < N; i += 2 * width) a[i] = op(a[i], a[i + width]);
  }
  return a[0];
}

// The pair of the union of N pairs (in shared memory): their largest max first, then each sum
// rescaled to it, one exponential a pair (merging them two at a time takes two, and rescales the first
// sum N - 1 times). Unrolled by 8 at most: a block of 1024 threads holding 32 pairs at once spills.
template <int N> __device__ __forceinline__ Stats stats_merge_all(const Stats (&t)[N]) {
  float m = t[0].m;
#pragma unroll 8
  for (int i = 1; i < N; ++i) m = fmaxf(m, t[i].m);
  const float shift = safe_shift(m);
  float s = 0.f;
#pragma unroll 8
  for (int i = 0; i < N; ++i) s += t[i].s * exp_shifted(t[i].m, shift);
  return {m, s};
}

// max(m, every held element): each pack's, then a tree over the packs.
template <int VEC, int ITEMS> __device__ __forceinline__ float held_max(float m, const Pack<VEC> (&v)[ITEMS]) {
  float part[ITEMS];
#pragma unroll
  for (int i = 0; i < ITEMS; ++i) part[i] = pack_max(KL_NEG_INF, v[i]);
  return fmaxf(m, tree_reduce(part, [](float a, float b) { return fmaxf(a, b); }));
}

// s plus the sum of exp(x - shift) over the held elements (no ex2 spent on padding): each pack's,
// then a tree over the packs. Each exponential is kept: fp32 in place, each x becoming its
// exponential; 16-bit in e, when given (04's held chunks, rescaled once after the exchange;
// padding's e is left unset and never stored), else taken again at the store (03, whose
// registers, and so rows in flight, stay as few as its packs).
// Packs 0..FULL-1 are known to lie inside the row (no check). IN_PLACE false keeps fp32's x too
// (03's log_softmax epilogue needs x, not its exponential).
template <int STRIDE, int FULL = 0, bool IN_PLACE = EXP_IN_PLACE, int VEC, int ITEMS>
__device__ __forceinline__ float held_exp_sum(Pack<VEC> (&v)[ITEMS], float shift, int first, int packs, float s = 0.f,
                                              float (*e)[VEC] = nullptr) {
  float part[ITEMS];
#pragma unroll
  for (int i = 0; i < ITEMS; ++i) {
    part[i] = 0.f;
    if (i >= FULL && i * STRIDE + first >= packs) continue;
#pragma unroll
    for (int k = 0; k < VEC; ++k) {
      const float x = exp_shifted(elem(v[i], k), shift);
      if constexpr (IN_PLACE) {
        v[i].w[k] = __float_as_uint(x);
      } else if (e != nullptr) {
        e[i][k] = x;
      }
      part[i] += x;
    }
  }
  return s + tree_reduce(part, [](float a, float b) { return a + b; });
}

// ---- warp and block reductions -----------------------------------------------------------------
// WIDTH lanes (a power of two up to 32) reduce together; every lane of the warp must take part.

template <int WIDTH> __device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int o = WIDTH / 2; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(KL_FULL_MASK, v, o));
  return v;
}
template <int WIDTH> __device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = WIDTH / 2; o > 0; o >>= 1) v += __shfl_xor_sync(KL_FULL_MASK, v, o);
  return v;
}
template <int WIDTH> __device__ __forceinline__ Stats warp_merge(Stats t) {
#pragma unroll
  for (int o = WIDTH / 2; o > 0; o >>= 1) {
    const Stats u = {__shfl_xor_sync(KL_FULL_MASK, t.m, o), __shfl_xor_sync(KL_FULL_MASK, t.s, o)};
    t = stats_merge(t, u);
  }
  return t;
}

// Merge every thread's pair of a block of WARPS warps; the result is valid in warp 0 only.
// scratch: WARPS entries of shared memory. Ends with warp 0 having read scratch: the caller's next
// __syncthreads (or cluster barrier) must come before scratch is written again.
template <int WARPS> __device__ __forceinline__ Stats block_merge_to_warp0(Stats t, Stats* scratch) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  t = warp_merge<32>(t);
  if (lane == 0) scratch[warp] = t;
  __syncthreads();
  if (warp == 0) {
    t = lane < WARPS ? scratch[lane] : stats_empty();
    t = warp_merge<32>(t);
  }
  return t;
}

// Sum every thread's value over a block of WARPS warps; the result is valid in warp 0 only. Same
// contract on scratch as block_merge_to_warp0.
template <int WARPS> __device__ __forceinline__ float block_sum_to_warp0(float v, float* scratch) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  v = warp_sum<32>(v);
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  if (warp == 0) v = warp_sum<32>(lane < WARPS ? scratch[lane] : 0.f);
  return v;
}

// ---- asynchronous copies into shared memory (sm_80) ----------------------------------------------

// p's address in the shared window, as PTX's shared-memory operands take it.
__device__ __forceinline__ unsigned smem_address(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
// 16 bytes from global src to shared dst (both 16-byte aligned) without passing through registers:
// the thread goes on while the copy flies. copy_async_commit closes the thread's group of copies
// issued so far; copy_async_wait waits for all its groups, after which the thread sees what its own
// copies wrote (another thread's copies only after a __syncthreads).
__device__ __forceinline__ void copy_async_16(void* dst, const void* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(smem_address(dst)), "l"(src) : "memory");
}
// The same through L1 (cp.async.ca: the loads a thread reads back at once).
__device__ __forceinline__ void copy_async_16_ca(void* dst, const void* src) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 16;" ::"r"(smem_address(dst)), "l"(src) : "memory");
}
__device__ __forceinline__ void copy_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
__device__ __forceinline__ void copy_async_wait() { asm volatile("cp.async.wait_group 0;" ::: "memory"); }
