# A probe: not part of any package.
# ruff: noqa: B023 -- every lambda here is called within the iteration that made it
"""kernels_triton's one-pass forward with other cache policies on its loads and stores: the
kernel's ONE_PASS branch with the load's cache modifier (".cg": L2 only, not L1) or eviction
policy ("evict_first") and the store's cache modifier (".cs": streaming) as constexprs, launched
with the package's own config for the shape (configs.choose, launch.tile_meta, launch.grid).

    load_paths.py SHAPES DTYPES [ROUNDS]

Device time: triton.testing.do_bench (L2 flushed by a write, as the sweep's), the forms in turns
for ROUNDS rounds; each round's trimmed mean (middle 80% of the calls), the median and the least
of the rounds. Each form's output is checked against float64."""

import sys

import torch
import triton
import triton.language as tl
import triton.testing
from kernels_triton import configs, launch
from kernels_triton.kernels import LOG2E, _in_row, _row_start

FORMS = {  # name: (load cache modifier, load eviction policy, store cache modifier)
    "package": ("", "", ""),
    "ld.cg": (".cg", "", ""),
    "ld.evict_first": ("", "evict_first", ""),
    "st.cs": ("", "", ".cs"),
    "ld.cg+st.cs": (".cg", "", ".cs"),
}


@triton.jit(do_not_specialize=["M"])
def fwd_policies(
    x_ptr, y_ptr, x_row_stride, y_row_stride, M, N,
    BLOCK: tl.constexpr, BLOCK_N: tl.constexpr, ROWS: tl.constexpr, ONE_PASS: tl.constexpr,
    NEEDS_MASK: tl.constexpr, ALIGN: tl.constexpr, L2_HINTS: tl.constexpr,
    LOAD_CM: tl.constexpr, LOAD_EP: tl.constexpr, STORE_CM: tl.constexpr,
):  # fmt: skip
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < M) & _in_row(cols, N, ALIGN)[None, :]
    x_ptrs = _row_start(x_ptr, rows.to(tl.int64), x_row_stride, ALIGN)[:, None] + cols[None, :]
    if NEEDS_MASK:
        x = tl.load(x_ptrs, mask=mask, other=float("-inf"), cache_modifier=LOAD_CM, eviction_policy=LOAD_EP)
    else:
        x = tl.load(x_ptrs, cache_modifier=LOAD_CM, eviction_policy=LOAD_EP)
    x = x.to(tl.float32)
    m = tl.max(x, axis=1)
    e = tl.exp2((x - m[:, None]) * LOG2E)
    y = (e * tl.math.div_rn(1.0, tl.sum(e, axis=1))[:, None]).to(y_ptr.dtype.element_ty)
    y_ptrs = _row_start(y_ptr, rows.to(tl.int64), y_row_stride, ALIGN)[:, None] + cols[None, :]
    if NEEDS_MASK:
        tl.store(y_ptrs, y, mask=mask, cache_modifier=STORE_CM)
    else:
        tl.store(y_ptrs, y, cache_modifier=STORE_CM)


def trimmed_mean(values):
    kept = sorted(values)[len(values) // 10 : len(values) - len(values) // 10]
    return sum(kept) / len(kept)


def main():
    shapes = [tuple(int(v) for v in s.split("x")) for s in sys.argv[1].split(",")]
    dtypes = [getattr(torch, d) for d in sys.argv[2].split(",")]
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    sms = configs.num_sms(0)
    for m, n in shapes:
        for dtype in dtypes:
            x = (torch.randn((m, n), device="cuda") * 5).to(dtype)
            x[::3, 0] = 40
            x[1::3, -1] = 40
            out = torch.empty_like(x)
            ref = torch.softmax(x.double(), -1)
            config, source = configs.choose("softmax_fwd", 1, m, n, dtype, launch.gpu_name(0), sms)
            meta = launch.tile_meta(config, m, n, [n, n], x.element_size())
            assert meta["ONE_PASS"], f"{m}x{n}: the package loops here"
            g = launch.grid(meta, m, sms, x.element_size())
            runs, notes = {}, {}
            for form, (lcm, lep, scm) in FORMS.items():
                fn = lambda lcm=lcm, lep=lep, scm=scm: fwd_policies[g](
                    x,
                    out,
                    n,
                    n,
                    m,
                    n,
                    **meta,
                    LOAD_CM=lcm,
                    LOAD_EP=lep,
                    STORE_CM=scm,
                    num_warps=config.num_warps,
                )
                out.fill_(float("nan"))
                fn()
                torch.cuda.synchronize()
                notes[form] = f"err {(out.double() - ref).abs().max().item():.1e}"
                runs[form] = fn
            times = {form: [] for form in runs}
            for _ in range(rounds):
                for form, fn in runs.items():
                    times[form].append(trimmed_mean(triton.testing.do_bench(fn, return_mode="all")) * 1e3)
            gb = 2 * x.numel() * x.element_size() / 1e3
            first = None
            print(f"fwd {m}x{n} {str(dtype)[6:]} config {config.label()} ({source})", flush=True)
            for form, ts in times.items():
                t = sorted(ts)[len(ts) // 2]
                first = first or t
                print(
                    f"  {form:>15} {t:8.2f} us (least {min(ts):8.2f}) {gb / t:7.0f} GB/s /package {t / first:.3f}"
                    f"  {notes[form]}  rounds {' '.join(f'{v:.2f}' for v in ts)}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
