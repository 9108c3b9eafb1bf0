# A probe: not part of any package.
# ruff: noqa: B023 -- every lambda here is called within the iteration that made it
"""kernels_cuda's fused kernels (v3 forward, 06 backward) in three versions of their source: base
(before), rowptr (a thread computes its row's address once and reaches its packs at constant
offsets) and the tree (rowptr, plus no bounds check a pack in the exp sum, padding being -inf, and
one predicated store a pack instead of a branch around it), in the package's launch and in given
launch shapes; beside QuACK's own cubin for the shape launched through kernels_cuda's driver,
QuACK through its API when importable, and kernels_triton.

Forms: base, rowptr, tree (the package's plan), tree@TPR:ITEMS:RPB, qcubin, quack, triton.

Device time: the L2 flushed by a write, the same 30 us spin for every form, then the launch; every
form of a point in turns, the order reversed every other round; median of all samples. Each
output (NaN-poisoned first) is checked against float64 beside torch's own error."""

import ctypes
import dataclasses
import statistics
import sys
from functools import lru_cache
from pathlib import Path

import kernels_cuda.softmax_backward  # the module, loaded on first use otherwise
import torch
from kernels_cuda import _driver, codegen
from kernels_cuda import softmax_variants as sv
from labtools import bench

HERE = Path(__file__).parent
DUMP = HERE.parent.parent / "short-rows-wave" / "quack-dump"
sb = sys.modules["kernels_cuda.softmax_backward"]
ROUNDS = 7
REPS = 60
WAIT_US = 30
PLANS = {"softmax": (sv, sv._plan), "softmax_backward": (sb, sb._plan)}
# A variant's sources: base = the package before these changes (03_before.cu, 06_before.cu and
# src-base/common.cuh), rowptr = one address a row only (src-rowptr/); any other form, the tree.
VARIANTS = {
    "base": {"03_softmax_fused.cu": HERE / "03_before.cu", "06_softmax_backward.cu": HERE / "06_before.cu",
             "common.cuh": HERE / "src-base" / "common.cuh",
             "04_softmax_cluster.cu": codegen.SOURCE_DIR / "04_softmax_cluster.cu"},  # unchanged but for common.cuh
    "rowptr": {name: HERE / "src-rowptr" / name for name in ("03_softmax_fused.cu", "06_softmax_backward.cu", "common.cuh")},
    # the tree's 03 with its row staged in shared memory by cp.async (.cg: L2 only; .ca: L1 too)
    # the backward as at caf2ee4 (y and dy loaded pack by pack, the dot in one chain)
    "caf2ee4": {name: HERE / "src-caf2ee4" / name for name in ("06_softmax_backward.cu", "common.cuh")},
    # the tree's 06 with y and dy staged in shared memory by cp.async.ca (QuACK's load path)
    "bwd_async": {"06_softmax_backward.cu": HERE / "06_async_ca.cu", "common.cuh": codegen.SOURCE_DIR / "common.cuh"},
    "async_cg": {"03_softmax_fused.cu": HERE / "03_async_cg.cu", "common.cuh": codegen.SOURCE_DIR / "common.cuh"},
    "async_ca": {"03_softmax_fused.cu": HERE / "03_async_ca.cu", "common.cuh": codegen.SOURCE_DIR / "common.cuh"},
}  # fmt: skip
F600 = ("base", "tree", "tree@64:3:2", "tree@32:5:4", "qcubin")
F1024 = ("base", "tree", "tree@64:4:2", "tree@32:8:4", "qcubin")
H600 = ("base", "tree", "tree@32:3:4", "qcubin")
POINTS = [  # op, dtype, (M, N) list, forms
    ("softmax", "float32", [(1024, 600), (4096, 600), (16384, 600), (65536, 600)], F600),
    ("softmax", "float32", [(2048, 1024), (4096, 1024), (16384, 1024), (32768, 1024)], F1024),
    ("softmax", "float32", [(2048, 2048), (8192, 2048)], ("base", "tree", "tree@64:8:2", "tree@128:4:2")),
    ("softmax", "bfloat16", [(4096, 600), (65536, 600)], H600),
    ("softmax", "bfloat16", [(4096, 1024), (32768, 1024)], ("base", "tree", "tree@32:4:4")),
    ("softmax", "float32", [(8192, 8192)], ("base", "tree")),
    ("softmax", "bfloat16", [(16384, 4096), (8192, 8192)], ("base", "tree")),
    ("softmax_backward", "float32", [(4096, 600), (65536, 600)], ("base", "tree", "tree@32:5:4", "qcubin")),
    ("softmax_backward", "bfloat16", [(4096, 600), (65536, 600)], H600),
    (
        "softmax_backward",
        "float32",
        [(4096, 1024), (32768, 1024)],
        ("base", "tree", "tree@64:4:2", "tree@32:8:4"),
    ),
    ("softmax_backward", "float32", [(8192, 8192)], ("base", "tree")),
]
AB = ("base", "tree")
AB_POINTS = [  # --ab: the package before (sources and the ladder's launches) and after
    (
        "softmax",
        "float32",
        [(1024, 600), (4096, 600), (8192, 600), (16384, 600), (65536, 600)],
        (*AB, "qcubin"),
    ),
    ("softmax", "float32", [(2048, 1024), (4096, 1024), (32768, 1024)], (*AB, "qcubin")),
    (
        "softmax",
        "float32",
        [(2048, 2048), (8192, 2048), (1024, 4096), (4096, 4096), (16384, 4096), (8192, 8192)],
        AB,
    ),
    ("softmax", "float32", [(16, 131072), (64, 50257), (2048, 65536)], AB),  # 04's chunks held in registers
    ("softmax", "bfloat16", [(16, 131072)], AB),
    ("softmax", "bfloat16", [(4096, 600), (65536, 600)], (*AB, "qcubin")),
    ("softmax", "bfloat16", [(4096, 1024), (32768, 1024), (16384, 4096), (8192, 8192)], AB),
    ("softmax_backward", "float32", [(4096, 600), (65536, 600)], (*AB, "qcubin")),
    (
        "softmax_backward",
        "float32",
        [(4096, 1024), (32768, 1024), (2048, 2048), (16384, 4096), (8192, 8192)],
        AB,
    ),
    ("softmax_backward", "bfloat16", [(4096, 600), (65536, 600)], (*AB, "qcubin")),
]
ASYNC = ("base", "tree", "tree@32:5:4", "async_cg@32:5:4", "async_ca@32:5:4", "async_ca", "qcubin")
ASYNC_POINTS = [  # --async: QuACK's load path in the tree's 03
    ("softmax", "float32", [(1024, 600), (4096, 600), (8192, 600), (16384, 600), (65536, 600)], ASYNC),
    ("softmax", "float32", [(4096, 1024), (32768, 1024)], ("base", "tree", "async_ca", "qcubin")),
    (
        "softmax",
        "bfloat16",
        [(4096, 600), (65536, 600)],
        ("base", "tree", "async_ca", "async_ca@32:3:4", "qcubin"),
    ),
]
BWD_POINTS = [  # --bwd: the fused backward's few-rows launches at more packs a thread
    (
        "softmax_backward",
        "float32",
        [(4096, 600), (8192, 600)],
        ("base", "tree", "tree@32:5:4:4", "tree@32:5:4", "qcubin"),
    ),
    ("softmax_backward", "float32", [(4096, 1024)], ("base", "tree", "tree@32:8:4:8")),
    ("softmax_backward", "float32", [(2048, 2048)], ("base", "tree", "tree@64:8:2:8")),
    ("softmax_backward", "float32", [(16384, 600), (65536, 600)], ("base", "tree", "tree@32:5:4:4")),
]
if "--ab" in sys.argv:
    POINTS = AB_POINTS
if "--bwd" in sys.argv:
    POINTS = BWD_POINTS
if "--async" in sys.argv:
    POINTS = ASYNC_POINTS
B2 = ("base", "caf2ee4", "tree", "caf2ee4@32:5:4:4", "tree@32:5:4:4")
BWD2_POINTS = [  # --bwd2: y's loads then dy's, and a pairwise dot (the tree) against caf2ee4's backward
    (
        "softmax_backward",
        "float32",
        [(1024, 600), (4096, 600), (8192, 600), (16384, 600), (65536, 600)],
        (*B2, "qcubin"),
    ),
    ("softmax_backward", "float32", [(4096, 1024), (32768, 1024), (2048, 2048), (8192, 8192)], B2[:3]),
    ("softmax_backward", "bfloat16", [(4096, 600), (65536, 600)], ("base", "caf2ee4", "tree", "qcubin")),
    ("softmax_backward", "bfloat16", [(16384, 4096)], B2[:3]),
]
if "--bwd2" in sys.argv:
    POINTS = BWD2_POINTS
B3 = ("base", "tree", "bwd_async", "qcubin")
BWD3_POINTS = [  # --bwd3: the tree's backward with QuACK's load path
    ("softmax_backward", "float32", [(1024, 600), (4096, 600), (8192, 600), (65536, 600)], B3),
    ("softmax_backward", "float32", [(4096, 1024), (2048, 2048)], B3[:3]),
    ("softmax_backward", "bfloat16", [(4096, 600), (65536, 600)], B3),
]
if "--bwd3" in sys.argv:
    POINTS = BWD3_POINTS
QCUBIN = {  # (op, dtype, N): (file, rows a block, tile columns)
    ("softmax", "float32", 600): ("fwd_Float32_600", 4, 640),
    ("softmax", "bfloat16", 600): ("fwd_BFloat16_600", 4, 768),
    ("softmax", "float32", 1024): ("fwd_Float32_1024", 4, 1024),
    ("softmax_backward", "float32", 600): ("bwd_Float32_600", 4, 640),
    ("softmax_backward", "bfloat16", 600): ("bwd_BFloat16_600", 4, 768),
}

package_source, package_headers = codegen._source, codegen._headers


def source(spec):
    """The tree's source, or a variant's (its own common.cuh, as common_<variant>.cuh)."""
    variant = dict(spec.constants).get("VARIANT")
    if not variant:
        return package_source(spec)
    name = list(VARIANTS)[variant - 1]
    text = VARIANTS[name][spec.source].read_text()
    return text.replace('#include "common.cuh"', f'#include "common_{name}.cuh"')


def headers():
    extra = tuple((f"common_{name}.cuh", files["common.cuh"].read_text()) for name, files in VARIANTS.items())
    return package_headers() + extra


codegen._source = source
codegen._headers = headers
clock = bench._CudaClock(bench.DEFAULT_FLUSH_BYTES)
CYCLES = int(WAIT_US * clock.cycles_per_us())


def use(op, form):
    """Point the package's plan for `op` at the form's launch and source."""
    module, package_plan = PLANS[op]
    which, _, shape = form.partition("@")
    marker = (("VARIANT", list(VARIANTS).index(which) + 1),) if which in VARIANTS else ()

    def planned(variant, M, N, dtype, vec, device, cfg, same):
        if shape:
            tpr, items, rpb, *full = (int(v) for v in shape.split(":"))
            spec = module.fused_spec(dtype, tpr, items, vec, None, *full)  # TPR:ITEMS:RPB[:FULL]
            constants = tuple((k, rpb if k == "RPB" else v) for k, v in spec.constants)
            spec = codegen.Spec(spec.source, spec.kernel, dtype, constants)
            launch = sv.Launch(spec, grid=-(-M // rpb), block=tpr * rpb)
        else:  # base: the ladder's launch, as before the few-rows rule
            cfg = dataclasses.replace(cfg, few_rows_per_sm=0) if which == "base" else cfg
            launch = package_plan(variant, M, N, dtype, vec, device, cfg, same)
        spec = launch.spec
        spec = codegen.Spec(spec.source, spec.kernel, spec.dtype, spec.constants + marker)
        return sv.Launch(spec, launch.grid, launch.block, launch.shared_mem, launch.extra)

    module._plan = lru_cache(planned)
    sv._clear_caches()
    sb._dense_calls.clear()


class Param(ctypes.Structure):  # a CuTe tensor argument: pointer, rows, row stride (elements)
    _fields_ = [
        ("ptr", ctypes.c_uint64),
        ("rows", ctypes.c_int32),
        ("pad", ctypes.c_int32),
        ("stride", ctypes.c_int64),
    ]


@lru_cache
def qfunction(name):
    cubin = (DUMP / f"{name}.cubin").read_bytes()
    entry = next(line for line in (DUMP / f"{name}.ptx").read_text().splitlines() if ".entry" in line)
    kernel = entry.split(".entry")[1].strip().rstrip("(").strip()
    return _driver.Function(cubin, kernel, 0)


def qcubin_runner(op, dtype, args, out):
    name, rpb, cols = QCUBIN[(op, dtype, args[0].shape[1])]
    fn = qfunction(name)
    m = args[0].shape[0]
    tensors = (args[1], args[0], out) if op == "softmax_backward" else (args[0], out)  # dY, Y, dX
    params = [Param(t.data_ptr(), m, 0, t.stride(0)) for t in tensors]
    argv = (ctypes.c_void_p * len(params))(*(ctypes.addressof(p) for p in params))
    smem = len([t for t in tensors[:-1]]) * rpb * cols * args[0].element_size() + 256
    fn.allow_shared(smem)
    lib = _driver._lib()
    grid = -(-m // rpb)

    def run(keep=(params, argv)):  # the argument structs live as long as the launch does
        stream = torch.cuda.current_stream().cuda_stream
        rc = lib.cuLaunchKernel(ctypes.c_void_p(fn.handle), grid, 1, 1, 32 * rpb, 1, 1, smem,
                                ctypes.c_void_p(stream), argv, None)  # fmt: skip
        if rc:
            raise RuntimeError(f"cuLaunchKernel {rc}")
        return out

    return run


def runner(op, form, args, dtype, out):
    if form == "quack":
        from quack.softmax import softmax_bwd as q_bwd
        from quack.softmax import softmax_fwd as q_fwd

        return (lambda: q_fwd(*args)) if op == "softmax" else (lambda: q_bwd(args[1], args[0]))
    if form == "triton":
        import kernels_triton

        fn = kernels_triton.softmax if op == "softmax" else kernels_triton.softmax_backward
        return lambda: fn(*args)
    if form == "qcubin":
        return qcubin_runner(op, dtype, args, out)
    use(op, form)
    fn = kernels_cuda.softmax if op == "softmax" else kernels_cuda.softmax_backward
    return lambda: fn(*args)


def timed(fn):
    for _ in range(3):
        fn()
    clock.synchronize()
    pairs = []
    for _ in range(REPS):
        clock.flush_l2()
        clock.busy(CYCLES)
        start, end = clock.event(), clock.event()
        clock.record(start)
        fn()
        clock.record(end)
        pairs.append((start, end))
    clock.synchronize()
    return [1e3 * clock.elapsed_ms(s, e) for s, e in pairs]


def has_quack():
    try:
        import quack.softmax  # noqa: F401
    except Exception:
        return False
    return True


def main():
    peers = ("quack", "triton") if has_quack() else ("triton",)
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}; rounds {ROUNDS} x {REPS} samples, "
          f"wait {WAIT_US} us", flush=True)  # fmt: skip
    for op, dtype, shapes, forms in POINTS:
        for m, n in shapes:
            g = torch.Generator(device="cuda").manual_seed(m + n)
            x = (torch.randn((m, n), device="cuda", generator=g) * 5).to(getattr(torch, dtype))
            x[::3, 0], x[1::3, -1] = 40, 40
            if op == "softmax":
                args = (x,)
                ref = torch.softmax(x.double(), -1)
                torch_out = torch.softmax(x, -1)
            else:
                y = torch.softmax(x.float(), -1).to(x.dtype)
                dy = torch.randn((m, n), device="cuda", generator=g).to(x.dtype)
                args = (y, dy)
                yd, dyd = y.double(), dy.double()
                ref = yd * (dyd - (yd * dyd).sum(-1, keepdim=True))
                torch_out = torch._softmax_backward_data(dy, y, -1, y.dtype)
            torch_err = (torch_out.double() - ref).abs().max().item()
            all_forms = (*forms, *(p for p in peers if "qcubin" in forms or p == "triton"))
            out = torch.empty_like(x)
            runs, notes = {}, {}
            for form in all_forms:
                print(f"checking {op} {m}x{n} {dtype} {form}", flush=True)
                out.fill_(float("nan"))
                runs[form] = runner(op, form, args, dtype, out)
                got = runs[form]()
                torch.cuda.synchronize()
                err = (got.double() - ref).abs().max().item()
                notes[form] = f"err {err:.1e}" + ("" if err <= max(4 * torch_err, 1e-6) else " WRONG")
            samples = {f: [] for f in all_forms}
            for r in range(ROUNDS):
                for form in all_forms if r % 2 == 0 else all_forms[::-1]:
                    fn = (
                        runs[form]
                        if form in ("qcubin", "quack", "triton")
                        else runner(op, form, args, dtype, out)
                    )
                    samples[form] += timed(fn)
            med = {f: statistics.median(s) for f, s in samples.items()}
            base = med["base"]
            print(f"\n{op} {m}x{n} {dtype} (torch err {torch_err:.1e}); ratio = form / base", flush=True)
            for form in all_forms:
                print(f"  {form:>14} {med[form]:8.2f} us {med[form] / base:6.3f}  {notes[form]}", flush=True)


if __name__ == "__main__":
    main()
