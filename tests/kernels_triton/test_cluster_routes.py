"""Which rows take the thread-block cluster kernels (kernels_triton.cluster) and how they are
launched: the chunk and block count a row takes, the cross-entropy's two tiles, the 16-byte packs,
the route on sm_90 (faked without a GPU), the launch metadata, and on an sm_90 GPU the forward and
backward taking the cluster at any row count.
"""

import importlib
import math

import numpy as np
import pytest
import torch
from cluster_helpers import DTYPES, inputs, needs_sm90, reference
from kernels_triton import cluster, launch, xent_cluster
from labtools.ops import softmax_ref, tolerance


@pytest.mark.parametrize("direction", ["fwd", "bwd"])
@pytest.mark.parametrize("n", [65536, 200000])
def test_the_launch_metadata_asks_for_c_blocks_and_the_exchange(monkeypatch, direction, n):
    """A cluster launch's metadata: its warps, C blocks a cluster, and the shared memory of
    Triton's reductions (rounded up to 16 bytes) plus the mbarrier and C pairs. (No GPU: the
    compile is intercepted.)"""

    class Compiled:
        metadata = type("Metadata", (), {"shared": 40})

        def _init_handles(self):
            pass

    kernel, constexprs, warps, _ = cluster.kernel_for(direction, n, torch.bfloat16)
    monkeypatch.setattr(kernel, "warmup", lambda *args, **kwargs: Compiled())
    tensors = [torch.zeros((2, n), dtype=torch.bfloat16) for _ in range(2 if direction == "fwd" else 3)]
    _, packed, rest = cluster.compiled_launch(direction, tensors)
    c, slots = constexprs["C"], constexprs["SLOTS"]
    assert slots >= c and slots & (slots - 1) == 0  # tl.arange(0, SLOTS)
    assert packed == (warps, c, 48 + 8 + 8 * slots) and rest[-len(constexprs) :] == tuple(constexprs.values())
    assert warps == (8 if direction == "bwd" and n > 131072 else 4)  # bf16 (fp32 backward: 16)


@pytest.mark.parametrize(
    "n, chunk, c",
    [
        (8193, 4096, 3),
        (32000, 8192, 4),
        (32768, 8192, 4),
        (32776, 8192, 5),
        (40000, 8192, 5),
        (50257, 8192, 7),
        (65537, 8192, 16),
        (98309, 8192, 16),
        (131072, 8192, 16),
        (131073, 16384, 16),
        (262144, 16384, 16),
    ],
)
def test_a_row_takes_the_chunks_with_the_fewest_lanes_past_its_end(n, chunk, c):
    """C = ceil(N / chunk) blocks up to 8 (not rounded up to a power of two: a block past the
    row's end computes as much as any), else 16 (the H200 launches no cluster of 9 to 15), and
    of the chunks of 8192 and 4096 the one that leaves fewer lanes past the row; the exchange
    reads SLOTS, C rounded up to a power of two."""
    metas = [cluster.kernel_for("bwd", n, torch.bfloat16, 0, op)[1] for op in ("softmax", "log_softmax")]
    for d, op in (("fwd", "softmax"), ("fwd", "log_softmax"), ("bwd", "softmax"), ("bwd", "log_softmax")):
        if (
            cluster.tiles(n, torch.float32, d == "bwd" and op == "softmax") is None
        ):  # else fp32's two tiles below
            metas.append(cluster.kernel_for(d, n, torch.float32, 0, op)[1])
    if cluster.tiles(n, torch.float32) is None:
        metas.append(xent_cluster.kernel_for(n, torch.float32)[1])
    for meta in metas:
        assert (meta["CHUNK"], meta["C"]) == (chunk, c), meta
        assert meta["SLOTS"] == 1 << (c - 1).bit_length()


@pytest.mark.parametrize("n", [8193, 16385, 32000, 50257, 65536, 131072, 131073])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_the_fp32_cross_entropy_forward_runs_blocks_of_8192_in_8_capped_warps(n, dtype):
    """Up to 131072 columns the fp32 cross-entropy forward's blocks of 8192 run 8 warps under
    xent_cluster.FP32_8192's register cap; blocks of 4096, 16-bit blocks and the softmax keep 4 uncapped
    warps; past 131072 the two tiles take their own (the test below)."""
    _, meta, warps, cap = xent_cluster.kernel_for(n, dtype)
    if n > 131072:
        assert (warps, cap) == cluster.tiles(n, dtype)[3:]
    elif dtype == torch.float32 and meta["CHUNK"] == 8192:
        assert (warps, cap) == xent_cluster.FP32_8192 == (8, 64)
    else:
        assert (warps, cap) == (4, None), meta
    assert meta["THREADS"] == 32 * warps
    if n <= 131072:
        assert cluster.kernel_for("fwd", n, dtype, 0, "softmax")[3] is None


# (C, first tile, second tile) of the forwards by N, fp32 and 16-bit
TWO_TILE_BLOCKS = {
    131072: ((16, 8192, 0), (16, 8192, 0)),
    131073: ((16, 8192, 1024), (8, 16384, 2048)),
    147456: ((16, 8192, 1024), (8, 16384, 2048)),
    147457: ((16, 8192, 2048), (8, 16384, 4096)),
    151936: ((16, 8192, 2048), (8, 16384, 4096)),
    163840: ((16, 8192, 2048), (8, 16384, 4096)),
    163841: ((16, 16384, 0), (16, 16384, 0)),
    196609: ((16, 16384, 0), (16, 16384, 0)),
    262144: ((16, 16384, 0), (16, 16384, 0)),
}


@pytest.mark.parametrize("n", list(TWO_TILE_BLOCKS))
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("op", ["softmax", "log_softmax", "cross_entropy"])
def test_the_forward_past_131072_takes_two_tiles_reaching_the_row(n, dtype, op):
    """From 131073 to 163840 columns a forward block (softmax, log_softmax, cross-entropy) covers a first
    tile (fp32: 16 blocks of 8192; 16-bit: 8 blocks of 16384) and a second power-of-two tile, the narrowest
    (from a 16-byte pack a thread) whose blocks reach the row's end, under a lower register cap; past that
    one tile of 16384 over 16 blocks. The row is masked exactly where the blocks' columns pass it."""
    if op == "cross_entropy":
        _, meta, warps, cap = xent_cluster.kernel_for(n, dtype)
    else:
        _, meta, warps, cap = cluster.kernel_for("fwd", n, dtype, 0, op)
    c, first, second = TWO_TILE_BLOCKS[n][dtype != torch.float32]
    assert (meta["C"], meta["CHUNK"], meta.get("CHUNK2", 0)) == (c, first, second)
    assert meta["SLOTS"] >= c and meta["THREADS"] == 32 * warps
    span = first + second
    log_16bit = op == "log_softmax" and second and dtype != torch.float32  # masked even where exact
    assert c * span >= n and meta["NEEDS_MASK"] == (n != c * span or log_16bit)
    pack_a_thread = meta["THREADS"] * 16 // dtype.itemsize
    if second > pack_a_thread:  # the next narrower second tile would not reach the row's end
        assert c * (first + second // 2) < n
    if second:
        assert second % pack_a_thread == 0
        assert (c, first, second, warps, cap) == cluster.tiles(n, dtype)


# (C, first tile, second tile) of the fp32 backward of whole packs past TWO_TILE_BLOCKS' second tiles
BACKWARD_PAST_THE_FORWARDS = {163841: (16, 8192, 4096), 196609: (16, 8192, 8192), 262144: (16, 8192, 8192)}


@pytest.mark.parametrize("n", list(TWO_TILE_BLOCKS))
@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
def test_the_fp32_backward_of_whole_packs_takes_two_tiles(n, op):
    """The fp32 backward of rows of whole 16-byte packs takes the forward's blocks (TWO_TILE_BLOCKS) up to
    163840 columns, and the softmax's past them a second tile of up to 8192 with dy read again after the
    exchange (RELOAD: y and dy of both tiles would not fit two blocks an SM; log_softmax's keeps one tile,
    loading y during the exchange); two tiles in the forward's warps (its second tile is sized for them)
    under the backward's cap (cluster.block); rows off 16-byte boundaries and 16-bit rows keep one tile."""
    past = n in BACKWARD_PAST_THE_FORWARDS
    c, first, second = BACKWARD_PAST_THE_FORWARDS[n] if past and op == "softmax" else TWO_TILE_BLOCKS[n][0]
    _, meta, warps, cap = cluster.kernel_for("bwd", n, torch.float32, 0, op)
    assert (meta["C"], meta["CHUNK"], meta["CHUNK2"]) == (c, first, second)
    assert meta["RELOAD"] == (past and op == "softmax")
    assert c * (first + second) >= n
    if second:
        tiles = cluster.tiles(n, torch.float32, op == "softmax")
        assert (warps, cap) == (tiles[3], cluster.block(n, "bwd", torch.float32)[2])
        assert meta["THREADS"] == 32 * warps
    for dtype, vec in ((torch.float32, 4), (torch.bfloat16, 0), (torch.float16, 8)):
        assert cluster.kernel_for("bwd", n, dtype, vec, op)[1]["CHUNK2"] == 0


def test_packs_splits_odd_rows_where_every_tensor_sits_at_the_same_offset():
    """VEC (cluster.packs): rows not whole 16-byte packs on aligned bases with equal strides;
    0 where Triton sees whole packs itself (N and stride multiples of 16) or the tensors' rows sit
    at different offsets (another stride, a base off 16 bytes), which the kernels read an element
    at a time."""
    for dtype in (torch.float32, torch.bfloat16):
        vec = 16 // dtype.itemsize
        x = torch.empty((4, 50257), dtype=dtype)
        assert cluster.packs([x, torch.empty_like(x)]) == vec
        assert cluster.packs([x, torch.empty((4, 50264), dtype=dtype)[:, :50257]]) == 0
        off_16 = torch.empty(4 * 50257 + 1, dtype=dtype)[1:].view(4, 50257)  # a base 2 or 4 bytes past
        assert cluster.packs([x, off_16]) == 0 and cluster.packs([off_16, x]) == 0
        assert cluster.packs([torch.empty((4, 50264), dtype=dtype)] * 2) == vec  # whole packs, N % 16 != 0
        assert cluster.packs([torch.empty((4, 65536), dtype=dtype)] * 2) == 0


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_odd_rows_route_to_the_cluster_on_sm90(monkeypatch, dtype):
    """launch.route on an sm_90 device (faked: no GPU here) gives rows that are not whole 16-byte
    packs to the cluster, both directions at any row count: from MIN_COLS, and 16-bit ones from
    MIN_ODD_16BIT_COLS (which the tiles would move two bytes an access); whole packs below
    MIN_COLS, and shorter odd rows, stay on the tiles."""
    monkeypatch.setattr(cluster, "INTERPRET", False)
    monkeypatch.setattr(cluster, "_capable", lambda index: True)
    cuda = torch.device("cuda", 0)
    odd_16bit = (cluster.MIN_ODD_16BIT_COLS, 32001) if dtype.itemsize == 2 else ()
    for n in (50257, 70001, 131073, *odd_16bit):
        for m in (1, 64, 4096):
            assert launch.route("softmax_fwd", m, n, dtype, cuda) == "cluster", (m, n)
            assert launch.route("softmax_bwd", m, n, dtype, cuda) == "cluster", (m, n)
    odd_short = 32001 if dtype.itemsize == 4 else cluster.MIN_ODD_16BIT_COLS - 2
    for n in (cluster.MIN_COLS - 8, odd_short):
        assert launch.route("softmax_fwd", 64, n, dtype, cuda) == "tiles", n
        assert launch.route("softmax_bwd", 64, n, dtype, cuda) == "tiles", n
    monkeypatch.setattr(cluster, "_capable", lambda index: False)
    assert launch.route("softmax_fwd", 64, 50257, dtype, cuda) == "tiles"


@pytest.mark.gpu
@needs_sm90
def test_the_backward_takes_the_cluster_kernel_from_32768_to_262144_columns_at_any_row_count(monkeypatch):
    cuda = torch.device("cuda")
    for n, taken, taken_16bit in (
        (16384, False, False),
        (16385, False, True),  # 16-bit rows not whole 16-byte packs: from MIN_ODD_16BIT_COLS
        (32767, False, True),
        (32768, True, True),
        (50257, True, True),  # not whole 16-byte packs: head, body and tail
        (50264, True, True),
        (131072, True, True),
        (131073, True, True),
        (262144, True, True),
        (262145, False, False),
    ):
        for rows in (1, 3, 1024):
            assert cluster.applies("bwd", rows, n, torch.bfloat16, cuda) == taken_16bit, (rows, n)
            assert cluster.applies("bwd", rows, n, torch.float32, cuda) == taken, (rows, n)
    rows = 3
    planned = []
    compiled_launch = cluster.compiled_launch
    monkeypatch.setattr(
        cluster, "compiled_launch", lambda d, ts, **kw: planned.append(d) or compiled_launch(d, ts, **kw)
    )
    y, dy = inputs(rows, 40000, torch.float32, 0)
    dx = torch.full_like(y, math.nan)
    launch.launch("softmax_bwd", [y, dy, dx], *y.shape)
    assert planned == ["bwd"]
    np.testing.assert_allclose(dx.cpu().double().numpy(), reference(y, dy), **tolerance(torch.float32))


def dispatched_forward(monkeypatch, x: torch.Tensor) -> tuple[torch.Tensor, list[bool]]:
    """kernels_triton's forward of x through a fresh plan, and what cluster.applies() answered."""
    answers = []
    applies = cluster.applies
    monkeypatch.setattr(cluster, "applies", lambda *args: answers.append(applies(*args)) or answers[-1])
    launch.forget_plans()
    y = torch.full_like(x, math.nan)
    launch.launch("softmax_fwd", [x, y], *x.shape)
    monkeypatch.undo()
    return y, answers


@pytest.mark.gpu
@needs_sm90
@pytest.mark.parametrize("dtype", DTYPES)
def test_the_forward_takes_the_cluster_kernel_at_any_row_count(monkeypatch, dtype):
    """From 32768 to 262144 columns, one row or many waves of clusters: 1100 rows of 50257 (head,
    body and tail) are more 8-block clusters than an H100 holds at once."""
    cuda = torch.device("cuda")
    for m, n, taken in (
        (1, 32760, False),  # whole 16-byte packs in every dtype
        (1, 32767, dtype.itemsize == 2),  # 16-bit rows not whole packs: from MIN_ODD_16BIT_COLS
        (1, 32768, True),
        (4096, 32768, True),
        (64, 131072, True),
        (64, 262144, True),
        (1, 262145, False),
    ):
        assert cluster.applies("fwd", m, n, dtype, cuda) == taken, (m, n)
    x = (torch.randn((1100, 50257), device="cuda") * 3).to(dtype)
    y, answers = dispatched_forward(monkeypatch, x)
    assert answers == [True]
    np.testing.assert_allclose(
        y.cpu().double().numpy(), softmax_ref(x.cpu().double().numpy()), **tolerance(dtype)
    )


@pytest.mark.parametrize("direction", ["fwd", "bwd"])
def test_log_softmax_passes_each_cluster_kernel_its_parameters(monkeypatch, direction):
    """log_softmax's cluster launches (the clusters' inline PTX needs sm_90: the launch is caught)
    hand each kernel every parameter once."""
    L = importlib.import_module("kernels_triton.log_softmax")  # the package's log_softmax is the function
    seen = []
    monkeypatch.setattr(L.cluster, "applies", lambda *a, **k: True)
    monkeypatch.setattr(L, "launch", lambda fn, grid, args, warps, **kw: seen.append((fn, args, kw)))
    x = torch.zeros((3, 200000))
    L._forward(x, -1) if direction == "fwd" else L._backward(x, x, -1)
    fn, args, kw = seen[0]
    constexprs = {k: v for k, v in kw.items() if k not in ("cluster", "maxnreg")}
    assert len(args) + 1 + len(constexprs) == len(fn.arg_names)  # + slot_base, which launch appends
