"""The softmax call path's caches, by layout (plans, prepared calls, call objects), and the one
function that empties them all (`clear_caches`, the log_softmax's and cross-entropy's plans too):
after set_auto_config, a tune that wrote new picks, or a device that refused a cluster size."""

from __future__ import annotations

from dataclasses import replace
from functools import lru_cache

from kernels_cuda import softmax_plans
from kernels_cuda.softmax_launch import RowsCall
from kernels_cuda.softmax_plans import AutoConfig, plan
from kernels_cuda.softmax_prepare import cached_row_plan, prepare


def set_auto_config(**changes) -> AutoConfig:
    softmax_plans.AUTO = replace(softmax_plans.AUTO, **changes)
    clear_caches()
    return softmax_plans.AUTO


# Bounded: a long-running program sees any number of shapes, and these stay a few MB.
cached_plan = lru_cache(maxsize=4096)(plan)
cached_prepare = lru_cache(maxsize=4096)(prepare)

# The call objects softmax_variants makes, filled there; emptied, never rebound, so that the
# names it imports stay these dicts.
prepared_calls: dict[tuple, object] = {}  # (Prepared, backend, device) -> softmax_variants._Call
torch_calls: dict[tuple, object] = {}  # a torch call's layout key (softmax_variants._torch_key) -> _Call
# dense torch rows: (N, dtype, device, 16-byte alignment, variant) -> RowsCall. A fresh y is on a
# 16-byte boundary with rows of stride N, as x's, so x's alignment alone decides whether their rows
# share offsets (`offsets_match`): the plan for one key suits every call that finds it.
rows_calls: dict[tuple, RowsCall] = {}


# The torch-only ops' own plan caches (log_softmax_op, xent_launch): each module adds its
# `forget_plans` here when it is imported, and clear_caches calls them too.
FORGET: list = []


def clear_caches() -> None:
    """Forget every plan and call made (after set_auto_config, a tune that wrote new picks, or a
    device that refused a cluster: device_props.refused), the log_softmax's and cross-entropy's
    too."""
    from kernels_cuda import backward_call, picks

    for forget_plans in FORGET:
        forget_plans()
    picks.forget()
    backward_call.cached_row_plan.cache_clear()
    backward_call.row_runs.clear()
    backward_call.dense_calls.clear()
    cached_row_plan.cache_clear()
    cached_plan.cache_clear()
    cached_prepare.cache_clear()
    prepared_calls.clear()
    torch_calls.clear()
    rows_calls.clear()
