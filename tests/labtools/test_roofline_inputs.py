"""`lab roofline` on damaged sweeps: one line naming the record and field, exit 2; the
figures mark what the report flags; roofline.png is its own figure (issue 44)."""

import dataclasses
import json

import matplotlib
import pytest
from cli_helpers import lab
from labtools import roofline

matplotlib.use("Agg")


@pytest.fixture
def small_sweep(synthetic_sweep):
    return synthetic_sweep(shapes=((4096, 600), (16384, 4096)), dtypes=("float32",))


BAD_VALUES = [
    ("median_us", -3.0),
    ("median_us", 0),
    ("median_us", "fast"),
    ("gbps", 0.0),
    ("gbps", -1),
    ("tflops", None),
    ("intensity", True),
    ("call_us", -2.0),
    ("frac_of_copy", 0),
]


@pytest.mark.parametrize(("field", "value"), BAD_VALUES, ids=[f"{f}={v!r}" for f, v in BAD_VALUES])
def test_a_bad_number_is_one_line_naming_row_and_field(tmp_path, small_sweep, field, value):
    doc = small_sweep.to_dict()
    doc["records"][3][field] = value
    impl = doc["records"][3]["impl"]
    (tmp_path / "bad.json").write_text(json.dumps(doc))
    proc = lab("roofline", "bad.json", cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert "record 3" in line and impl in line and field in line and "finite number > 0" in line
    assert not (tmp_path / "out").exists()  # refused before any folder was made


@pytest.mark.parametrize("text", ["NaN", "Infinity", "-Infinity"])
def test_non_finite_times_are_refused(tmp_path, small_sweep, text):
    doc = json.dumps(small_sweep.to_dict())
    doc = doc.replace('"median_us": ', f'"median_us": {text}, "was": ', 1)
    (tmp_path / "bad.json").write_text(doc)
    proc = lab("roofline", "bad.json", cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert "record 0" in proc.stderr and "median_us" in proc.stderr


def test_a_bad_copy_ceiling_is_refused(tmp_path, small_sweep):
    doc = small_sweep.to_dict()
    doc["ceilings"]["copy_gbps"] = -5
    (tmp_path / "bad.json").write_text(json.dumps(doc))
    proc = lab("roofline", "bad.json", cwd=tmp_path)
    assert proc.returncode == 2 and "ceilings.copy_gbps" in proc.stderr and "Traceback" not in proc.stderr


def test_lab_roofline_takes_a_run_folder(tmp_path, small_sweep):
    small_sweep.save(tmp_path / "run-1" / "sweep_softmax.json")
    proc = lab("roofline", "run-1", "--out", "plots", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "plots" / "roofline.png").is_file()
    (tmp_path / "two").mkdir()
    for op in ("a", "b"):
        (tmp_path / "two" / f"sweep_{op}.json").write_text("{}")
    proc = lab("roofline", "two", cwd=tmp_path)
    assert proc.returncode == 2 and "sweep_a.json, sweep_b.json" in proc.stderr


def test_roofline_png_is_not_a_copy_of_a_per_shape_plot(tmp_path, small_sweep):
    paths = roofline.write_plots(small_sweep, tmp_path)
    main = (tmp_path / "roofline.png").read_bytes()
    per_shape = [p for p in paths if p.name.startswith("roofline_")]
    assert len(per_shape) == 2
    assert all(p.read_bytes() != main for p in per_shape)
    one = small_sweep.__class__.from_dict(small_sweep.to_dict())
    one.records = one.at((4096, 600))  # a single swept shape: still its own figure
    paths = roofline.write_plots(one, tmp_path / "one")
    assert (tmp_path / "one" / "roofline.png").read_bytes() != (
        tmp_path / "one" / "roofline_4096x600.png"
    ).read_bytes()


def _flagged_sweep(small_sweep):
    recs = small_sweep.records
    shaky = dataclasses.replace(recs[2], unstable=True, unstable_why="device IQR 35%")
    fast = dataclasses.replace(recs[4], frac_of_copy=1.7)
    small_sweep.records = [*recs[:2], shaky, recs[3], fast, *recs[5:]]
    return small_sweep, shaky, fast


def _marked(fig, word):
    """Offsets of the scatter whose legend label contains `word`, over every axes."""
    found = []
    for ax in fig.axes:
        for c in ax.collections:
            if word in (c.get_label() or ""):
                found += [tuple(xy) for xy in c.get_offsets()]
    return found


def test_frac_of_copy_marks_unstable_and_above_copy_points(small_sweep):
    sweep, shaky, fast = _flagged_sweep(small_sweep)
    fig = roofline.plot_frac_of_copy(sweep)
    assert _marked(fig, "unstable") == [pytest.approx((shaky.shape[-1], shaky.frac_of_copy))]
    assert _marked(fig, "above the measured copy") == [pytest.approx((fast.shape[-1], 1.7))]
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert any("unstable" in t for t in legend) and any("above the measured copy" in t for t in legend)


def test_roofline_marks_unstable_points_and_labels_them(small_sweep):
    sweep, shaky, _ = _flagged_sweep(small_sweep)
    fig = roofline.plot_roofline(sweep, tuple(shaky.shape))
    assert _marked(fig, "unstable") == [pytest.approx((shaky.intensity, shaky.tflops))]
    labels = [t.get_text() for t in fig.axes[0].texts]
    assert any(t.startswith(shaky.label) and "(unstable)" in t for t in labels)
    clean = roofline.plot_roofline(sweep, (16384, 4096))
    assert not _marked(clean, "unstable")
