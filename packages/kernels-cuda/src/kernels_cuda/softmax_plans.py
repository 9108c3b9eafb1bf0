"""The forward's plan table: which kernel a (variant, N, dtype, layout, device) runs, and how.

    row_plan(variant, N, dtype, vec, device, cfg, same_offsets, M=None) -> RowPlan
    auto_plan(N, dtype, vec, device, cfg, same_offsets, M=None) -> (source, RowPlan), unrecorded
    plan(variant, M, N, dtype, vec, device, cfg, same_offsets, batch_invariant=True) -> Launch

Batch invariance: by default a plan is made once per (N, dtype, layout) and serves every row
count (M None), so each row is reduced in an order that depends on (N, dtype) and, for the
cluster kernel over rows that are not whole 16-byte packs, the row's address modulo 16 bytes
(as torch's softmax), never on the other rows. Such rows take the cluster kernel wherever x's
and y's rows share their offsets, whatever M. `batch_invariant=False` lets M choose the faster
form for the launch, where one exists: fp32 launches of few rows give a row fewer threads of
more packs (`few_rows_shape`), and 16-bit cluster chunks are held in registers in launches of
one wave. float64 runs one kernel (08_softmax_f64.cu) whatever the shape.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from kernels_cuda import arrays, codegen, picks
from kernels_cuda.cluster_plans import (
    CLUSTER_SIZES,
    cluster_held_packs,
    cluster_spec,
    online_spec,
    plan_cluster,
    plan_online,
)
from kernels_cuda.codegen import Spec
from kernels_cuda.fused_plans import (
    few_rows_shape,
    few_rows_specs,
    full_packs,
    fused_capacity,
    fused_items_max,
    fused_ladder,
    fused_packs,
    fused_spec,
    plan_fused,
    with_log,
)
from kernels_cuda.launch_types import Device, Launch, RowPlan, full_vec

VARIANTS = ("auto", "v1", "v2", "v3", "v4", "v4_online")
PACKED_DTYPES = ("float32", "float16", "bfloat16")  # the kernels 01-07 are written for
NAIVE_BLOCK = 256
SHARED_BLOCK = 256
F64_SOURCE, F64_THREADS = "08_softmax_f64.cu", 256


@dataclass(frozen=True)
class AutoConfig:
    """What `variant="auto"` chooses by. Change with `softmax_variants.set_auto_config(...)`.

    fused_max_row_bytes: v3 while a row is at most this many bytes (on sm_90; without clusters, or
        for a row no cluster takes, v3 runs up to its capacity). Past it, a row in registers
        leaves too few rows in flight per SM.
    fused_packs_f32, fused_packs_16bit: the 16-byte packs a v3 thread holds before a row gets more
        threads (up to 256 of them; past that, up to 8 packs, then up to 1024 threads).
    cluster_chunk_bytes, long_row_chunk_bytes: v4 picks the smallest cluster whose blocks each
        hold at most cluster_chunk_bytes of a row, or long_row_chunk_bytes for rows of at least
        long_row_bytes; if none does, the largest cluster, if its chunk fits a block's shared
        memory at all.
    max_cluster: the largest cluster v4 uses (16 needs the non-portable cluster attribute, H100).
    cluster_held_packs_f32: v4 holds an fp32 chunk in registers, not shared memory, when each
        thread needs at most this many 16-byte packs of it (0: never).
    cluster_held_packs_16bit: the same for 16-bit chunks, in a launch of one wave of held blocks
        (cluster_plans.HELD_16BIT_BLOCKS_PER_SM), and only with batch_invariant=False.
    few_rows_per_sm: with batch_invariant=False, fp32 v3 launches of at most this many rows an
        SM give a row fewer threads, each holding more packs (`few_rows_shape`), 0: never.

    The defaults are what `python -m kernels_cuda.tune` picked on an H100 (the measurements are
    in experiments/notes/kernels-cuda.md): v3 holds rows of up to 32 KB; rows from 128 KB run
    fastest in 16 KB chunks (the most blocks an SM, each with all its copies in flight), shorter
    ones in 2-block clusters of up to 64 KB a block. On a card of more bandwidth an SM the packs
    a thread grow to keep the bytes in flight its memory needs (picks.for_card); a card with
    picks (picks.py) takes its picked plan ahead of this rule.
    """

    fused_max_row_bytes: int = 32 * 1024
    fused_packs_f32: int = 2
    fused_packs_16bit: int = 2
    cluster_chunk_bytes: int = 64 * 1024
    long_row_bytes: int = 128 * 1024
    long_row_chunk_bytes: int = 16 * 1024
    max_cluster: int = 16
    cluster_held_packs_f32: int = 8
    cluster_held_packs_16bit: int = 4
    few_rows_per_sm: int = 64


AUTO = AutoConfig()


def f64_spec(kernel: str) -> Spec:
    return Spec(F64_SOURCE, kernel, "float64", (("THREADS", F64_THREADS),))


def row_plan(
    variant: str,
    N: int,
    dtype: str,
    vec: int,
    device: Device,
    cfg: AutoConfig | None = None,
    same_offsets: bool = False,
    M: int | None = None,
) -> RowPlan:
    """The plan for rows of N; vec from `pack_width`, same_offsets from `offsets_match`. M None
    (batch-invariant): one plan for every row count; else the plan may depend on M."""
    cfg = picks.for_card(cfg or AUTO, device)
    if dtype == "float64":
        if variant != "auto":
            raise ValueError(f"softmax: float64 runs with variant='auto' only, not {variant!r}")
        return RowPlan(f64_spec("softmax_f64"), block=F64_THREADS)
    if variant == "v1":
        return RowPlan(
            Spec("01_softmax_naive.cu", "softmax_naive", dtype), NAIVE_BLOCK, rows_per_step=NAIVE_BLOCK
        )
    if variant == "v2":
        spec = Spec("02_softmax_shared.cu", "softmax_shared", dtype, (("BLOCK", SHARED_BLOCK),))
        return RowPlan(spec, block=SHARED_BLOCK)
    if variant == "v3":
        return plan_fused(N, dtype, vec, cfg, device, M)
    if variant == "v4":
        return plan_cluster(N, dtype, vec, device, cfg, same_offsets, M) or plan_online(dtype, vec)
    if variant == "v4_online":
        return plan_online(dtype, vec)
    if variant == "auto":
        return picks.record(
            "forward", N, dtype, device, *auto_plan(N, dtype, vec, device, cfg, same_offsets, M)
        )
    raise ValueError(f"softmax: unknown variant {variant!r}; choose one of {', '.join(VARIANTS)}")


def auto_plan(
    N: int,
    dtype: str,
    vec: int,
    device: Device,
    cfg: AutoConfig | None = None,
    same_offsets: bool = False,
    M=None,
) -> tuple[str, RowPlan]:
    """(source, plan) of auto for rows of N (not float64): this card's pick, else the rule. Not
    recorded in picks.USED: the log_softmax's plans ask what the softmax would run."""
    cfg = picks.for_card(cfg or AUTO, device)
    return picks.pick_or_rule(
        "forward",
        N,
        dtype,
        device,
        lambda label: plan_pick(label, N, dtype, vec, device, cfg, same_offsets, M),
        lambda: _rule(N, dtype, vec, device, cfg, same_offsets, M),
    )


def _rule(N: int, dtype: str, vec: int, device: Device, cfg: AutoConfig, same_offsets: bool, M) -> RowPlan:
    """auto's plan for a card without a pick: v3 up to cfg.fused_max_row_bytes (any row on a GPU
    without clusters); past it a cluster, else v3 while it holds the row (one read, where the online
    kernel reads it twice), else the online kernel."""
    fits_v3 = N <= fused_capacity(vec)
    if fits_v3 and (N * arrays.ITEMSIZE[dtype] <= cfg.fused_max_row_bytes or device.cc < 90):
        return plan_fused(N, dtype, vec, cfg, device, M)
    cluster = plan_cluster(N, dtype, vec, device, cfg, same_offsets, M)
    if cluster is not None:
        return cluster
    return plan_fused(N, dtype, vec, cfg, device, M) if fits_v3 else plan_online(dtype, vec)


def plan_pick(
    label: str, N: int, dtype: str, vec: int, device: Device, cfg: AutoConfig, same_offsets: bool, M=None
) -> RowPlan | None:
    """The plan a pick's label names for rows of N (picks.py), None where it cannot serve them: v3
    at T threads a row with the packs the row needs (at most fused_items_max; with M, the few-rows
    shape as the rule's), the cluster kernel at exactly C blocks, or the online kernel."""
    form, k = picks.parse(label, vec, dtype)
    if form == "fused":
        packs, items_max = N // vec, fused_items_max(vec)
        items = -(-packs // k)
        if items > items_max or k > 1024:
            return None
        k, items, block = few_rows_shape(M, N, dtype, vec, k, items, items_max, device, cfg.few_rows_per_sm)
        spec = fused_spec(dtype, k, items, vec, block, full_packs(packs, k, items))
        rpb = dict(spec.constants)["RPB"]
        return RowPlan(spec, block=k * rpb, rows_per_step=rpb)
    if form == "cluster":
        one = replace(cfg, max_cluster=k, cluster_chunk_bytes=0, long_row_chunk_bytes=0)
        rows = plan_cluster(N, dtype, vec, device, one, same_offsets, M)
        return rows if rows is not None and rows.group == k else None
    return plan_online(dtype, vec) if form == "online" else None


def plan(
    variant: str,
    M: int,
    N: int,
    dtype: str,
    vec: int,
    device: Device,
    cfg: AutoConfig | None = None,
    same_offsets: bool = False,
    batch_invariant: bool = True,
) -> Launch:
    """The launch for one (M, N) problem: `row_plan`'s, for this M."""
    rows = row_plan(variant, N, dtype, vec, device, cfg, same_offsets, None if batch_invariant else M)
    return rows.launch(M)


@codegen.register_specializations
def specializations() -> list[Spec]:
    """Every Spec `plan` can produce, for the offline compile."""
    specs = [f64_spec("softmax_f64")]
    for dtype in PACKED_DTYPES:
        specs.append(Spec("01_softmax_naive.cu", "softmax_naive", dtype))
        specs.append(Spec("02_softmax_shared.cu", "softmax_shared", dtype, (("BLOCK", SHARED_BLOCK),)))
        for vec in (full_vec(dtype), 1):
            least = fused_packs(dtype, vec, AUTO)  # the rule's ladder at each packs a card can give it
            ladder = [
                fused_spec(dtype, tpr, items, vec, None, full)
                for packs in dict.fromkeys(max(p, least) for p in range(1, picks.RULE_MAX_PACKS + 1))
                for tpr, items in fused_ladder(vec, packs)
                for full in ((0, items - 1, items) if vec > 1 else (0,))
            ]
            specs.extend(ladder)
            if vec > 1:  # log_softmax_op.registers_plan: the ladder's, whole packs
                specs.extend(with_log(s) for s in ladder)
            if vec > 1 and arrays.ITEMSIZE[dtype] == 4:  # few rows: any packs up to the most
                specs.extend(few_rows_specs(dtype, vec, fused_items_max(vec), fused_spec))
            specs.append(online_spec(dtype, vec))
        vec, most = full_vec(dtype), fused_items_max(full_vec(dtype))
        picked = [  # the committed picks' v3 shapes, at every row length of their buckets
            fused_spec(dtype, tpr, items, vec, None, full)
            for tpr in picks.committed_fused("forward", dtype)
            for items in range(1, most + 1)
            for full in (0, items - 1, items)
        ]
        specs.extend(picked)
        specs.extend(with_log(s) for s in picked)  # log_softmax_op.registers_plan
        held = [0] + [1 << k for k in range(cluster_held_packs(dtype, AUTO).bit_length())]
        specs.extend(cluster_spec(dtype, c, items) for c in CLUSTER_SIZES for items in held)
        specs.extend(cluster_spec(dtype, c, log=True) for c in CLUSTER_SIZES)  # log_softmax_op.cluster_plan
    return list(dict.fromkeys(specs))  # the few-rows launches repeat some of the ladder's
