"""labtools.inductor's parser and annotation, on committed dumps (no compile).

The parser is tested on committed dumps in tests/labtools/data/inductor/ (see its README)
and on the TinyHead dumps of experiment 25 (the CPU one, and the CUDA one once recorded);
then the parser's pieces: the classification of kernel lines, the text helpers, and which
kernels count as a softmax.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from inductor_helpers import (  # noqa: E402
    CPU_SAMPLE,
    CUDA_SAMPLE,
    DATA,
    _cited_lines_match_source,
    _names_every_softmax_op,
    _only_softmax,
)
from labtools.inductor.annotation import annotate, is_softmax  # noqa: E402
from labtools.inductor.capture import read_dump_dir  # noqa: E402
from labtools.inductor.kernels import classify, simplify_cpp, split_top  # noqa: E402
from labtools.inductor.parse import parse_module, split_fused_name  # noqa: E402

# --- the committed CPU dump ---------------------------------------------------------


def test_cpu_sample_parse():
    (graph,) = read_dump_dir(CPU_SAMPLE)
    (k,) = graph.kernels
    assert (k.name, k.language, k.kind) == ("cpp_fused_amax_exp_sub_sum_1_div_0", "cpp", "cpp")
    assert k.fused_nodes == ["amax", "sub", "exp", "sum_1", "div"]
    assert k.fused_ops == ["amax", "sub", "exp", "sum", "div"]
    assert k.node_targets["sum_1"] == "aten.sum.dim_IntList"
    b = k.body
    assert [(p.name, p.role, p.buffer) for p in b.params] == [
        ("in_ptr0", "input", "buf0"),
        ("out_ptr0", "output", "buf1"),
        ("out_ptr1", "output", "buf3"),
        ("out_ptr2", "output", "buf4"),
    ]
    assert {(a.ptr, a.index, a.lanes) for a in b.loads} >= {
        ("in_ptr0", "x1 + 600*x0", 8),
        ("out_ptr0", "x0", None),
    }
    stores = {(a.ptr, a.index): b.origin_op(a.var, a.line) for a in b.stores}
    assert stores == {
        ("out_ptr0", "x0"): ("max", True),
        ("local_buffer_data_0", "x1"): ("exp", False),
        ("out_ptr1", "x0"): ("sum", True),
        ("out_ptr2", "x1 + 600*x0"): ("div", False),
    }
    assert [r.op for r in b.reductions] == ["max", "sum"]
    assert [(lb.name, lb.size) for lb in b.local_buffers] == [("local_buffer_data_0", "600")]
    assert [(lp.var, lp.end, lp.step, lp.parallel) for lp in b.loops][:2] == [
        ("x0", "2", "1", True),
        ("x1", "600", "8", False),
    ]
    assert graph.returns == ["buf4"]
    assert [a.name for a in graph.materialized()] == ["buf0", "buf1", "buf3"]
    assert graph.calls[0].source_nodes == ["linear"] and graph.calls[0].out == "buf0"


def test_cpu_sample_annotation_walks_through_the_five_questions():
    (graph,) = read_dump_dir(CPU_SAMPLE)
    k = graph.kernels[0]
    text = annotate(k, graph)
    for heading in (
        "1. Which ATen ops were fused",
        "2. Where the input is read",
        "3. Where the output is written",
        "4. The reductions",
        "5. What is not there",
    ):
        assert heading in text
    assert "Never written anywhere: `sub`" in text
    assert "`exp` is written only to `local_buffer_data_0`" in text
    assert "no tensor for exp(x − max)" in text
    assert "`buf1` via `out_ptr0` (f32[2, 1], 8 bytes" in text  # the row max does reach memory
    _cited_lines_match_source(k, text)


# --- Triton: the format, generated here; the H100's own output once committed -------


def test_triton_persistent_reduction_sample():
    (graph,) = read_dump_dir(DATA / "triton_codegen_tinyhead")
    k, _ = _only_softmax([graph])
    assert (k.language, k.kind) == ("triton", "persistent_reduction")
    assert k.source_nodes == ["softmax"] and k.original_aten == ["aten._softmax"]
    assert [(p.name, p.role) for p in k.body.params if p.role != "block"][0] == ("in_out_ptr0", "in_out")
    assert graph.storage(k.body.params[0].buffer) == "buf0"  # softmax overwrites the addmm output in place
    (load,) = k.body.loads
    assert (load.index, load.mask) == ("r0_1 + 600*x0", "r0_mask & xmask")
    (store,) = k.body.stores
    assert k.body.origin_op(store.var, store.line) == ("div", False)
    assert [(r.op, r.looped) for r in k.body.reductions] == [("max", False), ("sum", False)]
    text = annotate(k, graph)
    assert "Never written anywhere: `amax`, `sub`, `exp`, `sum_1`" in text
    assert "no buffer for exp(x − max)" in text
    _cited_lines_match_source(k, text)


def test_triton_looped_reduction_sample_stores_exp():
    (graph,) = read_dump_dir(DATA / "triton_codegen_widehead")
    k, _ = _only_softmax([graph])
    assert k.kind == "reduction" and len(k.body.loops) == 3
    assert [(r.op, r.looped, r.accumulator) for r in k.body.reductions] == [
        ("max", True, "_tmp2"),
        ("sum", True, "_tmp8"),
    ]
    stored = [k.body.origin_op(a.var, a.line)[0] for a in k.body.stores]
    assert stored == ["exp", "div"]  # a 50000-wide row does not fit one block: exp goes to memory and back
    text = annotate(k, graph)
    assert "exp(x − max) **is** written to memory" in text


@pytest.mark.skipif(
    not CUDA_SAMPLE.is_dir(),
    reason=f"no CUDA dump in {CUDA_SAMPLE}: `lab inductor experiment --out experiments/25-compile --device cuda` "
    "on a GPU machine records it",
)
def test_cuda_sample_from_the_h100():
    graphs = read_dump_dir(CUDA_SAMPLE)
    k, graph = _only_softmax(graphs)
    assert k.language == "triton" and "device_str='cuda'" in graph.source
    assert k.kind in ("persistent_reduction", "reduction")
    assert any("600" in a.index for a in k.body.loads) and k.body.stores
    assert {r.op for r in k.body.reductions} >= {"max", "sum"} or "online_softmax" in {
        r.op for r in k.body.reductions
    }
    text = annotate(k, graph)
    _names_every_softmax_op(k, text)
    if k.kind == "persistent_reduction":
        assert "no buffer for exp(x − max)" in text
    _cited_lines_match_source(k, text)


# --- the parser's pieces ------------------------------------------------------------


@pytest.mark.parametrize(
    "rhs, op",
    [
        ("tl.load(in_ptr0 + (r0_1 + 600*x0), r0_mask & xmask, other=0.0)", ("load", False)),
        ("triton_helpers.max2(tmp3, 1)[:, None].to(tl.float32)", ("max", True)),
        ("tl.sum(tmp9, 1)[:, None]", ("sum", True)),
        ("(tmp6 / tmp10)", ("div", False)),
        ("tmp0 - tmp4", ("sub", False)),
        ("libdevice.exp(tmp5)", ("exp", False)),
        ("tmp3.exp();", ("exp", False)),
        ("decltype(tmp9)::blendv(tmp7, tmp9, inductor_vec_mask_cast<float,1>(tmp3));", ("where", False)),
        ("at::vec::VecMask<float,1>(tmp0 == tmp2);", ("eq", False)),
        ("static_cast<float>(0.25);", ("constant", False)),
        ("triton_helpers.maximum(tmp1, tmp0)", ("maximum", False)),
        ("at::vec::Vectorized<float>(tmp1);", ("broadcast", False)),
    ],
)
def test_classify(rhs, op):
    assert classify(rhs) == op


def test_text_helpers():
    assert split_top("f(a, b), c, [d, e]") == ["f(a, b)", "c", "[d, e]"]
    assert simplify_cpp("in_ptr0 + static_cast<int64_t>(x1 + 600L*x0)") == "in_ptr0 + (x1 + 600*x0)"
    assert simplify_cpp("at::vec::Vectorized<float>(tmp1)") == "at::vec::Vectorized<float>(tmp1)"
    vocab = {"amax", "exp", "sub", "sum_1", "div", "full_default", "view_7"}
    assert split_fused_name("amax_full_default_view_7_exp_sub_sum_1_div", vocab) == [
        "amax",
        "full_default",
        "view_7",
        "exp",
        "sub",
        "sum_1",
        "div",
    ]
    assert split_fused_name("amax_bogus", vocab) is None


def test_parse_module_without_kernels_is_empty_not_an_error():
    g = parse_module("")
    assert (g.kernels, g.calls, g.allocations, g.returns) == ([], [], {}, [])


def test_is_softmax_accepts_inductors_online_softmax_node():
    from types import SimpleNamespace

    two_reductions = SimpleNamespace(fused_ops=["amax", "sub", "exp", "sum", "div"])
    online = SimpleNamespace(fused_ops=["prepare_softmax_online", "sub", "exp", "div", "getitem"])
    no_div = SimpleNamespace(fused_ops=["prepare_softmax_online", "sub", "exp"])
    assert is_softmax(two_reductions) and is_softmax(online) and not is_softmax(no_div)
