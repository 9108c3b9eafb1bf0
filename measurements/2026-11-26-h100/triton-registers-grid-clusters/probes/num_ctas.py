# A frozen probe of 2026-11-26 (measurements/2026-11-26-h100/triton-registers-grid-clusters/README.md), run from the repository root as .probes/num_ctas.py.
# ruff: noqa: E741, B023, F401 -- kept as it ran
"""Does Triton on this machine split one program over a thread-block cluster (num_ctas) with
reductions across the cluster's CTAs? A one-pass row softmax, one program a row holding the whole
row, launched with num_ctas = 1, 2, 4, 8, 16; error against float64 and do_bench time (L2 flushed,
median), or the exception. The row is a [1, N] tile."""

import torch
import triton
import triton.language as tl
import triton.testing


@triton.jit
def row_softmax(x_ptr, y_ptr, N, BLOCK: tl.constexpr):
    # the row as a [1, BLOCK] tile reduced over axis 1: Triton 3.6 rejects num_ctas > 1 on a 1-D
    # reduction (TritonGPUPlanCTAPass: "parent layout must have at least rank >= 2")
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)[None, :]
    x = tl.load(x_ptr + row * N + cols, mask=cols < N, other=float("-inf")).to(tl.float32)
    m = tl.max(x, axis=1)[:, None]
    e = tl.exp2((x - m) * 1.4426950408889634)
    s = tl.sum(e, axis=1)[:, None]
    tl.store(y_ptr + row * N + cols, (e / s).to(y_ptr.dtype.element_ty), mask=cols < N)


print(triton.__version__)
for (M, N), dtype, warps in [
    ((4096, 32768), torch.float32, 8),
    ((1024, 131072), torch.float32, 8),
    ((1024, 131072), torch.bfloat16, 8),
    ((256, 262144), torch.bfloat16, 8),
    ((256, 262144), torch.float32, 16),
]:
    x = torch.randn(M, N, device="cuda").to(dtype)
    y = torch.empty_like(x)
    ref = torch.softmax(x.double(), -1)
    for ctas in (1, 2, 4, 8, 16):
        per_thread = N // (ctas * warps * 32)
        if per_thread > 128 or per_thread < 4:
            continue
        try:
            y.fill_(float("nan"))
            k = row_softmax[(M,)](x, y, N, BLOCK=N, num_warps=warps, num_ctas=ctas)
            torch.cuda.synchronize()
            err = (y.double() - ref).abs().max().item()
            ms = triton.testing.do_bench(
                lambda ctas=ctas: row_softmax[(M,)](x, y, N, BLOCK=N, num_warps=warps, num_ctas=ctas),
                warmup=10,
                rep=100,
                return_mode="median",
            )
            gbps = 2 * x.numel() * x.element_size() / ms / 1e6
            print(
                f"{M}x{N} {str(dtype)[6:]:8s} warps={warps} ctas={ctas:2d} {ms * 1e3:8.1f} us {gbps:6.0f} GB/s "
                f"err {err:.1e} regs {k.n_regs} spills {k.n_spills}",
                flush=True,
            )
        except Exception as e:  # noqa: BLE001 - the probe reports what Triton does
            print(
                f"{M}x{N} {str(dtype)[6:]:8s} warps={warps} ctas={ctas:2d} {type(e).__name__}: {str(e)[:300]}",
                flush=True,
            )
