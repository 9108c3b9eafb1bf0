"""Experiment 24 (Triton port + PyTorch MiniGPT): everything it measures, into <card>/ beside
this file (h100/, h200/, cpu/: the device it runs on).

A thin wrapper: the work is `lab run` (labtools.job) -- the registered correctness checks
(the PyTorch port, the kernel swap), the copy and matmul ceilings, the softmax and
softmax_backward sweeps over every registered implementation (naive, smem, fused,
long-row, Triton, F.softmax, torch.compile), B512 and the Triton autotune pick, the
roofline plots, manifest.json and REPORT.md. Extra arguments go to `lab run --experiment 24`
(e.g. --ncu to add Nsight Compute verdicts, --quick for three shapes, --overwrite).

    uv run python experiments/24-triton-and-pytorch/bench.py
    python3 scripts/in_place.py python experiments/24-triton-and-pytorch/bench.py   # GPU machine
"""

import os
import sys

from labtools.cli import main

if __name__ == "__main__":
    os.chdir(os.path.dirname(os.path.abspath(__file__)))  # --experiment finds the repository from here
    sys.exit(main(["run", "--experiment", "24", *sys.argv[1:]]))
