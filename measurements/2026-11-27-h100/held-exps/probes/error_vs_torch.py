# A probe: not part of any package.
"""The fp32 cluster forward's largest error against float64 beside torch.softmax's, over many
fresh inputs (test_cluster's test_forward_error_no_worse_than_torch draws one): for each form of
the launch (tests' SMS: one wave, many waves) and shape, the worst ratio
err / max(torch_err, ulp of the largest output) over SAMPLES inputs, and how many exceed 1.

    error_vs_torch.py SHAPES [SAMPLES]     e.g. error_vs_torch.py 8x131072,64x50257 40
"""

import sys
from unittest import mock

import numpy as np
import torch
from kernels_triton import cluster, launch
from labtools.ops import softmax_ref

SMS = {"one wave": 10**6, "many waves": 1}


def main():
    shapes = [tuple(int(v) for v in s.split("x")) for s in sys.argv[1].split(",")]
    samples = int(sys.argv[2]) if len(sys.argv) > 2 else 40
    for m, n in shapes:
        for waves, sms in SMS.items():
            ratios = []
            for seed in range(samples):
                g = torch.Generator(device="cuda").manual_seed(seed)
                x = torch.randn((m, n), generator=g, device="cuda") * 5
                x[0, 0], x[1 % m, -1], x[2 % m, ::4096] = 40, 40, 40
                y = torch.full_like(x, float("nan"))
                with mock.patch.object(cluster, "_sm_count", lambda index, sms=sms: sms):
                    launch.cluster_plan("fwd", [x, y], m, n, any_size=True)
                expected = softmax_ref(x.cpu().double().numpy())
                ulp = float(np.spacing(np.float32(np.abs(expected).max())))
                err = np.abs(y.cpu().double().numpy() - expected).max()
                torch_err = np.abs(torch.softmax(x, -1).cpu().double().numpy() - expected).max()
                ratios.append(err / max(torch_err, ulp))
            r = np.array(ratios)
            print(
                f"fwd {m}x{n} fp32 {waves}: err / max(torch err, ulp) worst {r.max():.3f}, median "
                f"{np.median(r):.3f}, above 1 in {(r > 1).sum()} of {len(r)}",
                flush=True,
            )


if __name__ == "__main__":
    main()
