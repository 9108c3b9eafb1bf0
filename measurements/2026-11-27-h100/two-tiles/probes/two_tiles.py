# A probe: not part of any package.
# ruff: noqa: B023 -- every lambda here is called within the iteration that made it
"""kernels_triton's one-pass kernels with a row held as two power-of-two tiles, HEAD + TAIL
lanes (600 -> 512 + 128 = 640 lanes), where the package holds it in one tile of next_pow2(N)
lanes (600 -> 1024, 41% of them masked). HEAD <= N, so the head tile needs a mask only for
rows past M; the tail tile is masked at N.

    two_tiles.py sass                       SASS statistics of the forms (CPU, sm_90)
    two_tiles.py time SHAPES DTYPES FORMS [ROUNDS]
    e.g. two_tiles.py time 4096x600,65536x600 float32,bfloat16 2x2,4x4 5
    (a form: ROWSxWARPS; the package's own launch, kernels_triton.softmax, is the baseline)

Device time: triton.testing.do_bench (L2 flushed by a write, as the sweep's), the forms in
turns for ROUNDS rounds; each round's trimmed mean (middle 80% of the calls), the median of
the rounds. Each form's output is checked against float64 (largest error beside torch's)."""

import sys

import torch
import triton
import triton.language as tl
from kernels_triton.kernels import LOG2E, _in_row, _row_start


@triton.jit(do_not_specialize=["M"])
def fwd_two_tiles(
    x_ptr, y_ptr, x_row_stride, y_row_stride, M, N,
    HEAD: tl.constexpr, TAIL: tl.constexpr, ROWS: tl.constexpr, ROW_MASK: tl.constexpr, ALIGN: tl.constexpr,
):  # fmt: skip
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    live = rows < M
    r = rows.to(tl.int64)
    h = tl.arange(0, HEAD)
    t = HEAD + tl.arange(0, TAIL)
    tmask = live[:, None] & _in_row(t, N, ALIGN)[None, :]
    xr = _row_start(x_ptr, r, x_row_stride, ALIGN)[:, None]
    if ROW_MASK:
        xh = tl.load(xr + h[None, :], mask=live[:, None], other=float("-inf")).to(tl.float32)
    else:
        xh = tl.load(xr + h[None, :]).to(tl.float32)
    xt = tl.load(xr + t[None, :], mask=tmask, other=float("-inf")).to(tl.float32)
    m = tl.maximum(tl.max(xh, axis=1), tl.max(xt, axis=1))
    eh = tl.exp2((xh - m[:, None]) * LOG2E)
    et = tl.exp2((xt - m[:, None]) * LOG2E)
    inv = tl.math.div_rn(1.0, tl.sum(eh, axis=1) + tl.sum(et, axis=1))
    yr = _row_start(y_ptr, r, y_row_stride, ALIGN)[:, None]
    yh = (eh * inv[:, None]).to(y_ptr.dtype.element_ty)
    if ROW_MASK:
        tl.store(yr + h[None, :], yh, mask=live[:, None])
    else:
        tl.store(yr + h[None, :], yh)
    tl.store(yr + t[None, :], (et * inv[:, None]).to(y_ptr.dtype.element_ty), mask=tmask)


@triton.jit(do_not_specialize=["M"])
def bwd_two_tiles(
    y_ptr, dy_ptr, dx_ptr, y_row_stride, dy_row_stride, dx_row_stride, M, N,
    HEAD: tl.constexpr, TAIL: tl.constexpr, ROWS: tl.constexpr, ROW_MASK: tl.constexpr, ALIGN: tl.constexpr,
):  # fmt: skip
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    live = rows < M
    r = rows.to(tl.int64)
    h = tl.arange(0, HEAD)
    t = HEAD + tl.arange(0, TAIL)
    tmask = live[:, None] & _in_row(t, N, ALIGN)[None, :]
    yr = _row_start(y_ptr, r, y_row_stride, ALIGN)[:, None]
    dyr = _row_start(dy_ptr, r, dy_row_stride, ALIGN)[:, None]
    if ROW_MASK:
        yh = tl.load(yr + h[None, :], mask=live[:, None], other=0.0).to(tl.float32)
        dyh = tl.load(dyr + h[None, :], mask=live[:, None], other=0.0).to(tl.float32)
    else:
        yh = tl.load(yr + h[None, :]).to(tl.float32)
        dyh = tl.load(dyr + h[None, :]).to(tl.float32)
    yt = tl.load(yr + t[None, :], mask=tmask, other=0.0).to(tl.float32)
    dyt = tl.load(dyr + t[None, :], mask=tmask, other=0.0).to(tl.float32)
    dot = tl.sum(yh * dyh, axis=1) + tl.sum(yt * dyt, axis=1)
    dxr = _row_start(dx_ptr, r, dx_row_stride, ALIGN)[:, None]
    dxh = (yh * (dyh - dot[:, None])).to(dx_ptr.dtype.element_ty)
    if ROW_MASK:
        tl.store(dxr + h[None, :], dxh, mask=live[:, None])
    else:
        tl.store(dxr + h[None, :], dxh)
    tl.store(dxr + t[None, :], (yt * (dyt - dot[:, None])).to(dx_ptr.dtype.element_ty), mask=tmask)


def split(n):
    head = 1 << (n.bit_length() - 1)  # the largest power of two <= n
    return head, triton.next_power_of_2(n - head) if n > head else 0


def meta(m, n, rows, itemsize):
    head, tail = split(n)
    import math

    return dict(HEAD=head, TAIL=tail, ROWS=rows, ROW_MASK=m % rows != 0, ALIGN=math.gcd(n, 16 // itemsize))


def parse(form):
    rows, warps = (int(v) for v in form.split("x"))
    return rows, warps


# ------------------------------------------------------------------ SASS on the CPU


def sass_stats():
    import re

    from kernels_triton import offline
    from kernels_triton.configs import SoftmaxConfig
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    def compile_two(direction, m, n, dtype, rows, warps):
        fn = fwd_two_tiles if direction == "fwd" else bwd_two_tiles
        tensors = 2 if direction == "fwd" else 3
        consts = meta(m, n, rows, dtype.itemsize)
        signature, attrs = {}, {}
        for i, arg in enumerate(fn.arg_names):
            if arg.endswith("_ptr"):
                signature[arg] = offline.POINTER_TYPES[dtype]
                attrs[(i,)] = [["tt.divisibility", 16]]
            elif arg in consts:
                signature[arg] = "constexpr"
            else:
                signature[arg] = "i32"
                if arg != "M" and n % 16 == 0:
                    attrs[(i,)] = [["tt.divisibility", 16]]
        assert len([a for a in fn.arg_names if a.endswith("_ptr")]) == tensors
        src = ASTSource(fn, signature, constexprs=consts, attrs=attrs)
        return triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": warps})

    def stats(compiled):
        text = offline.sass(compiled)
        body = [ln for ln in text.splitlines() if re.match(r"\s+/\*[0-9a-f]{4}\*/", ln)]
        ops = [re.sub(r"^\s*/\*[0-9a-f]+\*/\s*(@!?U?P\w+\s+)?", "", ln).split()[0] for ln in body]
        ops = [o for o in ops if o != "NOP"]
        return (
            f"instr {len(ops):4d} bar {sum(o.startswith('BAR') for o in ops)} shfl {sum(o.startswith('SHFL') for o in ops)} "
            f"mufu {sum(o.startswith('MUFU') for o in ops)} {offline.resources(compiled)} {offline.memory_instructions(text)}"
        )

    picks = {  # the committed picks at 32 rows an SM (4096x600) and 64 (65536x600)
        ("fwd", torch.float32): [(2048, 2), (2048, 8)],
        ("fwd", torch.bfloat16): [(2048, 4), (1024, 2)],
        ("bwd", torch.float32): [(2048, 4), (1024, 8)],
        ("bwd", torch.bfloat16): [(1024, 2), (2048, 2)],
    }
    for (direction, dtype), configs in picks.items():
        name = "softmax_" + direction
        for m in (4096,):
            for block, warps in configs:
                c = offline.compile_for(name, m, 600, dtype, SoftmaxConfig(block, warps))
                print(f"{direction} {str(dtype)[6:]:8} package {block}/{warps}: {stats(c)}")
            for rows, warps in ((1, 1), (2, 1), (2, 2), (4, 2), (4, 4), (8, 4), (8, 8)):
                c = compile_two(direction, m, 600, dtype, rows, warps)
                print(f"{direction} {str(dtype)[6:]:8} two tiles {rows}x{warps}: {stats(c)}")


# ------------------------------------------------------------------ timing on the GPU


def median(values):
    return sorted(values)[len(values) // 2]


def trimmed_mean(values):
    kept = sorted(values)[len(values) // 10 : len(values) - len(values) // 10]
    return sum(kept) / len(kept)


def timing(shapes, dtypes, forms, rounds):
    import kernels_triton

    for direction in ("fwd", "bwd"):
        for m, n in shapes:
            for dtype in dtypes:
                x = (torch.randn((m, n), device="cuda") * 5).to(dtype)
                x[::3, 0] = 40
                x[1::3, -1] = 40
                y = torch.softmax(x.float(), -1).to(dtype)
                dy = torch.randn_like(x)
                out = torch.empty_like(x)
                if direction == "fwd":
                    ref = torch.softmax(x.double(), -1)
                    torch_out = torch.softmax(x, -1)
                    base = lambda: kernels_triton.softmax(x)  # noqa: E731
                else:
                    yd = y.double()
                    ref = yd * (dy.double() - (yd * dy.double()).sum(-1, keepdim=True))
                    torch_out = torch._softmax_backward_data(dy, y, -1, dtype)
                    base = lambda: kernels_triton.softmax_backward(y, dy)  # noqa: E731
                torch_err = (torch_out.double() - ref).abs().max().item()
                runs, notes = {"package": base}, {}
                for form in forms:
                    rows, warps = parse(form)
                    k = meta(m, n, rows, x.element_size())
                    g = (triton.cdiv(m, rows),)
                    if direction == "fwd":
                        fn = lambda g=g, k=k, w=warps: fwd_two_tiles[g](  # noqa: E731
                            x, out, x.stride(0), out.stride(0), m, n, **k, num_warps=w
                        )
                    else:
                        fn = lambda g=g, k=k, w=warps: bwd_two_tiles[g](  # noqa: E731
                            y, dy, out, y.stride(0), dy.stride(0), out.stride(0), m, n, **k, num_warps=w
                        )
                    runs[form] = fn
                for form, fn in runs.items():
                    out.fill_(float("nan"))
                    got = fn()
                    got = out if form != "package" else got
                    torch.cuda.synchronize()
                    notes[form] = f"err {(got.double() - ref).abs().max().item():.1e} (torch {torch_err:.1e})"
                times = {form: [] for form in runs}
                for _ in range(rounds):
                    for form, fn in runs.items():
                        times[form].append(trimmed_mean(triton.testing.do_bench(fn, return_mode="all")) * 1e3)
                streams = 2 if direction == "fwd" else 3
                gb = streams * x.numel() * x.element_size() / 1e3
                first = None
                print(f"{direction} {m}x{n} {str(dtype)[6:]}", flush=True)
                for form, ts in times.items():
                    t = median(ts)
                    first = first or t
                    print(
                        f"  {form:>8} {t:8.2f} us {gb / t:7.0f} GB/s /package {t / first:.3f}  {notes[form]}"
                        f"  rounds {' '.join(f'{v:.2f}' for v in ts)}",
                        flush=True,
                    )


if __name__ == "__main__":
    if sys.argv[1] == "sass":
        sass_stats()
    else:
        shapes = [tuple(int(v) for v in s.split("x")) for s in sys.argv[2].split(",")]
        dtypes = [getattr(torch, d) for d in sys.argv[3].split(",")]
        timing(shapes, dtypes, sys.argv[4].split(","), int(sys.argv[5]) if len(sys.argv) > 5 else 3)
