"""manifest.json: what an experiment measured, on what, with what, by which command.

Filled by `lab run` from its own measurements and checks, never by hand, and validated
against `SCHEMA` before it is written. The fields of lab 03's Block E, plus what we
measure besides:

- ``softmax_kernels``: one entry per softmax implementation timed at B512 -- the shape
  (512, 600) in float32, batch 512 rows of the MiniGPT's V ~ 600 -- keyed by
  implementation name: ``us_at_B512`` (median, microseconds) and ``frac_of_F_softmax`` =
  t(F.softmax) / t(kernel) (1.0: as fast as F.softmax; 0.5: twice as slow). An
  implementation with ``meta["autotune_picks"]`` (see `labtools.registry`) adds
  ``autotune_picks`` (all picks made in the run) and ``autotune_picked`` (the pick for
  N=600 float32: the config that produced us_at_B512).
- ``torch_port``: read from the registered checks ``minigpt_torch.port`` (keys
  ``byte_equivalence_at_fp32_cpu`` -- a bool or "passed"/"failed" --,
  ``max_abs_diff_to_numpy_reference``, ``fp64_max_abs_diff``) and
  ``minigpt_torch.kernel_swap`` (``kernel_swap_changes_top1_token``; needs CUDA).
  Anything not run is "not run" / null, and ``checks`` says why.
- ``ceilings``, ``sweeps`` (op -> sweep JSON next to the manifest), ``checks``,
  ``command``, ``notes`` (what this machine could not run, and why).
- ``roofline``: the lab text's four-dot figure (`labtools.roofline.seed_summary`): its
  file, shape and dtype, each dot with its implementation, shape and dtype, the
  reference line, and the seed kernels missing with the reason; null when none ran.

The schema is a small subset of JSON Schema (type, enum, properties, required,
additionalProperties, items, minimum, exclusiveMinimum, minLength, pattern), checked by
`validate`, so no schema library is needed.
"""

from __future__ import annotations

import datetime
import json
import re
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from labtools.atomic import atomic_write_text
from labtools.bench import BenchRecord
from labtools.ceilings import Ceilings

PORT_CHECK = "minigpt_torch.port"
SWAP_CHECK = "minigpt_torch.kernel_swap"
OUTCOMES = ["passed", "failed", "not run"]
CHECK_STATUSES = ["passed", "failed", "error", "skipped"]

_STR = {"type": "string", "minLength": 1}
_OPT_STR = {"type": ["string", "null"]}
_NONNEG = {"type": ["number", "null"], "minimum": 0}
_PICK = {
    "type": "object",
    "required": ["key", "config"],
    "properties": {"key": {"type": "object"}, "config": {"type": "object"}},
}

KERNEL_SCHEMA = {
    "type": "object",
    "required": [
        "impl",
        "label",
        "backend",
        "device",
        "us_at_B512",
        "frac_of_F_softmax",
        "call_us_at_B512",
        "call_frac_of_F_softmax",
    ],
    "additionalProperties": False,
    "properties": {
        "impl": _STR,
        "label": _STR,
        "backend": _STR,
        "device": {"enum": ["cuda", "cpu"]},
        "us_at_B512": {"type": "number", "exclusiveMinimum": 0},
        "frac_of_F_softmax": {"type": ["number", "null"], "exclusiveMinimum": 0},
        "call_us_at_B512": {"type": ["number", "null"], "exclusiveMinimum": 0},
        "call_frac_of_F_softmax": {"type": ["number", "null"], "exclusiveMinimum": 0},
        "threads": {"type": ["integer", "null"], "minimum": 1},
        "unstable": {"type": "boolean"},
        "unstable_why": {"type": "string"},
        "autotune_picked": {"type": ["object", "null"]},
        "autotune_picks": {"type": ["array", "string"], "items": _PICK},  # a string: why there are none
    },
}

SCHEMA = {
    "type": "object",
    "required": [
        "experiment",
        "date",
        "seed",
        "device",
        "gpu",
        "versions",
        "softmax_kernels",
        "torch_port",
        "ceilings",
        "sweeps",
        "checks",
        "command",
        "produced_by",
        "notes",
    ],
    "additionalProperties": False,
    "properties": {
        "experiment": {"type": "string", "pattern": r"^\d\d-[a-z0-9-]+$"},
        "date": {"type": "string", "pattern": r"^\d{4}-\d{2}-\d{2}$"},
        "seed": {"type": "integer"},
        "device": {"enum": ["cuda", "cpu"]},
        "gpu": {
            "type": "object",
            "required": ["model", "compute_capability"],
            "additionalProperties": False,
            "properties": {
                "model": _OPT_STR,
                "compute_capability": {"type": ["string", "null"], "pattern": r"^\d+\.\d+$"},
            },
        },
        "versions": {
            "type": "object",
            "required": ["python", "torch", "triton", "cupy"],
            "properties": {"python": _STR},
            "additionalProperties": _OPT_STR,
        },
        "softmax_kernels": {"type": "object", "additionalProperties": KERNEL_SCHEMA},
        "torch_port": {
            "type": "object",
            "required": [
                "byte_equivalence_at_fp32_cpu",
                "max_abs_diff_to_numpy_reference",
                "fp64_max_abs_diff",
                "kernel_swap_changes_top1_token",
            ],
            "additionalProperties": False,
            "properties": {
                "byte_equivalence_at_fp32_cpu": {"enum": OUTCOMES},
                "max_abs_diff_to_numpy_reference": _NONNEG,
                "fp64_max_abs_diff": _NONNEG,
                "kernel_swap_changes_top1_token": {"type": ["boolean", "null"]},
            },
        },
        "ceilings": {
            "type": ["object", "null"],
            "required": ["device", "copy_gbps", "matmul_tflops", "datasheet"],
            "properties": {
                "device": _STR,
                "copy_gbps": {"type": "number", "exclusiveMinimum": 0},
                "matmul_tflops": {
                    "type": "object",
                    "additionalProperties": {"type": "number", "exclusiveMinimum": 0},
                },
                "datasheet": {"type": ["object", "null"]},
            },
        },
        "sweeps": {"type": "object", "additionalProperties": _STR},
        "checks": {
            "type": "object",
            "additionalProperties": {
                "type": "object",
                "required": ["status"],
                "additionalProperties": False,
                "properties": {
                    "status": {"enum": CHECK_STATUSES},
                    "reason": {"type": "string"},
                    "seconds": {"type": "number", "minimum": 0},
                    "result": {"type": "object"},
                },
            },
        },
        "command": _STR,
        "produced_by": _STR,
        "notes": {"type": "array", "items": {"type": "string"}},
        "roofline": {"type": ["object", "null"], "required": ["file", "shape", "dtype", "dots"]},
    },
}


# --- the validator -------------------------------------------------------------------

_TYPES = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}


def validate(value, schema: dict = SCHEMA, path: str = "$") -> list[str]:
    """Every way `value` breaks `schema`, as "path: problem" strings ([] when valid)."""
    errors: list[str] = []
    types = schema.get("type")
    if types is not None:
        types = [types] if isinstance(types, str) else types
        if not any(_TYPES[t](value) for t in types):
            return [f"{path}: expected {' or '.join(types)}, got {type(value).__name__} {value!r:.60}"]
    if "enum" in schema and value not in schema["enum"]:
        errors.append(f"{path}: {value!r} is not one of {schema['enum']}")
    if _TYPES["number"](value):
        if "minimum" in schema and value < schema["minimum"]:
            errors.append(f"{path}: {value} < minimum {schema['minimum']}")
        if "exclusiveMinimum" in schema and value <= schema["exclusiveMinimum"]:
            errors.append(f"{path}: {value} <= exclusive minimum {schema['exclusiveMinimum']}")
    if isinstance(value, str):
        if len(value) < schema.get("minLength", 0):
            errors.append(f"{path}: shorter than {schema['minLength']} characters")
        if "pattern" in schema and not re.search(schema["pattern"], value):
            errors.append(f"{path}: {value!r} does not match {schema['pattern']}")
    if isinstance(value, list) and "items" in schema:
        for k, item in enumerate(value):
            errors += validate(item, schema["items"], f"{path}[{k}]")
    if isinstance(value, dict):
        props = schema.get("properties", {})
        errors += [
            f"{path}: missing required key {k!r}" for k in schema.get("required", []) if k not in value
        ]
        extra = schema.get("additionalProperties", True)
        for k, v in value.items():
            if k in props:
                errors += validate(v, props[k], f"{path}.{k}")
            elif extra is False:
                errors.append(f"{path}: unexpected key {k!r}")
            elif isinstance(extra, dict):
                errors += validate(v, extra, f"{path}.{k}")
    return errors


# --- building one --------------------------------------------------------------------


def _outcome(value) -> str:
    if isinstance(value, bool):
        return "passed" if value else "failed"
    return value if value in OUTCOMES else "not run"


def torch_port(checks: dict[str, dict]) -> dict:
    """The torch_port block from the two minigpt_torch checks' results (absent: not run)."""
    port = checks.get(PORT_CHECK, {}).get("result", {})
    swap = checks.get(SWAP_CHECK, {}).get("result", {})
    byte_eq = port.get("byte_equivalence_at_fp32_cpu", port.get("passed") if port else None)
    return {
        "byte_equivalence_at_fp32_cpu": _outcome(byte_eq),
        "max_abs_diff_to_numpy_reference": port.get("max_abs_diff_to_numpy_reference"),
        "fp64_max_abs_diff": port.get("fp64_max_abs_diff"),
        "kernel_swap_changes_top1_token": swap.get("kernel_swap_changes_top1_token"),
    }


def pick_for(picks: list[dict], n: int = 600, dtype: str = "float32") -> dict | None:
    """The autotune config chosen for row length `n` in `dtype` (None if not among `picks`)."""
    for p in picks:
        key = p.get("key", {})
        if key.get("N") == n and str(key.get("dtype", dtype)).replace("torch.", "") == dtype:
            return p.get("config")
    return None


def softmax_kernels(b512: list[BenchRecord], autotune: dict[str, list[dict] | str]) -> dict:
    out = {}
    for r in b512:
        entry = {
            "impl": r.impl,
            "label": r.label,
            "backend": r.backend,
            "device": r.device,
            "us_at_B512": r.median_us,
            "frac_of_F_softmax": r.vs_ref,
            "call_us_at_B512": r.call_us,
            "call_frac_of_F_softmax": r.call_vs_ref,
            "threads": r.threads,
            "unstable": r.unstable,
        }
        if r.unstable:
            entry["unstable_why"] = r.unstable_why
        if r.impl in autotune:
            picks = autotune[r.impl]
            entry["autotune_picks"] = picks
            entry["autotune_picked"] = pick_for(picks) if isinstance(picks, list) else None
        out[r.impl] = entry
    return out


def build(
    *,
    experiment: str,
    seed: int,
    device: str,
    environment: dict,
    b512: list[BenchRecord],
    autotune: dict[str, list[dict] | str],
    checks: dict[str, dict],
    ceilings: Ceilings | None,
    sweeps: dict[str, str],
    command: str,
    notes: list[str],
    date: str | None = None,
    roofline: dict | None = None,
) -> dict:
    gpu = (environment.get("devices") or [None])[0] if device == "cuda" else None
    try:
        produced_by = f"labtools {version('kernel-lab-labtools')}: lab run"
    except PackageNotFoundError:
        produced_by = "labtools: lab run"
    return {
        "experiment": experiment,
        "date": date or datetime.date.today().isoformat(),
        "seed": seed,
        "device": device,
        "gpu": {"model": gpu and gpu["name"], "compute_capability": gpu and gpu["compute_capability"]},
        "versions": {"python": environment["python"], **environment["versions"]},
        "softmax_kernels": softmax_kernels(b512, autotune),
        "torch_port": torch_port(checks),
        "ceilings": None if ceilings is None else ceilings.to_dict(),
        "sweeps": sweeps,
        "checks": checks,
        "command": command,
        "produced_by": produced_by,
        "notes": notes,
        "roofline": roofline,
    }


def jsonable(value):
    """NumPy scalars and arrays, tuples, paths -> plain JSON values (for check results)."""
    return json.loads(json.dumps(value, default=_plain))


def _plain(v):
    if hasattr(v, "tolist"):  # NumPy scalars and arrays, torch tensors
        return v.tolist()
    return str(v)


def write(manifest: dict, path: Path) -> Path:
    """Validate, then write; an invalid manifest is an error, never a file."""
    errors = validate(manifest)
    if errors:
        raise ValueError("manifest does not match the schema:\n  " + "\n  ".join(errors))
    path = Path(path)
    atomic_write_text(path, json.dumps(manifest, indent=2) + "\n")
    return path
