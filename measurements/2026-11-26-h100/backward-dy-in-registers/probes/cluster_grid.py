# A frozen probe of 2026-11-26 (measurements/2026-11-26-h100/backward-dy-in-registers/README.md), run from the repository root as .probes/cluster_grid.py.
"""Device time of the cluster kernels (04 forward, 07 backward) by chunk bytes per block and by
the number of clusters in the grid: one cluster a row (today's grid) or a persistent grid of G
clusters that loop over the rows. do_bench: L2 flushed, median. Each config checked first."""

import sys
from dataclasses import replace

import kernels_cuda  # noqa: F401
import kernels_cuda.softmax_backward  # noqa: F401
import torch
import triton.testing

sm = sys.modules["kernels_cuda.softmax_variants"]
sb = sys.modules["kernels_cuda.softmax_backward"]
GRID = {"g": None}


def with_grid(plan):
    def p(*a):
        launch = plan(*a)
        c = launch.spec.cluster
        if c and GRID["g"]:
            launch = replace(launch, grid=c * min(GRID["g"], launch.grid // c))
        return launch

    p.cache_clear = lambda: None
    return p


sm._plan, sb._plan = with_grid(sm.plan), with_grid(sb.plan)


def clear():
    sm._prepare.cache_clear()
    sm._calls.clear()
    sm._torch_calls.clear()
    sb._dense_calls.clear()


def resident(launch):
    c = launch.spec.cluster
    per_sm = min(8, (228 * 1024) // (launch.shared_mem + 2048))
    return max(1, 132 * per_sm // c)


props = torch.cuda.get_device_properties(0)
print(props.name, props.multi_processor_count, "SMs", flush=True)
SHAPES = [((256, 262144), torch.float32), ((256, 262144), torch.bfloat16), ((1024, 131072), torch.float32),
          ((1024, 131072), torch.bfloat16), ((4096, 32768), torch.float32), ((4096, 32768), torch.bfloat16)]  # fmt: skip
which = sys.argv[1]
for shape, dtype in SHAPES:
    M, N = shape
    torch.manual_seed(0)
    x = torch.randn(shape, device="cuda", dtype=torch.float32)
    if which == "fwd":
        ref = torch.softmax(x.double(), -1)
        x = x.to(dtype)
        fn = lambda: sm.softmax(x)  # noqa: E731, B023
        chunks = (32, 64, 128)
    else:
        y = torch.softmax(x, -1).to(dtype)
        dy = torch.randn(shape, device="cuda", dtype=dtype)
        ref = y.double() * (dy.double() - (y.double() * dy.double()).sum(-1, keepdim=True))
        fn = lambda: sb.softmax_backward(y, dy)  # noqa: E731, B023
        chunks = (8, 16, 32)
    tol = 1e-5 if dtype == torch.float32 else 2e-2
    for kb in chunks:
        if which == "fwd":
            sm.AUTO = replace(sm.AutoConfig(), cluster_chunk_bytes=kb * 1024)
        else:
            sb.AUTO = replace(sb.BackwardConfig(), cluster_chunk_bytes=kb * 1024)
        GRID["g"] = None
        clear()
        dt = str(dtype)[6:]
        base = (sm if which == "fwd" else sb).plan(
            "auto", M, N, dt, 16 // x.element_size() if which == "fwd" else 16 // y.element_size(),
            sm._device(0), sm.AUTO if which == "fwd" else sb.AUTO, True)  # fmt: skip
        if not base.spec.cluster:
            print(f"{which} {M}x{N} {dt} {kb}K: not a cluster launch ({base.spec.name})", flush=True)
            continue
        r = resident(base)
        line = []
        for g in (None, r // 2, r, 2 * r):
            GRID["g"] = g
            clear()
            out = fn()
            err = (out.double() - ref).abs().max().item()
            ok = "" if err < tol else f" BAD {err:.1e}"
            ms = triton.testing.do_bench(fn, warmup=25, rep=150, return_mode="median")
            line.append(f"G={'rows' if g is None else g}: {ms * 1e3:7.1f}{ok}")
        print(f"{which} {M}x{N} {dt:8s} {kb:3d}K C={base.spec.cluster:2d} smem={base.shared_mem // 1024}K "
              + " | ".join(line), flush=True)  # fmt: skip
