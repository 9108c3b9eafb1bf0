"""The lab command line."""

import json
import subprocess
import sys

from labtools.cli import main


def test_lab_env_table(capsys):
    assert main(["env"]) == 0
    out = capsys.readouterr().out
    for word in ("python", "numpy", "CUDA", "Triton interpreter", "CPU (NumPy)"):
        assert word in out


def test_lab_env_json_is_machine_readable():
    out = subprocess.run(
        [sys.executable, "-m", "labtools.cli", "env", "--json"], check=True, capture_output=True, text=True
    ).stdout
    env = json.loads(out)
    assert env["python"].count(".") == 2
    assert set(env["versions"]) >= {"numpy", "torch", "triton", "cupy"}
    assert env["backends"]["CPU (NumPy)"]["available"] is True
    for d in env["devices"]:
        assert {"name", "compute_capability", "memory_gib", "sm_count"} <= set(d)


def test_lab_bench_then_lab_roofline(fake_registry, tmp_path, capsys):
    sweep_json = tmp_path / "sweep.json"
    rc = main(
        [
            "bench",
            "softmax",
            "--device",
            "cpu",
            "--shapes",
            "16x256,8x2048",
            "--dtypes",
            "float32",
            "--impls",
            "tuned,fake.short_rows",
            "--time-cap",
            "0.05",
            "--no-ceiling",
            "--json",
            str(sweep_json),
        ]
    )
    assert rc == 0
    out = capsys.readouterr().out
    assert "vs F.ref" in out and "fake.tuned" in out and f"wrote {sweep_json}" in out
    assert "skipped: fake.short_rows: supports() rejects this shape -- 8x2048 float32" in out
    sweep = json.loads(sweep_json.read_text())
    assert sweep["command"].startswith("lab bench softmax --device cpu")
    assert {r["impl"] for r in sweep["records"]} == {"fake.ref", "fake.tuned", "fake.short_rows"}
    assert sweep["ceilings"] is None and all(r["frac_of_copy"] is None for r in sweep["records"])

    assert main(["roofline", str(sweep_json), "--shape", "16x256", "--out", str(tmp_path / "plots")]) == 0
    assert {p.name for p in (tmp_path / "plots").iterdir()} == {
        "roofline.png",
        "roofline_16x256.png",
        "roofline_8x2048.png",
        "frac_of_copy.png",
    }


def test_lab_bench_reports_failures_in_its_exit_status(fake_registry, tmp_path, capsys):
    rc = main(
        [
            "bench",
            "softmax",
            "--device",
            "cpu",
            "--shapes",
            "8x64",
            "--dtypes",
            "float32",
            "--impls",
            "crash",
            "--time-cap",
            "0.05",
            "--no-ceiling",
            "--json",
            str(tmp_path / "s.json"),
        ]
    )
    assert rc == 1
    assert "FAILED: fake.crash: RuntimeError: launch failed" in capsys.readouterr().out


def test_lab_bench_b512_is_one_point(fake_registry, tmp_path):
    out = tmp_path / "b512.json"
    assert (
        main(
            [
                "bench",
                "softmax",
                "--b512",
                "--device",
                "cpu",
                "--impls",
                "tuned",
                "--time-cap",
                "0.05",
                "--no-ceiling",
                "--json",
                str(out),
            ]
        )
        == 0
    )
    records = json.loads(out.read_text())["records"]
    assert {(tuple(r["shape"]), r["dtype"]) for r in records} == {((512, 600), "float32")}
