"""The cluster kernels of probes/cluster_kernel.py, forward and backward, at few rows (the LM-head
shapes, odd N included) and the backward at the sweep's long rows, against kernels_triton and
kernels_cuda in the same process; launched as cluster_fwd.py launches them. Each config is checked
against float64 first; triton.testing.do_bench medians, L2 flushed, best of two rounds."""

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


def build(direction, dtype, C, chunk, warps, aligned):
    fn = ck.cluster_fwd if direction == "fwd" else ck.cluster_bwd
    n_ptr = 2 if direction == "fwd" else 3
    sig = {}
    for i, a in enumerate(fn.arg_names):
        sig[a] = POINTER[dtype] if i < n_ptr else ("constexpr" if a in ("C", "CHUNK", "RAW") else "i32")
    consts = {"C": C, "CHUNK": chunk, **({"RAW": False} if direction == "fwd" else {})}
    attrs = {(i,): [["tt.divisibility", 16]] for i in range(n_ptr)}
    if aligned:  # N and the row strides divisible by 16 elements
        attrs.update({(i,): [["tt.divisibility", 16]] for i in range(n_ptr, 2 * n_ptr + 1)})
    k = triton.compile(
        ASTSource(fn, sig, constexprs=consts, attrs=attrs),
        target=GPUTarget("cuda", 90, 32),
        options={"num_warps": warps, "num_stages": 1},
    )
    k._init_handles()
    base = (k.metadata.shared + 7) // 8 * 8
    packed = (warps, C, base + C * 8)
    tail = tuple(consts.values())

    def run(*ts):
        M, N = ts[0].shape
        k.run(
            M, 1, 1, torch.cuda.current_stream().cuda_stream, k.function, packed, None, None, None,
            *(t.data_ptr() for t in ts), N, *(t.stride(0) for t in ts), base, *tail,
        )  # fmt: skip

    return run, k.n_regs


FEW = {
    (64, 50257): [(8, 8192, 4), (16, 4096, 4)],
    (8, 128257): [(16, 8192, 4), (16, 8192, 8)],
    (1, 262144): [(16, 16384, 8)],
    (16, 131072): [(16, 8192, 4)],
    (32, 262144): [(16, 16384, 8)],
}
LONG_BWD = {
    (1024, 131072): [(8, 16384, 8), (16, 8192, 4)],
    (4096, 32768): [(2, 16384, 8), (4, 8192, 4)],
    (256, 262144): [(16, 16384, 8)],
}


def case(direction, shape, dtype, configs):
    torch.manual_seed(0)
    aligned = shape[1] % 16 == 0
    x = torch.randn(shape, device="cuda").to(dtype)
    x[:, -1] += 8
    if direction == "fwd":
        ref = torch.softmax(x.double(), -1)
        args = (x, torch.empty_like(x))
        runs = {"triton": lambda: kernels_triton.softmax(x), "cuda": lambda: kernels_cuda.softmax(x)}
    else:
        y = torch.softmax(x.float(), -1).to(dtype)
        dy = torch.randn(shape, device="cuda").to(dtype)
        yd, dyd = y.double(), dy.double()
        ref = yd * (dyd - (yd * dyd).sum(-1, keepdim=True))
        args = (y, dy, torch.empty_like(y))
        runs = {
            "triton": lambda: kernels_triton.softmax_backward(y, dy),
            "cuda": lambda: kernels_cuda.softmax_backward(y, dy),
        }
    notes = {}
    for C, chunk, warps in configs:
        label = f"C{C}/{chunk}/{warps}w"
        try:
            run, regs = build(direction, dtype, C, chunk, warps, aligned)
            args[-1].fill_(float("nan"))
            run(*args)
            torch.cuda.synchronize()
            err = (args[-1].double() - ref).abs().max().item()
        except Exception as e:  # noqa: BLE001
            notes[label] = f"failed: {type(e).__name__}: {str(e).splitlines()[0][:80]}"
            continue
        notes[label] = f"{regs} regs{'' if err < 1e-2 else f' BAD {err:.2g}'}"
        runs[label] = lambda run=run: run(*args)
    best = {}
    for _ in range(2):
        for label, fn in runs.items():
            us = triton.testing.do_bench(fn, warmup=25, rep=150, return_mode="median") * 1e3
            best[label] = min(us, best.get(label, us))
    print(
        f"{direction} {shape[0]}x{shape[1]} {str(dtype)[6:]:8s} "
        + " | ".join(f"{k} {v:6.1f}" + (f" ({notes[k]})" if k in notes else "") for k, v in best.items())
        + "".join(f" | {k} {v}" for k, v in notes.items() if k not in best),
        flush=True,
    )


if __name__ == "__main__":
    for direction in ("fwd", "bwd"):
        for shape, configs in FEW.items():
            for dtype in (torch.bfloat16, torch.float32):
                case(direction, shape, dtype, configs)
    for shape, configs in LONG_BWD.items():
        for dtype in (torch.bfloat16, torch.float32):
            case("bwd", shape, dtype, configs)
