# A probe: not part of any package.
# ruff: noqa: B023 -- every lambda here is called within the iteration that made it
"""kernels_triton's one-pass kernels with a warp a row: the row as a [PACKS, ROWS, WIDTH] tile
(WIDTH = 32 lanes x 16 bytes, the packs dimension first so that Triton's layout puts the
program's warps on its rows, not across a row), FULL unmasked packs and a masked TAIL, where the
package holds a row in one tile of next_pow2(N) lanes spread over the program's warps (rows of
600 fp32: 1024 lanes, 8 packs a thread of which 3 are padding, and two reductions through shared
memory behind block barriers). kernels_cuda's few-rows launch and QuACK's kernel hold a row of
600 fp32 the same way as these forms: a warp a row, 5 packs a thread, 4 rows a 128-thread block.

    warp_rows.py sass                          SASS statistics of the forms (CPU, sm_90)
    warp_rows.py time [ROUNDS]                 the points below, on a GPU

Forms: package (kernels_triton's launch), cuda (kernels_cuda's), qcubin (QuACK 0.6.5's own cubin
for the shape, launched through kernels_cuda's driver: ../../row-base/probes/variants.py), and
RxW (ROWS rows a program over W warps). Device time as in variants.py: the L2 flushed by a write,
the same 30 us spin for every form, then the launch; every form of a point in turns, the order
reversed every other round; median of all samples. Each output (NaN-poisoned first) is checked
against float64 beside torch's own error."""

import math
import statistics
import sys
from pathlib import Path

import torch
import triton
import triton.language as tl
from kernels_triton.kernels import LOG2E, _in_row, _row_start

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "row-base" / "probes"))


@triton.jit(do_not_specialize=["M"])
def fwd_warp_rows(
    x_ptr, y_ptr, x_row_stride, y_row_stride, M, N,
    FULL: tl.constexpr, TAIL: tl.constexpr, WIDTH: tl.constexpr, ROWS: tl.constexpr,
    ROW_MASK: tl.constexpr, ALIGN: tl.constexpr,
):  # fmt: skip
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    live = (rows < M)[:, None, None]
    r = rows.to(tl.int64)
    c = tl.arange(0, WIDTH)[None, None, :]
    head = (tl.arange(0, FULL) * WIDTH)[None, :, None] + c  # [1, FULL, WIDTH], inside every row
    tail = FULL * WIDTH + tl.arange(0, WIDTH)[None, :]  # [1, WIDTH]: TAIL == 1
    tmask = (rows < M)[:, None] & _in_row(tail, N, ALIGN)
    xr2 = _row_start(x_ptr, r, x_row_stride, ALIGN)[:, None]
    xr = xr2[:, None, :]
    if ROW_MASK:
        xh = tl.load(xr + head, mask=live, other=float("-inf")).to(tl.float32)
    else:
        xh = tl.load(xr + head).to(tl.float32)
    xt = tl.load(xr2 + tail, mask=tmask, other=float("-inf")).to(tl.float32)  # [ROWS, WIDTH]
    m = tl.max(tl.maximum(tl.max(xh, axis=1), xt), axis=1)  # [ROWS]
    eh = tl.exp2((xh - m[:, None, None]) * LOG2E)
    et = tl.exp2((xt - m[:, None]) * LOG2E)
    inv = tl.math.div_rn(1.0, tl.sum(tl.sum(eh, axis=1) + et, axis=1))  # [ROWS]
    yr2 = _row_start(y_ptr, r, y_row_stride, ALIGN)[:, None]
    yr = yr2[:, None, :]
    yh = (eh * inv[:, None, None]).to(y_ptr.dtype.element_ty)
    if ROW_MASK:
        tl.store(yr + head, yh, mask=live)
    else:
        tl.store(yr + head, yh)
    tl.store(yr2 + tail, (et * inv[:, None]).to(y_ptr.dtype.element_ty), mask=tmask)


@triton.jit(do_not_specialize=["M"])
def bwd_warp_rows(
    y_ptr, dy_ptr, dx_ptr, y_row_stride, dy_row_stride, dx_row_stride, M, N,
    FULL: tl.constexpr, TAIL: tl.constexpr, WIDTH: tl.constexpr, ROWS: tl.constexpr,
    ROW_MASK: tl.constexpr, ALIGN: tl.constexpr,
):  # fmt: skip
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    live = (rows < M)[:, None, None]
    r = rows.to(tl.int64)
    c = tl.arange(0, WIDTH)[None, None, :]
    head = (tl.arange(0, FULL) * WIDTH)[None, :, None] + c
    tail = FULL * WIDTH + tl.arange(0, WIDTH)[None, :]  # [1, WIDTH]: TAIL == 1
    tmask = (rows < M)[:, None] & _in_row(tail, N, ALIGN)
    yr2 = _row_start(y_ptr, r, y_row_stride, ALIGN)[:, None]
    dyr2 = _row_start(dy_ptr, r, dy_row_stride, ALIGN)[:, None]
    yr, dyr = yr2[:, None, :], dyr2[:, None, :]
    if ROW_MASK:
        yh = tl.load(yr + head, mask=live, other=0.0).to(tl.float32)
        dyh = tl.load(dyr + head, mask=live, other=0.0).to(tl.float32)
    else:
        yh = tl.load(yr + head).to(tl.float32)
        dyh = tl.load(dyr + head).to(tl.float32)
    yt = tl.load(yr2 + tail, mask=tmask, other=0.0).to(tl.float32)  # [ROWS, WIDTH]
    dyt = tl.load(dyr2 + tail, mask=tmask, other=0.0).to(tl.float32)
    dot = tl.sum(tl.sum(yh * dyh, axis=1) + yt * dyt, axis=1)  # [ROWS]
    dxr2 = _row_start(dx_ptr, r, dx_row_stride, ALIGN)[:, None]
    dxr = dxr2[:, None, :]
    dxh = (yh * (dyh - dot[:, None, None])).to(dx_ptr.dtype.element_ty)
    if ROW_MASK:
        tl.store(dxr + head, dxh, mask=live)
    else:
        tl.store(dxr + head, dxh)
    tl.store(dxr2 + tail, (yt * (dyt - dot[:, None])).to(dx_ptr.dtype.element_ty), mask=tmask)


KERNELS = {"fwd": fwd_warp_rows, "bwd": bwd_warp_rows}


def meta(m, n, rows, itemsize):
    """FULL: the largest power of two of whole packs-of-the-warp inside N; TAIL: the packs that
    cover the rest, rounded up to a power of two."""
    width = 32 * 16 // itemsize
    full = 1 << ((n // width).bit_length() - 1)
    rest = -(-(n - full * width) // width)
    tail = 1 << (rest - 1).bit_length() if rest > 1 else 1
    return dict(FULL=full, TAIL=tail, WIDTH=width, ROWS=rows, ROW_MASK=m % rows != 0,
                ALIGN=math.gcd(n, 16 // itemsize))  # fmt: skip


def parse(form):
    rows, warps = (int(v) for v in form.split("x"))
    return rows, warps


def compile_form(direction, m, n, dtype, rows, warps):
    from kernels_triton import offline

    fn = KERNELS[direction]
    consts = meta(m, n, rows, dtype.itemsize)
    ints = {a: n for a in fn.arg_names if not a.endswith("_ptr") and a not in consts}
    ints["M"] = None
    return offline._compile(fn, dtype, consts, ints, 90, {"num_warps": warps})


def sass_stats(forms=("1x1", "2x2", "4x4", "8x4", "8x8", "16x8")):
    import re

    from kernels_triton import offline
    from kernels_triton.configs import SoftmaxConfig

    def stats(compiled):
        text = offline.sass(compiled)
        body = [ln for ln in text.splitlines() if re.match(r"\s+/\*[0-9a-f]{4}\*/", ln)]
        ops = [re.sub(r"^\s*/\*[0-9a-f]+\*/\s*(@!?U?P\w+\s+)?", "", ln).split()[0] for ln in body]
        ops = [o for o in ops if o != "NOP"]
        count = lambda p: sum(o.startswith(p) for o in ops)  # noqa: E731
        return (f"instr {len(ops):4d} bar {count('BAR')} sts {count('STS')} shfl {count('SHFL')} "
                f"mufu {count('MUFU')} {offline.resources(compiled)} {offline.memory_instructions(text)}")  # fmt: skip

    picks = {("fwd", torch.float32): (2048, 2), ("fwd", torch.bfloat16): (2048, 4),
             ("bwd", torch.float32): (2048, 4), ("bwd", torch.bfloat16): (1024, 2)}  # fmt: skip
    for (direction, dtype), (block, warps) in picks.items():
        c = offline.compile_for("softmax_" + direction, 4096, 600, dtype, SoftmaxConfig(block, warps))
        print(f"{direction} {str(dtype)[6:]:8} package {block}/{warps}: {stats(c)}", flush=True)
        for form in forms:
            c = compile_form(direction, 4096, 600, dtype, *parse(form))
            print(f"{direction} {str(dtype)[6:]:8} warp rows {form}: {stats(c)}", flush=True)


# ------------------------------------------------------------------ timing on the GPU

WAIT_US = 30
REPS = 60


def form_runner(direction, form, args, out):
    from kernels_triton import launch

    rows, warps = parse(form)
    m, n = args[0].shape
    k = meta(m, n, rows, args[0].element_size())
    tensors = [*args, out]
    scalars = (*(t.stride(0) for t in tensors), m, n)
    grid = (triton.cdiv(m, rows), 1, 1)
    compiled = KERNELS[direction].warmup(*tensors, *scalars, grid=grid, **k, num_warps=warps)
    compiled._init_handles()
    plan = launch.direct_launcher(compiled, grid, len(tensors), (*scalars, *k.values()), out.get_device())
    return lambda: plan(*tensors) or out


POINTS = [  # direction, dtypes, shapes, forms
    ("fwd", ("float32", "bfloat16"), [(4096, 600), (2048, 600), (8192, 600), (65536, 600)],
     ("4x4", "8x4", "2x2", "8x8", "16x8")),
    ("bwd", ("float32", "bfloat16"), [(4096, 600), (2048, 600), (8192, 600), (65536, 600)],
     ("4x4", "8x4", "2x2", "8x8", "16x8")),
]  # fmt: skip


def timing(rounds):
    import kernels_cuda
    import kernels_cuda.softmax_backward  # noqa: F401 - the callable module
    import kernels_triton
    import variants  # ../../row-base/probes: QuACK's cubins through kernels_cuda's driver
    from labtools.bench import _CudaClock

    clock = _CudaClock(256 * 1024 * 1024)
    cycles = int(WAIT_US * clock.cycles_per_us())

    def timed(fn):
        for _ in range(3):
            fn()
        clock.synchronize()
        pairs = []
        for _ in range(REPS):
            clock.flush_l2()
            clock.busy(cycles)
            start, end = clock.event(), clock.event()
            clock.record(start)
            fn()
            clock.record(end)
            pairs.append((start, end))
        clock.synchronize()
        return [1e3 * clock.elapsed_ms(s, e) for s, e in pairs]

    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, triton {triton.__version__}; "
          f"rounds {rounds} x {REPS} samples, wait {WAIT_US} us", flush=True)  # fmt: skip
    for direction, dtypes, shapes, forms in POINTS:
        op = "softmax" if direction == "fwd" else "softmax_backward"
        for dtype_name in dtypes:
            dtype = getattr(torch, dtype_name)
            for m, n in shapes:
                g = torch.Generator(device="cuda").manual_seed(m + n)
                x = (torch.randn((m, n), device="cuda", generator=g) * 5).to(dtype)
                x[::3, 0], x[1::3, -1] = 40, 40
                if direction == "fwd":
                    args = (x,)
                    ref = torch.softmax(x.double(), -1)
                    torch_out = torch.softmax(x, -1)
                    runs = {
                        "package": lambda: kernels_triton.softmax(x),
                        "cuda": lambda: kernels_cuda.softmax(x),
                    }
                else:
                    y = torch.softmax(x.float(), -1).to(dtype)
                    dy = torch.randn((m, n), device="cuda", generator=g).to(dtype)
                    args = (y, dy)
                    yd, dyd = y.double(), dy.double()
                    ref = yd * (dyd - (yd * dyd).sum(-1, keepdim=True))
                    torch_out = torch._softmax_backward_data(dy, y, -1, dtype)
                    runs = {"package": lambda: kernels_triton.softmax_backward(y, dy),
                            "cuda": lambda: kernels_cuda.softmax_backward(y, dy)}  # fmt: skip
                out = torch.empty_like(x)
                if (op, dtype_name, n) in variants.QCUBIN:
                    runs["qcubin"] = variants.qcubin_runner(op, dtype_name, args, out)
                for form in forms:
                    runs[form] = form_runner(direction, form, args, out)
                torch_err = (torch_out.double() - ref).abs().max().item()
                notes = {}
                for name, fn in runs.items():
                    out.fill_(float("nan"))
                    got = fn()
                    torch.cuda.synchronize()
                    err = (got.double() - ref).abs().max().item()
                    notes[name] = f"err {err:.1e}" + ("" if err <= max(2 * torch_err, 1e-6) else " WRONG")
                names = list(runs)
                samples = {name: [] for name in names}
                for r in range(rounds):
                    for name in names if r % 2 == 0 else names[::-1]:
                        samples[name] += timed(runs[name])
                med = {name: statistics.median(s) for name, s in samples.items()}
                base = med["package"]
                print(f"\n{direction} {m}x{n} {dtype_name} (torch err {torch_err:.1e}); ratio = form / package",
                      flush=True)  # fmt: skip
                for name in names:
                    print(
                        f"  {name:>8} {med[name]:8.2f} us {med[name] / base:6.3f}  {notes[name]}", flush=True
                    )


if __name__ == "__main__":
    if sys.argv[1] == "sass":
        sass_stats()
    else:
        timing(int(sys.argv[2]) if len(sys.argv) > 2 else 7)
