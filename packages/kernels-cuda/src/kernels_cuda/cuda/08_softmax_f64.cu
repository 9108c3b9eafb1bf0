// 08 float64 softmax, forward and backward: one block per row, double throughout.
//
// For users who need float64's answer (gradcheck, scientific code), not speed: the THREADS
// threads of a block stride through their row together, and every statistic is reduced in double
// (each thread's partial, then a warp-shuffle tree, then the warps' partials in shared memory), so
// the error is a few ulps of double. Three reads of the row forward (max, sum, write), two of y
// and dy backward (dot, write). A row's reduction order depends on N and THREADS only.
//
// exp is the libdevice double exp (correctly rounded to within an ulp), not the fp32 MUFU path.
// A row that is -inf throughout gives exp(-inf - -inf) = NaN outputs, a row holding NaN or +inf
// gives NaN outputs: what torch returns.
//
// Self-contained (no common.cuh, which is written for 32- and 16-bit elements).
// Entry points: softmax_f64 (x, y, M, N, x_stride, y_stride) and
// softmax_backward_f64 (y, dy, dx, M, N, y_stride, dy_stride, dx_stride). Constant: KL_THREADS.

typedef long long i64;

constexpr int THREADS = KL_THREADS;
constexpr int WARPS = THREADS / 32;
static_assert(THREADS % 32 == 0 && WARPS <= 32, "THREADS: whole warps, at most 1024");

struct Max {
  __device__ __forceinline__ double operator()(double a, double b) const { return fmax(a, b); }
};
struct Sum {
  __device__ __forceinline__ double operator()(double a, double b) const { return a + b; }
};

// v reduced over the block by op; every thread gets the result. scratch: WARPS doubles; the
// trailing barrier lets the caller reduce again into the same scratch.
template <class Op> __device__ __forceinline__ double block_reduce(double v, double* scratch, Op op) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = scratch[0];
  for (int w = 1; w < WARPS; ++w) v = op(v, scratch[w]);  // every thread, in the same order
  __syncthreads();
  return v;
}

#ifdef KL_ENTRY_softmax_f64
extern "C" __global__ void __launch_bounds__(THREADS)
    softmax_f64(const double* __restrict__ x, double* __restrict__ y, i64 M, int N, i64 x_stride, i64 y_stride) {
  __shared__ double scratch[WARPS];
  for (i64 row = blockIdx.x; row < M; row += gridDim.x) {
    const double* xr = x + row * x_stride;
    double* yr = y + row * y_stride;
    double m = -__longlong_as_double(0x7ff0000000000000ll);  // -inf
    for (int j = threadIdx.x; j < N; j += THREADS) m = fmax(m, xr[j]);
    // fmax drops NaN; a NaN element still makes its exp, and so the sum, NaN
    m = block_reduce(m, scratch, Max());
    double s = 0.0;
    for (int j = threadIdx.x; j < N; j += THREADS) s += exp(xr[j] - m);
    s = block_reduce(s, scratch, Sum());
    for (int j = threadIdx.x; j < N; j += THREADS) yr[j] = exp(xr[j] - m) / s;
  }
}
#endif

// dx = y * (dy - sum(y * dy)) along each row.
#ifdef KL_ENTRY_softmax_backward_f64
extern "C" __global__ void __launch_bounds__(THREADS)
    softmax_backward_f64(const double* __restrict__ y, const double* __restrict__ dy, double* __restrict__ dx, i64 M,
                         int N, i64 y_stride, i64 dy_stride, i64 dx_stride) {
  __shared__ double scratch[WARPS];
  for (i64 row = blockIdx.x; row < M; row += gridDim.x) {
    const double* yr = y + row * y_stride;
    const double* dyr = dy + row * dy_stride;
    double* dxr = dx + row * dx_stride;
    double dot = 0.0;
    for (int j = threadIdx.x; j < N; j += THREADS) dot = fma(yr[j], dyr[j], dot);
    dot = block_reduce(dot, scratch, Sum());
    for (int j = threadIdx.x; j < N; j += THREADS) dxr[j] = yr[j] * (dyr[j] - dot);
  }
}
#endif
