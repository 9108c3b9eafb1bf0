"""The Triton cross-entropy kernels compiled for sm_90 without a GPU (Triton outside its
interpreter, in a child process: the `without_interpreter` fixture), their SASS read for the
width of each load and store, spills and registers.
"""

from __future__ import annotations

import pytest

COMPILE = """
import json, torch, triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from kernels_triton import xent_kernels as K
from kernels_triton import xent_launch as L
from kernels_triton.cross_entropy import ce_shape
from sass_tools import memory_instructions, resources, sass
n, ty, kernel = {n}, "{ty}", "{kernel}"
dtype = dict(bf16=torch.bfloat16, fp32=torch.float32)[ty]
itemsize = dtype.itemsize
rows = [torch.empty((4096, n), dtype=dtype, device="meta")] * 2  # contiguous logits and gradient
off, split = L.splits(n, rows)
block, one_pass, nrows, warps = ce_shape(n, itemsize)
meta = dict(BLOCK=block, **split, IS_FP64=False, SMOOTH=0.0, MEAN=True)
if kernel == "fwd":
    fn = K.cross_entropy_fwd
    meta.update(ONE_PASS=one_pass, WRITE_GRAD=True, ROWS=nrows, ZERO_TICKET=False)
else:  # the recompute, as cross_entropy._backward launches it
    fn = K.cross_entropy_bwd
    meta.update(BLOCK=min(block, L.ROW_SHAPES[itemsize][1]), PER_ROW=False)
ptrs = dict(X="*" + ty, T="*i64", LOSS="*fp32", STATS="*fp32", G="*" + ty, COUNT="*i32", DLOSS="*fp32")
ints = dict(M=4096, N=n, stride_x=n, stride_g=n, OFF=off, ignore_index=-100)
sig, attrs = {{}}, {{}}
for i, a in enumerate(fn.arg_names):  # as a launch specialises: integers divisible by 16 marked so
    sig[a] = ptrs.get(a, "constexpr" if a in meta else "i32")
    if a in ptrs or (a in ints and ints[a] % 16 == 0):
        attrs[(i,)] = [["tt.divisibility", 16]]
c = triton.compile(ASTSource(fn, sig, constexprs=meta, attrs=attrs), target=GPUTarget("cuda", 90, 32),
                   options={{"num_warps": warps}})
print(json.dumps({{"one_pass": one_pass, "rows": nrows, "VEC": split["VEC"], **resources(c),
                  **memory_instructions(sass(c))}}))
"""


def test_compiled_for_a_gpu_the_rows_are_16_byte_vectors(without_interpreter):
    """Compiled for sm_90 (no GPU needed): the looped cross-entropy forward on aligned bf16 rows
    of 128256 loads and stores 16-byte vectors and spills nothing (registers leave room for
    two programs an SM)."""
    got = without_interpreter(COMPILE.format(n=128256, ty="bf16", kernel="fwd"))
    assert got["one_pass"] is False and got["VEC"] == 0 and got["stack"] == 0 and got["registers"] <= 64, got
    assert got.get("LDG.E.EL.128") and got.get("LDG.E.EF.128") and got.get("STG.E.EF.128"), got
    # 2-byte accesses: only the target's logit (LDG.E.U16), never a tile of the row
    assert not any(k in got for k in ("LDG.E.EL.U16", "LDG.E.EF.U16", "STG.E.U16", "STG.E.EF.U16")), got


@pytest.mark.parametrize("ty,scalar,kernel", [("bf16", "U16", "bwd"), ("fp32", "", "fwd")])
def test_compiled_odd_rows_move_their_bodies_as_16_byte_vectors(without_interpreter, ty, scalar, kernel):
    """GPT-2's rows of 50257, contiguous (each row at its own offset from a 16-byte boundary),
    compiled for sm_90: the split's body loads and stores 16-byte vectors in both passes of the
    forward and in the recompute; element accesses are the edges' and the target's alone (one
    instruction each: one lane a thread); no spills, registers for two programs an SM."""
    got = without_interpreter(COMPILE.format(n=50257, ty=ty, kernel=kernel))
    assert got["one_pass"] is False and got["VEC"] == 16 // (2 if ty == "bf16" else 4), got
    assert got["stack"] == 0 and got["registers"] <= 64, got

    def element(op):  # an element's access: LDG.E.U16 (bf16), LDG.E (fp32)
        return f"{op}.{scalar}" if scalar else op

    if kernel == "fwd":
        assert got.get("LDG.E.EL.128") and got.get("LDG.E.EF.128") and got.get("STG.E.EF.128"), got
        assert element("LDG.E.EF") not in got and element("STG.E.EF") not in got, got  # pass 2's tiles
        # pass 1's edges (evict_last); pass 2's edges and their store (fp32: and the 3 statistics)
        assert got.get(element("LDG.E.EL")) == 1 and got.get(element("STG.E")) <= 4, got
    else:
        assert got.get("LDG.E.128") and got.get("STG.E.128"), got
        assert got.get(element("STG.E"), 0) <= 2, got


COMPILE_LOOPED = """
import json, torch, triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from kernels_triton import xent_kernels as K
from kernels_triton import xent_launch as L
from kernels_triton import token_logprobs as T
from sass_tools import memory_instructions, sass
ty = "{ty}"
dtype = dict(bf16=torch.bfloat16, fp32=torch.float32)[ty]
_, block, warps = L.ROW_SHAPES[dtype.itemsize]
kernels = ["log_softmax_fwd", "log_softmax_bwd", "cross_entropy_fwd", "cross_entropy_bwd", "token_stats_fwd",
           "token_stats_bwd"]
stats = ("LOSS", "STATS", "DLOSS", "LOGP", "ENT", "DLOGP", "DENT")
got = {{}}
for name in kernels:
    fn = getattr(K, name, None) or getattr(T, name)
    for like in (True, False) if "LIKE" in fn.arg_names else (True,):
        meta = dict(BLOCK=block, ALIGN=1, VEC=16 // dtype.itemsize, LIKE=like, ONE_PASS=False, IS_FP64=False,
                    SMOOTH=0.1, MEAN=True, WRITE_GRAD=True, ROWS=1, PER_ROW=False, ZERO_TICKET=False)
        meta = {{a: v for a, v in meta.items() if a in fn.arg_names}}
        sig, attrs = {{}}, {{}}
        for i, a in enumerate(fn.arg_names):  # the first tensor based off a 16-byte boundary (OFF = 3)
            if a in meta:
                sig[a] = "constexpr"
            elif a in ("T", "COUNT"):
                sig[a], attrs[(i,)] = "*i64" if a == "T" else "*i32", [["tt.divisibility", 16]]
            elif a in stats:
                sig[a], attrs[(i,)] = "*fp32", [["tt.divisibility", 16]]
            elif a in ("X", "Y"):
                sig[a] = "*" + ty
            elif a.isupper() and a not in ("M", "N", "OFF"):
                sig[a], attrs[(i,)] = "*" + ty, [["tt.divisibility", 16]]
            else:  # M = 4095, N = 50257, strides 50257, OFF = 3: none divisible by 16
                sig[a] = "i32"
        c = triton.compile(ASTSource(fn, sig, constexprs=meta, attrs=attrs), target=GPUTarget("cuda", 90, 32),
                           options={{"num_warps": warps}})
        got[f"{{name}} LIKE={{like}}"] = memory_instructions(sass(c))
print(json.dumps(got))
"""


@pytest.mark.parametrize("ty", ["bf16"])  # fp32's odd-row vectors: test_compiled_odd_rows_move_...
def test_compiled_every_looped_kernel_on_odd_rows(without_interpreter, ty):
    """Every looped kernel (log_softmax, cross-entropy and its recompute, token stats; forward
    and backward) compiles for sm_90 on rows of 50257 split into head, body and tail (VEC > 0),
    with the other tensors laid out like the first (LIKE) or not: the interpreter never compiles,
    so a kernel that does not (a loop-carried name retyped in the loop) fails here, without a GPU.
    The first tensor's base is off a 16-byte boundary (OFF = 3), and still its body loads are
    16-byte vectors: the register layout of its tiles, and so the order of its row sums, is the
    one a batch at a boundary gets, so a row's bits are the same alone as in the batch."""
    got = without_interpreter(COMPILE_LOOPED.format(ty=ty))
    assert len(got) == 11, got
    for kernel, ops in got.items():
        assert any(op.startswith("LDG") and op.endswith(".128") for op in ops), (kernel, ops)


@pytest.mark.parametrize("n", [128, 600])
@pytest.mark.parametrize("itemsize,ty", [(2, "bf16"), (4, "fp32")])
def test_compiled_short_rows_load_16_byte_vectors(without_interpreter, itemsize, ty, n):
    """The one-pass tile (short rows that are not whole 16-byte packs, or shorter than 32 of
    them): rows of 128, several a program ([ROWS, BLOCK] tiles), and of 600, one a program,
    load and store 16-byte vectors and spill nothing."""
    got = without_interpreter(COMPILE.format(n=n, ty=ty, kernel="fwd"))
    assert got["one_pass"] is True and (got["rows"] > 1) == (n == 128) and got["stack"] == 0, got
    assert got.get("LDG.E.128") and got.get("STG.E.128"), got


COMPILE_WARP_ROWS = """
import json, torch, triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from kernels_triton import xent_warp_rows as W
from sass_tools import memory_instructions, resources, sass
n, ty = {n}, "{ty}"
width, packs, full, rows = W.shape(n, dict(bf16=2, fp32=4)[ty])
fn = W.cross_entropy_warp_rows
meta = dict(WIDTH=width, PACKS=packs, FULL=full, ROWS=rows, ALIGN=16 // dict(bf16=2, fp32=4)[ty], SMOOTH=0.0,
            WRITE_GRAD=True, MEAN=True, ZERO_TICKET=False)
ptrs = dict(X="*" + ty, T="*i64", LOSS="*fp32", STATS="*fp32", G="*" + ty, COUNT="*i32")
ints = dict(M=4096, N=n, stride_x=n, stride_g=n, ignore_index=-100)
sig = {{a: ptrs.get(a, "constexpr" if a in meta else "i32") for a in fn.arg_names}}
attrs = {{(i,): [["tt.divisibility", 16]] for i, a in enumerate(fn.arg_names)
          if a in ptrs or (a in ints and ints[a] % 16 == 0)}}
c = triton.compile(ASTSource(fn, sig, constexprs=meta, attrs=attrs), target=GPUTarget("cuda", 90, 32),
                   options={{"num_warps": rows}})
print(json.dumps({{"packs": packs, **resources(c), **memory_instructions(sass(c))}}))
"""


@pytest.mark.parametrize("n,ty", [(600, "bf16"), (600, "fp32"), (2048, "bf16")])
def test_compiled_warp_rows_move_16_byte_vectors(without_interpreter, n, ty):
    """The warp-rows kernel compiled for sm_90: every pack, the last one (partly past the row)
    too, is one 16-byte load and one store a lane (its mask is constant over runs of a pack:
    ALIGN), and nothing spills at 8 packs a lane."""
    got = without_interpreter(COMPILE_WARP_ROWS.format(n=n, ty=ty))
    assert got["stack"] == 0, got
    # a 16-byte load and store a pack (the other accesses are scalars: targets, x[t], the row's stats)
    assert got.get("LDG.E.128") == got["packs"] and got.get("STG.E.128") == got["packs"], got


COMPILE_REDUCE = """
import json, triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from kernels_triton import xent_reduce as R
from kernels_triton.cross_entropy import _REDUCE_BLOCK
from sass_tools import resources
got = {{}}
for fn, sig in ((R.count_targets, dict(T="*i64", COUNT="*i32", M="i32", ignore_index="i32")),
                (R.reduce_loss, dict(LOSS="*fp32", COUNT="*i32", PART="*fp32", OUT="*bf16", M="i32"))):
    meta = {{a: v for a, v in dict(BLOCK=_REDUCE_BLOCK, MEAN=True).items() if a in fn.arg_names}}
    attrs = {{(i,): [["tt.divisibility", 16]] for i, a in enumerate(fn.arg_names) if sig.get(a, "")[:1] == "*"}}
    c = triton.compile(ASTSource(fn, sig | dict.fromkeys(meta, "constexpr"), constexprs=meta, attrs=attrs),
                       target=GPUTarget("cuda", 90, 32), options={{"num_warps": 8}})
    ptx = c.asm["ptx"]
    store, ticket = ptx.find("st.global"), ptx.find("atom.global.gpu.acq_rel.add")
    got[fn.__name__] = dict(**resources(c), ordered=-1 < store < ticket < ptx.find("ld.volatile.global"),
                            barrier="bar.sync" in ptx[store:ticket])
print(json.dumps(got))
"""


def test_compiled_reductions_order_the_partials_before_the_ticket(without_interpreter):
    """xent_reduce's kernels compile for sm_90 without spills (the interpreter never compiles),
    and reduce_loss's last program can see every partial: its own partial is stored, and the
    program's threads meet at a barrier, before the acq_rel ticket; the partials are read after
    it, volatile (from L2)."""
    got = without_interpreter(COMPILE_REDUCE.format())
    assert all(k["stack"] == 0 for k in got.values()), got
    assert got["reduce_loss"]["ordered"] and got["reduce_loss"]["barrier"], got
