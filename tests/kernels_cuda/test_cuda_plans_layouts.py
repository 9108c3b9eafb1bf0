"""Launch planning without a GPU: how one input layout (shape, dim, strides, the addresses of x
and out) becomes what its launch needs: M and N, row strides, the pack width its alignment
allows, whether out is written in place, and what it refuses."""

from __future__ import annotations

import dataclasses

import pytest
from kernels_cuda import arrays
from kernels_cuda import softmax_variants as variants


def test_offsets_match_when_x_and_y_rows_start_alike_row_for_row():
    assert variants.offsets_match("bfloat16", (0, 512), (50257, 50257))  # odd rows, both fresh
    assert variants.offsets_match("bfloat16", (2, 514), (50258, 50258))  # offset views alike
    assert not variants.offsets_match("bfloat16", (2, 0), (50258, 50257))  # an offset x, a fresh y
    assert not variants.offsets_match("float32", (0, 0), (601, 600))  # rows drift apart
    assert variants.offsets_match("float32", (4, 4), (604, 600))  # 16 bytes apart a row: still alike


def test_pack_width_uses_16_bytes_only_when_every_row_start_is_16_byte_aligned():
    assert variants.pack_width("float32", 600, (256, 512), (600, 600)) == 4  # 2400 B rows
    assert variants.pack_width("bfloat16", 600, (256, 512), (600, 600)) == 8  # 1200 B rows
    assert variants.pack_width("float32", 602, (256, 512), (602, 602)) == 1  # N not a multiple of 4
    assert variants.pack_width("float16", 600, (256 + 2, 512), (600, 600)) == 1  # an offset view
    assert variants.pack_width("float32", 600, (256, 512), (602, 600)) == 1  # a 2408 B row stride
    assert variants.pack_width("float32", 600, (256, 512), (0, 600)) == 4  # a broadcast row (stride 0)


@pytest.mark.parametrize(
    "shape,strides,expected",
    [
        ((4, 5), (5, 1), 5),  # contiguous
        ((4, 5), (8, 1), 8),  # rows sliced out of a wider array
        ((2, 3, 5), (30, 10, 1), 10),  # leading dims collapse into one row stride
        ((2, 3, 5), (40, 10, 1), None),  # ... or do not
        ((4, 5), (1, 4), None),  # transposed: elements are not adjacent
        ((1, 5), (99, 1), 5),  # one row: its stride does not matter
        ((3, 1, 5), (5, 77, 1), 5),  # size-1 dims impose nothing
        ((4, 5), (0, 1), 0),  # a broadcast row
        ((4, 1), (3, 9), 3),  # N = 1: the element stride does not matter
    ],
)
def test_row_stride(shape, strides, expected):
    assert arrays.row_stride(shape, strides) == expected


def test_normalize_dim():
    assert arrays.normalize_dim(-1, 3, "f") == 2 and arrays.normalize_dim(0, 0, "f") == 0
    with pytest.raises(ValueError, match="dim 3 is out of range for a 3-d input"):
        arrays.normalize_dim(3, 3, "f")
    with pytest.raises(TypeError, match="dim must be an int"):
        arrays.normalize_dim(1.0, 3, "f")


# --- prepare: one input layout -> what its launch needs ---------------------------------------


def test_prepare_reads_contiguous_rows_in_place_with_16_byte_packs():
    p = variants.prepare((512, 600), (600, 1), "float32", -1, "auto", variants.H100)
    assert (p.dim, p.moved, p.moved_shape, p.M, p.N) == (1, False, (512, 600), 512, 600)
    assert (p.x_row_stride, p.y_row_stride, p.out_direct) == (600, 600, False)
    assert p.launch == variants.plan("auto", 512, 600, "float32", 4, variants.H100)
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.M = 1
    assert variants.prepare((512, 600), (600, 1), "float32", 1, "auto", variants.H100) == p


def test_prepare_moves_the_softmax_dim_last_and_copies_rows_that_do_not_collapse():
    p = variants.prepare((6, 8), (8, 1), "float32", 0, "v3", variants.H100)  # softmax down columns
    assert (p.moved, p.moved_shape, p.M, p.N, p.x_row_stride) == (True, (8, 6), 8, 6, None)
    p = variants.prepare((2, 3, 8), (40, 10, 1), "bfloat16", -1, "v3", variants.H100)
    assert (p.moved, p.M, p.N, p.x_row_stride) == (False, 6, 8, None)
    assert dict(p.launch.spec.constants)["VEC"] == 8  # the contiguous copy is aligned
    p = variants.prepare((2, 3, 8), (30, 10, 1), "bfloat16", -1, "v3", variants.H100)
    assert p.x_row_stride == 10 and dict(p.launch.spec.constants)["VEC"] == 1  # 20-byte row stride


def test_prepare_takes_element_wide_accesses_for_a_misaligned_input_or_output():
    args = ((64, 600), (600, 1), "float32", -1, "v3", variants.H100)
    vec = [
        dict(variants.prepare(*args, **kw).launch.spec.constants)["VEC"]
        for kw in ({}, {"x_address": 4}, {"out_strides": (600, 1), "out_address": 8})
    ]
    assert vec == [4, 1, 1]


def test_prepare_writes_into_out_when_its_rows_are_distinct():
    args = ((4, 8), (8, 1), "float32", -1, "v2", variants.H100)
    direct = variants.prepare(*args, out_strides=(16, 1))  # rows of a wider array
    assert direct.out_direct and direct.y_row_stride == 16
    for strides in [(0, 1), (1, 4)]:  # a broadcast row, a transposed out: through a temporary
        p = variants.prepare(*args, out_strides=strides)
        assert not p.out_direct and p.y_row_stride == 8


def test_prepare_empty_and_zero_d_inputs():
    assert variants.prepare((3, 0), (1, 1), "float32", -1, "auto", variants.H100).launch is None
    assert variants.prepare((0, 5), (5, 1), "float32", -1, "auto", variants.H100).launch is None
    p = variants.prepare((), (), "float16", -1, "auto", variants.H100)
    assert (p.M, p.N, p.launch.spec.dtype) == (1, 1, "float16")


def test_prepare_names_what_it_refuses():
    args = ((4, 5), (5, 1), "float32")
    with pytest.raises(TypeError, match="dim must be an int, got bool"):
        variants.prepare(*args, True, "auto", variants.H100)
    with pytest.raises(ValueError, match="dim 2 is out of range"):
        variants.prepare(*args, 2, "auto", variants.H100)
    with pytest.raises(ValueError, match="unknown variant 'v9'"):
        variants.prepare(*args, -1, "v9", variants.H100)
    with pytest.raises(TypeError, match="unsupported dtype int32"):
        variants.prepare((4, 5), (5, 1), "int32", -1, "auto", variants.H100)
    with pytest.raises(ValueError, match="float64 runs with variant='auto' only"):
        variants.prepare((4, 5), (5, 1), "float64", -1, "v3", variants.H100)
    with pytest.raises(ValueError, match="at most"):
        variants.prepare((1, variants.MAX_N + 1), (0, 1), "float32", -1, "auto", variants.H100)
    with pytest.raises(ValueError, match="v3 holds rows of at most"):
        variants.prepare((1, 40000), (40000, 1), "float32", -1, "v3", variants.H100)
