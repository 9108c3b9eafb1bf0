"""A device that refuses clusters of more than 8 blocks (a MIG slice, a card whose GPCs hold fewer than 16
free SMs): the launch that meets the refusal routes again, its rows and every later row past
cluster.PORTABLE_COLS columns take the tile kernels, with one warning, and shorter rows keep their
clusters. On CPU the route is checked on a faked sm_90 device; on an sm_90 GPU every op runs through a
launcher that refuses clusters of 16 blocks as such a device would."""

import importlib
import math
import warnings

import numpy as np
import pytest
import torch
from cluster_helpers import needs_sm90, reference
from kernels_triton import cluster, launch, log_softmax, softmax, softmax_backward, xent_launch
from labtools.ops import log_softmax_ref, softmax_ref, tolerance
from xent_helpers import check

REFUSAL = "Triton Error [CUDA]: a kernel launch error has occurred due to cluster misconfiguration"


def test_a_refusing_device_keeps_clusters_of_8_blocks_and_nothing_longer(monkeypatch):
    monkeypatch.setattr(cluster, "INTERPRET", False)
    monkeypatch.setattr(cluster, "_capable", lambda index: True)
    monkeypatch.setattr(cluster, "REFUSED", set())
    cuda0, cuda1 = torch.device("cuda", 0), torch.device("cuda", 1)
    wide = cluster.PORTABLE_COLS + 1
    with pytest.warns(RuntimeWarning, match="refused a cluster of more than 8 blocks"):
        assert not cluster.launched(_raise(REFUSAL), 0, wide)
    assert cluster.REFUSED == {0}
    for direction in ("fwd", "bwd"):
        assert cluster.applies(direction, 64, cluster.PORTABLE_COLS, torch.float32, cuda0)
        assert cluster.kernel_for(direction, cluster.PORTABLE_COLS, torch.float32)[1]["C"] <= 8
        for n in (wide, 131072, 262144):
            assert not cluster.applies(direction, 64, n, torch.bfloat16, cuda0), n
            assert cluster.applies(direction, 64, n, torch.bfloat16, cuda1), (
                n
            )  # another device: its own answer


def _raise(message):
    def run():
        raise RuntimeError(message)

    return run


def test_launched_routes_again_only_where_the_device_refused(monkeypatch):
    """cluster.launched: True after a launch that ran, False after a refusal of a cluster past 8 blocks (the
    device then in REFUSED), and any other error raised as it was: 8 blocks refused is a real error."""
    monkeypatch.setattr(cluster, "REFUSED", set())
    assert cluster.launched(lambda: None, 0, 262144)
    for message, n in (("CUDA error: an illegal memory access was encountered", 262144),
                       ("CUDA error: out of memory", 262144), (REFUSAL, cluster.PORTABLE_COLS)):  # fmt: skip
        with pytest.raises(RuntimeError, match=message[-20:]):
            cluster.launched(_raise(message), 0, n)
    assert cluster.REFUSED == set()
    with pytest.warns(RuntimeWarning, match="refused a cluster"):
        assert not cluster.launched(_raise(REFUSAL), 0, 262144)
    assert cluster.REFUSED == {0}


def _refusing_launcher(real):
    """launch.launcher, but a launch of more than 8 blocks a cluster raises as a refusing device's does."""

    def launcher(compiled, packed_metadata=None):
        c, *rest = real(compiled, packed_metadata)
        if packed_metadata is None or packed_metadata[1] <= 8:
            return (c, *rest)

        def refuse(*args):
            raise RuntimeError(REFUSAL)

        return (refuse, *rest)

    return launcher


@pytest.fixture
def refusing_device(monkeypatch):
    """Every cached launch dropped before and after: the refusing launchers must not outlive the test."""
    launch.forget_plans()
    xent_launch._LAUNCHERS.clear()
    monkeypatch.setattr(launch, "launcher", _refusing_launcher(launch.launcher))
    monkeypatch.setattr(xent_launch, "launcher", launch.launcher)
    yield lambda: monkeypatch.setattr(cluster, "REFUSED", set())
    monkeypatch.undo()
    launch.forget_plans()
    xent_launch._LAUNCHERS.clear()


@pytest.mark.gpu
@needs_sm90
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_every_op_falls_back_to_the_tiles_where_the_device_refuses_16_blocks(refusing_device, dtype):
    """softmax forward and backward, log_softmax and the cross-entropy at 100000 columns (16 blocks) on a
    device refusing them: torch's results, each op meeting the refusal itself, and afterwards rows of
    PORTABLE_COLS still over 8 blocks (the refusing launcher lets them through)."""
    g = torch.Generator(device="cuda").manual_seed(0)
    x = (torch.randn((3, 100000), generator=g, device="cuda") * 3).to(dtype)
    device = x.get_device()
    ref = softmax_ref(x.cpu().double().numpy())
    tol = tolerance(dtype)
    for op in ("softmax", "softmax_backward", "log_softmax", "cross_entropy"):
        refusing_device()  # each op meets the refusal at its own launch
        with pytest.warns(RuntimeWarning, match="refused a cluster"):
            if op == "softmax":
                np.testing.assert_allclose(softmax(x).cpu().double().numpy(), ref, **tol)
            elif op == "softmax_backward":
                y, dy = torch.softmax(x.float(), -1).to(dtype), torch.randn_like(x)
                np.testing.assert_allclose(
                    softmax_backward(y, dy).cpu().double().numpy(), reference(y, dy), **tol
                )
            elif op == "log_softmax":
                want = log_softmax_ref(x.cpu().double().numpy())
                np.testing.assert_allclose(log_softmax(x).cpu().double().numpy(), want, **tol)
            else:  # loss and gradient against torch's on float64 (xent_helpers.check)
                check(x, torch.randint(0, x.shape[1], (x.shape[0],), generator=g, device="cuda"), "sum", 0.0)
        assert cluster.REFUSED == {device}, op
    assert not cluster.applies("fwd", 3, 100000, dtype, x.device)
    assert cluster.applies("fwd", 3, cluster.PORTABLE_COLS, dtype, x.device)
    short = x[:, : cluster.PORTABLE_COLS].contiguous()
    np.testing.assert_allclose(
        softmax(short).cpu().double().numpy(), softmax_ref(short.cpu().double().numpy()), **tol
    )


@pytest.mark.gpu
@needs_sm90
def test_a_real_refusal_reads_as_one(monkeypatch):
    """The H200 refuses clusters of 9 to 15 blocks of these kernels (cluster.blocks): the error a launch of 12
    raises there is one launched() recognises. A device that launches them has nothing to check."""
    monkeypatch.setattr(cluster, "REFUSED", set())
    x = torch.randn((1, 12 * 8192), device="cuda")
    y = torch.full_like(x, math.nan)
    _, meta, warps, cap = cluster.kernel_for("fwd", 16 * 8192, torch.float32)
    meta = {**meta, "C": 12, "SLOTS": 16}

    def run():
        args = (x, y, x.shape[1], x.stride(0), y.stride(0))
        xent_launch.launch(cluster.cluster_fwd_kernel, 1, args, warps, cluster=12, maxnreg=cap, **meta)
        torch.cuda.synchronize()

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if cluster.launched(run, x.get_device(), x.shape[1]):
            pytest.skip("this device launches clusters of 12 blocks")
    assert cluster.REFUSED == {x.get_device()} and "refused a cluster" in str(caught[-1].message)


@pytest.mark.parametrize("op", ["log_softmax", "cross_entropy"])
def test_the_family_takes_another_form_where_its_cluster_is_refused(monkeypatch, op):
    """log_softmax's and the cross-entropy's cluster launches (caught: the clusters' inline PTX needs
    sm_90) hand the kernel every parameter once; refused, the same call launches the tile kernel instead."""
    module = importlib.import_module(f"kernels_triton.{op}")  # the package's names are the functions
    monkeypatch.setattr(cluster, "applies", lambda *a, **k: cluster.REFUSED == set())
    x, t = torch.zeros((3, 200000)), torch.zeros(3, dtype=torch.int64)
    for refuse in (False, True):
        monkeypatch.setattr(cluster, "REFUSED", set())
        seen = []

        def record(fn, grid, args, warps, refuse=refuse, seen=seen, **kw):
            if refuse and kw.get("cluster", 0) > 8:
                raise RuntimeError(REFUSAL)
            seen.append((fn, args, kw))

        monkeypatch.setattr(module, "launch", record)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            module._forward(x, -1) if op == "log_softmax" else module._forward(x, t, -100, "none", 0.0, None)
        kernels = [fn.fn.__name__ if hasattr(fn, "fn") else fn.__name__ for fn, _, _ in seen]
        if refuse:
            assert cluster.REFUSED == {x.get_device()} and len(caught) == 1, caught
            assert not any("cluster" in k for k in kernels), kernels
        else:
            fn, args, kw = seen[0]
            assert "cluster" in kernels[0] and not caught, kernels
            constexprs = {k: v for k, v in kw.items() if k not in ("cluster", "maxnreg")}
            assert len(args) + 1 + len(constexprs) == len(fn.arg_names)  # + slot_base, which launch appends
