# A probe: not part of any package.
"""kernels_cuda's v3 forward at fp32 rows of 1024-8192 (and bf16 4096) in fewer threads a row with
more packs, one or two rows a block (kernels_triton's geometry there: 64 threads a row at 1024 fp32),
against the package's launch ("tree", the ladder: 128x2 at 1024 fp32, 256x4 at 4096, 256x8 at
8192), beside kernels_triton. Forms and timing are ../../row-base/probes/variants.py's (TPR:ITEMS:RPB:
threads a row, packs a thread, rows a block; the same 30 us wait, in turns, 7 rounds, medians;
"base" is that probe's reference, the package before 8cbc81b)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "row-base" / "probes"))
import variants  # noqa: E402

variants.POINTS = [
    ("softmax", "float32", [(32768, 1024), (8192, 1024)], ("base", "tree", "tree@64:4:1", "tree@64:4:2", "tree@32:8:4")),
    ("softmax", "float32", [(16384, 4096), (4096, 4096)], ("base", "tree", "tree@128:8:1", "tree@128:8:2", "tree@512:2:1")),
    ("softmax", "float32", [(8192, 8192)], ("base", "tree", "tree@512:4:1", "tree@1024:2:1")),
    ("softmax", "float32", [(65536, 600), (16384, 2048)], ("base", "tree", "tree@64:4:1", "tree@64:8:1")),
    ("softmax", "bfloat16", [(16384, 4096), (8192, 8192)], ("base", "tree", "tree@64:8:1", "tree@128:4:1", "tree@128:8:1")),
    ("softmax", "bfloat16", [(32768, 1024)], ("base", "tree", "tree@32:4:4", "tree@64:2:2")),
]  # fmt: skip
variants.main()
