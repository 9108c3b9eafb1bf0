# A frozen copy (2026-11-26, measurements/2026-11-26-h100/lm-head-fusion/README.md): kernels_triton/linear_softmax.py as the probe of call b ran it; not in the package.
"""A decoder's LM head in one Triton launch: y = softmax(layer_norm(x) @ weight.T + bias).

    x (..., K)  ->  layer_norm over K (optional)  ->  logits (..., V)  ->  softmax over V

Why fuse. In a decode step the GPU waits on the host: every op costs its host time (a few
to tens of microseconds when the step's other work has left the caches cold), however
little the GPU has to do. A head of three ops (layer norm, linear, softmax) costs three
launches; this is one. The numerics are those of the three ops: the normalized input is
rounded to the storage dtype before the product, the logits are rounded to it before the
softmax (as torch stores them between its ops), and everything else is fp32. Not
differentiable: it is for sampling, where no gradient is wanted.

The kernel. A program takes BLOCK_M rows. It computes the rows' mean and variance over K
(two passes over x, which stays in L1), then the logits of a tile of BLOCK_V vocabulary
entries as a [BLOCK_M, BLOCK_K] x [BLOCK_K, BLOCK_V] product per slice of K, the input
normalized as it is loaded. While the vocabulary fits one tile (V <= MAX_ONE_PASS_V) the
logits stay in registers and the softmax is taken on them: x is read, y written once. A
longer vocabulary is walked tile by tile: each tile's logits are stored to y and merged
into a running (max, sum of exp) per row, the sum kept in fp64 so that its error does not
grow with the number of tiles; a second walk rewrites y as probabilities. The maximum is
subtracted before the scaling by log2(e): finite logits of any size are exact where the
true result is. fp32 products are IEEE (no TF32), as torch's default for fp32 matmuls;
16-bit ones run on tensor cores with fp32 accumulation (under Triton's interpreter, which
cannot multiply 16-bit matrices, in fp32 on the same 16-bit values: the same products).

The call. The first call with a given x layout and given parameter tensors checks
everything and plans the launch; later calls with the same key (x's shape, dtype, device,
layout and alignment; each parameter's identity and data pointer, and the weight's shape
and strides) launch the compiled kernel directly (launch.pointer_launcher). A plan keeps
its parameter tensors alive, so their identities stay theirs; a parameter given new
storage (`.data =`, `.to()`) gets a new key. Changing a 1-D parameter's shape in place
without new storage (resize_, as_strided_) is not seen.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl
from kernels_triton import launch
from kernels_triton.configs import DTYPES, INTERPRET, dtype_name, next_pow2

LOG2E = tl.constexpr(1.4426950408889634)
BLOCK_M = 16  # the least a tl.dot takes
MAX_ONE_PASS_V = 1024  # logits held in registers: [16, 1024] fp32 over 8 warps, 64 a thread
MAX_PLANS = 1024


@triton.jit(do_not_specialize=["M"])
def linear_softmax_kernel(
    x_ptr, norm_w_ptr, norm_b_ptr, w_ptr, b_ptr, y_ptr, M, K, V, eps,
    NORM: tl.constexpr, NORM_W: tl.constexpr, NORM_B: tl.constexpr, BIAS: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_K: tl.constexpr, BLOCK_V: tl.constexpr, F32_DOT: tl.constexpr,
    ONE_PASS: tl.constexpr,
):  # fmt: skip
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    row_ok = rows < M
    x_rows = x_ptr + rows.to(tl.int64)[:, None] * K
    y_rows = y_ptr + rows.to(tl.int64)[:, None] * V
    ks = tl.arange(0, BLOCK_K)
    vs = tl.arange(0, BLOCK_V)
    mean = tl.zeros([BLOCK_M], tl.float32)
    rstd = tl.zeros([BLOCK_M], tl.float32)
    if NORM:  # two passes, as torch's mean and biased variance; x stays in L1 between them
        total = tl.zeros([BLOCK_M], tl.float32)
        for k0 in range(0, K, BLOCK_K):
            mask = row_ok[:, None] & (k0 + ks < K)[None, :]
            total += tl.sum(tl.load(x_rows + k0 + ks[None, :], mask=mask, other=0.0).to(tl.float32), 1)
        mean = total / K
        squares = tl.zeros([BLOCK_M], tl.float32)
        for k0 in range(0, K, BLOCK_K):
            mask = row_ok[:, None] & (k0 + ks < K)[None, :]
            d = tl.load(x_rows + k0 + ks[None, :], mask=mask, other=0.0).to(tl.float32) - mean[:, None]
            d = tl.where(mask, d, 0.0)
            squares += tl.sum(d * d, 1)
        rstd = 1.0 / tl.sqrt_rn(squares / K + eps)
    m_run = tl.full([BLOCK_M], float("-inf"), tl.float32)  # looped: running max and sum per row
    s_run = tl.zeros([BLOCK_M], tl.float64)
    for v0 in range(0, V, BLOCK_V):
        v_ok = v0 + vs < V
        acc = tl.zeros([BLOCK_M, BLOCK_V], tl.float32)
        for k0 in range(0, K, BLOCK_K):
            k_ok = k0 + ks < K
            xk = tl.load(x_rows + k0 + ks[None, :], mask=row_ok[:, None] & k_ok[None, :], other=0.0)
            if NORM:
                xk = (xk.to(tl.float32) - mean[:, None]) * rstd[:, None]
                if NORM_W:
                    xk = xk * tl.load(norm_w_ptr + k0 + ks, mask=k_ok, other=0.0).to(tl.float32)[None, :]
                if NORM_B:
                    xk = xk + tl.load(norm_b_ptr + k0 + ks, mask=k_ok, other=0.0).to(tl.float32)[None, :]
                xk = xk.to(x_ptr.dtype.element_ty)  # layer_norm's output dtype
            wt = tl.load(  # [BLOCK_K, BLOCK_V]: weight is [V, K] row-major
                w_ptr + (v0 + vs).to(tl.int64)[None, :] * K + (k0 + ks)[:, None],
                mask=v_ok[None, :] & k_ok[:, None], other=0.0,
            )  # fmt: skip
            if F32_DOT:
                acc = tl.dot(xk.to(tl.float32), wt.to(tl.float32), acc, input_precision="ieee")
            else:
                acc = tl.dot(xk, wt, acc)
        if BIAS:
            acc += tl.load(b_ptr + v0 + vs, mask=v_ok, other=0.0).to(tl.float32)[None, :]
        logits = acc.to(y_ptr.dtype.element_ty)  # linear's output dtype
        z = tl.where(v_ok[None, :], logits.to(tl.float32), float("-inf"))
        m_new = tl.maximum(m_run, tl.max(z, 1))
        ref = tl.where(m_new == float("-inf"), 0.0, m_new)  # a row of -inf so far keeps sum 0
        e = tl.exp2((z - ref[:, None]) * LOG2E)
        mask = row_ok[:, None] & v_ok[None, :]
        if ONE_PASS:  # one tile (BLOCK_V >= V): the softmax on the logits in registers
            inv = tl.math.div_rn(1.0, tl.sum(e, 1))
            tl.store(y_rows + vs[None, :], e * inv[:, None], mask=mask)
        else:
            tl.store(y_rows + v0 + vs[None, :], logits, mask=mask)
            s_run = s_run * tl.exp2((m_run - ref) * LOG2E).to(tl.float64) + tl.sum(e, 1).to(tl.float64)
            m_run = m_new
    if not ONE_PASS:  # looped: the logits in y become probabilities
        ref = tl.where(m_run == float("-inf"), 0.0, m_run)
        inv = (1.0 / s_run).to(tl.float32)
        for v0 in range(0, V, BLOCK_V):
            mask = row_ok[:, None] & (v0 + vs < V)[None, :]
            z = tl.load(y_rows + v0 + vs[None, :], mask=mask, other=0.0).to(tl.float32)
            tl.store(y_rows + v0 + vs[None, :], tl.exp2((z - ref[:, None]) * LOG2E) * inv[:, None], mask=mask)


_PLANS: dict[tuple, object] = {}
launch.PLAN_CACHES.append(_PLANS)
_is_dynamo_compiling = torch.compiler.is_dynamo_compiling


def linear_softmax(
    x: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None = None,
    *,
    norm: tuple[torch.Tensor | None, torch.Tensor | None, float] | None = None,
) -> torch.Tensor:
    """softmax(layer_norm(x) @ weight.T + bias, dim=-1) in one launch, for sampling.

    x: (..., K); weight: (V, K); bias: (V,) or None; norm: (norm_weight, norm_bias, eps) of
    a layer norm over K applied to x first (either tensor may be None), or None for none.
    Every tensor contiguous, of one dtype (fp32, fp16 or bf16) and on one CUDA device (or
    the CPU under TRITON_INTERPRET=1). Returns (..., V) probabilities in x's dtype. Not
    differentiable: no tensor may require grad while grad mode is on.
    """
    if type(x) is torch.Tensor and not _is_dynamo_compiling() and not torch.is_grad_enabled():
        nw, nb, eps = norm if norm is not None else (None, None, None)
        key = (
            x.shape, x.dtype, x.get_device(), x.is_contiguous(), x.data_ptr() % 16,
            id(weight), weight.data_ptr(), weight.shape, weight.stride(),
            id(bias), bias is not None and bias.data_ptr(), id(nw), nw is not None and nw.data_ptr(),
            id(nb), nb is not None and nb.data_ptr(), eps,
        )  # fmt: skip
        plan = _PLANS.get(key)
        if plan is not None:
            return plan(x)
    else:
        key = None
    return _checked_launch(x, weight, bias, norm, key)


def _check(x, weight, bias, norm) -> None:
    tensors = {"x": x, "weight": weight, "bias": bias}
    if norm is not None:
        if not isinstance(norm, tuple) or len(norm) != 3:
            raise TypeError("norm must be None or a tuple (norm_weight, norm_bias, eps)")
        tensors |= {"norm weight": norm[0], "norm bias": norm[1]}
        if isinstance(norm[2], bool) or not isinstance(norm[2], (int, float)) or not norm[2] >= 0:
            raise ValueError(f"norm's eps must be a number >= 0, got {norm[2]!r}")
    for name, t in tensors.items():
        if t is None and name not in ("x", "weight"):
            continue
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
        if t.dtype != x.dtype or x.dtype not in DTYPES:
            raise TypeError(
                f"{name} has dtype {t.dtype}; every tensor must have one dtype of "
                f"{', '.join(map(dtype_name, DTYPES))} (x has {x.dtype})"
            )
        if t.device != x.device:
            raise ValueError(f"{name} is on {t.device}, x on {x.device}: they must be on one device")
        if not t.is_contiguous():
            raise ValueError(f"{name} must be contiguous")
        if t.requires_grad and torch.is_grad_enabled():
            raise ValueError(
                f"{name} requires grad: linear_softmax is not differentiable (use torch.no_grad())"
            )
    if not x.is_cuda and not INTERPRET:
        raise ValueError(
            f"x is on {x.device}, and Triton kernels run on CUDA devices; on the CPU, set TRITON_INTERPRET=1 "
            "before triton is imported"
        )
    if (
        x.dim() < 1
        or weight.dim() != 2
        or weight.shape[1] != x.shape[-1]
        or weight.shape[0] < 1
        or x.shape[-1] < 1
    ):
        raise ValueError(
            f"weight must be (V, K) and x (..., K) with V, K >= 1; got weight {tuple(weight.shape)}, x {tuple(x.shape)}"
        )
    k, v = x.shape[-1], weight.shape[0]
    for name, t, n in (
        ("bias", bias, v),
        ("norm weight", norm and norm[0], k),
        ("norm bias", norm and norm[1], k),
    ):
        if t is not None and tuple(t.shape) != (n,):
            raise ValueError(f"{name} must have shape ({n},), got {tuple(t.shape)}")


def _checked_launch(x, weight, bias, norm, key):
    _check(x, weight, bias, norm)
    nw, nb, eps = norm if norm is not None else (None, None, 0.0)
    k, v = x.shape[-1], weight.shape[0]
    m = x.numel() // k
    y = torch.empty((*x.shape[:-1], v), dtype=x.dtype, device=x.device)
    if m == 0:
        return y
    block_v = min(next_pow2(v), MAX_ONE_PASS_V)
    f32 = x.dtype == torch.float32 or INTERPRET
    block_k = 16 if f32 else 32  # a [BLOCK_K, BLOCK_V] slice of the weight per step, in shared memory
    meta = {
        "NORM": norm is not None, "NORM_W": nw is not None, "NORM_B": nb is not None, "BIAS": bias is not None,
        "BLOCK_M": BLOCK_M, "BLOCK_K": min(block_k, max(16, next_pow2(k))), "BLOCK_V": max(16, block_v),
        "F32_DOT": f32, "ONE_PASS": v <= block_v,
    }  # fmt: skip
    grid = (triton.cdiv(m, BLOCK_M), 1, 1)
    # absent tensors are passed as the weight: a constexpr flag keeps the kernel from reading them
    tensors = (x, nw if nw is not None else weight, nb if nb is not None else weight, weight,
               bias if bias is not None else weight, y)  # fmt: skip
    scalars = (m, k, v, float(eps))
    num_warps = 8 if meta["BLOCK_V"] >= 512 else 4
    compiled = linear_softmax_kernel[grid](*tensors, *scalars, **meta, num_warps=num_warps)
    if key is not None and not INTERPRET:
        ptrs = launch.pointer_launcher(compiled, grid, (*scalars, *meta.values()), x.get_device())
        params = tuple(t.data_ptr() for t in tensors[1:5])
        out_shape, dtype, device, empty = y.shape, x.dtype, x.device, torch.empty

        def plan(x):
            y = empty(out_shape, dtype=dtype, device=device)
            ptrs(x.data_ptr(), *params, y.data_ptr())
            return y

        plan.keeps = (weight, bias, nw, nb)  # their ids and storage stay theirs while the plan lives
        if len(_PLANS) >= MAX_PLANS:
            _PLANS.clear()
        _PLANS[key] = plan
    return y
