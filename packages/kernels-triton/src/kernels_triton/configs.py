"""Which launch configuration a softmax launch gets: the config space, the picks, the heuristic.

A config is (BLOCK, num_warps, l2_hints, warp_rows); see kernels.py for what BLOCK selects. It
decides the order of a row's reductions, so by default (batch invariant) it is chosen from the
row length and dtype alone (choose_invariant). A launch never times anything: its config comes,
in this order, from

  1. the caller (`softmax(..., config=...)`);
  2. the user's tuned picks: `python -m kernels_triton.tune` writes them to a per-user
     cache file for this GPU and Triton version (user_picks_path()), with a SHA-256 of
     the content, so that a corrupt or edited file is ignored (with one warning);
  3. without batch invariance only, warp_rows_config(): a launch of a few short fp32 rows an
     SM takes a warp a row (ahead of the committed picks, which were timed before that form
     existed; the tune does not time it);
  4. the committed picks, autotune_picks.json beside this file, tuned on the GPU it names
     and used only on a GPU of that name;
  5. heuristic(): one pass with the row in registers while it fits, else the looped path.

Picks are tuned per number of rows an SM. Batch invariant, a row length takes one config for
every row count, the one with the least mean slowdown over the row counts tuned
(across_row_counts); without, the pick at the nearest row count (choose).

Picks are looked up by row-length bucket, the next power of two >= N, not by N itself: a
BLOCK is a power of two, so every N in a bucket gets the same tile shape (BLOCK_N, ROWS,
one pass or looped) from the same config, and a row length no one tuned still finds the
pick of its bucket. Without batch invariance, within a bucket, the pick tuned at the nearest
number of rows per SM (M / number of SMs, a power of two capped at ROWS_PER_SM_CAP) wins:
short launches and long ones want different configs for the same N.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import warnings
from dataclasses import dataclass
from pathlib import Path

import torch
import triton

INTERPRET = os.environ.get("TRITON_INTERPRET") == "1"  # read by Triton when it decorates a kernel
DTYPES = (torch.float32, torch.float16, torch.bfloat16)
PICKS_FILE = Path(__file__).with_name("autotune_picks.json")
ROWS_PER_SM_CAP = 64
USER_PICKS_FORMAT = 1

SHORT_BLOCKS = (256, 512, 1024, 2048)  # for every row length: several short rows a program
SHORT_WARPS = (2, 4, 8)
LONG_BLOCKS = (4096, 8192, 16384, 32768)  # whole rows above 2048, while they fit in registers
# The looped path with L2 hints: the block and warp counts at which the looped path was
# fastest among the plain configs in the tune.
HINTED = ((2048, 4), (2048, 8), (4096, 8), (4096, 16), (8192, 16), (8192, 32))
# A warp a row (kernels.py), 4 rows (warps) a program, for fp32 launches of more than 16 and at
# most 64 rows an SM whose rows hold 1 to 8 packs of 16 bytes a lane, without batch invariance
# only (a row count's rule): faster or level there in fp32; slower past 64 rows an SM, and in
# 16 bits at some row lengths, which keep the picks.
WARP_ROWS_PER_SM = (16, 64)  # (above, up to): M / SMs
WARP_ROWS_MAX_PACKS = 8
WARP_ROWS_WARPS = 4


@functools.cache
def num_sms(device_index: int) -> int:
    """SMs of the GPU; 1 for the interpreter (device index -1), which runs programs one after
    another."""
    if device_index >= 0:
        return torch.cuda.get_device_properties(device_index).multi_processor_count
    return 1


@dataclass(frozen=True)
class SoftmaxConfig:
    """One launch configuration.

    block:     elements a program holds at once (a power of two). >= N: one pass over
               whole rows; < N: the looped path with BLOCK-wide tiles.
    num_warps: warps per program (ignored by the interpreter).
    l2_hints:  looped path only: pass 1 loads with L2 eviction priority "evict_last" and
               pass 2 loads and stores with "evict_first", so that the second read of a
               row finds it in L2 more often (the output does not push it out).
    warp_rows: one pass with a warp a row: block // next_pow2(N) rows a program, as many
               as num_warps, each row in packs of 16 bytes over its warp's 32 lanes.
    """

    block: int
    num_warps: int = 4
    l2_hints: bool = False
    warp_rows: bool = False

    def __post_init__(self):
        if isinstance(self.block, bool) or not isinstance(self.block, int):
            raise TypeError(f"block must be an int, got {type(self.block).__name__}")
        if self.block < 1 or self.block & (self.block - 1):
            raise ValueError(f"block must be a power of two, got {self.block}")
        if self.num_warps not in (1, 2, 4, 8, 16, 32):
            raise ValueError(f"num_warps must be a power of two up to 32, got {self.num_warps}")
        if self.warp_rows and self.l2_hints:
            raise ValueError("l2_hints applies to the looped path, warp_rows to one pass: not both")

    def label(self) -> str:
        """BLOCK/num_warps[/L2][/W], as the tune log and the picks' timings name a config."""
        return (
            f"{self.block}/{self.num_warps}"
            + ("/L2" if self.l2_hints else "")
            + ("/W" if self.warp_rows else "")
        )

    def fields(self) -> dict:
        """The config as autotune_picks.json records it (l2_hints, warp_rows only where set)."""
        fields = {"block": self.block, "num_warps": self.num_warps}
        return fields | {k: True for k in ("l2_hints", "warp_rows") if getattr(self, k)}

    @classmethod
    def of(cls, pick: dict) -> SoftmaxConfig:
        return cls(pick["block"], pick["num_warps"], bool(pick.get("l2_hints", False)),
                   bool(pick.get("warp_rows", False)))  # fmt: skip


# Under the interpreter every launch uses this one config: choosing needs GPU timings, and
# one config keeps the CPU tests' coverage of both paths predictable (rows > 1024 loop).
INTERPRETER_CONFIG = SoftmaxConfig(block=1024, num_warps=4)


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).replace("torch.", "")


def next_pow2(n: int) -> int:
    """triton.next_power_of_2 without its constexpr-function wrapper (costly on the host)."""
    return 1 << (n - 1).bit_length() if n > 1 else 1


def bucket(n: int) -> int:
    """The row-length bucket of N: picks are shared by every N of a bucket."""
    return next_pow2(n)


def rows_per_sm(m: int, n_sms: int) -> int:
    return min(ROWS_PER_SM_CAP, next_pow2((m + n_sms - 1) // n_sms))


def warp_row_packs(n: int, itemsize: int) -> tuple[int, int, int]:
    """(width, packs, full) of a row of N laid out a warp a row: width = 32 lanes x 16
    bytes; packs = the packs of that width that cover the row; full = those inside it."""
    width = 32 * 16 // itemsize
    return width, -(-n // width), n // width


def warp_rows_config(m: int, n: int, dtype: torch.dtype, n_sms: int) -> SoftmaxConfig | None:
    """The warp-a-row config for a launch of M rows of N where the rule applies (see
    WARP_ROWS_PER_SM), else None."""
    above, up_to = WARP_ROWS_PER_SM
    _, packs, full = warp_row_packs(n, dtype.itemsize)
    if (
        dtype.itemsize != 4
        or not above * n_sms < m <= up_to * n_sms
        or full == 0  # rows under a pack a lane: not timed
        or packs > WARP_ROWS_MAX_PACKS
        or n % (16 // dtype.itemsize)  # else packs narrower than 16 bytes, and a row over several warps
    ):
        return None
    return SoftmaxConfig(WARP_ROWS_WARPS * next_pow2(n), WARP_ROWS_WARPS, warp_rows=True)


def fits_in_registers(block: int, num_warps: int, arrays: int) -> bool:
    """Whether `arrays` fp32 tiles of `block` values stay in registers: a thread may hold
    64 values and at most half of its register budget (65536 per SM / threads). Checked
    against ptxas for sm_90 (kernels_triton.offline): the one-pass backward at 32768 (two
    tiles) spills, the one-pass forward at 32768 with 16 warps does not."""
    values = arrays * block // (32 * num_warps)
    return values <= min(64, 1024 // num_warps)


def _space() -> tuple[SoftmaxConfig, ...]:
    configs = [SoftmaxConfig(b, w) for b in SHORT_BLOCKS for w in SHORT_WARPS]
    for block in LONG_BLOCKS:  # at least 8 values a thread: more warps would only idle
        configs += [SoftmaxConfig(block, w) for w in (4, 8, 16, 32) if block // (32 * w) >= 8]
    return (*configs, *(SoftmaxConfig(b, w, l2_hints=True) for b, w in HINTED))


SPACE = _space()  # every config tune may time


def candidates(streams: int, n: int) -> list[SoftmaxConfig]:
    """The configs worth timing for rows of N in a kernel that reads `streams` tensors: the
    short blocks always; a longer block only up to the one that holds the row, and only
    where its tiles fit in registers -- `streams` tiles in one pass, three when looped
    (the tile and two per-lane accumulators); L2 hints only where the row loops."""

    def keep(c: SoftmaxConfig) -> bool:
        if c.l2_hints:
            return c.block < n and fits_in_registers(c.block, c.num_warps, 3)
        arrays = streams if c.block >= n else 3
        return c.block in SHORT_BLOCKS or (
            c.block <= next_pow2(n) and fits_in_registers(c.block, c.num_warps, arrays)
        )

    return [c for c in SPACE if keep(c)]


def heuristic(streams: int, n: int) -> SoftmaxConfig:
    """A config for a row length with no pick, chosen without timing anything: the whole
    row in one program while `streams` tiles of it fit in registers (at least 1024 wide,
    so that short rows share a program), about 32 values a thread; past that, the looped
    path at its widest tile with L2 hints. These are the shapes of the committed picks."""
    block = max(1024, next_pow2(n))
    warps = min(32, max(4, block // 1024))
    if fits_in_registers(block, warps, streams):
        return SoftmaxConfig(block, warps)
    return SoftmaxConfig(8192, 32, l2_hints=True)


# --- picks: committed and user-tuned, indexed by (kernel, dtype, bucket) ------------------


def user_picks_path(gpu: str) -> Path:
    """The per-user picks file for this GPU and Triton version: under $XDG_CACHE_HOME
    (default ~/.cache)/kernel-lab/."""
    root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    slug = re.sub(r"[^A-Za-z0-9.]+", "-", gpu).strip("-")
    return root / "kernel-lab" / f"triton-picks-{slug}-{triton.__version__}.json"


def digest(gpu: str, picks: list[dict]) -> str:
    """SHA-256 of what a user picks file holds, as its `sha256` field records it."""
    body = {"format": USER_PICKS_FORMAT, "gpu": gpu, "triton": triton.__version__, "picks": picks}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def read_user_picks(path: Path, gpu: str) -> list[dict]:
    """The picks in a user picks file, [] if there is none; a file that does not parse,
    fails its hash or names another GPU or Triton is ignored with one warning."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        return []
    except OSError as exc:
        warnings.warn(f"ignoring tuned picks {path}: {exc}", stacklevel=2)
        return []
    try:
        doc = json.loads(text)
        picks = doc["picks"]
        ok = doc["sha256"] == digest(gpu, picks) and doc["gpu"] == gpu and all(_valid(p) for p in picks)
    except (ValueError, KeyError, TypeError):
        ok = False
    if not ok:
        warnings.warn(
            f"ignoring tuned picks {path}: corrupt or not this GPU's (rerun python -m kernels_triton.tune)",
            stacklevel=2,
        )
        return []
    return picks


def _valid(p: dict) -> bool:
    try:
        SoftmaxConfig.of(p)
        return p["kernel"] in ("softmax_fwd", "softmax_bwd") and p["N"] >= 1 and p["rows_per_sm"] >= 1
    except (KeyError, TypeError, ValueError):
        return False


@functools.cache
def committed() -> dict:
    """autotune_picks.json (packaged, written only by hand from a tune's output)."""
    try:
        doc = json.loads(PICKS_FILE.read_text())
        if all(_valid(p) for p in doc["picks"]):
            return doc
    except (OSError, ValueError, KeyError, TypeError):
        pass
    warnings.warn(f"ignoring committed picks {PICKS_FILE}: unreadable or malformed", stacklevel=2)
    return {"gpu": None, "picks": []}


def index(picks: list[dict]) -> dict[tuple, dict[tuple[int, int], SoftmaxConfig]]:
    """(kernel, dtype name, bucket) -> {(rows_per_sm, N tuned at): config}; a later pick
    replaces an earlier one for the same key. N is kept because a bucket can hold picks
    tuned at several row lengths (600 and 1024 share one) that want different configs."""
    out: dict[tuple, dict[tuple[int, int], SoftmaxConfig]] = {}
    for p in picks:
        key = (p["kernel"], p["dtype"], bucket(p["N"]))
        out.setdefault(key, {})[(p["rows_per_sm"], p["N"])] = SoftmaxConfig.of(p)
    return out


def of_label(label: str) -> SoftmaxConfig:
    """The config a label (SoftmaxConfig.label) names."""
    block, warps, *flags = label.split("/")
    return SoftmaxConfig(int(block), int(warps), "L2" in flags, "W" in flags)


def across_row_counts(picks: list[dict]) -> SoftmaxConfig:
    """The one config for every row count of picks tuned at several (one kernel, dtype and row
    length): the least mean slowdown against each row count's fastest, among the configs timed
    at every one. Each row count weighs the same, so that a long launch's microseconds do not
    outvote the short launches' call time. Picks without timings: the one tuned at the most rows."""
    if not all(p.get("timings_us") for p in picks):
        return SoftmaxConfig.of(max(picks, key=lambda p: p["rows_per_sm"]))
    timed = [p["timings_us"] for p in picks]
    common = set.intersection(*(set(t) for t in timed))
    if not common:
        return SoftmaxConfig.of(max(picks, key=lambda p: p["rows_per_sm"]))
    slowdown = {c: sum(t[c] / min(t.values()) for t in timed) for c in common}
    return of_label(min(sorted(common), key=lambda c: slowdown[c]))


def invariant_index(picks: list[dict]) -> dict[tuple, dict[int, SoftmaxConfig]]:
    """(kernel, dtype name, bucket) -> {N tuned at: the config for every row count}
    (across_row_counts); a later pick replaces an earlier one of the same rows per SM."""
    grouped: dict[tuple, dict[int, dict]] = {}
    for p in picks:
        grouped.setdefault((p["kernel"], p["dtype"], bucket(p["N"]), p["N"]), {})[p["rows_per_sm"]] = p
    out: dict[tuple, dict[int, SoftmaxConfig]] = {}
    for (kernel, dtype, b, n), by_rows in grouped.items():
        out.setdefault((kernel, dtype, b), {})[n] = across_row_counts(list(by_rows.values()))
    return out


@functools.cache
def _indexes(gpu: str) -> tuple[tuple[str, dict], ...]:
    """The pick indexes that apply on this GPU, the user's tuned ones first."""
    found = [("tuned", index(read_user_picks(user_picks_path(gpu), gpu)))]
    if committed()["gpu"] == gpu:
        found.append(("committed", index(committed()["picks"])))
    return tuple(found)


@functools.cache
def _invariant_indexes(gpu: str) -> tuple[tuple[str, dict], ...]:
    """_indexes' picks, one config a row length (invariant_index)."""
    found = [("tuned", invariant_index(read_user_picks(user_picks_path(gpu), gpu)))]
    if committed()["gpu"] == gpu:
        found.append(("committed", invariant_index(committed()["picks"])))
    return tuple(found)


def forget() -> None:
    """Drop what was read from the picks files (after a tune wrote new picks)."""
    _indexes.cache_clear()
    _invariant_indexes.cache_clear()
    committed.cache_clear()


def _nearest(idx: dict, name: str, dtype_names: list[str], n: int, want: int) -> SoftmaxConfig | None:
    """The pick of `idx` for kernel `name` at rows of N and `want` rows per SM, from the first
    of `dtype_names` with picks in N's bucket: the nearest rows per SM first, then the nearest
    row length, then the smaller; None where there is none."""
    for dtype_name_ in dtype_names:
        by_rows = idx.get((name, dtype_name_, bucket(n)))
        if by_rows:
            return by_rows[
                min(by_rows, key=lambda rn: (abs(rn[0].bit_length() - want.bit_length()), abs(rn[1] - n), rn))
            ]
    return None


def choose(name: str, streams: int, m: int, n: int, dtype: torch.dtype, gpu: str | None, n_sms: int):
    """(config, source) for a launch of kernel `name` on M rows of N in `dtype` on the GPU
    named `gpu` (None: the interpreter). A pick of another dtype of the same size serves
    when this one has none (fp16 takes bf16's: the same bytes, the same fp32 arithmetic)."""
    if gpu is None:
        return INTERPRETER_CONFIG, "interpreter"
    want = rows_per_sm(m, n_sms)
    names = [dtype_name(dtype)] + [
        dtype_name(d) for d in DTYPES if d != dtype and d.itemsize == dtype.itemsize
    ]
    indexes = dict(_indexes(gpu))
    if (config := _nearest(indexes["tuned"], name, names, n, want)) is not None:
        return config, "tuned"
    if (config := warp_rows_config(m, n, dtype, n_sms)) is not None:
        return config, "warp rows"
    if (config := _nearest(indexes.get("committed", {}), name, names, n, want)) is not None:
        return config, "committed"
    return heuristic(streams, n), "heuristic"


def choose_invariant(name: str, streams: int, n: int, dtype: torch.dtype, gpu: str | None):
    """(config, source) for kernel `name` on rows of N in `dtype` whatever the row count: the
    config decides a row's reduction order, so with no M here a row's bits cannot depend on
    the rest of the batch. The picks of N's bucket at the nearest row length tuned
    (across_row_counts), the user's tuned ones first, else the heuristic; no warp a row (its
    rule is a row count's)."""
    if gpu is None:
        return INTERPRETER_CONFIG, "interpreter"
    names = [dtype_name(dtype)] + [
        dtype_name(d) for d in DTYPES if d != dtype and d.itemsize == dtype.itemsize
    ]
    for source, idx in _invariant_indexes(gpu):
        for name_ in names:
            by_n = idx.get((name, name_, bucket(n)))
            if by_n:
                return by_n[min(by_n, key=lambda t: (abs(t - n), t))], source
    return heuristic(streams, n), "heuristic"
