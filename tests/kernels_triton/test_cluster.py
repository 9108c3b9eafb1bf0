"""The softmax forward and backward over thread-block clusters (kernels_triton.cluster) against
float64.

kernels_triton takes them on sm_90 for rows of 32768 to 262144 elements, both directions at any
row count.
The kernels themselves (launch.cluster_template, launched once) are tested at any size: whole chunks and a ragged
last one, both block widths (8192 and 16384 elements), rows off 16-byte boundaries (odd N: head,
body and tail), one row and many, strided rows, every dtype, and non-finite and huge values,
which must come out where torch puts them.
Outputs are filled with NaN before each launch, so an element no block writes fails. On a CPU the
kernels never run (the interpreter has no clusters), which the first test checks; they are
compiled for sm_90 there instead, which checks their inline PTX and the registers their blocks
are sized by.
"""

import importlib
import math

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from kernels_triton import cluster, launch
from labtools.ops import softmax_backward_ref, softmax_ref, tolerance

SM90 = torch.cuda.is_available() and torch.cuda.get_device_capability()[0] == 9
needs_sm90 = pytest.mark.skipif(
    not SM90, reason="needs an sm_90 GPU (thread-block clusters of up to 16 blocks)"
)
DTYPES = [torch.float32, torch.float16, torch.bfloat16]


def backward_poisoned(y: torch.Tensor, dy: torch.Tensor, dx: torch.Tensor | None = None) -> torch.Tensor:
    dx = torch.empty_like(y) if dx is None else dx
    dx.fill_(math.nan)
    launch.cluster_template("bwd", [y, dy, dx], *y.shape)(y, dy, dx)
    return dx


def forward_poisoned(x: torch.Tensor, y: torch.Tensor | None = None) -> torch.Tensor:
    """y = softmax(x) by the cluster kernel, y filled with NaN first."""
    y = torch.empty_like(x) if y is None else y
    y.fill_(math.nan)
    launch.cluster_template("fwd", [x, y], *x.shape)(x, y)
    return y


def inputs(m: int, n: int, dtype: torch.dtype, seed: int, pad: int = 0):
    """y = softmax of scaled normals and dy normals, as (m, n) views of (m, n + pad) buffers at
    column offset pad (pad > 0: row strides past N, and row starts off 16-byte boundaries)."""
    g = torch.Generator(device="cuda").manual_seed(seed)
    y = torch.empty((m, n + pad), dtype=dtype, device="cuda")[:, pad:]
    y.copy_(torch.softmax(torch.randn((m, n), generator=g, device="cuda") * 3, -1))
    dy = torch.randn((m, n + pad), generator=g, device="cuda").to(dtype)[:, pad:]
    return y, dy


def reference(y: torch.Tensor, dy: torch.Tensor) -> np.ndarray:
    return softmax_backward_ref(y.cpu().double().numpy(), dy.cpu().double().numpy())


def test_never_on_a_cpu():
    for direction in ("fwd", "bwd"):
        for n in (cluster.MIN_COLS, cluster.MAX_COLS):
            assert not cluster.applies(direction, 1024, n, torch.float32, torch.device("cpu"))


OFFLINE_CASES = {  # name: (direction, N, dtype), compiled as a launch on contiguous rows would
    "fwd 262144 bf16": ("fwd", 262144, "bfloat16"),
    "fwd 262144 fp16": ("fwd", 262144, "float16"),
    "fwd 200000 fp32": ("fwd", 200000, "float32"),
    "fwd 131072 bf16": ("fwd", 131072, "bfloat16"),
    "fwd 131072 fp32": ("fwd", 131072, "float32"),
    "bwd 131072 bf16": ("bwd", 131072, "bfloat16"),
    "bwd 262144 fp16": ("bwd", 262144, "float16"),
    "bwd 262144 fp32": ("bwd", 262144, "float32"),
    "fwd 50257 bf16, head and tail": ("fwd", 50257, "bfloat16"),
    "bwd 70001 fp32, head and tail": ("bwd", 70001, "float32"),
}


def test_the_kernels_compile_for_sm90_without_a_gpu_and_16_bit_chunks_stay_packed(without_interpreter):
    """Compiled for sm_90 by Triton's own ptxas (in a process without TRITON_INTERPRET): the
    inline PTX assembles, the chunks move 16 bytes a load and a store, and 16-bit chunks stay
    packed in registers, which the blocks are sized by (cluster._block): the 16-bit forward past
    131072 within its cap of 96 registers (4 warps, 128 elements a thread) with at most 32 bytes
    spilled (widened to fp32 first: 136-176 bytes), 8192-element blocks in at most 64 (widened:
    80-96), the 16-bit backward's in at most 128 (widened: 147-156). The fp32 forward holds its
    exponentials across the exchange (HOLD_EXPS): one MUFU.EX2 an element a thread, and a few for
    the merge. The 16-bit forward reduces its chunk once, (max, sum) pairs (cluster._partial): 3
    block barriers, where a max and then a sum take 5 or 6."""
    code = (
        "import json, torch\n"
        "from sass_tools import compile_cluster, memory_instructions, resources, sass\n"
        f"cases = {OFFLINE_CASES!r}\n"
        "found = {}\n"
        "for name, (direction, n, dtype) in cases.items():\n"
        "    compiled = compile_cluster(direction, n, getattr(torch, dtype))\n"
        "    text = sass(compiled)\n"
        "    found[name] = {**resources(compiled), **memory_instructions(text), 'ex2': text.count('MUFU.EX2'),\n"
        "                   'barriers': text.count('BAR.SYNC')}\n"
        "print(json.dumps(found))\n"
    )
    found = without_interpreter(code)
    assert found.keys() == OFFLINE_CASES.keys()
    for case, counts in found.items():
        assert counts.get("LDG.E.128", 0) > 0 and counts.get("STG.E.128", 0) > 0, (case, counts)
    for case in ("fwd 262144 bf16", "fwd 262144 fp16"):
        assert found[case]["registers"] <= 96 and found[case]["stack"] <= 32, (case, found[case])
    assert found["fwd 131072 bf16"]["registers"] <= 64, found["fwd 131072 bf16"]
    assert found["bwd 131072 bf16"]["registers"] <= 128, found["bwd 131072 bf16"]
    assert found["bwd 262144 fp32"]["registers"] <= 128 and found["bwd 262144 fp32"]["stack"] == 0
    for case in ("fwd 131072 fp32", "fwd 200000 fp32"):  # one an element a thread, and the merge's
        meta = cluster.kernel_for("fwd", OFFLINE_CASES[case][1], torch.float32)[1]
        assert 0 <= found[case]["ex2"] - meta["CHUNK"] // meta["THREADS"] <= 16, (case, found[case])
    for case, (direction, _, dtype) in OFFLINE_CASES.items():
        if direction == "fwd" and dtype != "float32":
            assert found[case]["barriers"] <= 3, (case, found[case])


FAMILY_CASES = {  # name: (op, direction, N, dtype)
    "cross_entropy 50257 fp32, head and tail": ("cross_entropy", "fwd", 50257, "float32"),
    "cross_entropy 256000 bf16": ("cross_entropy", "fwd", 256000, "bfloat16"),
    "log_softmax fwd 200000 fp32": ("log_softmax", "fwd", 200000, "float32"),
    "cross_entropy 140000 fp32": ("cross_entropy", "fwd", 140000, "float32"),
    "cross_entropy 151936 bf16": ("cross_entropy", "fwd", 151936, "bfloat16"),
    "cross_entropy 163839 fp32, head and tail": ("cross_entropy", "fwd", 163839, "float32"),
    "log_softmax fwd 262144 bf16": ("log_softmax", "fwd", 262144, "bfloat16"),
    "cross_entropy 200000 fp16": ("cross_entropy", "fwd", 200000, "float16"),
    "log_softmax fwd 50257 fp32, head and tail": ("log_softmax", "fwd", 50257, "float32"),
    "log_softmax bwd 70001 bf16, head and tail": ("log_softmax", "bwd", 70001, "bfloat16"),
    "log_softmax bwd 262144 fp32": ("log_softmax", "bwd", 262144, "float32"),
}


def test_the_family_kernels_hold_their_chunk_without_spilling(without_interpreter):
    """log_softmax's and cross-entropy's cluster kernels (their own epilogues; past 131072
    columns x, not its exponentials, is held across the exchange), compiled for sm_90: 16-byte
    vectors in and out, within 160 registers a thread, nothing spilled (the cross-entropy reads
    x[t] as one scalar load, no reduction over the chunk); past 131072 columns blocks share an
    SM's 64K registers, fp32 two and 16-bit three (one block an SM left the loads waiting on
    the exchange: the row's bytes moved at half the copy's rate)."""
    code = (
        "import json, torch\n"
        "from sass_tools import compile_cluster_op, memory_instructions, resources, sass\n"
        f"cases = {FAMILY_CASES!r}\n"
        "found = {name: {**resources(c), **memory_instructions(sass(c))} for name, c in\n"
        "         ((name, compile_cluster_op(op, d, n, getattr(torch, dt))) for name, (op, d, n, dt) in cases.items())}\n"
        "print(json.dumps(found))\n"
    )
    found = without_interpreter(code)
    assert found.keys() == FAMILY_CASES.keys()
    for case, counts in found.items():
        assert counts.get("LDG.E.128", 0) > 0 and counts.get("STG.E.128", 0) > 0, (case, counts)
        assert counts["registers"] <= 160 and counts["stack"] == 0, (case, counts)
    for case, (op, direction, n, dtype) in FAMILY_CASES.items():
        if n > 131072 and direction == "fwd":
            threads = cluster.kernel_for(direction, n, getattr(torch, dtype), 0, op)[1]["THREADS"]
            per_sm = 2 if dtype == "float32" else 3
            assert found[case]["registers"] * threads * per_sm <= 65536, (case, found[case], threads)


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
    for op in ("softmax", "log_softmax", "cross_entropy"):
        for direction in ("fwd", "bwd"):
            meta = cluster.kernel_for(direction, n, torch.float32, 0, op)[1]
            if op == "cross_entropy" and direction == "fwd" and n > 131072:
                continue  # two tiles: the test below
            assert (meta["CHUNK"], meta["C"]) == (chunk, c), (op, direction, meta)
            assert meta["SLOTS"] == 1 << (c - 1).bit_length()


@pytest.mark.parametrize(
    "n, tiles",
    [
        (131072, (8192, 0)),
        (131073, (8192, 1024)),
        (147456, (8192, 1024)),
        (151936, (8192, 2048)),
        (163840, (8192, 2048)),
        (163841, (16384, 0)),
        (196609, (16384, 0)),
        (262144, (16384, 0)),
    ],
)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_the_cross_entropy_forward_past_131072_takes_two_tiles_reaching_the_row(n, tiles, dtype):
    """From 131073 to 163840 columns a cross-entropy block covers 8192 columns and a second power-of-two
    tile, the narrowest (from a 16-byte pack a thread) whose 16 blocks reach the row's end, under a lower
    register cap; past that one tile of 16384. The row is masked exactly where the blocks' columns pass it."""
    meta = cluster.kernel_for("fwd", n, dtype, 0, "cross_entropy")[1]
    span = sum(tiles)
    assert (meta["CHUNK"], meta.get("CHUNK2", 0)) == tiles and meta["C"] == 16
    assert 16 * span >= n and meta["NEEDS_MASK"] == (n != 16 * span)
    if tiles[1] > 1024:  # the next narrower second tile would not reach the row's end
        assert 16 * (8192 + tiles[1] // 2) < n
    if tiles[1]:
        assert (
            cluster.kernel_for("fwd", n, dtype, 0, "cross_entropy")[3]
            == cluster.NARROW_XENT_CAP[dtype == torch.float32]
        )
    assert tiles[1] == 0 or tiles[1] % (meta["THREADS"] * 16 // dtype.itemsize) == 0


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


@pytest.mark.gpu
@needs_sm90
@given(
    m=st.sampled_from([1, 2, 3, 7, 64]),
    n=st.sampled_from([32768, 40000, 50257, 65536, 98304 + 5, 131072]),
    dtype=st.sampled_from(DTYPES),
    pad=st.sampled_from([0, 3, 8]),
    seed=st.integers(0, 2**31 - 1),
)
def test_matches_float64(m, n, dtype, pad, seed):
    y, dy = inputs(m, n, dtype, seed, pad)
    dx = backward_poisoned(y, dy, torch.empty((m, n + pad), dtype=dtype, device="cuda")[:, pad:])
    np.testing.assert_allclose(dx.cpu().double().numpy(), reference(y, dy), **tolerance(dtype))


@pytest.mark.gpu
@needs_sm90
def test_error_no_worse_than_torch_on_many_rows():
    """Error against float64 at most torch's own backward's on the same input (plus an ulp of
    the largest output: the order of summation differs), fp32, every chunk of a 16-block row."""
    y, dy = inputs(64, 131072, torch.float32, 11)
    expected = reference(y, dy)
    ours = backward_poisoned(y, dy).cpu().double().numpy()
    torch_dx = torch._softmax_backward_data(dy, y, -1, torch.float32).cpu().double().numpy()
    ulp = float(np.spacing(np.float32(np.abs(expected).max())))
    err, torch_err = np.abs(ours - expected).max(), np.abs(torch_dx - expected).max()
    assert err <= max(torch_err, 4 * ulp), (err, torch_err, ulp)


@pytest.mark.gpu
@needs_sm90
@pytest.mark.parametrize("n", [70000, 70001])  # 16-byte aligned rows; rows with a head and a tail
@pytest.mark.parametrize("dtype", DTYPES)
def test_non_finite_values_come_out_as_in_torch(dtype, n):
    """NaN or inf in dy (y, a softmax output, is finite) makes a row's dot product non-finite;
    every element of that row comes out as torch's backward has it."""
    y, dy = inputs(4, n, dtype, 3)
    dy[0, 123] = math.nan
    dy[1, n - 1] = math.inf  # with n = 70001: in the tail
    dy[2, 8191] = -math.inf
    dx = backward_poisoned(y, dy)
    expected = torch._softmax_backward_data(dy.float(), y.float(), -1, torch.float32)
    torch.testing.assert_close(dx.float(), expected, equal_nan=True, **tolerance(dtype))
    assert dx[3].isfinite().all()


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


@pytest.mark.gpu
@needs_sm90
@pytest.mark.parametrize("n", [131073, 200000, 262144])
@pytest.mark.parametrize("dtype", DTYPES)
def test_rows_past_131072_in_blocks_of_16384(dtype, n):
    """Rows of 131073 to 262144 columns, both directions: 16 blocks of 16384 elements with capped
    registers (the 16-bit forward over 4 warps, the fp32 backward over 16, the others over 8), the
    last blocks partly or wholly past the row's end; rows off 16-byte boundaries (131073) included."""
    warps = 4 if dtype != torch.float32 else 8
    block, c = cluster._block(n, "fwd", dtype)[:2], cluster.kernel_for("fwd", n, dtype)[1]["C"]
    assert (block, c) == ((16384, warps), 16)
    x = (torch.randn((3, n), device="cuda") * 4).to(dtype)
    x[0, 0], x[1, -1], x[2, ::9000] = 30, 30, 30
    np.testing.assert_allclose(
        forward_poisoned(x).cpu().double().numpy(), softmax_ref(x.cpu().double().numpy()), **tolerance(dtype)
    )
    y, dy = inputs(3, n, dtype, n)
    np.testing.assert_allclose(
        backward_poisoned(y, dy).cpu().double().numpy(), reference(y, dy), **tolerance(dtype)
    )


@pytest.mark.gpu
@needs_sm90
@given(
    m=st.sampled_from([1, 2, 3, 7, 16]),
    n=st.sampled_from([32768, 32776, 40000, 50257, 65536, 98304 + 5, 131072]),
    dtype=st.sampled_from(DTYPES),
    pad=st.sampled_from([0, 3, 8]),
    seed=st.integers(0, 2**31 - 1),
)
def test_forward_matches_float64(m, n, dtype, pad, seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    x = (torch.randn((m, n + pad), generator=g, device="cuda") * 4).to(dtype)[:, pad:]
    y = forward_poisoned(x, torch.empty((m, n + pad), dtype=dtype, device="cuda")[:, pad:])
    np.testing.assert_allclose(
        y.cpu().double().numpy(), softmax_ref(x.cpu().double().numpy()), **tolerance(dtype)
    )


@pytest.mark.gpu
@needs_sm90
# 16-byte aligned rows; rows with a head and a tail; past 131072 (16384-element blocks)
@pytest.mark.parametrize("n", [70000, 70001, 200001])
@pytest.mark.parametrize("dtype", DTYPES)
def test_forward_adversarial_rows_come_out_as_in_torch(dtype, n):
    """Rows whose maximum is first, last or repeated, huge finite magnitudes (up to the dtype's
    largest), a chunk of all -inf, and rows of -inf, +inf or NaN: torch's results, NaN included."""
    big = torch.finfo(dtype).max
    x = torch.randn((10, n), device="cuda").to(dtype)
    x[0, 0] = 30
    x[1, -1] = 30
    x[2, 100:110] = 30
    x[3, :] = big * 0.9
    x[3, 1] = big
    x[4, 5] = -big
    x[4, 60000] = big
    x[5, 8192:16384] = -math.inf
    x[6, :] = -math.inf
    x[7, 123] = math.inf
    x[8, n - 1] = math.nan  # with n = 70001: in the tail, which its block holds beside no other element
    x[9, :] = 0  # every element equal
    y = forward_poisoned(x)
    expected = torch.softmax(x.double(), -1)
    torch.testing.assert_close(y.double(), expected, equal_nan=True, **tolerance(dtype))
    assert y[6].isnan().all() and y[7].isnan().all() and y[8].isnan().all()


@pytest.mark.gpu
@needs_sm90
def test_forward_error_no_worse_than_torch():
    """fp32, against float64: at most torch's own error on the same input plus an ulp of the
    largest output (the order of summation differs, and ex2.approx is not torch's expf), over
    every chunk of a 16-block row, the maximum first, last or repeated. (At most the larger of
    the two alone is too tight: another order of summation exceeds torch's error on a few
    inputs by a fraction of an ulp, with every form of the kernel.)"""
    x = torch.randn((8, 131072), device="cuda") * 5
    x[0, 0], x[1, -1], x[2, ::4096] = 40, 40, 40
    expected = softmax_ref(x.cpu().double().numpy())
    ours = forward_poisoned(x).cpu().double().numpy()
    theirs = torch.softmax(x, -1).cpu().double().numpy()
    ulp = float(np.spacing(np.float32(np.abs(expected).max())))
    err, torch_err = np.abs(ours - expected).max(), np.abs(theirs - expected).max()
    assert err <= torch_err + ulp, (err, torch_err, ulp)


@pytest.mark.gpu
@needs_sm90
@pytest.mark.parametrize("dtype", DTYPES)
def test_forward_rows_off_16_byte_boundaries(dtype):
    """Rows of odd length start at every offset from a 16-byte boundary: the kernel splits them
    into head, aligned body and tail (cluster.packs) where x and y rows share their offsets,
    and reads them an element at a time where they do not (y with another row stride)."""
    m, n = 24, 50257
    assert cluster.applies("fwd", m, n, dtype, torch.device("cuda"))
    x = (torch.randn((m, n), device="cuda") * 4).to(dtype)
    x[3, 0], x[5, n - 1] = 30, 30  # the maximum in a head, and in a tail
    expected = softmax_ref(x.cpu().double().numpy())
    assert cluster.packs([x, torch.empty_like(x)]) == 16 // x.element_size()
    np.testing.assert_allclose(forward_poisoned(x).cpu().double().numpy(), expected, **tolerance(dtype))
    y = torch.empty((m, n + 5), dtype=dtype, device="cuda")[:, :n]
    assert cluster.packs([x, y]) == 0
    np.testing.assert_allclose(forward_poisoned(x, y).cpu().double().numpy(), expected, **tolerance(dtype))


@pytest.mark.gpu
@needs_sm90
@pytest.mark.parametrize("n", [16385, 20001, 50257, 70001, 131073])
@pytest.mark.parametrize("dtype", DTYPES)
def test_odd_rows_in_head_body_and_tail_match_float64(dtype, n):
    """Both directions on rows split into head, body and tail (VEC > 0), 9 rows: every head
    length a pack allows; the maximum in a head, and in a tail. (16-bit rows from 16385 columns
    run the cluster; fp32 ones below MIN_COLS the tiles.)"""
    x = (torch.randn((9, n), device="cuda") * 4).to(dtype)
    x[3, 0], x[5, n - 1] = 30, 30
    assert cluster.packs([x, x]) == 16 // x.element_size()
    np.testing.assert_allclose(
        forward_poisoned(x).cpu().double().numpy(), softmax_ref(x.cpu().double().numpy()), **tolerance(dtype)
    )
    y, dy = inputs(9, n, dtype, n)
    assert cluster.packs([y, dy, y]) == 16 // x.element_size()
    np.testing.assert_allclose(
        backward_poisoned(y, dy).cpu().double().numpy(), reference(y, dy), **tolerance(dtype)
    )
