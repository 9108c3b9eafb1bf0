"""A device that refuses thread-block clusters of more than 8 blocks (a MIG slice, a GPU whose GPCs hold
fewer than 16 free SMs): every op's launch that meets the refusal goes through device_props.refused,
the device joins REFUSED_CLUSTER16 (one warning), every cached plan is dropped and the call is
planned again, now with clusters of at most 8 blocks (or the op's form without clusters).

Here, on CPU: `refused` itself (True; False for the launch site to raise the error as it was), and each
op's plan (softmax forward and backward, log_softmax forward and backward, the cross-entropy's
forward, 11) on a device of max_cluster 8 at rows that take 16-block clusters on an H100, and on an
H200 whose picks name 16. Each op's launch site: test_cuda_cluster_launch_refused.py.
"""

from __future__ import annotations

import warnings
from dataclasses import replace

import pytest
from cuda_refusal_helpers import H200, REFUSAL
from kernels_cuda import _driver, backward_plans, codegen, device_props
from kernels_cuda import log_softmax_op as ls
from kernels_cuda import row_kernels as rk
from kernels_cuda import softmax_variants as variants
from kernels_cuda import xent_launch as xl
from kernels_cuda.launch_types import H100, full_vec

EIGHT = replace(H100, max_cluster=8)  # an H100 that refused 16-block clusters (device_for's)
# rows that take 16-block clusters on an H100 in some op (131072 fp32: the forward's, log_softmax's and
# the cross-entropy's; 262144: every op's)
SHAPES = [(131072, "float32"), (262144, "float32"), (262144, "bfloat16"), (524288, "bfloat16")]


def _driver_error(monkeypatch, what: str, code: int) -> _driver.CudaError:
    """The error our driver layer raises for `code` (its name looked up without a driver)."""
    names = {700: "CUDA_ERROR_ILLEGAL_ADDRESS", 912: "CUDA_ERROR_INVALID_CLUSTER_SIZE"}
    monkeypatch.setattr(_driver, "error_name", lambda code: names[code])
    return _driver.CudaError(what, code)


# --- CPU: the helper ---------------------------------------------------------------------------


def test_a_refused_cluster_past_8_blocks_is_recorded_once_and_drops_every_cached_plan(
    no_device_refused, monkeypatch
):
    # plans of every family cached, and a packed cross-entropy launch
    variants.cached_row_plan("auto", 262144, "float32", 4, H100)
    variants.cached_plan("auto", 4, 262144, "float32", 4, H100)
    ls.cluster_plan("fwd", 262144, "float32", 4, H100)
    ls.registers_plan("fwd", 600, "float32", 4, H100)
    monkeypatch.setattr(xl, "_runs", {("a key",): "a packed launch"})
    for cache in (variants.cached_row_plan, variants.cached_plan, ls.cluster_plan, ls.registers_plan):
        assert cache.cache_info().currsize > 0
    with pytest.warns(
        RuntimeWarning, match=r"device 3 refused a 16-block cluster \(.*misconfig.*at most 8 blocks"
    ):
        assert device_props.refused(RuntimeError(REFUSAL), 3, 16)
    assert device_props.REFUSED_CLUSTER16 == {3}
    for cache in (variants.cached_row_plan, variants.cached_plan, ls.cluster_plan, ls.registers_plan):
        assert cache.cache_info().currsize == 0, cache
    assert xl._runs == {}
    assert device_props.max_cluster(3) == 8 and device_props.max_cluster(0) == 16
    # a second refusal on the device (a plan made before it was recorded): planned again, no warning
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert device_props.refused(RuntimeError(REFUSAL), 3, 16)
    assert caught == [] and device_props.REFUSED_CLUSTER16 == {3}


def test_any_other_error_and_a_refusal_of_8_blocks_or_fewer_are_raised_as_they_were(
    no_device_refused, monkeypatch
):
    cases = [
        (RuntimeError("CUDA error: an illegal memory access was encountered"), 16),
        (RuntimeError("CUDA error: out of memory"), 16),
        (ValueError("no cluster here: a plain bug"), 0),  # names a cluster, but the launch had none
        (RuntimeError(REFUSAL), 8),  # 8 blocks refused is a real error
        (RuntimeError(REFUSAL), 4),
        # our driver's error for a cluster kernel names the kernel ("softmax_cluster"): its error's
        # name decides
        (_driver_error(monkeypatch, "launching softmax_cluster", 700), 16),
    ]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for error, cluster in cases:  # False: the launch site raises the error as it was
            assert not device_props.refused(error, 0, cluster)
    assert caught == [] and device_props.REFUSED_CLUSTER16 == set()
    with pytest.warns(RuntimeWarning, match="refused"):
        assert device_props.refused(_driver_error(monkeypatch, "launching softmax_cluster", 912), 0, 16)
    assert device_props.REFUSED_CLUSTER16 == {0}


def test_device_for_gives_a_refusing_device_clusters_of_8(no_device_refused, monkeypatch):
    monkeypatch.setattr(device_props, "_device_props", lambda device_id: H100)
    assert device_props.device_for(1) == H100
    device_props.REFUSED_CLUSTER16.add(1)
    assert device_props.device_for(1) == EIGHT and device_props.device_for(0) == H100


# --- CPU: every op's plan on a device of max_cluster 8 -------------------------------------------


def _clusters(plans) -> list[int]:
    """The cluster size of each plan (0: none, or no plan)."""
    return [0 if p is None else p.spec.cluster for p in plans]


@pytest.mark.parametrize("device", [H100, H200], ids=["H100", "H200-picks"])
def test_softmax_forward_and_backward_plan_at_most_8_blocks_on_a_refusing_device(device):
    eight = replace(device, max_cluster=8)
    wide = {"forward": 0, "backward": 0}
    for N, dtype in SHAPES:
        vec = full_vec(dtype)
        for M in (None, 4, 4096):
            forward = [
                variants.row_plan(v, N, dtype, vec, d, M=M) for v in ("auto", "v4") for d in (device, eight)
            ]
            backward = [
                backward_plans.row_plan(v, N, dtype, vec, d, M=M)
                for v in ("auto", "cluster")
                for d in (device, eight)
            ]
            wide["forward"] += max(_clusters(forward)) > 8
            wide["backward"] += max(_clusters(backward)) > 8
            assert max(_clusters(forward[1::2] + backward[1::2])) <= 8, (N, dtype, M)
            launch = variants.plan("auto", 4, N, dtype, vec, eight, batch_invariant=False)
            assert launch.spec.cluster <= 8
    assert wide["forward"] and wide["backward"]  # the shapes take 16 where the device allows them


@pytest.mark.parametrize("device", [H100, H200], ids=["H100", "H200-picks"])
def test_log_softmax_plans_at_most_8_blocks_on_a_refusing_device(device):
    eight = replace(device, max_cluster=8)
    wide = 0
    for N, dtype in SHAPES:
        vec = full_vec(dtype)
        for direction in ("fwd", "bwd"):
            for same in (False, True):
                plans = [
                    ls.cluster_plan(direction, N, dtype, v, d, same)
                    for v in (vec, 1)
                    for d in (device, eight)
                ]
                plans += [ls.registers_plan(direction, N, dtype, vec, d) for d in (device, eight)]
                wide += max(_clusters(plans)) > 8
                assert max(_clusters(plans[1::2])) <= 8, (direction, N, dtype)
    assert wide


def test_cross_entropy_plans_at_most_8_blocks_on_a_refusing_device(no_device_refused, monkeypatch):
    """11's split: at most 8 blocks on a device that refused 16, a row past 8 blocks of 11 packs a thread
    then on 09 (None); shorter rows keep their 8-block split."""
    monkeypatch.setattr(codegen, "device_arch", lambda device_id: "sm_90")
    device_props.REFUSED_CLUSTER16.add(1)
    wide = 0
    for N, dtype in SHAPES:
        wide += rk.xent_cluster(N, dtype, device_id=0).cluster > 8
        assert rk.xent_cluster(N, dtype, device_id=1) is None, (N, dtype)  # past 8 blocks of 11 packs: 09
    assert wide == len(SHAPES)
    for dtype in ("float32", "bfloat16"):
        vec = 16 // rk.ITEMSIZE[dtype]
        widest8 = 8 * 11 * rk.XENT_CLUSTER_THREADS * vec + vec - 1  # the last row 8 blocks of 11 hold
        assert rk.xent_cluster(widest8, dtype, device_id=1) == rk.xent_cluster(widest8, dtype, device_id=0)
        assert rk.xent_cluster(widest8, dtype, device_id=1).cluster == 8
        assert rk.xent_cluster(widest8 + 1, dtype, device_id=0).cluster == 16
        assert rk.xent_cluster(widest8 + 1, dtype, device_id=1) is None
        for N in range(16 * 8 * vec, 16 * 4096 * vec, 4999):  # every row 11 takes anywhere
            plan = rk.xent_cluster(N, dtype, device_id=1)
            assert plan is None or (plan.cluster <= 8 and plan.chunk <= plan.items * rk.XENT_CLUSTER_THREADS)
