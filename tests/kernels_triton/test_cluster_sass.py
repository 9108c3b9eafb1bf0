"""The thread-block cluster kernels (kernels_triton.cluster, and the family's) compiled for sm_90
without a GPU (Triton outside its interpreter: the `without_interpreter` fixture), which checks
their inline PTX, that 16-bit chunks stay packed, and the registers their blocks are sized by.
"""

import torch
from kernels_triton import cluster

OFFLINE_CASES = {  # name: (direction, N, dtype), compiled as a launch on contiguous rows would
    "fwd 262144 bf16": ("fwd", 262144, "bfloat16"),
    "fwd 262144 fp16": ("fwd", 262144, "float16"),
    "fwd 200000 fp32": ("fwd", 200000, "float32"),
    "fwd 131072 bf16": ("fwd", 131072, "bfloat16"),
    "fwd 131072 fp32": ("fwd", 131072, "float32"),
    "fwd 151936 bf16, two tiles": ("fwd", 151936, "bfloat16"),
    "fwd 151936 fp32, two tiles": ("fwd", 151936, "float32"),
    "bwd 131072 bf16": ("bwd", 131072, "bfloat16"),
    "bwd 262144 fp16": ("bwd", 262144, "float16"),
    "bwd 262144 fp32": ("bwd", 262144, "float32"),
    "bwd 151936 fp32, two tiles": ("bwd", 151936, "float32"),
    "fwd 50257 bf16, head and tail": ("fwd", 50257, "bfloat16"),
    "bwd 70001 fp32, head and tail": ("bwd", 70001, "float32"),
}


def test_the_kernels_compile_for_sm90_without_a_gpu_and_16_bit_chunks_stay_packed(without_interpreter):
    """Compiled for sm_90 by Triton's own ptxas (in a process without TRITON_INTERPRET): the
    inline PTX assembles, the chunks move 16 bytes a load and a store, and 16-bit chunks stay
    packed in registers, which the blocks are sized by (cluster.block): the 16-bit forward past
    131072 within its cap of 96 registers (4 warps, 128 elements a thread) with at most 32 bytes
    spilled (widened to fp32 first: 136-176 bytes), 8192-element blocks in at most 64 (widened:
    80-96), the 16-bit backward's in at most 128 (widened: 147-156). The fp32 forward holds its
    exponentials across the exchange (HOLD_EXPS): one MUFU.EX2 an element a thread, and a few for
    the merge. The 16-bit forward reduces its chunk once, (max, sum) pairs (dsmem.partial): 3
    block barriers, where a max and then a sum take 5 or 6 (two tiles: once a tile). Two-tile blocks
    (cluster.tiles) keep TWO_TILES' register caps unspilled; the fp32 backward's hold y and dy of both tiles
    unspilled, two blocks an SM (past 163840 columns y held, dy read again after the exchange)."""
    code = (
        "import json, torch\n"
        "from sass_tools import compile_cluster, memory_instructions, resources, sass\n"
        f"cases = {OFFLINE_CASES!r}\n"
        "found = {}\n"
        "for name, (direction, n, dtype) in cases.items():\n"
        "    compiled = compile_cluster(direction, n, getattr(torch, dtype))\n"
        "    text = sass(compiled)\n"
        "    found[name] = {**resources(compiled), **memory_instructions(text), 'ex2': text.count('MUFU.EX2'),\n"
        "                   'barriers': text.count('BAR.SYNC')}\n"
        "print(json.dumps(found))\n"
    )
    found = without_interpreter(code)
    assert found.keys() == OFFLINE_CASES.keys()
    for case, counts in found.items():
        assert counts.get("LDG.E.128", 0) > 0 and counts.get("STG.E.128", 0) > 0, (case, counts)
    for case in ("fwd 262144 bf16", "fwd 262144 fp16"):
        assert found[case]["registers"] <= 96 and found[case]["stack"] <= 32, (case, found[case])
    assert found["fwd 131072 bf16"]["registers"] <= 64, found["fwd 131072 bf16"]
    assert found["bwd 131072 bf16"]["registers"] <= 128, found["bwd 131072 bf16"]
    for case in ("bwd 151936 fp32, two tiles", "bwd 262144 fp32"):  # unspilled, two blocks an SM
        meta = cluster.kernel_for("bwd", OFFLINE_CASES[case][1], torch.float32)[1]
        counts = found[case]
        assert 2 * meta["THREADS"] * counts["registers"] <= 65536 and counts["stack"] == 0, (case, counts)
        packs = (meta["CHUNK"] + meta["CHUNK2"]) // (4 * meta["THREADS"])  # a thread's, of y (dy, dx)
        assert counts["LDG.E.128"] == (3 if meta["RELOAD"] else 2) * packs, (case, counts)  # RELOAD: dy twice
    for case in (
        "fwd 131072 fp32",
        "fwd 200000 fp32",
        "fwd 151936 fp32, two tiles",
    ):  # one an element, the merge's
        meta = cluster.kernel_for("fwd", OFFLINE_CASES[case][1], torch.float32)[1]
        held = (meta["CHUNK"] + meta["CHUNK2"]) // meta["THREADS"]
        assert 0 <= found[case]["ex2"] - held <= 16, (case, found[case])
    for case in (
        "fwd 151936 bf16, two tiles",
        "fwd 151936 fp32, two tiles",
    ):  # cluster.TWO_TILES' caps, unspilled
        assert found[case]["registers"] <= (64 if "bf16" in case else 80) and found[case]["stack"] == 0, (
            found[case]
        )
    for case, (direction, _, dtype) in OFFLINE_CASES.items():
        if direction == "fwd" and dtype != "float32":  # a reduction of pairs a tile
            assert found[case]["barriers"] <= (6 if "two tiles" in case else 3), (case, found[case])


FAMILY_CASES = {  # name: (op, direction, N, dtype)
    "cross_entropy 50257 fp32, head and tail": ("cross_entropy", "fwd", 50257, "float32"),
    "cross_entropy 131072 fp32": ("cross_entropy", "fwd", 131072, "float32"),
    "cross_entropy 256000 bf16": ("cross_entropy", "fwd", 256000, "bfloat16"),
    "log_softmax fwd 200000 fp32": ("log_softmax", "fwd", 200000, "float32"),
    "cross_entropy 140000 fp32": ("cross_entropy", "fwd", 140000, "float32"),
    "cross_entropy 151936 bf16": ("cross_entropy", "fwd", 151936, "bfloat16"),
    "log_softmax fwd 151936 bf16": ("log_softmax", "fwd", 151936, "bfloat16"),
    "cross_entropy 163839 fp32, head and tail": ("cross_entropy", "fwd", 163839, "float32"),
    "log_softmax fwd 262144 bf16": ("log_softmax", "fwd", 262144, "bfloat16"),
    "cross_entropy 200000 fp16": ("cross_entropy", "fwd", 200000, "float16"),
    "log_softmax fwd 50257 fp32, head and tail": ("log_softmax", "fwd", 50257, "float32"),
    "log_softmax bwd 70001 bf16, head and tail": ("log_softmax", "bwd", 70001, "bfloat16"),
    "log_softmax bwd 262144 fp32": ("log_softmax", "bwd", 262144, "float32"),
    "log_softmax bwd 151936 fp32, two tiles": ("log_softmax", "bwd", 151936, "float32"),
}


def test_the_family_kernels_hold_their_chunk_without_spilling(without_interpreter):
    """log_softmax's and cross-entropy's cluster kernels (their own epilogues; past 131072
    columns x, not its exponentials, is held across the exchange), compiled for sm_90: 16-byte
    vectors in and out, within 160 registers a thread, nothing spilled (the cross-entropy reads
    x[t] as one scalar load, no reduction over the chunk); past 131072 columns blocks share an
    SM's 64K registers, fp32 two and 16-bit three (one block an SM left the loads waiting on
    the exchange: the row's bytes moved at half the copy's rate). The 16-bit cross-entropy's
    two-tile blocks (8 of 16384 and a second tile; log_softmax's the same) fit four an SM in 64 registers
    with one 8-byte word spilled, which is faster than three an SM unspilled (the results page); the fp32
    cross-entropy's blocks of 8192 hold their 32 values a thread in 64 registers. The cross-entropy's
    blocks may spill one 8-byte word under their caps: the mean's count, held from beside the row's
    loads (still faster than reading it after the exchange, where every row waits for it)."""
    code = (
        "import json, torch\n"
        "from sass_tools import compile_cluster_op, memory_instructions, resources, sass\n"
        f"cases = {FAMILY_CASES!r}\n"
        "found = {name: {**resources(c), **memory_instructions(sass(c))} for name, c in\n"
        "         ((name, compile_cluster_op(op, d, n, getattr(torch, dt))) for name, (op, d, n, dt) in cases.items())}\n"
        "print(json.dumps(found))\n"
    )
    found = without_interpreter(code)
    assert found.keys() == FAMILY_CASES.keys()
    for case, counts in found.items():
        assert counts.get("LDG.E.128", 0) > 0 and counts.get("STG.E.128", 0) > 0, (case, counts)
        one_word = case.startswith("cross_entropy") or case.endswith("151936 bf16")
        assert counts["stack"] <= (8 if one_word else 0), (case, counts)
        if case.endswith("151936 bf16"):  # four blocks an SM
            assert counts["registers"] <= 64 and counts.get("STL", 0) <= 1, (case, counts)
        elif case.startswith(("cross_entropy 50257 fp32", "cross_entropy 131072 fp32")):  # XENT_FP32_8192
            assert counts["registers"] <= 64, (case, counts)
        else:
            assert counts["registers"] <= 160, (case, counts)
    for case, (op, direction, n, dtype) in FAMILY_CASES.items():
        if n > 131072 and direction == "fwd":
            threads = cluster.kernel_for(direction, n, getattr(torch, dtype), 0, op)[1]["THREADS"]
            per_sm = 2 if dtype == "float32" else 3
            assert found[case]["registers"] * threads * per_sm <= 65536, (case, found[case], threads)
