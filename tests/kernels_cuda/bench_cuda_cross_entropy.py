"""GPU benchmark of the forward + backward of the mean cross-entropy over stored logits: kernels_cuda's
fused kernel against F.cross_entropy and torch.compile of it, at issue 45's shapes.

For each shape and implementation: the device time of one `torch.autograd.grad(loss, logits)`
(labtools' timer: device events, L2 flushed, the GPU kept busy ahead of each launch), the
fraction of the floor (the logits read once and the gradient written once at the device-copy
bandwidth measured in the same run), and the peak memory the call allocates beyond its inputs.
"kernels_cuda/110KB" is the same kernel keeping at most 110 KB of a row in shared memory (the
rest read again from L2), for rows longer than that: which of the two is faster is measured here.
(Rows of up to 112 KB already run two blocks an SM; longer ones get 1024 threads a row, one block
an SM by its registers whatever it stages.)
Gradients go through autograd.grad (not .backward() into a leaf's .grad, which copies a gradient
its Function still holds), as they do inside a network, where the logits are no leaf.

    scripts/test-in-place tests/kernels_cuda/bench_cuda_cross_entropy.py --benchmark-only -s
    python tests/kernels_cuda/bench_cuda_cross_entropy.py          # the same table, as a script
    python tests/kernels_cuda/bench_cuda_cross_entropy.py --host   # host time a call, 65536x600
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

pytestmark = pytest.mark.gpu

SHAPES = [
    ((8192, 128256), "bfloat16"),
    ((16384, 32000), "bfloat16"),
    ((4096, 50257), "bfloat16"),
    ((4096, 50257), "float32"),
    ((65536, 600), "float32"),  # MiniGPT's vocabulary
]


def _cuda_xent(x, t, reduction="mean"):
    from kernels_cuda.cross_entropy_op import cross_entropy

    return cross_entropy(x, t, reduction=reduction)


_compiled = None


def _compiled_xent(x, t):
    global _compiled
    if _compiled is None:
        _compiled = torch.compile(lambda a, b: F.cross_entropy(a, b))
    return _compiled(x, t)


def _cuda_xent_half_stage(x, t):
    """The fused kernel staging at most HALF_STAGE bytes of a row (two blocks an SM where a row
    would take all of a block's shared memory; the rest read again from L2)."""
    from kernels_cuda import row_kernels

    before = row_kernels.STAGE_LIMIT
    row_kernels.set_stage_limit(HALF_STAGE)
    try:
        return _cuda_xent(x, t)
    finally:
        row_kernels.set_stage_limit(before)


HALF_STAGE = 110 * 1024
IMPLS = {
    "kernels_cuda": _cuda_xent,
    "kernels_cuda/110KB": _cuda_xent_half_stage,
    "F.cross_entropy": F.cross_entropy,
    "torch.compile": _compiled_xent,
}


def _step(loss_fn):
    def step(x, t):
        return torch.autograd.grad(loss_fn(x, t), x)[0]

    return step


def _inputs(shape, dtype, sets=2):
    M, V = shape
    out = []
    for i in range(sets):
        g = torch.Generator(device="cuda").manual_seed(i)
        x = (torch.randn(M, V, device="cuda", generator=g) * 2).to(getattr(torch, dtype)).requires_grad_()
        t = torch.randint(0, V, (M,), device="cuda", generator=g)
        out.append((x, t))
    return out


def peak_extra_bytes(step, x, t) -> int:
    step(x, t)  # compiled and loaded
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    g = step(x, t)
    torch.cuda.synchronize()
    del g
    return torch.cuda.max_memory_allocated() - base


def measure(shape, dtype, copy_gbps: float) -> list[dict]:
    from labtools.bench import time_cuda

    arg_sets = _inputs(shape, dtype)
    x0 = arg_sets[0][0]
    floor_us = 2 * x0.numel() * x0.element_size() / (copy_gbps * 1e9) * 1e6
    rows = []
    for name, loss_fn in IMPLS.items():
        if loss_fn is _cuda_xent_half_stage and shape[1] * x0.element_size() <= HALF_STAGE:
            continue  # the whole row fits in HALF_STAGE: the same launch as kernels_cuda's
        step = _step(loss_fn)
        t = time_cuda(step, arg_sets, time_cap_s=5.0)
        rows.append(
            {
                "impl": name,
                "shape": shape,
                "dtype": dtype,
                "us": t.median_us,
                "floor_us": floor_us,
                "frac_of_floor": floor_us / t.median_us,
                "extra_bytes": peak_extra_bytes(step, *arg_sets[0]),
            }
        )
    return rows


def format_rows(rows: list[dict]) -> str:
    lines = []
    for r in rows:
        lines.append(
            f"{r['shape'][0]}x{r['shape'][1]} {r['dtype']:<8} {r['impl']:<16} {r['us']:9.1f} us  "
            f"{r['frac_of_floor']:5.0%} of floor ({r['floor_us']:.0f} us)  +{r['extra_bytes'] / 2**30:.2f} GiB"
        )
    return "\n".join(lines)


def host_times(shape, dtype, calls: int = 300) -> str:
    """Per call of forward + backward (autograd.grad of the summed loss), back to back as in
    training: the host's time in the forward call and in autograd.grad (medians), and the wall
    time per call (the whole loop to its end on the GPU, over calls). At short rows the host,
    not the GPU, sets the pace."""
    import statistics
    import time

    (x, t), lines = _inputs(shape, dtype, sets=1)[0], []
    for name in ("kernels_cuda", "F.cross_entropy"):
        fn = IMPLS[name]
        fwd, bwd = [], []
        for i in range(calls + 20):
            if i == 20:  # warm: compiled, loaded, allocator primed
                torch.cuda.synchronize()
                fwd, bwd, start = [], [], time.perf_counter()
            leaf = x.detach().requires_grad_()
            t0 = time.perf_counter()
            loss = fn(leaf, t, reduction="sum")
            t1 = time.perf_counter()
            torch.autograd.grad(loss, leaf)
            fwd.append(t1 - t0)
            bwd.append(time.perf_counter() - t1)
        torch.cuda.synchronize()
        wall = (time.perf_counter() - start) / calls
        lines.append(
            f"{shape[0]}x{shape[1]} {dtype} {name:<16} host forward {statistics.median(fwd) * 1e6:6.1f} us, "
            f"autograd.grad {statistics.median(bwd) * 1e6:6.1f} us, wall {wall * 1e6:6.1f} us a call"
        )
    return "\n".join(lines)


@pytest.fixture(scope="module")
def copy_gbps() -> float:
    from labtools.ceilings import measure_copy

    return measure_copy()


@pytest.mark.parametrize("shape,dtype", SHAPES, ids=[f"{s[0]}x{s[1]}-{d}" for s, d in SHAPES])
def test_forward_backward_of_the_mean_loss(benchmark, shape, dtype, copy_gbps):
    rows = measure(shape, dtype, copy_gbps)
    print(f"\ncopy: {copy_gbps:.0f} GB/s\n" + format_rows(rows))
    benchmark.extra_info["rows"] = [{**r, "shape": list(r["shape"])} for r in rows]
    step, (x, t) = _step(_cuda_xent), _inputs(shape, dtype, sets=1)[0]
    # pytest-benchmark's own figure: the host's wall time of one step to its end on the GPU
    benchmark.pedantic(lambda: (step(x, t), torch.cuda.synchronize()), rounds=5, warmup_rounds=1)
    ours = rows[0]
    assert ours["us"] > 0
    # the fused kernel holds the gradient and O(M) more, where F.cross_entropy holds log-probabilities too
    itemsize = torch.empty((), dtype=getattr(torch, dtype)).element_size()
    assert ours["extra_bytes"] <= shape[0] * shape[1] * itemsize + (8 << 20)


if __name__ == "__main__":
    import sys

    if "--host" in sys.argv:  # the host's time a call at MiniGPT's head
        print(host_times((65536, 600), "float32"))
        sys.exit()
    from labtools.ceilings import measure_copy

    bw = measure_copy()
    print(f"copy: {bw:.0f} GB/s")
    for shape, dtype in SHAPES:
        print(format_rows(measure(shape, dtype, bw)), flush=True)
