"""Roofline math, and the two figures inspected through their artists (not just files)."""

import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
from labtools import roofline  # noqa: E402
from labtools.ceilings import DATASHEETS, Ceilings  # noqa: E402
from labtools.ops import SOFTMAX  # noqa: E402
from matplotlib.text import Text  # noqa: E402

SHAPE = (16384, 4096)


def test_attainable_and_ridge():
    assert roofline.attainable_tflops(0.625, 3000.0) == pytest.approx(1.875)  # 0.625 FLOP/B x 3 TB/s
    assert roofline.attainable_tflops(0.625, 3000.0, 67.0) == pytest.approx(1.875)
    assert roofline.attainable_tflops(100.0, 3000.0, 67.0) == 67.0
    ridge = roofline.ridge_intensity(3000.0, 67.0)
    assert ridge == pytest.approx(67e3 / 3000)
    assert roofline.attainable_tflops(ridge, 3000.0) == pytest.approx(67.0)
    # softmax's intensity is its cost model's: 5 FLOP per 8 bytes in fp32, per 4 in bf16
    assert SOFTMAX.intensity(SHAPE, 4) == 0.625 and SOFTMAX.intensity(SHAPE, 2) == 1.25


def test_roofs_prefer_measured_and_label_the_source():
    measured = Ceilings("NVIDIA H100 80GB HBM3", 2950.0, {"fp32": 51.0}, DATASHEETS["H100 SXM"])
    roofs = roofline.roofs(measured)
    assert [(r.kind, r.source) for r in roofs] == [
        ("bandwidth", "measured"),
        ("bandwidth", "datasheet"),
        ("compute", "measured"),
        ("compute", "datasheet"),
    ]
    assert roofline.primary(roofs, "bandwidth").value == 2950.0
    assert "measured" in roofs[0].label and "datasheet" in roofs[1].label and "3,350" in roofs[1].label
    sheet_only = roofline.roofs(None, "NVIDIA H100 80GB HBM3")
    assert [r.source for r in sheet_only] == ["datasheet", "datasheet"]
    assert roofline.primary(sheet_only, "bandwidth").value == 3350
    assert roofline.roofs(None, "some unknown accelerator") == []


def test_dots_fraction_of_roof_equals_fraction_of_copy_when_memory_bound(synthetic_sweep):
    s = synthetic_sweep()
    recs = s.at(SHAPE)
    dots = roofline.dots(recs, roofline.roofs(s.ceilings))
    for d, r in zip(dots, recs):
        assert d.intensity == r.intensity and d.tflops == pytest.approx(r.tflops)
        assert d.frac_of_roof == pytest.approx(r.frac_of_copy)
    assert [d.label for d in dots if d.is_reference] == ["F.softmax", "F.softmax"]


def test_spread_keeps_order_gap_and_bounds():
    ys = [1.0, 1.01, 0.99, 1.02, 3.0]
    out = roofline.spread(ys, 0.1, 0.0, 2.5)
    order = sorted(range(len(ys)), key=ys.__getitem__)
    pos = [out[i] for i in order]
    assert all(b - a >= 0.1 - 1e-12 for a, b in zip(pos, pos[1:]))
    assert max(out) <= 2.5 and min(out) >= 0.0
    assert roofline.spread([0.5], 0.1, 0.0, 1.0) == [0.5]  # alone: unmoved


def test_pick_shape(synthetic_sweep):
    assert roofline.pick_shape(synthetic_sweep()) == SHAPE
    assert roofline.pick_shape(synthetic_sweep(shapes=((4096, 600), (1024, 131072)))) == (1024, 131072)


def _texts_overlap(fig, texts) -> bool:
    fig.canvas.draw()  # annotations place their text when drawn
    renderer = fig.canvas.get_renderer()
    boxes = [Text.get_window_extent(t, renderer) for t in texts]  # the text alone, not its leader line
    return any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1 :])


def test_roofline_figure_has_one_labelled_dot_per_implementation_and_dtype(synthetic_sweep):
    s = synthetic_sweep()
    fig = roofline.plot_roofline(s, SHAPE)
    try:
        ax = fig.axes[0]
        assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
        assert "16384x4096" in ax.get_title()
        recs = s.at(SHAPE)
        # every dot where its record says, and nothing else plotted as a dot
        offsets = sorted(
            tuple(map(float, c.get_offsets()[0])) for c in ax.collections if len(c.get_offsets())
        )
        want = sorted((r.intensity, r.tflops) for r in recs)
        assert len(offsets) == len(want)
        assert [v for xy in offsets for v in xy] == pytest.approx([v for xy in want for v in xy])
        # one label per dot, naming the implementation and its fraction of the roof
        labels = [t for t in ax.texts if t.arrow_patch is not None]
        want = {f"{r.label}  {r.frac_of_copy:.0%}" for r in recs}
        assert {t.get_text() for t in labels} == want and len(labels) == len(recs)
        for name in ("naive", "smem", "fused", "long-row", "Triton", "F.softmax", "torch.compile"):
            assert any(t.get_text().startswith(name + " ") for t in labels)
        assert not _texts_overlap(fig, labels)
        legend = [t.get_text() for t in ax.get_legend().get_texts()]
        assert any(t.startswith("measured copy: 2,950 GB/s") for t in legend)
        assert any("datasheet HBM: 3,350 GB/s" in t for t in legend)
        assert any("float32 (x = 0.625" in t for t in legend) and any(
            "bfloat16 (x = 1.25" in t for t in legend
        )
        footnotes = " ".join(t.get_text() for t in fig.texts)
        assert (
            "5 FLOP/element" in footnotes and "exp counted as 1" in footnotes
        )  # the FLOP convention, restated
    finally:
        plt.close(fig)


def test_roofline_without_ceilings_falls_back_to_the_datasheet(synthetic_sweep):
    s = synthetic_sweep(shapes=(SHAPE,))
    s.ceilings = None
    fig = roofline.plot_roofline(s)
    try:
        legend = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
        assert not any(t.startswith("measured") for t in legend) and any("datasheet HBM" in t for t in legend)
    finally:
        plt.close(fig)
    with pytest.raises(ValueError, match="no records at 7x7"):
        roofline.plot_roofline(s, (7, 7))


def test_frac_of_copy_figure_has_a_line_per_implementation_per_dtype(synthetic_sweep):
    s = synthetic_sweep()
    fig = roofline.plot_frac_of_copy(s)
    try:
        axes = fig.axes
        assert [ax.get_title() for ax in axes] == ["float32", "bfloat16"]
        for ax, dtype in zip(axes, ("float32", "bfloat16")):
            lines = {ln.get_label(): ln for ln in ax.get_lines() if not ln.get_label().startswith("_")}
            assert set(lines) == set(roofline_labels(s))
            fused = lines["fused"]
            # through the largest M at each N: (65536, 600), (16384, 4096), (1024, 131072)
            assert list(fused.get_xdata()) == [600, 4096, 131072]
            want = [
                next(r.frac_of_copy for r in s.at(shape, dtype) if r.label == "fused")
                for shape in ((65536, 600), SHAPE, (1024, 131072))
            ]
            assert list(fused.get_ydata()) == pytest.approx(want)
            # the smaller M at N=600 as a hollow marker
            hollow = [c for c in ax.collections if len(c.get_offsets())]
            assert any(tuple(c.get_offsets()[0])[0] == 600 for c in hollow)
            assert any(ln.get_ydata()[0] == 1.0 and ln.get_linestyle() == "--" for ln in ax.get_lines())
        assert "fraction of measured copy bandwidth" in axes[0].get_ylabel()
        assert [t.get_text() for t in fig.legends[0].get_texts()] == roofline_labels(s)
    finally:
        plt.close(fig)


def roofline_labels(s):
    return list(dict.fromkeys(r.label for r in s.records))


def test_colors_are_stable_and_the_reference_is_black():
    colors = roofline.colors_for(["F.softmax", "naive", "fused", "naive"], {"F.softmax"})
    assert colors["F.softmax"] == "black" and colors["naive"] != colors["fused"]


def test_write_plots_writes_pngs(synthetic_sweep, tmp_path):
    s = synthetic_sweep(shapes=(SHAPE, (1024, 131072)))
    paths = roofline.write_plots(s, tmp_path)
    assert [p.name for p in paths] == [
        "roofline.png",  # no seed kernel among the synthetic names: every implementation at one shape
        "roofline_16384x4096.png",
        "roofline_1024x131072.png",
        "frac_of_copy.png",
    ]
    for p in paths:
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and p.stat().st_size > 20_000
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in paths)  # no temporaries left
    assert roofline.plot_names("softmax_backward") == (
        "roofline_softmax_backward.png",
        "frac_of_copy_softmax_backward.png",
    )
    assert not math.isnan(s.records[0].tflops)


# --- the lab text's four-dot figure ------------------------------------------------------

REAL_NAMES = {
    "F.softmax": "torch.softmax.cuda",
    "naive": "cuda.v1_naive",
    "smem": "cuda.v2_shared",
    "fused": "cuda.v3_fused",
    "Triton": "triton.softmax",
    "torch.compile": "torch.compile.softmax.cuda",
    "long-row": "cuda.v4_cluster",
}


def _seed_sweep(synthetic_sweep, naive_max_n=1024):
    """A synthetic sweep under the registry's names, where naive runs only up to naive_max_n."""
    s = synthetic_sweep(shapes=((4096, 600), (16384, 4096), (1024, 131072)))
    for r in s.records:
        r.impl = REAL_NAMES[r.label]
        r.ref = "torch.softmax.cuda"
    dropped = [r for r in s.records if r.impl == "cuda.v1_naive" and r.shape[-1] > naive_max_n]
    s.records = [r for r in s.records if r not in dropped]
    s.skipped = [
        {"impl": r.impl, "shape": list(r.shape), "dtype": r.dtype, "why": "supports() rejects this shape"}
        for r in dropped
    ]
    return s


def test_seed_shape_is_where_all_four_kernels_ran(synthetic_sweep):
    assert roofline.seed_shape(_seed_sweep(synthetic_sweep)) == (4096, 600)  # naive: N <= 1024
    assert roofline.seed_shape(_seed_sweep(synthetic_sweep, naive_max_n=10**9)) == SHAPE  # v1 at any N
    s = _seed_sweep(synthetic_sweep, naive_max_n=0)  # naive nowhere: the shape with most seed dots
    assert roofline.seed_shape(s) == SHAPE
    s.records = [r for r in s.records if r.impl in ("torch.softmax.cuda", "cuda.v4_cluster")]
    assert roofline.seed_shape(s) is None


def test_seed_summary_names_the_shape_of_every_dot(synthetic_sweep):
    s = _seed_sweep(synthetic_sweep)
    summary = roofline.seed_summary(s)
    assert (
        summary["file"] == "roofline.png"
        and summary["shape"] == [4096, 600]
        and summary["dtype"] == "float32"
    )
    assert list(summary["dots"]) == ["naive", "smem", "fused", "triton", "torch.compile"]
    for d in summary["dots"].values():
        rec = next(r for r in s.at((4096, 600), "float32") if r.impl == d["impl"])
        assert d["shape"] == [4096, 600] and d["dtype"] == "float32" and d["tflops"] == rec.tflops
        assert d["frac_of_roof"] == pytest.approx(rec.frac_of_copy)
    assert summary["reference_line"]["impl"] == "torch.softmax.cuda" and summary["missing"] == {}
    forced = roofline.seed_summary(s, SHAPE)
    assert forced["missing"] == {"naive": "supports() rejects this shape"} and "naive" not in forced["dots"]


def test_seed_figure_has_four_dots_compile_and_the_reference_line(synthetic_sweep):
    s = _seed_sweep(synthetic_sweep)
    fig = roofline.plot_seed_roofline(s)
    try:
        ax = fig.axes[0]
        assert "4096x600 float32" in ax.get_title()
        recs = {r.impl: r for r in s.at((4096, 600), "float32")}
        offsets = sorted(
            tuple(map(float, c.get_offsets()[0])) for c in ax.collections if len(c.get_offsets())
        )
        want = sorted(
            (recs[n].intensity, recs[n].tflops)
            for n in (
                "cuda.v1_naive",
                "cuda.v2_shared",
                "cuda.v3_fused",
                "triton.softmax",
                "torch.compile.softmax.cuda",
            )
        )
        assert [v for xy in offsets for v in xy] == pytest.approx(
            [v for xy in want for v in xy]
        )  # no F.softmax dot
        ref = recs["torch.softmax.cuda"]
        (line,) = [ln for ln in ax.get_lines() if ln.get_label().startswith("F.softmax (reference)")]
        assert list(line.get_ydata()) == pytest.approx([ref.tflops, ref.tflops])  # horizontal, at its TFLOP/s
        labels = {t.get_text().split(" (")[0].split("  ")[0] for t in ax.texts}
        assert labels == {"naive", "smem", "fused", "triton", "torch.compile"}
        naive = recs["cuda.v1_naive"]
        assert f"naive  {naive.frac_of_copy:.0%}" in {t.get_text() for t in ax.texts}
        legend = [t.get_text() for t in ax.get_legend().get_texts()]
        assert any(t.startswith("measured copy") for t in legend)
    finally:
        plt.close(fig)


def test_write_plots_draws_the_seed_figure_and_one_roofline_per_shape(synthetic_sweep, tmp_path):
    s = _seed_sweep(synthetic_sweep)
    paths = roofline.write_plots(s, tmp_path)
    assert [p.name for p in paths] == [
        "roofline.png",
        "roofline_4096x600.png",
        "roofline_16384x4096.png",
        "roofline_1024x131072.png",
        "frac_of_copy.png",
    ]
    with pytest.raises(ValueError, match="no seed kernel"):
        s.records = [r for r in s.records if r.impl == "torch.softmax.cuda"]
        roofline.plot_seed_roofline(s)
