"""lab compare: ratios of two sweeps and of implementations within one, and its one-line errors."""

from __future__ import annotations

import json

import pytest
from labtools.cli import main


def _sweep(path, op, points):
    records = [
        {"impl": impl, "shape": [m, n], "dtype": "float32", "median_us": dev, "call_us": call}
        for impl, (m, n), dev, call in points
    ]
    path.write_text(json.dumps({"op": op, "records": records}))
    return str(path)


def test_before_after_lists_only_points_slower_past_the_tolerance(tmp_path, capsys):
    before = _sweep(tmp_path / "a.json", "softmax", [("x", (4, 8), 10.0, 20.0), ("x", (8, 8), 10.0, 20.0)])
    after = _sweep(tmp_path / "b.json", "softmax", [("x", (4, 8), 10.05, 20.0), ("x", (8, 8), 10.0, 25.0)])
    assert main(["compare", before, after, "--fail-slower"]) == 1
    out = capsys.readouterr().out
    assert "1 of 2 points slower" in out and "x 8x8 float32: device 1.000, call 0.800" in out
    assert main(["compare", before, after]) == 0  # listed, but no --fail-slower


def test_against_a_peer_within_one_sweep(tmp_path, capsys):
    sweep = _sweep(
        tmp_path / "s.json", "softmax", [("peer", (4, 8), 12.0, 30.0), ("ours", (4, 8), 10.0, 15.0)]
    )
    assert main(["compare", sweep, "--against", "peer", "--fail-slower"]) == 0
    out = capsys.readouterr().out
    assert "1.2" in out and "2.0" in out and "0 of 1 points slower" in out


@pytest.mark.parametrize(
    "argv_tail, message",
    [
        (["--against", "nobody"], "--against nobody: not in the sweep"),
        ([], "give two sweep files"),
    ],
)
def test_usage_errors_are_one_line(tmp_path, capsys, argv_tail, message):
    sweep = _sweep(tmp_path / "s.json", "softmax", [("peer", (4, 8), 12.0, 30.0)])
    assert main(["compare", sweep, *argv_tail]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_different_ops_and_bad_files_are_refused(tmp_path, capsys):
    a = _sweep(tmp_path / "a.json", "softmax", [("x", (4, 8), 1.0, 1.0)])
    b = _sweep(tmp_path / "b.json", "softmax_backward", [("x", (4, 8), 1.0, 1.0)])
    assert main(["compare", a, b]) == 2
    (tmp_path / "bad.json").write_text("{")
    assert main(["compare", a, str(tmp_path / "bad.json")]) == 2
    err = capsys.readouterr().err
    assert "different ops" in err and "not a lab bench sweep" in err
