# A probe: not part of any package.
"""lab bench's device timing (labtools.bench.time_cuda) of QuACK, kernels_cuda and kernels_triton
as the sweep runs it, and with one of its conditions changed: no spin kernel before each timed
call (lead 0), or one input set instead of the rotated ones. In turns, ROUNDS rounds, median of
each timing's samples, then the median of rounds.

    bench_modes.py OP SHAPES DTYPES IMPLS [ROUNDS]"""

import sys

from labtools import bench, registry

LEAD = bench.lead_cycles


def timing(impl, arg_sets, mode):
    bench.lead_cycles = (lambda *a: 0) if mode == "lead 0" else LEAD
    sets = arg_sets[:1] if mode == "one input set" else arg_sets
    return bench.time_cuda(impl.fn, sets, time_cap_s=0.3).median_us


def main():
    op, shapes, dtypes, names = (
        sys.argv[1],
        sys.argv[2].split(","),
        sys.argv[3].split(","),
        sys.argv[4].split(","),
    )
    rounds = int(sys.argv[5]) if len(sys.argv) > 5 else 3
    registry.load_plugins()
    modes = ("lab bench", "lead 0", "one input set")
    for s in shapes:
        shape = tuple(int(v) for v in s.split("x"))
        for dtype in dtypes:
            impls = [registry.get(n) for n in names]
            inputs = {i.name: bench._inputs(i, shape, dtype, 0) for i in impls}
            times = {(i.name, m): [] for i in impls for m in modes}
            for _ in range(rounds):
                for m in modes:
                    for i in impls:
                        times[(i.name, m)].append(timing(i, inputs[i.name], m))
            print(f"{op} {s} {dtype} ({len(inputs[names[0]])} input sets)", flush=True)
            for m in modes:
                med = {n: sorted(times[(n, m)])[rounds // 2] for n in names}
                cells = "  ".join(f"{n} {t:8.2f} ({med[names[0]] / t:.3f})" for n, t in med.items())
                print(f"  {m:14s} {cells}", flush=True)


if __name__ == "__main__":
    main()
