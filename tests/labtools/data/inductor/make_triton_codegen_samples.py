"""Regenerate the Triton-format samples (triton_codegen_*/) on a machine without a GPU.

Inductor can generate Triton for CPU tensors (`cpu_backend = "triton"`). Code generation
only needs Triton's backend hash, which asks for an active Triton driver; with no GPU
there is none, so this script replaces that hash by a constant (it only keys caches).
The kernel then cannot be launched, but Inductor has already generated and logged the
module by then. The result is Inductor's real Triton output format (persistent and
looped reductions, in/out pointers, index expressions, the source-node comments) for a
CPU device: Triton in both reduction forms, beside the GPU dump of experiment 25.

    uv run python tests/labtools/data/inductor/make_triton_codegen_samples.py
"""

from __future__ import annotations

from pathlib import Path

import torch
import torch._inductor.config as inductor_config
import torch.utils._triton

from labtools.inductor.capture import KERNEL_NAMING, Dump, capture, fresh_cache
from labtools.inductor.targets import TinyHead

HERE = Path(__file__).parent
SAMPLES = {  # folder: (vocab, batch): 600 columns fit one block; 50000 need a loop
    "triton_codegen_tinyhead": (600, 2),
    "triton_codegen_widehead": (50_000, 4),
}


def generate(vocab: int, batch: int) -> Dump:
    torch.manual_seed(42)
    model, x = TinyHead(vocab=vocab).eval(), torch.randn(batch, 64)
    with (
        torch.no_grad(),
        fresh_cache(),
        inductor_config.patch({"cpu_backend": "triton", **KERNEL_NAMING}),
        capture() as got,
    ):
        try:
            torch.compile(model, dynamic=False)(x)
        except Exception:  # noqa: BLE001 - launching needs a Triton driver; the code was logged before
            pass
    if not got.modules:
        raise RuntimeError("Inductor generated no Triton module")
    return Dump("cpu", "default", got.modules, got.graphs, eager=None, compiled_output=None)


if __name__ == "__main__":
    torch.utils._triton.triton_hash_with_backend = lambda: "0" * 64
    for folder, (vocab, batch) in SAMPLES.items():
        generate(vocab, batch).write(HERE / folder)
        print(HERE / folder)
