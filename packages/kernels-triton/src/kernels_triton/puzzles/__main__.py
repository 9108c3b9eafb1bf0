"""python -m kernels_triton.puzzles: check the twelve puzzles against their specs at the
seed's sizes. One line each, then a summary; exit code 1 if any fails.

Runs on the GPU when there is one. Without one it needs Triton's CPU interpreter, which
Triton selects when it is imported (TRITON_INTERPRET=1); `import kernels_triton` has
already imported it by the time this module runs, so it restarts itself with the
variable set.
"""

import argparse
import os
import sys

import torch


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m kernels_triton.puzzles", description=__doc__.split("\n\n")[0]
    )
    argv = sys.argv[1:] if argv is None else argv
    parser.parse_args(argv)  # --help exits here, before any puzzle runs
    if not torch.cuda.is_available() and os.environ.get("TRITON_INTERPRET") != "1":
        env = {**os.environ, "TRITON_INTERPRET": "1"}
        os.execve(sys.executable, [sys.executable, "-m", "kernels_triton.puzzles", *argv], env)

    from kernels_triton.puzzles import PUZZLES, run

    where = (
        torch.cuda.get_device_name() if torch.cuda.is_available() else "the CPU, under Triton's interpreter"
    )
    print(f"Triton Puzzles on {where}")
    failed = 0
    for puzzle in PUZZLES:
        try:
            result = run(puzzle)
            print(result.line())
            failed += not result.ok
        except Exception as exc:  # noqa: BLE001 - report every puzzle, then fail
            print(f"{puzzle.number:2d} {puzzle.name:28s} FAIL {type(exc).__name__}: {exc}")
            failed += 1
    print(f"{len(PUZZLES) - failed}/{len(PUZZLES)} puzzles match their specs")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
