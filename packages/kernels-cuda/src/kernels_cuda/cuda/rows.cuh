// rows.cuh: rows reduced by a block (or by a group of a block's threads), for every dtype fp64
// included (09 cross-entropy, 10 log_softmax).
//
// Separate from common.cuh because it also compiles for KL_F64, which common.cuh's packs and fast
// exponential do not cover; both take the element types from elem.cuh.
//
// The layout every kernel here shares, and the invariant it keeps: a row of N elements is
// N / VEC packs of VEC elements (VEC = 16 bytes' worth where VEC divides N, else 1); thread t
// of a block of THREADS handles packs t, t + THREADS, t + 2 THREADS, ... in that order, UNROLL
// of them a step. The host picks THREADS, VEC and UNROLL from (N, dtype) alone, and every sum is
// taken in this fixed order, so a row's result never depends on the rest of the batch, on the
// row's address or on the GPU's size (batch invariance). A pass that reads a row again reads
// the same packs in the same thread, so a thread can keep what it read in shared memory for
// itself (`staged`), with no barrier between the write and the read.
// That is 10's layout. 09 lays a row out the same way over a group of TPR threads (several rows a
// block for short rows), with packs counted from the row's first 16-byte boundary (split_row), so
// its rows of any length are read in 16-byte packs; its result then also depends on the row's
// address mod 16 (never on the rest of the batch).
#pragma once

#include "elem.cuh"

// ---- the type rows are reduced in (acc_t): fp64 for fp64 rows, else fp32 ------------------------

#if KL_DTYPE == KL_F64
typedef double acc_t;
__device__ __forceinline__ double to_acc(double v) { return v; }
__device__ __forceinline__ double from_acc(double v) { return v; }
#else
typedef float acc_t;
__device__ __forceinline__ float to_acc(elem_t v) { return to_f32(v); }
__device__ __forceinline__ elem_t from_acc(float f) { return from_f32(f); }
#endif

constexpr bool IS_F64 = KL_DTYPE == KL_F64;
#define KL_FULL_MASK 0xffffffffu

__device__ __forceinline__ acc_t neg_inf() {
  if constexpr (IS_F64) {
    return __longlong_as_double(static_cast<i64>(0xfff0000000000000ull));
  } else {
    return __int_as_float(static_cast<int>(0xff800000u));
  }
}

__device__ __forceinline__ acc_t quiet_nan() {
  if constexpr (IS_F64) {
    return __longlong_as_double(0x7ff8000000000000ll);
  } else {
    return __int_as_float(0x7fc00000);
  }
}

// exp(x) in fp64 to a few ulp, inline: the math library's exp branches to a slow-path subroutine
// whose call made ptxas spill. x = n ln2 + r, |r| <= ln2 / 2 (ln2 in two parts, so r is exact to
// fp64), exp(r) by its Taylor series to r^13 (the first term left out is below 2^-53), times 2^n
// in two steps (n may take the result into the subnormals). NaN stays NaN, -inf gives 0.
__device__ __forceinline__ double exp_f64(double x) {
  if (!(x > -746.0)) return x != x ? x : 0.0;
  if (x > 709.8) return __longlong_as_double(0x7ff0000000000000ll);
  const double n = rint(x * 1.4426950408889634);
  const double r = fma(-n, 1.9082149292705877e-10, fma(-n, 0.6931471803691238, x));
  double p = 1.0 / 6227020800.0;  // 1 / 13!
  const double inv_fact[] = {1.0 / 479001600.0, 1.0 / 39916800.0, 1.0 / 3628800.0, 1.0 / 362880.0, 1.0 / 40320.0,
                             1.0 / 5040.0,      1.0 / 720.0,      1.0 / 120.0,     1.0 / 24.0,     1.0 / 6.0,
                             0.5,               1.0,              1.0};
#pragma unroll
  for (int i = 0; i < 13; ++i) p = fma(p, r, inv_fact[i]);
  const int k = static_cast<int>(n), half = k / 2;
  const double s1 = __longlong_as_double(static_cast<i64>(half + 1023) << 52);
  const double s2 = __longlong_as_double(static_cast<i64>(k - half + 1023) << 52);
  return p * s1 * s2;
}

// exp(x): fp64 to a few ulp (exp_f64); otherwise one MUFU.EX2 (relative error ~2^-22, below fp32's
// own rounding of the sums it feeds).
__device__ __forceinline__ acc_t exp_acc(acc_t x) {
  if constexpr (IS_F64) {
    return exp_f64(x);
  } else {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(static_cast<float>(x) * 1.4426950408889634f));
    return y;
  }
}
// log at full precision: taken once a row.
__device__ __forceinline__ acc_t log_acc(acc_t x) {
  if constexpr (IS_F64) {
    return log(x);
  } else {
    return logf(x);
  }
}
// 1 / x correctly rounded. `/` carries a slow-path subroutine whose call made ptxas spill around
// it in some kernels; the reciprocal intrinsics have none.
__device__ __forceinline__ acc_t rcp(acc_t x) {
  if constexpr (IS_F64) {
    return __drcp_rn(x);
  } else {
    return __frcp_rn(x);
  }
}
// The shift to subtract for a running max m: m, or 0 while everything seen is -inf, so that
// exp(-inf - shift) is 0 and not NaN.
__device__ __forceinline__ acc_t safe_shift(acc_t m) { return m == neg_inf() ? acc_t(0) : m; }

// ---- packs: VEC elements in one access (16 bytes when VEC > 1) ----------------------------------

// Aligned to its size, so a staged pack in shared memory moves in one 16-byte access too.
template <int VEC> struct alignas(VEC * sizeof(elem_t)) Pack {
  elem_t e[VEC];
};
template <int VEC> union PackBits {
  uint4 raw;
  Pack<VEC> pack;
};

// Plain (not read-only-path) loads: 09 may write its gradient over the rows it reads.
template <int VEC> __device__ __forceinline__ Pack<VEC> load_pack(const elem_t* p) {
  if constexpr (VEC == 1) {
    return Pack<1>{{*p}};
  } else {
    static_assert(VEC * sizeof(elem_t) == 16, "a pack is one element or 16 bytes");
    PackBits<VEC> b;
    b.raw = *reinterpret_cast<const uint4*>(p);
    return b.pack;
  }
}
template <int VEC> __device__ __forceinline__ void store_pack(elem_t* p, const Pack<VEC>& v) {
  if constexpr (VEC == 1) {
    *p = v.e[0];
  } else {
    PackBits<VEC> b;
    b.pack = v;
    // inline PTX: NVVM was seen splitting a plain uint4 store into four 32-bit ones (common.cuh)
    asm volatile("st.global.v4.b32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(b.raw.x), "r"(b.raw.y), "r"(b.raw.z),
                 "r"(b.raw.w));
  }
}

// Pack p of a row: from this thread's shared-memory copy when p < staged, else from the row. One
// load through a generic pointer: selecting between a shared and a global load made ptxas spill.
template <int VEC> __device__ __forceinline__ Pack<VEC> reread_pack(const elem_t* row, const Pack<VEC>* stage, int p,
                                                                    int staged) {
  const Pack<VEC>* src = p < staged ? stage + p : reinterpret_cast<const Pack<VEC>*>(row + static_cast<i64>(p) * VEC);
  return *src;
}

// ---- a row's statistics, merged across threads --------------------------------------------------
// m: the max seen; s = sum exp(x - m); sx = sum x (label smoothing); u = sum exp(x - m) (x - m)
// (entropy: H = log s - u / s). Fields a kernel does not ask for stay 0.
struct RowStats {
  acc_t m, s, sx, u;
};
__device__ __forceinline__ RowStats stats_empty() { return {neg_inf(), 0, 0, 0}; }

// a's u moved from a.m to `shift` (and scaled by r = exp(a.m - shift)); 0 for an empty part,
// whose (-inf) * 0 would be NaN.
__device__ __forceinline__ acc_t rescaled_u(acc_t u, acc_t s, acc_t m, acc_t shift, acc_t r) {
  return s == acc_t(0) ? acc_t(0) : r * (u + (m - shift) * s);
}

// The statistics of the union of a and b. Symmetric to the bit (IEEE addition commutes), so the
// two lanes of a shuffle step agree.
__device__ __forceinline__ RowStats stats_merge(RowStats a, RowStats b) {
  const acc_t m = fmax(a.m, b.m);
  const acc_t shift = safe_shift(m);
  const acc_t ra = exp_acc(a.m - shift), rb = exp_acc(b.m - shift);
  return {m, a.s * ra + b.s * rb, a.sx + b.sx, rescaled_u(a.u, a.s, a.m, shift, ra) + rescaled_u(b.u, b.s, b.m, shift, rb)};
}

// Fold one step's packs (in[u]: pack u lies in the row) into t: one max over the step, one
// rescale of the old sums, one exponential an element. fmax drops NaN, but a NaN element's
// exponential makes s, and so the row, NaN (as torch).
template <bool SX, bool U, int VEC, int UNROLL>
__device__ __forceinline__ RowStats stats_add(RowStats t, const Pack<VEC> (&v)[UNROLL], const bool (&in)[UNROLL]) {
  acc_t m = t.m;
#pragma unroll
  for (int u = 0; u < UNROLL; ++u)
#pragma unroll
    for (int k = 0; k < VEC; ++k)
      if (in[u]) m = fmax(m, to_acc(v[u].e[k]));
  const acc_t shift = safe_shift(m);
  const acc_t r = exp_acc(t.m - shift);
  RowStats out = {m, t.s * r, t.sx, U ? rescaled_u(t.u, t.s, t.m, shift, r) : acc_t(0)};
#pragma unroll
  for (int u = 0; u < UNROLL; ++u) {
    if (!in[u]) continue;
#pragma unroll
    for (int k = 0; k < VEC; ++k) {
      const acc_t x = to_acc(v[u].e[k]);
      const acc_t d = x - shift;
      const acc_t e = exp_acc(d);
      out.s += e;
      if constexpr (SX) out.sx += x;
      if constexpr (U) out.u += e == acc_t(0) ? acc_t(0) : e * d;  // x = -inf adds nothing
    }
  }
  return out;
}

__device__ __forceinline__ RowStats shfl_xor(RowStats t, int o) {
  return {__shfl_xor_sync(KL_FULL_MASK, t.m, o), __shfl_xor_sync(KL_FULL_MASK, t.s, o),
          __shfl_xor_sync(KL_FULL_MASK, t.sx, o), __shfl_xor_sync(KL_FULL_MASK, t.u, o)};
}
__device__ __forceinline__ acc_t shfl_xor(acc_t v, int o) { return __shfl_xor_sync(KL_FULL_MASK, v, o); }

// Every thread's value of a block of THREADS (a multiple of 32) combined by `op` in a fixed tree,
// the result returned to every thread. scratch: THREADS / 32 + 1 entries of shared memory; the
// caller's next __syncthreads must come before scratch is written again. Like a barrier, it
// orders every thread's memory accesses before it ahead of every thread's after it (09 reads the
// target's logit before the pass that may write the gradient over it).
template <int THREADS, class T, class Op> __device__ __forceinline__ T block_reduce(T v, T* scratch, T empty, Op op) {
  constexpr int WARPS = THREADS / 32;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = op(v, shfl_xor(v, o));
  if constexpr (WARPS == 1) {
    __syncwarp();
    return v;
  } else {
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    if (warp == 0) {
      v = lane < WARPS ? scratch[lane] : empty;
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) v = op(v, shfl_xor(v, o));
      if (lane == 0) scratch[WARPS] = v;
    }
    __syncthreads();
    return scratch[WARPS];
  }
}

// The same combination over a group of TPR threads, RPB groups a block (a group: threads
// [slot TPR, (slot + 1) TPR)): within a warp (TPR <= 32) by shuffles alone, else as block_reduce
// (which it is, bit for bit, at RPB = 1). scratch: RPB (TPR / 32 + 1) entries; every thread of the
// block must call it (it may hold barriers). Orders memory accesses as block_reduce does.
template <int TPR, int RPB, class T, class Op>
__device__ __forceinline__ T group_reduce(T v, T* scratch, T empty, Op op) {
  static_assert(TPR >= 1 && (TPR & (TPR - 1)) == 0 && (TPR <= 32 || TPR % 32 == 0), "TPR: a power of two");
  if constexpr (TPR <= 32) {
#pragma unroll
    for (int o = TPR / 2; o > 0; o >>= 1) v = op(v, shfl_xor(v, o));
    __syncwarp();
    return v;
  } else {
    constexpr int WPR = TPR / 32;
    const int lane = threadIdx.x % 32, w = threadIdx.x % TPR / 32;
    T* mine = scratch + threadIdx.x / TPR * (WPR + 1);
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = op(v, shfl_xor(v, o));
    if (lane == 0) mine[w] = v;
    __syncthreads();
    if (w == 0) {
      v = lane < WPR ? mine[lane] : empty;
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) v = op(v, shfl_xor(v, o));
      if (lane == 0) mine[WPR] = v;
    }
    __syncthreads();
    return mine[WPR];
  }
}

// ---- rows at any address: a head, 16-byte packs, a tail (09) --------------------------------------
// A row whose first element is not on a 16-byte boundary (an odd N puts every other row off it)
// is split into the `head` (the elements before the row's first 16-byte boundary, up to VEC - 1),
// `packs` whole packs from there (the body), and the tail (under VEC elements after the body);
// head and tail, `extras` elements in all, are read one element at a time. The split depends on
// (N, dtype, the row's address mod 16) alone, so a row's result does too (as a view x[i:i+1]
// keeps the address, the row alone gives the same bits as in its batch).
struct RowSplit {
  int head, packs, extras;
};
template <int VEC> __device__ __forceinline__ RowSplit split_row(const elem_t* row, int N) {
  const int off = static_cast<int>(reinterpret_cast<unsigned long long>(row) % 16 / sizeof(elem_t));
  const int head = min(N, (VEC - off) % VEC);
  const int packs = (N - head) / VEC;
  return {head, packs, N - packs * VEC};
}
// The row index of extra element j (0 <= j < extras): the head's first, then the tail's.
__device__ __forceinline__ int extra_index(const RowSplit& s, int j, int vec) {
  return j < s.head ? j : j + s.packs * vec;
}
// Whether two rows lie at the same address mod 16 (so packs of one line up with packs of the other).
__device__ __forceinline__ bool same_offset(const void* a, const void* b) {
  return (reinterpret_cast<unsigned long long>(a) ^ reinterpret_cast<unsigned long long>(b)) % 16 == 0;
}

// ---- a pass over a row ---------------------------------------------------------------------------

// The first pass: every pack of the row goes to f(pack index, pack) in this thread's order, UNROLL
// loads in flight before any is used; packs below `staged` are also kept in `stage`. The step's
// packs go to step(v, in) too, for reductions that fold a whole step at once.
template <int THREADS, int VEC, int UNROLL, class Step>
__device__ __forceinline__ void read_row(const elem_t* row, int packs, Pack<VEC>* stage, int staged, Step step) {
  for (int p0 = 0; p0 < packs; p0 += THREADS * UNROLL) {
    Pack<VEC> v[UNROLL];
    bool in[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      const int p = p0 + u * THREADS + static_cast<int>(threadIdx.x);
      in[u] = p < packs;
      if (in[u]) v[u] = load_pack<VEC>(row + static_cast<i64>(p) * VEC);
    }
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      const int p = p0 + u * THREADS + static_cast<int>(threadIdx.x);
      if (in[u] && p < staged) stage[p] = v[u];
    }
    step(v, in);
  }
}
