# A probe: not part of any package.
"""A NaN in a stretch of otherwise -inf (where fmax-style maxima pass over the NaN) must still make
its whole row NaN, as in torch. Checked for kernels_triton and kernels_cuda (every variant) at
row lengths that take each path, the NaN inside the first 8192 elements, the rest finite."""

import kernels_cuda
import kernels_triton
import torch

for n in (600, 4000, 20000, 50257, 70000, 131072, 262144):
    for dtype in (torch.float32, torch.bfloat16):
        x = torch.randn((4, n), device="cuda").to(dtype)
        x[0, : min(n // 2, 8192)] = float("-inf")
        x[0, 5] = float("nan")
        x[1, :] = float("-inf")
        x[1, n - 1] = float("nan")  # nothing but -inf and a NaN
        want = torch.softmax(x.float(), -1).isnan()
        results = {"kernels_triton": kernels_triton.softmax(x)}
        for variant in ("auto", "v1", "v2", "v3", "v4", "v4_online"):
            try:
                results[f"kernels_cuda.{variant}"] = kernels_cuda.softmax(x, variant=variant)
            except Exception as e:  # noqa: BLE001
                results[f"kernels_cuda.{variant}"] = f"{type(e).__name__}: {str(e)[:60]}"
        for name, y in results.items():
            if isinstance(y, str):
                print(f"{n:7d} {str(dtype)[6:]:8s} {name:24s} {y}")
                continue
            ok = torch.equal(y.isnan(), want)
            print(
                f"{n:7d} {str(dtype)[6:]:8s} {name:24s} {'ok' if ok else 'DIFFERS: NaN rows ' + str(y.isnan().all(-1).tolist())}"
            )
