"""Which kernel and launch plan each softmax variant takes on a GPU, and that every route gives
labtools' float64 reference's answers: v3's rows of up to 8 16-byte packs a thread and its launches
of few fp32 rows, every v4 cluster size, the cluster or the online kernel by the alignment of x's
and out's rows, extremes in the head and tail of a cluster's row, and chunks held in registers or
in shared memory.

Outputs are poisoned (NaN) before each launch, by `arrays.poison_outputs()` or a NaN-filled `out=`,
so an element no kernel wrote fails the comparison. The results over drawn inputs and calling
contexts are in test_cuda_softmax.py. Run: scripts/test-in-place tests/kernels_cuda -m gpu
"""

from __future__ import annotations

import math

import kernels_cuda
import pytest
import torch
from cuda_softmax_helpers import TORCH_DTYPES, _assert_softmax, _make_input, _randn
from hypothesis import given, note
from hypothesis import strategies as st
from kernels_cuda import arrays
from kernels_cuda import softmax_variants as variants

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("n", [16392, 20000, 24576, 32768, 40008, 65536])
@pytest.mark.parametrize("dtype", sorted(TORCH_DTYPES))
def test_v3_holds_rows_up_to_8_packs_a_thread_with_16_byte_packs(n, dtype):
    vec = variants.full_vec(dtype)
    if n > variants.fused_capacity(vec):  # 32768 fp32, 65536 16-bit elements
        with pytest.raises(ValueError, match="v3 holds rows of at most"):
            kernels_cuda.softmax(_randn((2, n), dtype, 1.0), variant="v3")
        return
    x = _randn((5, n), dtype, 3.0)
    with arrays.poison_outputs():
        y = kernels_cuda.softmax(x, variant="v3")
    _assert_softmax(y, x, -1, dtype)
    with pytest.raises(ValueError, match="v3 holds rows of at most 16384"):
        kernels_cuda.softmax(_make_input("offset", 2, n, dtype, 1.0)[0], variant="v3")


@pytest.mark.parametrize(
    "m,n", [(4096, 600), (4093, 600), (8192, 1000), (4096, 1024), (2048, 2048), (3000, 1500)]
)
def test_v3_launches_of_few_fp32_rows_match_the_float64_reference(m, n):
    """fp32 launches of few rows (AutoConfig.few_rows_per_sm): no more threads a row than the
    ladder's, up to 8 packs each, in 128-thread blocks, the packs inside every row unchecked
    (FULL), padding in the last pack of a thread (600, 1000, 1500), a last block with rows past
    M (4093); rows with their extremes first, last, repeated, masked and non-finite."""
    device = variants.device_for(0)
    launch = variants.plan("auto", m, n, "float32", 4, device, batch_invariant=False)
    ladder = variants.plan(
        "auto", m, n, "float32", 4, device, variants.AutoConfig(few_rows_per_sm=0), None, False
    )
    # no more threads a row than the ladder (as many where the card's picks already give the
    # ladder the fewest, as on an H200)
    assert dict(launch.spec.constants)["TPR"] <= dict(ladder.spec.constants)["TPR"]
    x = _randn((m, n), "float32", 4.0)
    x[0, 0] = 80.0
    x[1, -1] = 80.0
    x[2, ::97] = 80.0
    x[3, : n // 2] = -math.inf
    x[4] = -math.inf  # NaN, as torch
    x[5, n // 3] = math.inf  # NaN row
    x[6, -2] = math.nan  # NaN row
    x[7] = x[7] / x[7].abs().max() * torch.finfo(torch.float32).max
    x[8, 1:] = -math.inf
    with arrays.poison_outputs():
        y = kernels_cuda.softmax(x, batch_invariant=False)
    ref = torch.softmax(x.double(), dim=-1)
    assert torch.equal(torch.isnan(y), torch.isnan(ref))
    finite = [r for r in range(m) if r not in (4, 5, 6)]
    _assert_softmax(y[finite], x[finite], -1, "float32")
    assert y[8, 0].item() == 1.0


# Every cluster size, through auto's chunk rule (rows from 128 KB in 16 KB chunks, shorter ones
# up to 64 KB): fp32 C = 2 (32 and 48 KB chunks), 8, 16 (16 KB, and 64 KB: none reaches 16 KB);
# bf16 C = 8 and 16; a ragged last chunk (40008 over 2 blocks of 20008); 16 blocks of ~96 KB of
# bf16 (past 16 KB: the largest cluster). 4-block clusters, which auto's rule no longer builds,
# with 64 KB chunks for rows from 128 KB too (`long_chunk`).
@pytest.mark.parametrize(
    "dtype,n,cluster,long_chunk",
    [
        ("float32", 16384, 2, None),
        ("float32", 24576, 2, None),
        ("float32", 32768, 8, None),
        ("float32", 65536, 16, None),
        ("float32", 262144, 16, None),
        ("bfloat16", 65536, 8, None),
        ("bfloat16", 262144, 16, None),
        ("float16", 40008, 2, None),
        ("bfloat16", 3 * 2**18 + 8, 16, None),
        ("float32", 65536, 4, 64 * 1024),
        ("bfloat16", 131072, 4, 64 * 1024),
    ],
)
def test_v4_runs_every_cluster_size(dtype, n, cluster, long_chunk):
    x = _randn((3, n), dtype, 4.0)
    vec = variants.pack_width(dtype, n, (x.data_ptr(), 0), (n, n))
    try:
        if long_chunk:
            variants.set_auto_config(long_row_chunk_bytes=long_chunk)
        assert variants.plan("v4", 3, n, dtype, vec, variants.device_for(0)).spec.cluster == cluster
        with arrays.poison_outputs():
            y = kernels_cuda.softmax(x, variant="v4")
    finally:
        variants.set_auto_config(long_row_chunk_bytes=variants.AutoConfig.long_row_chunk_bytes)
    _assert_softmax(y, x, -1, dtype)


def _kernel_for(
    x: torch.Tensor, variant: str, out: torch.Tensor | None = None, invariant: bool = True
) -> str:
    """The kernel softmax(x, variant=variant, out=out, batch_invariant=invariant) launches, from
    the layouts alone."""
    dtype = str(x.dtype).removeprefix("torch.")
    prepared = variants.prepare(
        tuple(x.shape),
        x.stride(),
        dtype,
        -1,
        variant,
        variants.device_for(0),
        x_address=x.data_ptr() % 16,
        out_strides=None if out is None else out.stride(),
        out_address=0 if out is None else out.data_ptr() % 16,
        batch_invariant=invariant,
    )
    return prepared.launch.spec.kernel


# Rows that are not whole 16-byte packs: odd lengths (a 50257-token vocabulary), rows a few
# elements past a cluster boundary, rows shorter than the head, and few rows (fewer blocks than SMs).
@pytest.mark.parametrize("m,n", [(64, 50257), (3, 40001), (1, 100_003), (5, 16385), (2, 65537), (4, 7)])
@pytest.mark.parametrize("dtype", sorted(TORCH_DTYPES))
def test_v4_rows_that_are_not_whole_16_byte_packs_take_the_cluster_kernel(m, n, dtype):
    x = _randn((m, n), dtype, 4.0)
    # x and the fresh y share each row's offset: the cluster kernel, batch-invariant or not (its
    # split of a row follows the row's own address, not M)
    for invariant in (True, False):
        assert _kernel_for(x, "v4", None, invariant) == "softmax_cluster"
        with arrays.poison_outputs():
            y = kernels_cuda.softmax(x, variant="v4", batch_invariant=invariant)
        _assert_softmax(y, x, -1, dtype)


@pytest.mark.parametrize("dtype", sorted(TORCH_DTYPES))
def test_v4_rows_whose_x_and_y_offsets_differ_take_the_online_kernel(dtype):
    x = _make_input("offset", 3, 40001, dtype, 4.0)[0]  # one element past a 16-byte boundary
    assert _kernel_for(x, "v4") == "softmax_online"  # the fresh y starts on one
    with arrays.poison_outputs():
        y = kernels_cuda.softmax(x, variant="v4")
    _assert_softmax(y, x, -1, dtype)


@given(
    m=st.integers(1, 40),
    n=st.one_of(st.integers(1, 64), st.integers(16_000, 70_000)),
    offset=st.integers(0, 7),
    pad=st.integers(0, 9),
    dtype=st.sampled_from(sorted(TORCH_DTYPES)),
    variant=st.sampled_from(["v4", "auto"]),
)
def test_v4_rows_at_any_offset_when_out_shares_it(m, n, offset, pad, dtype, variant):
    """x and out are both `offset` elements into rows of n + offset + pad: every row starts at its
    own distance from a 16-byte boundary (head and tail lengths vary row by row), the same for both."""
    width = n + offset + pad
    x = _randn((m, width), dtype, 4.0)[:, offset : offset + n]
    out = torch.full((m, width), math.nan, dtype=x.dtype, device="cuda")[:, offset : offset + n]
    note(f"{variant} x{tuple(x.shape)} stride {x.stride()} offset {offset} {dtype}")
    if variant == "v4":  # x and out share each row's offset: the cluster kernel, whatever M
        assert _kernel_for(x, variant, out) == "softmax_cluster"
    assert kernels_cuda.softmax(x, variant=variant, out=out) is out
    _assert_softmax(out, x, -1, dtype)


@pytest.mark.parametrize("n", [50257, 40001, 100_003])
@pytest.mark.parametrize("dtype", sorted(TORCH_DTYPES))
def test_cluster_rows_with_odd_lengths_keep_extremes_at_their_edges(n, dtype):
    """The first and last elements of a row of odd length fall in its head or tail (element-wide,
    on the cluster's last block) for most rows: the max, -inf, +inf and NaN there must count."""
    x = _randn((10, n), dtype, 2.0)
    x[0, 0] = 40.0  # the max first
    x[1, -1] = 40.0  # the max last
    x[2, :3] = -math.inf  # masked edges
    x[2, -3:] = -math.inf
    x[3, -1] = math.inf  # +inf: NaN row
    x[4, 0] = math.nan  # NaN: NaN row
    x[5] = -math.inf  # fully masked: NaN, as torch
    x[6, 1:] = -math.inf  # only the first element left: 1 there
    x[7, :-1] = -math.inf  # only the last element left
    x[8, : n // 2] = -math.inf  # whole blocks of the cluster masked
    assert _kernel_for(x, "auto") == "softmax_cluster"  # batch-invariant too: the row's own split
    with arrays.poison_outputs():
        y = kernels_cuda.softmax(x)
    ref = torch.softmax(x.double(), dim=-1)
    assert torch.equal(torch.isnan(y), torch.isnan(ref))
    finite = [0, 1, 2, 6, 7, 8, 9]
    _assert_softmax(y[finite], x[finite], -1, dtype)
    assert y[6, 0].item() == 1.0 and y[7, -1].item() == 1.0


HELD_KNOB = {
    "float32": "cluster_held_packs_f32",
    "bfloat16": "cluster_held_packs_16bit",
    "float16": "cluster_held_packs_16bit",
}


@pytest.mark.parametrize(
    "dtype,n",
    [
        ("float32", 131072),
        ("float32", 50257),  # a head and a tail on the last block
        ("float32", 65536 + 4),
        ("bfloat16", 131072),
        ("bfloat16", 131072 - 5),  # a head and a tail; 4 packs a thread
        ("float16", 65536 + 4),
    ],
)
@pytest.mark.parametrize("held", [True, False])
def test_v4_chunks_held_in_registers_or_in_shared_memory(dtype, n, held):
    """Both homes of a chunk (registers: AutoConfig.cluster_held_packs_f32 / _16bit, fp32
    exponentials; shared memory) give torch's answers on rows with their extremes first, last,
    repeated, masked and non-finite, including rows that are not whole 16-byte packs (head and
    tail on the last block)."""
    x = _randn((12, n), dtype, 4.0)
    top = torch.finfo(x.dtype).max
    x[0, 0] = 80.0  # the max first
    x[1, -1] = 80.0  # the max last
    x[2, ::4097] = 80.0  # the max repeated, in every block's chunk
    x[3, : n // 2] = -math.inf  # whole blocks masked
    x[4] = -math.inf  # fully masked: NaN, as torch
    x[5, n // 3] = math.inf  # +inf: NaN row
    x[6, -2] = math.nan  # NaN: NaN row
    # magnitudes up to the dtype's max: x - max overflows to -inf, whose exp is the 0 it should be
    x[7] = (x[7].double() / x[7].double().abs().max() * top).to(x.dtype)
    x[8, 1:] = -math.inf  # only the first element left
    knob = HELD_KNOB[dtype]
    try:
        variants.set_auto_config(**{knob: 8 if held else 0})
        # batch_invariant=False: 16-bit chunks are held in launches of one wave only
        launch = variants.plan(
            "v4", 12, n, dtype, variants.full_vec(dtype), variants.device_for(0), None, True, False
        )
        assert (dict(launch.spec.constants)["ITEMS"] > 0) == held
        with arrays.poison_outputs():
            y = kernels_cuda.softmax(x, variant="v4", batch_invariant=False)
    finally:
        variants.set_auto_config(**{knob: getattr(variants.AutoConfig, knob)})
    ref = torch.softmax(x.double(), dim=-1)
    assert torch.equal(torch.isnan(y), torch.isnan(ref))
    finite = [0, 1, 2, 3, 7, 8, 9, 10, 11]
    _assert_softmax(y[finite], x[finite], -1, dtype)
    assert y[8, 0].item() == 1.0
