"""The sm_80 sample the offline compile tests take: sm_90 compiles every specialization, sm_80 every
SM80_SAMPLE-th of each kernel and dtype (every source and kernel, at a fraction of CI's time;
`python -m kernels_cuda.codegen --offline --arch sm_80` compiles them all)."""

from __future__ import annotations

SM80_SAMPLE = 8


def sm80_sample(specs) -> list:
    """Every SM80_SAMPLE-th spec of each kernel and dtype (sorted by name, the first included) that sm_80 takes."""
    by_kernel: dict[str, list] = {}
    for spec in sorted((s for s in specs if s.supports_arch("sm_80")), key=lambda s: s.name):
        by_kernel.setdefault(f"{spec.kernel}.{spec.dtype}", []).append(spec)
    return [spec for group in by_kernel.values() for spec in group[::SM80_SAMPLE]]
