"""The backward's plan table: dx = y * (dy - sum(y * dy)) along rows, which kernel and how.

The kernels (read them in order, after the forward's):
    fused     06_softmax_backward.cu          rows in registers: one read of y and dy, one write of dx
                                              (launches of few fp32 rows, with batch_invariant=False:
                                              a warp or two a row, y and dy copied through shared
                                              memory by cp.async)
    twopass   06_softmax_backward.cu          any row, any GPU: the dot, then a second pass for dx
    cluster   07_softmax_backward_cluster.cu  long rows over a thread-block cluster (sm_90): chunks
                                              of y (and of dy, or dy in registers) in shared memory
                                              by bulk copies, the dot exchanged through distributed
                                              shared memory
    auto      fused up to BackwardConfig.fused_max_row_bytes, else cluster, else twopass;
              float64: 08_softmax_f64.cu

As forward (softmax_plans.py), a plan is made per (N, dtype, layout) and serves every row count
unless batch_invariant=False, so a row's dot is reduced in an order that depends on (N, dtype)
and, on the cluster kernel over rows that are not whole 16-byte packs, the row's address modulo
16 bytes; never on M. Plain Python over shapes (no GPU): the plans can be tested and every Spec
compiled offline.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from kernels_cuda import arrays, cluster_plans, codegen, fused_plans, picks, softmax_plans
from kernels_cuda import launch_types as lt
from kernels_cuda.codegen import Spec
from kernels_cuda.launch_types import RowPlan

VARIANTS = ("auto", "fused", "twopass", "cluster")
FUSED_SOURCE = "06_softmax_backward.cu"
CLUSTER_SOURCE = "07_softmax_backward_cluster.cu"
FUSED_ITEMS_MAX = 4  # packs of each of y and dy a thread holds at most (8 raw 16-byte packs in all)
FEW_ROWS_ITEMS_MAX = 5  # the same in a launch of few rows (128-thread blocks: 56 registers at 5)
FUSED_MAX_TPR = 512  # 1024-thread blocks get 64 registers a thread: 16-bit rows of 4 + 4 packs spill
TWOPASS_THREADS, TWOPASS_UNROLL = 512, 2
CLUSTER_DY_PACKS = 16  # packs of dy a cluster-kernel thread holds where dy is in registers (64 words)
DY_IN_REGISTERS_CLUSTER = 16  # the cluster size whose blocks may hold dy in registers (BackwardConfig)
CLUSTER_THREADS = 256


@dataclass(frozen=True)
class BackwardConfig:
    """What `variant="auto"` chooses by.

    fused_max_row_bytes: the fused kernel while a row of one array is at most this many bytes (it
        holds y and dy: twice this in registers); past it, the cluster kernel on sm_90.
    cluster_size: the cluster kernel's blocks a row: this many where their chunks fit a block's
        shared memory (in 16-bit types, half of it), else the smallest larger cluster whose
        chunks do (up to max_cluster), else the largest that fits. 8 was the fastest on an H100
        from rows of 16384 to 131072 elements (experiments/notes/kernels-cuda.md): smaller
        clusters wait longer on their exchange, and a cluster stays inside a GPC, so 16-block
        clusters of one block an SM leave more SMs idle than 8-block ones.
    cluster_dy_in_registers: in 16-block clusters whose two chunks would take more than half of
        a block's shared memory (one block an SM), the threads hold dy's chunk in registers
        (CLUSTER_DY_PACKS packs a thread at most) and two blocks share an SM.
    few_rows_per_sm: with batch_invariant=False, fp32 fused launches of at most this many rows an
        SM give a row fewer threads of more packs (up to FEW_ROWS_ITEMS_MAX of each array), as the
        forward's few-rows rule (`fused_plans.few_rows_shape`).
    lone_block_rows_f32: with batch_invariant=False, fp32 launches of at most this many rows take
        no cluster size whose chunks leave one block an SM, as 16-bit ones never do
        (plan_cluster): at 131072 columns (8-block clusters of 128 KB a block) 16-block clusters
        were faster on an H100 at 1-128 rows, but for 8, and slower at 1024
        (experiments/notes/kernels-cuda.md).
    """

    fused_max_row_bytes: int = 32 * 1024
    fused_packs_f32: int = 2
    fused_packs_16bit: int = 2
    cluster_size: int = 8
    cluster_dy_in_registers: bool = True
    max_cluster: int = 16
    lone_block_rows_f32: int = 128
    few_rows_per_sm: int = 64


AUTO = BackwardConfig()


def fused_capacity(vec: int) -> int:
    return FUSED_MAX_TPR * FUSED_ITEMS_MAX * vec


def fused_spec(
    dtype: str, tpr: int, items: int, vec: int, block: int | None = None, full: int = 0, staged: bool = False
) -> Spec:
    """As v3's (`full` too); `staged`: y and dy copied into shared memory by cp.async, as the
    launches of few rows take them."""
    rpb = fused_plans.fused_rows_per_block(dtype, tpr, block)
    extra = ((("FULL", full),) if full else ()) + ((("STAGED", 1),) if staged else ())
    return Spec(
        FUSED_SOURCE,
        "softmax_backward_fused",
        dtype,
        (("TPR", tpr), ("RPB", rpb), ("ITEMS", items), ("VEC", vec)) + extra,
    )


def few_rows_spec(dtype: str, tpr: int, items: int, vec: int, block: int | None, full: int) -> Spec:
    return fused_spec(dtype, tpr, items, vec, block, full, staged=True)


def fused_ladder(dtype: str, vec: int, cfg: BackwardConfig) -> list[tuple[int, int]]:
    """The forward's (threads per row, packs per thread) ladder, capped at FUSED_ITEMS_MAX packs."""
    packs = (cfg.fused_packs_f32 if arrays.ITEMSIZE[dtype] == 4 else cfg.fused_packs_16bit) if vec > 1 else 4
    ladder = fused_plans.fused_ladder(vec, min(packs, FUSED_ITEMS_MAX))
    capped = [(t, i) for t, i in ladder if i <= FUSED_ITEMS_MAX and t <= FUSED_MAX_TPR]
    return capped + [(FUSED_MAX_TPR, FUSED_ITEMS_MAX)]


def plan_fused(
    N: int, dtype: str, vec: int, cfg: BackwardConfig, device: lt.Device | None = None, M: int | None = None
) -> RowPlan | None:
    """The fused kernel for rows of N, None past its capacity; M (None: the plan for every row
    count) only for the few-rows shape."""
    packs = N // vec
    for tpr, items in dict.fromkeys(fused_ladder(dtype, vec, cfg)):
        if tpr * items >= packs:
            tpr, items, block = fused_plans.few_rows_shape(
                M, N, dtype, vec, tpr, items, FEW_ROWS_ITEMS_MAX, device, cfg.few_rows_per_sm
            )
            if block:  # the few-rows launches know N (the ladder's take no FULL forms here)
                spec = few_rows_spec(dtype, tpr, items, vec, block, fused_plans.full_packs(packs, tpr, items))
            else:
                spec = fused_spec(dtype, tpr, items, vec)
            rpb = dict(spec.constants)["RPB"]
            return RowPlan(spec, block=tpr * rpb, rows_per_step=rpb)
    return None


def twopass_spec(dtype: str, vec: int) -> Spec:
    return Spec(
        FUSED_SOURCE,
        "softmax_backward_twopass",
        dtype,
        (("THREADS", TWOPASS_THREADS), ("VEC", vec), ("UNROLL", TWOPASS_UNROLL)),
    )


def cluster_spec(dtype: str, cluster: int, dy_packs: int = 0, log: bool = False) -> Spec:
    """07; log: log_softmax's backward, dx = dy - exp(y) * sum(dy)."""
    constants = (
        ("CLUSTER", cluster),
        ("THREADS", CLUSTER_THREADS),
        ("VEC", lt.full_vec(dtype)),
        ("DY_PACKS", dy_packs),
    )
    return Spec(CLUSTER_SOURCE, "softmax_backward_cluster", dtype, constants + ((("LOG", 1),) if log else ()))


def plan_cluster(
    N: int,
    dtype: str,
    vec: int,
    device: lt.Device,
    cfg: BackwardConfig,
    same_offsets: bool = False,
    M: int | None = None,
    log: bool = False,
) -> RowPlan | None:
    """None without clusters, past the largest cluster's shared memory, or for rows that are not
    whole 16-byte packs unless y's, dy's and dx's rows share their offsets
    (`launch_types.offsets_match`): the kernel moves each row's aligned body in bulk and the few
    elements around it one at a time, one split for all three arrays. The split follows the
    row's own address, so a row's bits depend on (N, dtype) and its address modulo 16 bytes,
    never on M (a plan for every row count, M None, takes such rows too)."""
    if device.cc < 90 or not (vec == lt.full_vec(dtype) or same_offsets):
        return None
    vec = lt.full_vec(dtype)  # chunks are whole packs of the body
    size = arrays.ITEMSIZE[dtype]

    def dy_packs(c: int, chunk: int) -> int:
        """Packs of dy a thread holds in registers in c-block clusters of this chunk (0: dy in
        shared memory)."""
        if not (
            cfg.cluster_dy_in_registers
            and c == DY_IN_REGISTERS_CLUSTER
            and chunk // vec <= CLUSTER_THREADS * CLUSTER_DY_PACKS
        ):
            return 0
        return CLUSTER_DY_PACKS if 2 * chunk * size > device.max_shared_per_block // 2 else 0

    def shared(c: int, chunk: int) -> int:
        return (1 if dy_packs(c, chunk) else 2) * chunk * size

    chunks = cluster_plans.cluster_chunks(N, vec, min(cfg.max_cluster, device.max_cluster))
    fitting = [(c, k) for c, k in chunks if shared(c, k) <= cluster_plans.cluster_room(device)]
    if not fitting:
        return None

    # The configured size if its chunks fit, else the smallest larger one that fits, else the
    # largest. Not one whose chunks leave one block an SM in 16-bit types, nor, with M given, in
    # fp32 launches of up to cfg.lone_block_rows_f32 rows: while a lone block computes, none of
    # its SM's loads are in flight, and a 16-bit element costs a block as much arithmetic as an
    # fp32 one for half the bytes. (Longer fp32 launches keep them: 8-block clusters of one block
    # an SM fill 128 SMs, 16-block ones of three fill 112, as a cluster stays inside a GPC.)
    def preferred(c: int, k: int) -> bool:
        lone = shared(c, k) > device.max_shared_per_block // 2
        few = M is not None and M <= cfg.lone_block_rows_f32
        return c >= cfg.cluster_size and not (lone and (size < 4 or few))

    c, chunk = next(((c, k) for c, k in fitting if preferred(c, k)), fitting[-1])
    return RowPlan(
        cluster_spec(dtype, c, dy_packs(c, chunk), log),
        block=CLUSTER_THREADS,
        shared_mem=shared(c, chunk),
        extra=(chunk,),
        group=c,
    )


def row_plan(
    variant: str,
    N: int,
    dtype: str,
    vec: int,
    device: lt.Device,
    cfg: BackwardConfig | None = None,
    same_offsets: bool = False,
    M: int | None = None,
) -> RowPlan:
    """The plan for rows of N; vec from `launch_types.pack_width` over y, dy, dx, same_offsets
    whether their rows share offsets from a 16-byte boundary (it matters only where vec is 1:
    whole packs always share them). M None (batch-invariant): one plan for every row count."""
    cfg = picks.for_card(cfg or AUTO, device)
    if dtype == "float64":
        if variant != "auto":
            raise ValueError(f"softmax_backward: float64 runs with variant='auto' only, not {variant!r}")
        return RowPlan(softmax_plans.f64_spec("softmax_backward_f64"), block=softmax_plans.F64_THREADS)
    twopass = RowPlan(twopass_spec(dtype, vec), block=TWOPASS_THREADS)
    if variant == "fused":
        rows = plan_fused(N, dtype, vec, cfg, device, M)
        if rows is None:
            raise ValueError(
                f"softmax_backward: the fused kernel holds rows of at most {fused_capacity(vec)} elements "
                f"in registers; N={N} (use auto)"
            )
        return rows
    if variant == "twopass":
        return twopass
    if variant == "cluster":
        return plan_cluster(N, dtype, vec, device, cfg, same_offsets, M) or twopass
    if variant == "auto":
        return picks.record(
            "backward", N, dtype, device, *auto_plan(N, dtype, vec, device, cfg, same_offsets, M)
        )
    raise ValueError(f"softmax_backward: unknown variant {variant!r}; choose one of {', '.join(VARIANTS)}")


def auto_plan(
    N: int,
    dtype: str,
    vec: int,
    device: lt.Device,
    cfg: BackwardConfig | None = None,
    same_offsets: bool = False,
    M=None,
) -> tuple[str, RowPlan]:
    """(source, plan) of auto for rows of N (not float64): this card's pick, else the rule. Not
    recorded in picks.USED: the log_softmax's plans ask what the softmax would run."""
    cfg = picks.for_card(cfg or AUTO, device)
    return picks.pick_or_rule(
        "backward",
        N,
        dtype,
        device,
        lambda label: plan_pick(label, N, dtype, vec, device, cfg, same_offsets, M),
        lambda: _rule(N, dtype, vec, device, cfg, same_offsets, M),
    )


def _rule(
    N: int, dtype: str, vec: int, device: lt.Device, cfg: BackwardConfig, same_offsets: bool, M
) -> RowPlan:
    """auto's plan for a card without a pick: fused up to cfg.fused_max_row_bytes (any row on a GPU
    without clusters), else the cluster kernel, else fused while it holds the row, else two passes."""
    if N * arrays.ITEMSIZE[dtype] <= cfg.fused_max_row_bytes or device.cc < 90:
        rows = plan_fused(N, dtype, vec, cfg, device, M)
        if rows is not None:
            return rows
    cluster = plan_cluster(N, dtype, vec, device, cfg, same_offsets, M)
    return (
        cluster
        or plan_fused(N, dtype, vec, cfg, device, M)
        or RowPlan(twopass_spec(dtype, vec), block=TWOPASS_THREADS)
    )


def plan_pick(
    label: str,
    N: int,
    dtype: str,
    vec: int,
    device: lt.Device,
    cfg: BackwardConfig,
    same_offsets: bool,
    M=None,
) -> RowPlan | None:
    """The plan a pick's label names for rows of N (picks.py), None where it cannot serve them: the
    fused kernel at T threads a row with the packs of each array the row needs (at most
    FUSED_ITEMS_MAX; with M, the few-rows shape as the rule's), the cluster kernel at exactly C
    blocks, or the two-pass kernel."""
    form, k = picks.parse(label, vec, dtype)
    if form == "fused":
        packs = N // vec
        items = -(-packs // k)
        if items > FUSED_ITEMS_MAX or k > FUSED_MAX_TPR:
            return None
        k, items, block = fused_plans.few_rows_shape(
            M, N, dtype, vec, k, items, FEW_ROWS_ITEMS_MAX, device, cfg.few_rows_per_sm
        )
        if block:
            spec = few_rows_spec(dtype, k, items, vec, block, fused_plans.full_packs(packs, k, items))
        else:
            spec = fused_spec(dtype, k, items, vec)
        rpb = dict(spec.constants)["RPB"]
        return RowPlan(spec, block=k * rpb, rows_per_step=rpb)
    if form == "cluster":
        rows = plan_cluster(
            N, dtype, vec, device, replace(cfg, cluster_size=k, max_cluster=k), same_offsets, M
        )
        return rows if rows is not None and rows.group == k else None
    return RowPlan(twopass_spec(dtype, vec), block=TWOPASS_THREADS) if form == "twopass" else None


def plan(
    variant: str,
    M: int,
    N: int,
    dtype: str,
    vec: int,
    device: lt.Device,
    cfg: BackwardConfig | None = None,
    same_offsets: bool = False,
    batch_invariant: bool = True,
) -> lt.Launch:
    """The launch for one (M, N) problem: `row_plan`'s, for this M."""
    rows = row_plan(variant, N, dtype, vec, device, cfg, same_offsets, None if batch_invariant else M)
    return rows.launch(M)


def _at_least(cfg, packs: int):
    """cfg with at least `packs` packs a thread (what picks.for_card gives a card of that bandwidth)."""
    return replace(
        cfg,
        fused_packs_f32=max(packs, cfg.fused_packs_f32),
        fused_packs_16bit=max(packs, cfg.fused_packs_16bit),
    )


@codegen.register_specializations
def specializations() -> list[Spec]:
    """Every Spec `plan` can produce, for the offline compile."""
    specs = [softmax_plans.f64_spec("softmax_backward_f64")]
    for dtype in arrays.SUPPORTED_DTYPES:
        for vec in (lt.full_vec(dtype), 1):
            ladder = [  # the rule's ladder at each packs a thread a card's bandwidth can give it
                fused_spec(dtype, t, i, vec)
                for p in range(1, picks.RULE_MAX_PACKS + 1)
                for t, i in dict.fromkeys(fused_ladder(dtype, vec, _at_least(AUTO, p)))
            ]
            specs.extend(ladder)
            if vec > 1:  # log_softmax_op.registers_plan: the ladder's, whole packs
                specs.extend(fused_plans.with_log(s) for s in ladder)
            if vec > 1 and arrays.ITEMSIZE[dtype] == 4:  # few rows
                specs.extend(fused_plans.few_rows_specs(dtype, vec, FEW_ROWS_ITEMS_MAX, few_rows_spec))
            specs.append(twopass_spec(dtype, vec))
        picked = [  # the committed picks' fused shapes, at every row length of their buckets
            fused_spec(dtype, t, i, lt.full_vec(dtype))
            for t in picks.committed_fused("backward", dtype)
            for i in range(1, FUSED_ITEMS_MAX + 1)
        ]
        specs.extend(picked)
        specs.extend(fused_plans.with_log(s) for s in picked)  # log_softmax_op.registers_plan
        for log in (False, True):  # softmax's and log_softmax's (log_softmax_op.cluster_plan)
            specs.extend(cluster_spec(dtype, c, 0, log) for c in cluster_plans.CLUSTER_SIZES)
        specs.append(cluster_spec(dtype, DY_IN_REGISTERS_CLUSTER, CLUSTER_DY_PACKS))
    return list(dict.fromkeys(specs))  # the few-rows launches repeat some of the ladder's
