"""The shape sweep behind `lab bench` and `lab run`: every registered implementation of
one op on one device, at every shape and dtype, timed by `labtools.bench`.

- The copy ceiling is measured once per sweep (by the caller, `labtools.ceilings`), so
  every record carries frac_of_copy against the same number.
- The reference implementation (F.softmax) is timed first at each (shape, dtype), so
  every record carries vs_ref = t(reference) / t(impl): 1.0 is as fast, 2.0 twice as fast.
- Before it is timed, each implementation's output is compared with the op's float64
  NumPy reference on its first and last rows and a random sample between them (the
  ops are row-wise, so a row subset is an exact check) at the tolerance stated for the
  dtype, or within twice the reference's own error on the same input (`labtools.accuracy`).
  A wrong or crashing implementation is listed as failed and not timed: a fast wrong
  kernel has no time.
- Implementations that do not offer a dtype, or whose `supports` rejects a shape, are
  skipped and listed with the reason (and the limit, from ``meta["limits"]``). A peer
  (another project's kernel, `labtools.peers`) that raises at a shape is listed as
  unsupported there, not failed: its limits are not ours to fix.
"""

from __future__ import annotations

import datetime
import itertools
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from labtools import bench, peers, registry
from labtools.accuracy import check_output, reference_error
from labtools.atomic import atomic_write_text
from labtools.ceilings import Ceilings
from labtools.progress import Progress
from labtools.registry import Implementation

Shape = tuple[int, int]

# The default sweep: short rows (V ~ 600, the MiniGPT vocabulary) at growing batch,
# then rows from 1k to 256k elements at roughly constant size (64 to 256 MB in fp32).
SWEEP_SHAPES: tuple[Shape, ...] = (
    (4096, 600),
    (65536, 600),
    (262144, 600),
    (32768, 1024),
    (16384, 4096),
    (8192, 8192),
    (4096, 32768),
    (1024, 131072),
    (256, 262144),
)
QUICK_SHAPES: tuple[Shape, ...] = ((4096, 600), (16384, 4096), (1024, 131072))
# Without a GPU only CPU implementations run, at shapes a laptop times in seconds.
CPU_SHAPES: tuple[Shape, ...] = ((512, 600), (4096, 600), (1024, 4096), (128, 32768))
CPU_QUICK_SHAPES: tuple[Shape, ...] = ((512, 600), (64, 4096))
DTYPES: tuple[str, ...] = ("float32", "bfloat16")
B512: Shape = (512, 600)  # the manifest's us_at_B512: batch 512 rows of V ~ 600


def default_device() -> str:
    """ "cuda" when torch sees a CUDA device, else "cpu"."""
    try:
        import torch

        return "cuda" if torch.cuda.is_available() else "cpu"
    except ImportError:
        return "cpu"


def default_shapes(device: str, quick: bool = False) -> tuple[Shape, ...]:
    if device == "cpu":
        return CPU_QUICK_SHAPES if quick else CPU_SHAPES
    return QUICK_SHAPES if quick else SWEEP_SHAPES


def parse_shapes(text: str) -> tuple[Shape, ...]:
    """ "4096x600,512x600" -> ((4096, 600), (512, 600))."""
    shapes = []
    for part in text.split(","):
        try:
            m, n = (int(v) for v in part.lower().strip().split("x"))
        except ValueError:
            raise ValueError(f"bad shape {part!r}: expected MxN, e.g. 4096x600") from None
        if m <= 0 or n <= 0:
            raise ValueError(f"bad shape {part!r}: both sizes must be positive")
        shapes.append((m, n))
    return tuple(shapes)


def shape_str(shape) -> str:
    return "x".join(str(v) for v in shape)


@dataclass
class SweepConfig:
    op: str = "softmax"
    device: str = "cuda"
    shapes: tuple[Shape, ...] = SWEEP_SHAPES
    dtypes: tuple[str, ...] = DTYPES
    impls: tuple[str, ...] = ()  # names or labels to run (the reference always runs); () = all
    seed: int = 0
    time_cap_s: float = 1.0  # per (impl, shape, dtype): the harness stops earlier once settled
    rounds: int = 3  # the implementations of a point are timed in turns, this many rounds
    check_rows: int = 16  # rows compared with the reference at each end of the output
    cpu_threads: int = bench.DEFAULT_CPU_THREADS  # torch's threads while timing CPU implementations


@dataclass
class Sweep:
    """The result of one sweep, as written to and read from JSON."""

    op: str
    device: str
    records: list[bench.BenchRecord]
    skipped: list[dict]  # {"impl", "shape", "dtype", "why"}: not run by design
    failed: list[dict]  # {"impl", "shape", "dtype", "why"}: ran and crashed or was wrong
    ceilings: Ceilings | None
    environment: dict
    config: dict
    command: str = ""
    date: str = field(
        default_factory=lambda: datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    )
    peers: dict[str, str] = field(default_factory=dict)  # labtools.peers.status() at run time

    def to_dict(self) -> dict:
        return {
            "kind": "labtools.sweep",
            "op": self.op,
            "device": self.device,
            "date": self.date,
            "command": self.command,
            "config": self.config,
            "environment": self.environment,
            "ceilings": None if self.ceilings is None else self.ceilings.to_dict(),
            "records": [r.to_dict() for r in self.records],
            "skipped": self.skipped,
            "failed": self.failed,
            "peers": self.peers,
        }

    @classmethod
    def from_dict(cls, d: dict) -> Sweep:
        if d.get("kind") != "labtools.sweep":
            raise ValueError('not a labtools sweep (no "kind": "labtools.sweep")')
        return cls(
            op=d["op"],
            device=d["device"],
            date=d["date"],
            command=d.get("command", ""),
            config=d["config"],
            environment=d["environment"],
            ceilings=None if d.get("ceilings") is None else Ceilings.from_dict(d["ceilings"]),
            records=[bench.BenchRecord.from_dict(r) for r in d["records"]],
            skipped=d["skipped"],
            failed=d["failed"],
            peers=d.get("peers", {}),
        )

    def save(self, path: Path) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, json.dumps(self.to_dict(), indent=1) + "\n")
        return path

    @classmethod
    def load(cls, path: Path) -> Sweep:
        return cls.from_dict(json.loads(Path(path).read_text()))

    def at(self, shape: Shape, dtype: str | None = None) -> list[bench.BenchRecord]:
        return [r for r in self.records if tuple(r.shape) == tuple(shape) and dtype in (None, r.dtype)]


# --- choosing what runs ------------------------------------------------------------


def select(config: SweepConfig) -> list[Implementation]:
    """The registered implementations of config.op on config.device, reference first,
    narrowed to config.impls (matched by name or label, case-insensitively)."""
    impls = registry.implementations(config.op, device=config.device)
    if config.impls:
        wanted = {w.casefold() for w in config.impls}
        known = {i.name.casefold() for i in impls} | {i.label.casefold() for i in impls}
        unknown = sorted(wanted - known)
        if unknown:
            names = ", ".join(f"{i.name} ({i.label})" for i in impls) or "none"
            raise ValueError(
                f"no {config.op} implementation on {config.device} named {unknown}; registered: {names}"
            )
        impls = [i for i in impls if i.is_reference or {i.name.casefold(), i.label.casefold()} & wanted]
    return sorted(impls, key=lambda i: not i.is_reference)  # stable: registration order otherwise


Run = tuple[Implementation, Shape, str]


def plan(config: SweepConfig, impls: list[Implementation]) -> tuple[list[Run], list[dict]]:
    """(implementation, shape, dtype) triples to time, in order, and the skipped ones."""
    todo, skipped = [], []
    for shape in config.shapes:
        for dtype in config.dtypes:
            for impl in impls:
                if impl.accepts(shape, dtype):
                    todo.append((impl, shape, dtype))
                    continue
                why = f"{dtype} not offered" if dtype not in impl.dtypes else "supports() rejects this shape"
                if dtype in impl.dtypes and impl.meta.get("limits"):
                    why += f" ({impl.meta['limits']})"
                skipped.append({"impl": impl.name, "shape": list(shape), "dtype": dtype, "why": why})
    return todo, skipped


# --- running -----------------------------------------------------------------------


def run_sweep(
    config: SweepConfig,
    *,
    ceilings: Ceilings | None = None,
    environment: dict | None = None,
    command: str = "",
    progress: Progress | None = None,
) -> Sweep:
    """Time every selected implementation at every shape and dtype of `config`.
    Long because the loop over points, its progress and its skip records belong together.
    """
    impls = select(config)
    todo, skipped = plan(config, impls)
    progress = progress or Progress(len(todo), title=f"{config.op} on {config.device}")
    copy_gbps = None if ceilings is None else ceilings.copy_gbps
    records, failed = [], []
    refs: dict[tuple[Shape, str], bench.BenchRecord] = {}

    def not_run(impl: Implementation, shape: Shape, dtype: str, problem: str, crashed: bool) -> None:
        point = {"impl": impl.name, "shape": list(shape), "dtype": dtype}
        if crashed and impl.meta.get("peer"):  # another project's kernel: a limit of theirs, not our failure
            why = f"unsupported by {impl.meta['peer']} at this shape ({problem.splitlines()[0][:200]})"
            skipped.append({**point, "why": why})
        else:
            failed.append({**point, "why": problem})

    def crash(exc: Exception) -> str:
        return f"{type(exc).__name__}: {exc}".strip()

    # One point (shape, dtype) at a time: every implementation is checked, then all that
    # passed are timed in turns (bench.time_in_turns).
    for (shape, dtype), point in itertools.groupby(todo, key=lambda run: (run[1], run[2])):
        ready: list[tuple[Implementation, list[tuple]]] = []
        ref_err = 0.0  # the reference's own error at this point (it runs first: select())
        for impl, _, _ in point:
            progress.step(f"{impl.name} {shape_str(shape)} {dtype}")
            try:
                inputs = bench.make_inputs(impl, shape, dtype, seed=config.seed)
                output = impl.fn(*inputs)
                if impl.is_reference:
                    ref_err = reference_error(impl, inputs, output, config.check_rows)
                problem = check_output(impl, inputs, output, dtype, config.check_rows, ref_err)
                del inputs, output
                if problem is None:
                    ready.append((impl, bench.input_sets(impl, shape, dtype, config.seed)))
                else:
                    not_run(impl, shape, dtype, problem, crashed=False)
            except Exception as exc:  # noqa: BLE001 - one broken kernel must not end the sweep
                not_run(impl, shape, dtype, crash(exc), crashed=True)
        cpu_kw = {} if config.device == "cuda" else {"threads": config.cpu_threads}
        timings = bench.time_in_turns(
            [(impl.fn, sets) for impl, sets in ready],
            config.device,
            config.rounds,
            time_cap_s=config.time_cap_s,
            **cpu_kw,
        )
        for (impl, sets), timing in zip(ready, timings, strict=True):
            try:
                if isinstance(timing, Exception):
                    raise timing
                # call time after the device times, one implementation at a time
                call = bench.impl_call_time(impl, sets, config.time_cap_s)
                rec = bench.record(
                    impl,
                    shape,
                    dtype,
                    timing,
                    call=call,
                    copy_gbps=copy_gbps,
                    reference=refs.get((shape, dtype)),
                )
            except Exception as exc:  # noqa: BLE001 - as above
                not_run(impl, shape, dtype, crash(exc), crashed=True)
                continue
            if impl.is_reference:
                refs[(shape, dtype)] = rec.with_reference(rec)
            records.append(rec)
        del ready
    progress.close()
    if environment is None:
        from labtools.env import collect

        environment = collect().to_dict()
    cfg = asdict(config)
    cfg["shapes"] = [list(s) for s in config.shapes]
    return Sweep(
        config.op,
        config.device,
        records,
        skipped,
        failed,
        ceilings,
        environment,
        cfg,
        command,
        peers=peers.status(),
    )


# --- reporting ---------------------------------------------------------------------


def _ratio(v: float | None) -> str:
    return "" if v is None else f"{v:.2f}x"


TABLE_HEADERS = (
    "label",
    "impl",
    "shape",
    "dtype",
    "device us",
    "IQR %",
    "call us",
    "GB/s",
    "of copy",
    "vs ref",
    "call vs ref",
    "stability",
)


def table_rows(sweep: Sweep) -> tuple[tuple[str, ...], list[tuple[str, ...]]]:
    """(headers, rows) of the sweep's table, every cell a string: device time (median,
    IQR), call time, bandwidth, and both times' ratios to the reference (t(ref)/t(impl));
    "unstable" when a spread exceeds labtools.bench.UNSTABLE_REL_IQR. The reference's
    label replaces "ref" in the ratio headers."""
    ref_label = next((r.label for r in sweep.records if r.ref == r.impl), "reference")
    headers = tuple(h.replace("ref", ref_label) if "vs ref" in h else h for h in TABLE_HEADERS)
    rows = []
    for r in sweep.records:
        rows.append(
            (
                r.label,
                r.impl,
                shape_str(r.shape),
                r.dtype,
                f"{r.median_us:.1f}",
                f"{100 * r.rel_iqr:.1f}",
                "" if r.call_us is None else f"{r.call_us:.1f}",
                f"{r.gbps:.1f}",
                "" if r.frac_of_copy is None else f"{r.frac_of_copy:.0%}",
                _ratio(r.vs_ref),
                _ratio(r.call_vs_ref),
                "unstable" if r.unstable else "",
            )
        )
    return headers, rows


TABLE_ALIGN = "llllrrrrrrrl"  # text columns left, figures right


def format_table(sweep: Sweep, style: str = "auto") -> str:
    """The sweep's table through the one renderer (`labtools.tables`: rich on a terminal,
    plain text otherwise, "markdown" for reports), a break between (shape, dtype) groups,
    then footnotes on the instability bound and on peers."""
    from labtools.tables import render

    headers, rows = table_rows(sweep)
    grouped: list[tuple[str, ...] | None] = []
    group = None
    for r, row in zip(sweep.records, rows):
        if group is not None and group != (tuple(r.shape), r.dtype):
            grouped.append(None)
        group = (tuple(r.shape), r.dtype)
        grouped.append(row)
    lines = [render(headers, grouped, style=style, align=TABLE_ALIGN)]
    if any(r.unstable for r in sweep.records):
        lines += [
            "",
            f"unstable: IQR / median of device or call time above {bench.UNSTABLE_REL_IQR:.0%}; "
            "such figures are not headlined",
        ]
    if sweep.peers:
        lines += ["", "peers: " + "; ".join(f"{label} {state}" for label, state in sweep.peers.items())]
    return "\n".join(lines)


def summarize(entries: list[dict]) -> list[str]:
    """Skipped or failed entries, one line per (implementation, reason)."""
    grouped: dict[tuple[str, str], list[str]] = {}
    for e in entries:
        grouped.setdefault((e["impl"], e["why"]), []).append(f"{shape_str(e['shape'])} {e['dtype']}")
    return [f"{impl}: {why} -- {', '.join(where)}" for (impl, why), where in grouped.items()]
