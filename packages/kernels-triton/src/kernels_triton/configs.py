"""Which config a tile launch gets (choose): the config space, the picks, the rule for a card without.

A config orders a row's reductions (kernels.py), so it follows from N, the dtype and the card alone, never
the row count (batch invariance), and nothing is timed on the call path: the caller's ("given"), else the
user's picks ("tuned", tune.py), else this GPU's in autotune_picks.json ("committed"), else rule()."""

from __future__ import annotations

import functools
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
SHORT_BLOCKS, SHORT_WARPS = (256, 512, 1024, 2048), (2, 4, 8)  # any N: several short rows a program
LONG_BLOCKS = (4096, 8192, 16384, 32768)  # whole rows; for short rows, up to 8 rows a program
# The looped path with L2 hints: the block and warp counts at which it was fastest in the tune.
HINTED = ((2048, 4), (2048, 8), (4096, 8), (4096, 16), (8192, 16), (8192, 32))
WARP_ROWS_MAX_PACKS, WARP_ROWS_WARPS = 8, 4  # a warp a row: packs of 16 bytes a lane at most; rows a program
# The family's rows by bytes an element: (longest held in registers, unspilled; looped 16 KB BLOCK, its warps)
ROW_SHAPES = {2: (16384, 8192, 16), 4: (8192, 4096, 16), 8: (4096, 2048, 16)}
# Little's law: an SM keeps bandwidth x FLIGHT_S / SMs bytes of loads in flight to stream at the memory's
# rate. FLIGHT_S: what the looped grid's 32 KB an SM, tuned on an H100 (132 SMs, 3.35 TB/s HBM3), implies.
FLIGHT_S = 32 * 1024 * 132 / (2 * 2619e6 * 5120 / 8)


@functools.cache
def num_sms(device_index: int) -> int:
    """SMs of the GPU; 1 for the interpreter (device index -1)."""
    return torch.cuda.get_device_properties(device_index).multi_processor_count if device_index >= 0 else 1


@functools.cache
def bytes_in_flight_per_sm(device_index: int) -> int:
    """bandwidth x FLIGHT_S / SMs in whole KB (memory clock x 2, double data rate, x bus width);
    32 KB without the properties (or a device, index -1)."""
    p = torch.cuda.get_device_properties(device_index) if device_index >= 0 else None
    bandwidth = 2e3 * getattr(p, "memory_clock_rate", 0) * getattr(p, "memory_bus_width", 0) / 8
    return round(bandwidth * FLIGHT_S / num_sms(device_index) / 1024) * 1024 or 32 * 1024


@dataclass(frozen=True)
class SoftmaxConfig:
    """A tile launch's config (kernels.py): block, the elements a program holds (>= N: one pass,
    else looped tiles); warp_rows: one pass, a warp a row, num_warps rows a program."""

    block: int
    num_warps: int = 4
    l2_hints: bool = False
    warp_rows: bool = False

    def __post_init__(self):
        if type(self.block) is not int or self.block < 1 or self.block & (self.block - 1):
            raise ValueError(f"block must be a power of two, got {self.block!r}")
        if self.num_warps not in (1, 2, 4, 8, 16, 32):
            raise ValueError(f"num_warps must be a power of two up to 32, got {self.num_warps}")
        if self.warp_rows and self.l2_hints:
            raise ValueError("l2_hints applies to the looped path, warp_rows to one pass: not both")

    def label(self) -> str:  # as the picks' timings name a config
        return f"{self.block}/{self.num_warps}" + "/L2" * self.l2_hints + "/W" * self.warp_rows

    def fields(self) -> dict:  # as the picks files record it
        fields = {"block": self.block, "num_warps": self.num_warps}
        return fields | {k: True for k in ("l2_hints", "warp_rows") if getattr(self, k)}

    @classmethod
    def of(cls, pick: dict) -> SoftmaxConfig:
        return cls(pick["block"], pick["num_warps"], bool(pick.get("l2_hints")), bool(pick.get("warp_rows")))


INTERPRETER_CONFIG = SoftmaxConfig(block=1024, num_warps=4)  # predictable CPU test coverage: rows > 1024 loop


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def next_pow2(n: int) -> int:
    """triton.next_power_of_2 without its constexpr-function wrapper (costly on the host)."""
    return 1 << (n - 1).bit_length() if n > 1 else 1


def warp_row_packs(n: int, itemsize: int) -> tuple[int, int, int]:
    """(width, packs, full) of a row of N a warp a row: packs of 32 lanes x 16 bytes, those inside it."""
    width = 32 * 16 // itemsize
    return width, -(-n // width), n // width


def warp_rows_fit(n: int, itemsize: int) -> bool:
    _, packs, full = warp_row_packs(n, itemsize)
    return full > 0 and packs <= WARP_ROWS_MAX_PACKS and n % (16 // itemsize) == 0


def fits_in_registers(block: int, num_warps: int, arrays: int) -> bool:
    """Whether `arrays` fp32 tiles of `block` values stay in registers: a thread may hold 64 values and half
    of its share of an SM's 64K registers (every SM since sm_50 has 64K; ptxas for sm_90, as the tests' SASS
    tools compile it: the one-pass backward at 32768, two tiles, spills; the forward with 16 warps does not)."""
    return arrays * block // (32 * num_warps) <= min(64, 65536 // (64 * num_warps))


SPACE = (  # every config tune may time but the warp-a-row ones (their BLOCK follows N)
    *(SoftmaxConfig(b, w) for b in SHORT_BLOCKS for w in SHORT_WARPS),
    # at least 8 values a thread: more warps would only idle
    *(SoftmaxConfig(b, w) for b in LONG_BLOCKS for w in (4, 8, 16, 32) if b // (32 * w) >= 8),
    *(SoftmaxConfig(b, w, l2_hints=True) for b, w in HINTED),
)


def candidates(streams: int, n: int, itemsize: int = 4) -> list[SoftmaxConfig]:
    """The configs worth timing for rows of N, a kernel reading `streams` tensors: those whose
    tiles fit in registers (`streams` tiles one pass, 3 looped), and a warp a row where it fits.
    Many rows a program, or a warp a row, keep more bytes in flight an SM: more bandwidth needs it."""

    def keep(c: SoftmaxConfig) -> bool:
        fits = fits_in_registers(c.block, c.num_warps, streams if c.block >= n else 3)
        if c.l2_hints:
            return c.block < n and fits
        return c.block in SHORT_BLOCKS or (c.block <= max(8192, next_pow2(n)) and fits)

    warp_rows = [SoftmaxConfig(w * next_pow2(n), w, warp_rows=True) for w in (2, 4, 8)]
    return [c for c in SPACE if keep(c)] + warp_rows * warp_rows_fit(n, itemsize)


def rule(streams: int, n: int, dtype: torch.dtype = torch.float32) -> SoftmaxConfig:
    """The config for rows of N on a card with no picks: a warp a row where rows are whole 16-byte packs, 1 to 8 a
    lane (4 rows a program, padded to a pack, not a power of two: more bytes in flight); else one pass, about 32
    values a thread, where `streams` tiles fit in its registers; else looped, the widest hinted tile that fits."""
    if warp_rows_fit(n, dtype.itemsize):
        return SoftmaxConfig(WARP_ROWS_WARPS * next_pow2(n), WARP_ROWS_WARPS, warp_rows=True)
    block = max(1024, next_pow2(n))
    warps = min(32, max(4, block // 1024))
    if fits_in_registers(block, warps, streams):
        return SoftmaxConfig(block, warps)
    return next(SoftmaxConfig(b, w, True) for b, w in HINTED[::-1] if fits_in_registers(b, w, 3))


def user_picks_path(gpu: str) -> Path:
    root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    slug = re.sub(r"[^A-Za-z0-9.]+", "-", gpu).strip("-")
    return root / "kernel-lab" / f"triton-picks-{slug}-{triton.__version__}.json"


def read_picks(path: Path) -> dict[str, dict]:
    """A picks file's cards, {GPU name: {"picks": [...], how they were tuned}}: {} where there is no file, and
    where it is unreadable or malformed, with a warning (the next tune writes it whole)."""
    try:
        cards = json.loads(path.read_text())["cards"]
        picks = [p for card in cards.values() for p in card["picks"]]
        if all(SoftmaxConfig.of(p) and p["kernel"] in ("softmax_fwd", "softmax_bwd") and p["N"] >= 1
               and p["rows_per_sm"] >= 1 for p in picks):  # fmt: skip
            return cards
    except FileNotFoundError:
        return {}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        pass
    warnings.warn(f"ignoring picks {path}: unreadable or malformed (tune again)", stacklevel=2)
    return {}


@functools.cache
def committed() -> dict:
    """autotune_picks.json: {"cards": {GPU name: {"picks": [...], how they were tuned}}}."""
    return {"cards": read_picks(PICKS_FILE)}


def index(picks: list[dict]) -> dict[tuple, dict[int, SoftmaxConfig]]:
    """(kernel, dtype name, bucket: next_pow2(N)) -> {N tuned at: across_row_counts of its picks},
    the last pick of a row count kept (a bucket's row lengths can want different configs)."""
    out: dict[tuple, dict] = {}
    for p in picks:
        by_n = out.setdefault((p["kernel"], p["dtype"], next_pow2(p["N"])), {})
        by_n.setdefault(p["N"], {})[p["rows_per_sm"]] = p
    return {k: {n: across_row_counts([*v.values()]) for n, v in by_n.items()} for k, by_n in out.items()}


def across_row_counts(picks: list[dict]) -> SoftmaxConfig:
    """The config for every row count of picks tuned at several (one kernel, dtype, N): the least
    mean slowdown against each row count's fastest among the configs timed at all (each row count
    weighs the same); without timings in common, the pick tuned at the most rows."""
    timed = [p.get("timings_us") or {} for p in picks]
    common = set.intersection(*(set(t) for t in timed))
    if not common:
        return SoftmaxConfig.of(max(picks, key=lambda p: p["rows_per_sm"]))
    slowdown = {c: sum(t[c] / min(t.values()) for t in timed) for c in common}
    block, warps, *flags = min(sorted(common), key=lambda c: slowdown[c]).split("/")  # SoftmaxConfig.label
    return SoftmaxConfig(int(block), int(warps), "L2" in flags, "W" in flags)


@functools.cache
def _indexes(gpu: str) -> tuple[tuple[str, dict], ...]:
    tuned = read_picks(user_picks_path(gpu)).get(gpu, {"picks": []})  # this user's (tune.py)
    card = committed()["cards"].get(gpu, {"picks": []})
    return ("tuned", index(tuned["picks"])), ("committed", index(card["picks"]))


def forget() -> None:
    for f in (_indexes, committed):
        f.cache_clear()


def choose(name: str, streams: int, n: int, dtype: torch.dtype, gpu: str | None):
    """(config, source) for kernel `name`, rows of N, GPU `gpu` (None: the interpreter), whatever M: the pick
    of N's bucket at the nearest N tuned, in `dtype` or one of its size (fp16 takes bf16's: same bytes, fp32 math)."""
    if gpu is None:
        return INTERPRETER_CONFIG, "interpreter"
    for source, idx in _indexes(gpu):
        for d in sorted(DTYPES, key=lambda d: d != dtype):
            found = idx.get((name, dtype_name(d), next_pow2(n))) if d.itemsize == dtype.itemsize else None
            if found:
                return found[min(found, key=lambda t: (abs(t - n), t))], source
    return rule(streams, n, dtype), "rule"
