"""manifest.json: built from measurements, validated against the schema before writing."""

import copy
import json

import numpy as np
import pytest
from labtools import bench, manifest
from labtools.ceilings import DATASHEETS, Ceilings
from labtools.registry import Implementation

ENV = {
    "python": "3.12.3",
    "versions": {
        "numpy": "2.5.0",
        "torch": "2.11.0+cu130",
        "triton": "3.6.0",
        "cupy": "14.2.0",
        "matplotlib": "3.10.0",
    },
    "devices": [{"index": 0, "name": "NVIDIA H100 80GB HBM3", "compute_capability": "9.0"}],
}
PICKS = [{"key": {"N": 600, "dtype": "float32"}, "config": {"BLOCK": 1024, "num_warps": 4, "num_stages": 1}}]


def _b512():
    ref_impl = Implementation(abs, "softmax", "torch.softmax.cuda", "torch", "F.softmax", is_reference=True)
    tri_impl = Implementation(abs, "softmax", "triton.softmax", "triton", "Triton")
    ref = bench.record(
        ref_impl,
        (512, 600),
        "float32",
        bench.Timing((10.0, 10.0, 10.0), "cuda"),
        call=bench.Timing((11.0, 11.0), "cuda-call"),
    )
    ref.with_reference(ref)
    tri = bench.record(
        tri_impl,
        (512, 600),
        "float32",
        bench.Timing((12.5, 12.5), "cuda"),
        call=bench.Timing((22.0, 22.0), "cuda-call"),
        reference=ref,
    )
    return [ref, tri]


def _checks():
    return {
        "minigpt_torch.port": {
            "status": "passed",
            "seconds": 1.5,
            "result": {
                "passed": True,
                "byte_equivalence_at_fp32_cpu": True,
                "max_abs_diff_to_numpy_reference": 2.4e-7,
                "fp64_max_abs_diff": 1.1e-15,
            },
        },
        "minigpt_torch.kernel_swap": {
            "status": "passed",
            "seconds": 3.0,
            "result": {"passed": True, "kernel_swap_changes_top1_token": False},
        },
    }


def _manifest(**over):
    kw = dict(
        experiment="24-triton-and-pytorch",
        seed=42,
        device="cuda",
        environment=ENV,
        b512=_b512(),
        autotune={"triton.softmax": PICKS},
        checks=_checks(),
        ceilings=Ceilings("NVIDIA H100 80GB HBM3", 2950.0, {"fp32": 51.0}, DATASHEETS["H100 SXM"]),
        sweeps={"softmax": "sweep_softmax.json"},
        command="lab run --experiment 24",
        notes=[],
        date="2026-11-22",
    )
    kw.update(over)
    return manifest.build(**kw)


def test_built_manifest_is_valid_and_carries_the_seed_fields():
    m = _manifest()
    assert manifest.validate(m) == []
    assert manifest.validate(json.loads(json.dumps(m))) == []
    assert m["gpu"] == {"model": "NVIDIA H100 80GB HBM3", "compute_capability": "9.0"}
    assert m["versions"]["python"] == "3.12.3" and m["versions"]["triton"] == "3.6.0"
    tri = m["softmax_kernels"]["triton.softmax"]
    assert tri["us_at_B512"] == 12.5 and tri["frac_of_F_softmax"] == pytest.approx(0.8)  # 10 / 12.5
    assert tri["autotune_picked"] == {"BLOCK": 1024, "num_warps": 4, "num_stages": 1}
    assert tri["call_us_at_B512"] == 22.0 and tri["call_frac_of_F_softmax"] == pytest.approx(0.5)  # 11 / 22
    assert tri["unstable"] is False and tri["threads"] is None and "unstable_why" not in tri
    assert m["softmax_kernels"]["torch.softmax.cuda"]["frac_of_F_softmax"] == 1.0
    assert m["torch_port"] == {
        "byte_equivalence_at_fp32_cpu": "passed",
        "max_abs_diff_to_numpy_reference": 2.4e-7,
        "fp64_max_abs_diff": 1.1e-15,
        "kernel_swap_changes_top1_token": False,
    }
    assert m["produced_by"].startswith("labtools")


def test_manifest_names_the_seed_roofline_and_its_shapes():
    dots = {"naive": {"impl": "cuda.v1_naive", "shape": [4096, 600], "dtype": "float32"}}
    m = _manifest(roofline={"file": "roofline.png", "shape": [4096, 600], "dtype": "float32", "dots": dots})
    assert manifest.validate(m) == [] and m["roofline"]["dots"]["naive"]["shape"] == [4096, 600]
    assert _manifest()["roofline"] is None and manifest.validate(_manifest()) == []
    bad = _manifest(roofline={"file": "roofline.png", "dots": dots})
    assert any("missing required key 'shape'" in e for e in manifest.validate(bad))


def test_cpu_manifest_without_checks_is_valid_and_says_not_run():
    m = _manifest(device="cpu", checks={}, autotune={})
    assert manifest.validate(m) == []
    assert m["gpu"] == {"model": None, "compute_capability": None}
    assert m["torch_port"]["byte_equivalence_at_fp32_cpu"] == "not run"
    assert m["torch_port"]["kernel_swap_changes_top1_token"] is None


@pytest.mark.parametrize(
    "path, value, message",
    [
        (("seed",), "42", "$.seed: expected integer"),
        (("seed",), True, "$.seed: expected integer"),
        (("date",), "22/11/2026", "does not match"),
        (("experiment",), "triton", "does not match"),
        (("device",), "tpu", "is not one of"),
        (("gpu", "compute_capability"), "sm_90", "does not match"),
        (("torch_port", "byte_equivalence_at_fp32_cpu"), "yes", "is not one of"),
        (("torch_port", "max_abs_diff_to_numpy_reference"), -1.0, "< minimum 0"),
        (("softmax_kernels", "triton.softmax", "us_at_B512"), 0.0, "exclusive minimum"),
        (("softmax_kernels", "triton.softmax", "us_at_B512"), None, "expected number"),
        (
            ("softmax_kernels", "triton.softmax", "autotune_picks"),
            [{"key": {}}],
            "missing required key 'config'",
        ),
        (("softmax_kernels", "triton.softmax", "speedup"), 2.0, "unexpected key 'speedup'"),
        (("softmax_kernels", "triton.softmax", "call_us_at_B512"), -3.0, "exclusive minimum"),
        (("softmax_kernels", "triton.softmax", "unstable"), "no", "expected boolean"),
        (("checks", "minigpt_torch.port", "status"), "ok", "is not one of"),
        (("ceilings", "copy_gbps"), 0, "exclusive minimum"),
        (("versions", "torch"), 2.11, "expected string or null"),
        (("command",), "", "shorter than 1"),
        (("notes",), ["fine", 3], "$.notes[1]: expected string"),
    ],
)
def test_invalid_manifests_are_rejected_with_the_path(path, value, message):
    m = copy.deepcopy(_manifest())
    target = m
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    errors = manifest.validate(m)
    assert errors and any(message in e for e in errors), errors
    assert any(e.startswith("$." + path[0]) for e in errors)


def test_missing_required_and_extra_top_level_keys():
    m = _manifest()
    del m["torch_port"]
    m["by_hand"] = True
    errors = manifest.validate(m)
    assert "$: missing required key 'torch_port'" in errors and "$: unexpected key 'by_hand'" in errors


def test_validator_types():
    assert manifest.validate(1.5, {"type": "integer"}) and not manifest.validate(2, {"type": "number"})
    assert manifest.validate(True, {"type": "number"})  # a bool is not a number here
    assert not manifest.validate(None, {"type": ["string", "null"], "pattern": "^x$"})
    assert manifest.validate([1, "a"], {"type": "array", "items": {"type": "integer"}}) == [
        "$[1]: expected integer, got str 'a'"
    ]


def test_torch_port_outcomes():
    assert manifest.torch_port({})["byte_equivalence_at_fp32_cpu"] == "not run"
    failed = {
        "minigpt_torch.port": {
            "status": "failed",
            "result": {"passed": False, "byte_equivalence_at_fp32_cpu": "failed"},
        }
    }
    assert manifest.torch_port(failed)["byte_equivalence_at_fp32_cpu"] == "failed"
    no_key = {"minigpt_torch.port": {"status": "passed", "result": {"passed": True}}}
    assert manifest.torch_port(no_key)["byte_equivalence_at_fp32_cpu"] == "passed"
    swap = {
        "minigpt_torch.kernel_swap": {
            "status": "failed",
            "result": {"passed": False, "kernel_swap_changes_top1_token": True},
        }
    }
    assert manifest.torch_port(swap)["kernel_swap_changes_top1_token"] is True


def test_autotune_pick_for_b512():
    picks = [
        {"key": {"N": 600, "dtype": "bfloat16"}, "config": {"BLOCK": 1}},
        {"key": {"N": 600, "dtype": "torch.float32"}, "config": {"BLOCK": 2}},
        {"key": {"N": 4096, "dtype": "float32"}, "config": {"BLOCK": 3}},
    ]
    assert manifest.pick_for(picks) == {"BLOCK": 2}
    assert manifest.pick_for(picks, n=4096) == {"BLOCK": 3}
    assert manifest.pick_for(picks[:1]) is None
    m = _manifest(autotune={"triton.softmax": "autotune_picks() raised RuntimeError: no GPU"})
    assert manifest.validate(m) == [] and m["softmax_kernels"]["triton.softmax"]["autotune_picked"] is None


def test_write_refuses_an_invalid_manifest(tmp_path):
    m = _manifest()
    path = manifest.write(m, tmp_path / "manifest.json")
    assert json.loads(path.read_text()) == json.loads(json.dumps(m))
    m["seed"] = "x"
    with pytest.raises(ValueError, match=r"\$\.seed"):
        manifest.write(m, tmp_path / "bad.json")
    assert not (tmp_path / "bad.json").exists()


def test_jsonable_converts_numpy():
    out = manifest.jsonable({"a": np.float32(0.5), "b": np.arange(3), "c": (1, 2), "d": np.bool_(True)})
    assert out == {"a": 0.5, "b": [0, 1, 2], "c": [1, 2], "d": True}
    assert type(out["a"]) is float and type(out["d"]) is bool
