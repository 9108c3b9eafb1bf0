"""Time probes/cluster_kernel.py's cluster_fwd (a Triton softmax forward over a thread-block
cluster, one cluster a row, the (max, sum) pairs exchanged through distributed shared memory by
inline PTX) against kernels_triton.softmax and kernels_cuda.softmax in the same process.

The kernel is compiled by Triton with num_ctas = 1 (Triton 3.6 does not compile a row reduction
with num_ctas > 1) and launched through the compiled kernel's own launcher with packed metadata
(num_warps, C, shared + C * 8): the launcher then sets the cluster dimension to C and the grid to
M * C blocks, and the dynamic shared memory covers Triton's own plus the C exchange slots past it.
Each config is checked against float64 first (the row's max last); triton.testing.do_bench
medians, L2 flushed, best of two rounds."""

import os
import sys

import kernels_cuda
import kernels_triton
import torch
import triton
import triton.testing
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

sys.path.insert(0, os.path.dirname(__file__))
import cluster_kernel as ck  # noqa: E402

POINTER = {torch.float32: "*fp32", torch.bfloat16: "*bf16"}


def build(dtype, C, chunk, warps, raw):
    sig = {
        "x_ptr": POINTER[dtype], "y_ptr": POINTER[dtype], "N": "i32", "x_stride": "i32",
        "y_stride": "i32", "slot_base": "i32", "C": "constexpr", "CHUNK": "constexpr", "RAW": "constexpr",
    }  # fmt: skip
    attrs = {(i,): [["tt.divisibility", 16]] for i in range(5)}
    k = triton.compile(
        ASTSource(ck.cluster_fwd, sig, constexprs={"C": C, "CHUNK": chunk, "RAW": raw}, attrs=attrs),
        target=GPUTarget("cuda", 90, 32),
        options={"num_warps": warps, "num_stages": 1},
    )
    k._init_handles()
    base = (k.metadata.shared + 7) // 8 * 8
    packed = (warps, C, base + C * 8)

    def run(x, y):
        M, N = x.shape
        k.run(
            M, 1, 1, torch.cuda.current_stream().cuda_stream, k.function, packed, None, None, None,
            x.data_ptr(), y.data_ptr(), N, x.stride(0), y.stride(0), base, C, chunk, raw,
        )  # fmt: skip

    return run, k.n_regs


CASES = {
    (256, 262144): [(16, 16384, 8, 0), (16, 16384, 8, 1), (16, 16384, 16, 1)],
    (1024, 131072): [(8, 16384, 8, 0), (8, 16384, 8, 1), (16, 8192, 4, 1), (16, 8192, 8, 1)],
    (2048, 65536): [(4, 16384, 8, 0), (4, 16384, 8, 1), (8, 8192, 4, 1)],
    (4096, 32768): [(2, 16384, 8, 0), (2, 16384, 8, 1), (4, 8192, 4, 0), (4, 8192, 4, 1)],
    (64, 50256): [(8, 8192, 4, 1), (16, 4096, 4, 1)],
}

if __name__ == "__main__":
    for shape, configs in CASES.items():
        for dtype in (torch.bfloat16, torch.float32):
            torch.manual_seed(0)
            x = torch.randn(shape, device="cuda").to(dtype)
            x[:, -1] += 8
            ref = torch.softmax(x.double(), -1)
            y = torch.empty_like(x)
            runs = {
                "triton": lambda x=x: kernels_triton.softmax(x),
                "cuda": lambda x=x: kernels_cuda.softmax(x),
            }
            notes = {}
            for C, chunk, warps, raw in configs:
                label = f"C{C}/{chunk}/{warps}w{'/raw' if raw else ''}"
                try:
                    run, regs = build(dtype, C, chunk, warps, bool(raw))
                    y.fill_(float("nan"))
                    run(x, y)
                    torch.cuda.synchronize()
                    err = (y.double() - ref).abs().max().item()
                except Exception as e:  # noqa: BLE001
                    notes[label] = f"failed: {type(e).__name__}: {str(e).splitlines()[0][:80]}"
                    continue
                notes[label] = f"{regs} regs{'' if err < 1e-2 else f' BAD {err:.2g}'}"
                runs[label] = lambda run=run, x=x, y=y: run(x, y)
            best = {}
            for _ in range(2):
                for label, fn in runs.items():
                    us = triton.testing.do_bench(fn, warmup=25, rep=150, return_mode="median") * 1e3
                    best[label] = min(us, best.get(label, us))
            print(
                f"fwd {shape[0]}x{shape[1]} {str(dtype)[6:]:8s} "
                + " | ".join(
                    f"{k} {v:6.1f}" + (f" ({notes[k]})" if k in notes else "") for k, v in best.items()
                )
                + "".join(f" | {k} {v}" for k, v in notes.items() if k not in best),
                flush=True,
            )
