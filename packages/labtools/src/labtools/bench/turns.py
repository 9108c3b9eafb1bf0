"""Several functions timed side by side, in turns: each round times every function, the
order reversed every other round, so a drift of the machine, or what one function leaves
behind for the next, falls on all of them alike."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence

from labtools.bench.blocks import no_sync, time_fn
from labtools.bench.cuda import CudaClock, host_issue_s
from labtools.bench.timing import Timing, merged


def turn_order(items: Sequence, round_index: int) -> Sequence:
    """The order of one round of timing in turns: as given, reversed every other round, so that
    no function always runs first or right after the same one."""
    return items[:: 1 if round_index % 2 == 0 else -1]


def time_calls_taking_turns(
    fns: dict[str, Callable[[], object]],
    calls: int,
    rounds: int,
    *,
    synchronize: Callable[[], None] = no_sync,
    warmup: int = 20,
    clock: Callable[[], float] = time.perf_counter,
) -> dict[str, list[float]]:
    """Call time of several functions side by side, for ratios between them: `rounds`
    rounds, in each of which every function runs `calls` calls back to back, synchronized at
    the end, the order reversed every other round (a drift of the host's speed, and the place
    in a round, hit them alike). Returns each function's wall time per call, in us, a round."""
    for fn in fns.values():
        for _ in range(warmup):
            fn()
    times: dict[str, list[float]] = {name: [] for name in fns}
    order = list(fns.items())
    for r in range(rounds):
        for name, fn in turn_order(order, r):
            synchronize()
            start = clock()
            for _ in range(calls):
                fn()
            synchronize()
            times[name].append((clock() - start) / calls * 1e6)
    return times


def paired_ratio(times: dict[str, list[float]], name: str, ref: str) -> float:
    """Median over the rounds of `time_calls_taking_turns` of name's time over ref's in the
    same round: the host's drift between rounds cancels, as it does not in a ratio of medians."""
    return statistics.median(a / b for a, b in zip(times[name], times[ref], strict=True))


def time_in_turns(
    runs: Sequence[tuple[Callable, Sequence[tuple]]],
    device: str,
    rounds: int,
    *,
    time_cap_s: float = 1.0,
    **kw,
) -> list[Timing | Exception]:
    """`time_fn` of several functions (each with its own input sets) side by side: `rounds`
    rounds, each timing every function for time_cap_s / rounds, the order reversed every other
    round; on CUDA every function waits as long before its launches (`time_cuda`'s lead_s).
    Timed one after another, a kernel's place in a sweep (what ran just before it) can move
    its time by more than the gaps a sweep is run to find; in turns, whatever a place gives
    falls on every function alike. Returns each function's samples of all rounds, or the exception it raised
    (it is not timed again)."""
    if rounds < 1:
        raise ValueError(f"rounds must be >= 1, got {rounds}")
    done: list[list[Timing] | Exception] = [[] for _ in runs]
    if device == "cuda":  # one wait before every timed launch: the slowest function's
        synchronize, issue = CudaClock(0).synchronize, [0.0]
        for i, (fn, arg_sets) in enumerate(runs):
            try:
                issue += host_issue_s(fn, arg_sets, synchronize)
            except Exception as exc:  # noqa: BLE001 - the caller records it against this function
                done[i] = exc
        kw["lead_s"] = 2 * max(issue)
    for r in range(rounds):
        for i in turn_order(range(len(runs)), r):
            if isinstance(done[i], Exception):
                continue
            fn, arg_sets = runs[i]
            try:
                done[i].append(time_fn(fn, arg_sets, device, time_cap_s=time_cap_s / rounds, **kw))
            except Exception as exc:  # noqa: BLE001 - the caller records it against this function
                done[i] = exc
    return [d if isinstance(d, Exception) else merged(d) for d in done]
