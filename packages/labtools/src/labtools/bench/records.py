"""One implementation at one point: the record every table, plot and manifest reads
(`BenchRecord`), and `measure`, the call every benchmark makes."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from labtools.bench.blocks import time_call, time_fn
from labtools.bench.inputs import input_sets, itemsize
from labtools.bench.timing import DEFAULT_CPU_THREADS, UNSTABLE_REL_IQR, Timing
from labtools.registry import Implementation


@dataclass
class BenchRecord:
    """One implementation at one shape and dtype.

    median_us:  device time (CUDA events, L2 flushed, median); on the CPU the blocked
                wall time per call, which is also its call time.
    call_us:    call time: wall per call, back to back, synchronized at the end (median
                of blocks); None in records written before it was measured.
    gbps:       compulsory bytes (op's model) / median device time.
    frac_of_copy: gbps / the copy ceiling measured in the same run (None if not given).
    vs_ref:     reference median / this median: 1.0 is as fast as the reference, 2.0
                twice as fast (None if no reference was timed); call_vs_ref: the same
                for call time.
    threads:    torch's intra-op thread count during a CPU measurement (None on CUDA).
    unstable:   a spread (IQR / median) of device or call time above UNSTABLE_REL_IQR;
                unstable_why says which and how much.
    picks:      where the launch configuration came from, for an implementation that keeps
                picks (meta["autotune_picks"], labtools.registry): {"card": the GPU whose
                picks or rule served, "source": "committed", "rule", "tuned", "given", ... or
                None where the launch took a form without picks}; None for the others.
    """

    impl: str
    label: str
    backend: str
    op: str
    shape: tuple[int, ...]
    dtype: str
    device: str
    median_us: float
    q1_us: float
    q3_us: float
    reps: int
    bytes: int
    flops: int
    gbps: float
    tflops: float
    intensity: float
    frac_of_copy: float | None = None
    copy_gbps: float | None = None
    ref: str | None = None
    ref_us: float | None = None
    vs_ref: float | None = None
    call_us: float | None = None
    call_q1_us: float | None = None
    call_q3_us: float | None = None
    call_reps: int | None = None
    call_vs_ref: float | None = None
    threads: int | None = None
    unstable: bool = False
    unstable_why: str = ""
    picks: dict[str, Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def iqr_us(self) -> float:
        return self.q3_us - self.q1_us

    @property
    def rel_iqr(self) -> float:
        return self.iqr_us / self.median_us if self.median_us > 0 else math.inf

    @property
    def call_rel_iqr(self) -> float | None:
        if self.call_us is None or self.call_q1_us is None or self.call_q3_us is None:
            return None
        return (self.call_q3_us - self.call_q1_us) / self.call_us if self.call_us > 0 else math.inf

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["shape"] = list(self.shape)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> BenchRecord:
        return cls(**{**d, "shape": tuple(d["shape"])})

    def with_reference(self, ref: BenchRecord) -> BenchRecord:
        self.ref, self.ref_us = ref.impl, ref.median_us
        self.vs_ref = ref.median_us / self.median_us
        if ref.call_us and self.call_us:
            self.call_vs_ref = ref.call_us / self.call_us
        return self


def instability(timing: Timing, call: Timing | None, bound: float = UNSTABLE_REL_IQR) -> str:
    """Why a measurement is unstable ("" when both spreads are within `bound`)."""
    why = []
    for name, t in (("device time", timing), ("call time", call)):
        if t is not None and t.rel_iqr > bound:
            why.append(f"{name} IQR {t.rel_iqr:.0%} of the median > {bound:.0%}")
    return "; ".join(why)


def picks_used(impl: Implementation, shape: tuple[int, ...], dtype: str) -> dict[str, Any] | None:
    """{"card", "source"} of the picks `impl`'s launches of rows of shape[-1] in `dtype` took, from
    its meta["autotune_picks"]() (labtools.registry): the first entry of that row length and
    dtype; source None where there is none (a launch form that takes no picks). None for an
    implementation without the hook."""
    hook = impl.meta.get("autotune_picks")
    if hook is None:
        return None
    card = None
    if impl.device == "cuda":
        import torch

        card = torch.cuda.get_device_name()
    try:
        entries = hook()
    except Exception as exc:  # noqa: BLE001 - a record is still worth keeping without them
        return {"card": card, "source": None, "why": f"autotune_picks() raised {type(exc).__name__}: {exc}"}
    for e in entries if isinstance(entries, list) else []:
        key, config = e.get("key", {}), e.get("config", {})
        if key.get("N") == shape[-1] and str(key.get("dtype", dtype)).removeprefix("torch.") == dtype:
            return {"card": config.get("card") or card, "source": config.get("source")}
    return {"card": card, "source": None}


def record(
    impl: Implementation,
    shape: tuple[int, ...],
    dtype: str,
    timing: Timing,
    *,
    call: Timing | None = None,
    copy_gbps: float | None = None,
    reference: BenchRecord | None = None,
) -> BenchRecord:
    """A record from a device timing and a call timing. On the CPU, with no `call`, the
    one blocked measurement is both (there is no asynchronous device to separate them)."""
    if call is None and timing.device == "cpu":
        call = timing
    nbytes, nflops = impl.cost(shape, itemsize(dtype))
    t = timing.median_us * 1e-6
    gbps = nbytes / t / 1e9
    why = instability(timing, None if call is timing else call)
    rec = BenchRecord(
        impl=impl.name,
        label=impl.label,
        backend=impl.backend,
        op=impl.op,
        shape=tuple(shape),
        dtype=dtype,
        device=impl.device,
        median_us=timing.median_us,
        q1_us=timing.q1_us,
        q3_us=timing.q3_us,
        reps=timing.n,
        bytes=nbytes,
        flops=nflops,
        gbps=gbps,
        tflops=nflops / t / 1e12,
        intensity=nflops / nbytes if nbytes else 0.0,
        frac_of_copy=gbps / copy_gbps if copy_gbps else None,
        copy_gbps=copy_gbps,
        call_us=None if call is None else call.median_us,
        call_q1_us=None if call is None else call.q1_us,
        call_q3_us=None if call is None else call.q3_us,
        call_reps=None if call is None else call.n,
        threads=timing.threads,
        unstable=bool(why),
        unstable_why=why,
        picks=picks_used(impl, shape, dtype),
        extra={
            "rel_iqr": timing.rel_iqr,
            "input_sets": timing.n_input_sets,
            "flushed_l2": timing.flushed_l2,
            "calls_per_sample": timing.calls_per_sample,
            **({} if call is None else {"calls_per_call_sample": call.calls_per_sample}),
        },
    )
    if reference is not None:
        rec.with_reference(reference)
    return rec


def impl_call_time(
    impl: Implementation, arg_sets: Sequence[tuple], time_cap_s: float | None = None
) -> Timing | None:
    """`time_call` of a CUDA implementation, taken after its device time on the same inputs;
    None on the CPU, where the one blocked measurement is both (`record`)."""
    if impl.device != "cuda":
        return None
    return time_call(
        impl.fn, arg_sets, impl.device, **({} if time_cap_s is None else {"time_cap_s": time_cap_s})
    )


def time_both(
    impl: Implementation, shape: tuple[int, ...], dtype: str, seed: int, call_time: bool, **timing_kw
) -> tuple[Timing, Timing | None]:
    """(device time, call time) on the same inputs; on the CPU one measurement is both."""
    arg_sets = input_sets(impl, shape, dtype, seed)
    if impl.device == "cuda":
        timing_kw.pop("threads", None)  # a CPU setting: the host thread pool does not time kernels
    else:
        timing_kw.setdefault("threads", DEFAULT_CPU_THREADS)
    timing = time_fn(impl.fn, arg_sets, impl.device, **timing_kw)
    call = impl_call_time(impl, arg_sets, timing_kw.get("time_cap_s")) if call_time else None
    return timing, call


def measure(
    impl: Implementation,
    shape: tuple[int, ...],
    dtype: str = "float32",
    *,
    copy_gbps: float | None = None,
    reference: BenchRecord | None = None,
    seed: int = 0,
    call_time: bool = True,
    **timing_kw,
) -> BenchRecord:
    """Time one registered implementation at one shape: the call every benchmark makes.
    Device time and (with `call_time`, the default) call time, on the same inputs."""
    shape = tuple(shape)
    timing, call = time_both(impl, shape, dtype, seed, call_time, **timing_kw)
    return record(impl, shape, dtype, timing, call=call, copy_gbps=copy_gbps, reference=reference)
