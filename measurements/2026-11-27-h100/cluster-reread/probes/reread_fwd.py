# A probe: not part of any package.
"""A Triton forward over a thread-block cluster that does not hold its chunk in registers.

kernels_triton.cluster's forward holds a block's 8192-element chunk in registers across the
cluster's exchange (64 values a thread), which caps the blocks an SM holds and leaves no load in
flight while a block reduces and exchanges. This form streams the chunk in TILE-wide tiles through
a software-pipelined loop (tl.range num_stages: cp.async into shared memory), keeping per-lane
running (max, sum) pairs; after the exchange it streams the chunk again, which its own first pass
has just brought into L2 (DRAM reads it once if L2 keeps it), and writes y. Registers are those
of one tile, so more blocks are resident; loads of other blocks cover each block's exchange.

Timed against kernels_triton.softmax (the dispatch) and kernels_cuda.softmax: device time
(triton.testing.do_bench median, L2 flushed), checked against float64. Options: TILE, warps,
stages, C (blocks a row), the loads' L2 policy (pass 1 evict_last, pass 2 evict_first), and
extra shared memory per block to cap the blocks an SM holds (the L2 footprint of chunks read
and not yet re-read)."""

import itertools
import sys

import torch
import triton
import triton.language as tl
import triton.testing
from kernels_triton import cluster, launch
from kernels_triton.kernels import LOG2E
from kernels_triton.split_row import _merge, _shift


@triton.jit(do_not_specialize=["slot_base"])
def reread_fwd_kernel(
    x_ptr, y_ptr, N, x_row_stride, y_row_stride, slot_base,
    C: tl.constexpr, CHUNK: tl.constexpr, TILE: tl.constexpr, STAGES: tl.constexpr,
    NEEDS_MASK: tl.constexpr, COMPENSATED: tl.constexpr, POLICY: tl.constexpr,
):  # fmt: skip
    pid = tl.program_id(0)
    row = (pid // C).to(tl.int64)
    rank = pid % C
    x_row = x_ptr + row * x_row_stride
    y_row = y_ptr + row * y_row_stride
    start = rank * CHUNK
    offs = tl.arange(0, TILE)
    m_lane = tl.full([TILE], float("-inf"), tl.float32)
    s_lane = tl.zeros([TILE], tl.float32)
    for t in tl.range(0, CHUNK, TILE, num_stages=STAGES):
        cols = start + t + offs
        if NEEDS_MASK:
            if POLICY:
                x = tl.load(x_row + cols, mask=cols < N, other=float("-inf"), eviction_policy="evict_last")
            else:
                x = tl.load(x_row + cols, mask=cols < N, other=float("-inf"))
        else:
            if POLICY:
                x = tl.load(x_row + cols, eviction_policy="evict_last")
            else:
                x = tl.load(x_row + cols)
        x = x.to(tl.float32)
        m_new = tl.maximum(m_lane, x)
        shift = _shift(m_new)
        s_lane = s_lane * tl.exp2((m_lane - shift) * LOG2E) + tl.exp2((x - shift) * LOG2E)
        m_lane = m_new
    m, s = _merge(m_lane, s_lane, COMPENSATED)
    ranks = tl.arange(0, C)
    pushed = cluster._push_pair(
        ranks, tl.broadcast_to(m, [C]), tl.broadcast_to(s, [C]), tl.broadcast_to(slot_base + rank * 8, [C])
    )
    after = cluster._cluster_barrier(tl.sum(pushed, axis=0))
    m_all, s_all = cluster._slot_pair(ranks, tl.broadcast_to(slot_base + after, [C]))
    m_row, s_row = _merge(m_all, s_all, COMPENSATED)
    inv = 1.0 / s_row
    for t in tl.range(0, CHUNK, TILE, num_stages=STAGES):
        cols = start + t + offs
        if NEEDS_MASK:
            if POLICY:
                x = tl.load(x_row + cols, mask=cols < N, other=float("-inf"), eviction_policy="evict_first")
            else:
                x = tl.load(x_row + cols, mask=cols < N, other=float("-inf"))
        else:
            if POLICY:
                x = tl.load(x_row + cols, eviction_policy="evict_first")
            else:
                x = tl.load(x_row + cols)
        y = tl.exp2((x.to(tl.float32) - m_row) * LOG2E) * inv
        if NEEDS_MASK:
            tl.store(y_row + cols, y.to(y_ptr.dtype.element_ty), mask=cols < N)
        else:
            tl.store(y_row + cols, y.to(y_ptr.dtype.element_ty))


def make(x, y, c, tile, warps, stages, policy, extra_smem):
    m, n = x.shape
    chunk = triton.cdiv(triton.cdiv(n, c), tile) * tile
    const = dict(C=c, CHUNK=chunk, TILE=tile, STAGES=stages, NEEDS_MASK=n != c * chunk,
                 COMPENSATED=x.dtype == torch.float32, POLICY=policy)  # fmt: skip
    compiled = reread_fwd_kernel.warmup(
        x, y, n, x.stride(0), y.stride(0), 0, **const, grid=(1,), num_warps=warps, num_stages=stages
    )
    compiled._init_handles()
    slot_base = -(-compiled.metadata.shared // 16) * 16
    shared = max(slot_base + c * 8, extra_smem)
    packed = (warps, c, shared)
    plan = launch.direct_launcher(
        compiled, (m, 1, 1), 2, (n, x.stride(0), y.stride(0), slot_base, *const.values()), x.get_device(),
        packed_metadata=packed,
    )  # fmt: skip
    return plan, compiled, shared


def main():
    import kernels_cuda
    import kernels_triton

    shapes = [
        (256, 262144),
        (1024, 131072),
        (2048, 65536),
        (512, 65536),
        (4096, 32768),
        (16, 131072),
        (64, 50257),
    ]
    if len(sys.argv) > 1:
        shapes = [tuple(int(v) for v in s.split("x")) for s in sys.argv[1].split(",")]
    occupancy = triton.runtime.driver.active.utils.cuOccupancyMaxActiveClusters
    for (m, n), dtype in itertools.product(shapes, (torch.bfloat16, torch.float32)):
        x = (torch.randn((m, n), device="cuda") * 3).to(dtype)
        x[:, -1] += 5
        ref = torch.softmax(x.double(), -1)
        y = torch.empty_like(x)
        gb = 2 * x.numel() * x.element_size() / 1e9
        base = {
            "triton": triton.testing.do_bench(lambda x=x: kernels_triton.softmax(x), return_mode="median"),
            "cuda": triton.testing.do_bench(lambda x=x: kernels_cuda.softmax(x), return_mode="median"),
        }
        print(
            f"{m}x{n} {str(dtype)[6:]}: triton {base['triton'] * 1e3:.1f} us, cuda {base['cuda'] * 1e3:.1f} us",
            flush=True,
        )
        cs = [c for c in (8, 16) if 2048 <= n / c <= 32768]
        configs = [
            (c, tile, warps, stages, policy, 0)
            for c, (tile, warps), stages, policy in itertools.product(
                cs, ((2048, 4), (4096, 8), (4096, 4)), (2, 3), (0, 1)
            )
        ]
        best = None
        for config in configs:
            best = timed(x, y, ref, gb, base, config, best, occupancy)
        if best:  # the best with fewer blocks an SM (extra shared memory)
            for extra in (32768, 49152):
                best = timed(x, y, ref, gb, base, (*best[2][:5], extra), best, occupancy)
            print(" best:" + best[1], flush=True)


def timed(x, y, ref, gb, base, config, best, occupancy):
    c, tile, warps, stages, policy, extra = config
    try:
        plan, compiled, shared = make(x, y, c, tile, warps, stages, policy, extra)
        y.fill_(float("nan"))
        plan(x, y)
        torch.cuda.synchronize()
        err = (y.double() - ref).abs().max().item()
        ms = triton.testing.do_bench(lambda: plan(x, y), return_mode="median")
        occ = occupancy(compiled.function, shared, c)
    except Exception as e:  # noqa: BLE001 - a probe: report and go on
        print(f"  {config}: {type(e).__name__} {str(e)[:100]}")
        return best
    line = (
        f"  C={c:2d} tile={tile} w={warps} st={stages} pol={policy} ex={extra:5d} regs={compiled.n_regs} "
        f"smem={shared} occ={occ} {ms * 1e3:7.1f} us {gb / ms * 1e3 / 1e3:.2f} TB/s "
        f"/triton {ms / base['triton']:.3f} /cuda {ms / base['cuda']:.3f} err {err:.1e}"
    )
    print(line, flush=True)
    return (ms, line, config) if best is None or ms < best[0] else best


if __name__ == "__main__":
    main()
