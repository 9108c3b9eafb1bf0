"""Per-card picks of `variant="auto"`'s plan, and the rule for a card without them.

A pick names one plan for rows of N in a dtype, forward or backward, on one GPU (by name):

    "fused:T"    the row-in-registers kernel at T threads a row, each holding the packs the row needs
    "cluster:C"  the cluster kernel (sm_90) over C blocks a row
    "online"     the forward's two-pass online kernel; "twopass": the backward's

`python -m kernels_cuda.tune` times each plan that could serve a shape and keeps, for each
(direction, dtype, N), the one of least mean slowdown over the row counts it timed: one plan for
every row count, so the batch-invariant default holds. Its picks go to this user's file for the
GPU (user_path, source "tuned"), or with --commit to the GPU's section of cuda_picks.json beside
this file ("committed"), to commit as is. A plan looks its pick up by bucket (the next power of
two >= N) at the nearest N tuned, the user's first; a pick that cannot serve a row (rows not
whole 16-byte packs, a row too long for T threads) leaves it to the rule ("rule", AutoConfig's
and BackwardConfig's defaults, with `fused_packs` from the device's bandwidth). Nothing is timed
on the call path.
"""

from __future__ import annotations

import functools
import json
import os
import re
import warnings
from dataclasses import replace
from pathlib import Path

from kernels_cuda.launch_types import Device, RowPlan, full_vec

PICKS_FILE = Path(__file__).with_name("cuda_picks.json")
DIRECTIONS = ("forward", "backward")
# Little's law: an SM keeps bandwidth x FLIGHT_S / SMs bytes of loads in flight to stream at the
# memory's rate. FLIGHT_S is what v3's tuned shape on an H100 keeps (2048 threads an SM x 2 packs
# of 16 bytes = 64 KB, with 132 SMs and HBM3 at 2619 MHz on 5120 bits: 3.35 TB/s); another card
# scales by its own bandwidth, SMs and threads.
FLIGHT_S = 64 * 1024 * 132 / (2 * 2619e6 * 5120 / 8)
RULE_MAX_PACKS = 4  # the most packs a thread the rule gives before a row takes more threads

# Where each direction's picks came from, as the plans last used them: (direction, N, dtype) ->
# {"card", "source", "plan"}, for `lab bench` and `lab run` records (labtools reads it through the
# plugin's meta["autotune_picks"]).
USED: dict[tuple, dict] = {}


def fused_packs(device: Device) -> int:
    """The packs a thread that keep the bytes an SM needs in flight, bandwidth x FLIGHT_S / SMs,
    over its resident threads at 16 bytes a pack: 2 on an H100, 3 on an H200 (0: bandwidth unknown)."""
    need = device.bandwidth * FLIGHT_S / device.sms / (device.threads_per_sm * 16)
    return min(RULE_MAX_PACKS, round(need))


def for_card(cfg, device: Device):
    """cfg (AutoConfig or BackwardConfig) with packs a thread (fused_packs_*) of at least what this
    device's bandwidth needs (fused_packs): the rule for a card without picks."""
    packs = fused_packs(device)
    changes = {k: packs for k in ("fused_packs_f32", "fused_packs_16bit") if getattr(cfg, k) < packs}
    return replace(cfg, **changes) if changes else cfg


def user_path(gpu: str) -> Path:
    """This user's picks file for GPU `gpu`: in $XDG_CACHE_HOME (~/.cache)/kernel-lab/."""
    root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return root / "kernel-lab" / f"cuda-picks-{re.sub(r'[^A-Za-z0-9.]+', '-', gpu).strip('-')}.json"


def _read(path: Path, gpu: str) -> list[dict]:
    """The picks for `gpu` in a picks file ({"cards": {name: {"picks": [...]}}}), [] if none; a file
    that does not parse is ignored with one warning."""
    try:
        picks = json.loads(path.read_text())["cards"].get(gpu, {}).get("picks", [])
        if all(p["direction"] in DIRECTIONS and p["N"] >= 1 and isinstance(p["plan"], str) for p in picks):
            return picks
    except FileNotFoundError:
        return []
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        pass
    warnings.warn(f"ignoring CUDA picks {path}: unreadable or malformed", stacklevel=3)
    return []


@functools.cache
def _indexes(gpu: str) -> tuple[tuple[str, dict], ...]:
    """(source, {(direction, dtype, bucket): {N tuned at: plan label}}), the user's first."""
    out = []
    for source, path in (("tuned", user_path(gpu)), ("committed", PICKS_FILE)):
        idx: dict[tuple, dict[int, str]] = {}
        for p in _read(path, gpu) if gpu else []:
            idx.setdefault((p["direction"], p["dtype"], 1 << (p["N"] - 1).bit_length()), {})[p["N"]] = p[
                "plan"
            ]
        out.append((source, idx))
    return tuple(out)


def committed_fused(direction: str, dtype: str) -> list[int]:
    """The threads a row of every committed fused pick of `direction` and `dtype` (any card)."""
    try:
        cards = json.loads(PICKS_FILE.read_text())["cards"].values()
    except (OSError, ValueError, KeyError, AttributeError):
        return []
    labels = {
        p["plan"]
        for card in cards
        for p in card["picks"]
        if (p["direction"], p["dtype"]) == (direction, dtype)
    }
    return sorted(int(k) for form, _, k in (label.partition(":") for label in labels) if form == "fused")


def forget() -> None:
    """Drop what was read from the picks files (after a tune wrote new ones)."""
    _indexes.cache_clear()


def lookup(direction: str, N: int, dtype: str, gpu: str) -> tuple[str, str] | None:
    """(plan label, source) of the pick for rows of N on GPU `gpu`, the user's first; None: none."""
    for source, idx in _indexes(gpu):
        by_n = idx.get((direction, dtype, 1 << (N - 1).bit_length()))
        if by_n:
            return by_n[min(by_n, key=lambda n: (abs(n - N), n))], source
    return None


def pick_or_rule(direction: str, N: int, dtype: str, device: Device, from_label, rule) -> tuple[str, RowPlan]:
    """(source, plan) of auto for rows of N: from_label(this card's pick) where a pick is found
    and can serve the rows, else ("rule", rule()). Not recorded in USED (`record` does that)."""
    found = lookup(direction, N, dtype, device.name) if device.name else None
    rows = found and from_label(found[0])
    return (found[1], rows) if rows else ("rule", rule())


def record(direction: str, N: int, dtype: str, device: Device, source: str, rows: RowPlan) -> RowPlan:
    """Note in USED where the plan of rows of N came from; returns `rows`."""
    if len(USED) >= 4096:
        USED.clear()
    plan = rows.spec.name.split(".", 1)[-1]
    USED[(direction, N, dtype)] = {"card": device.name or None, "source": source, "plan": plan}
    return rows


def used(direction: str) -> list[dict]:
    """USED of one direction in labtools' convention ([{"key": ..., "config": ...}], labtools.registry)."""
    return [{"key": {"N": n, "dtype": t}, "config": v} for (d, n, t), v in USED.items() if d == direction]


def parse(label: str, vec: int, dtype: str) -> tuple[str, int]:
    """(form, threads a row or cluster size) of a pick's plan label; a fused pick needs rows of
    whole 16-byte packs (else ("", 0): the rule serves the row)."""
    form, _, k = label.partition(":")
    if form == "fused" and vec != full_vec(dtype):
        return "", 0
    return form, int(k or 0)
