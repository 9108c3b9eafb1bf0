"""The host path of a launch. A launcher calls Triton's C launch directly only where it passes
exactly what Triton's own launcher would: checked against the installed Triton's real
CudaLauncher.__call__ (its C launch replaced by a recorder), and refused for launchers it
was not written against.

Runs on the CPU (no kernel is compiled or launched) and on the GPU, where the installed
Triton may be another version than the CPU's.
"""

import pytest
import torch
import triton
from kernels_triton import launch

CudaLauncher = pytest.importorskip("triton.backends.nvidia.driver").CudaLauncher
VERSION = ".".join(triton.__version__.split(".")[:2])
KNOWN = VERSION in launch.C_LAUNCH_LAYOUTS


def fake_launcher(record, *, scratch: int = 0):
    """A real CudaLauncher (this Triton's class, its __init__ skipped: it compiles C) whose
    C launch records its arguments."""
    launcher = object.__new__(CudaLauncher)
    launcher.launch = lambda *args: record.append(args)
    launcher.num_ctas, launcher.gsan_enabled = 1, False
    launcher.global_scratch_size, launcher.profile_scratch_size = scratch, 0
    launcher.global_scratch_align = launcher.profile_scratch_align = 1
    launcher.launch_cooperative_grid, launcher.launch_pdl = False, True
    launcher.arg_annotations, launcher.kernel_signature = ("annotations",), b"signature"
    return launcher


class Compiled:  # what a launcher reads from a triton CompiledKernel
    def __init__(self, launcher):
        self.run, self.function, self.packed_metadata = launcher, 0xF00, (4, 1, 0)


@pytest.fixture
def no_driver_needed(monkeypatch):
    """CudaLauncher.__call__ may look up the active driver and the current stream: stand-ins."""
    driver = triton.runtime.driver
    saved = driver._active
    driver.set_active(type("Driver", (), {"allocate_default_profile_scratch": lambda *a: None})())
    monkeypatch.setattr(torch._C, "_cuda_getCurrentRawStream", lambda device: 77, raising=False)
    # templates compare the current device with theirs before launching: device 0 is current
    monkeypatch.setattr(torch._C, "_cuda_getDevice", lambda: 0, raising=False)
    yield
    driver._active = saved


@pytest.mark.skipif(not KNOWN, reason=f"Triton {triton.__version__}: launchers call its launcher itself")
@pytest.mark.parametrize("n_tensors", [2, 3])
def test_the_direct_c_launch_passes_what_tritons_launcher_passes(no_driver_needed, n_tensors):
    record = []
    launcher = fake_launcher(record)
    assert launch.c_launch_layout(launcher) == VERSION
    rest = (600, 600, 512, 600, 1024, 1024, 1, False, True, 8, False)
    tensors = [torch.empty(512, 600) for _ in range(n_tensors)]
    compiled = Compiled(launcher)
    # what Triton's runner calls (runtime/jit.py): launcher(grid, stream, function, metadata,
    # launch metadata, enter hook, exit hook, *kernel arguments)
    launcher(512, 1, 1, 77, compiled.function, compiled.packed_metadata, None, None, None,
             *(t.data_ptr() for t in tensors), *rest)  # fmt: skip
    fixed = launch.launcher(compiled)
    launch.template(600, 0, n_tensors, lambda m, ts: (m, *fixed, rest))(*tensors)
    assert len(record) == 2 and record[1] == record[0]


@pytest.mark.skipif(not KNOWN, reason=f"Triton {triton.__version__}: launchers call its launcher itself")
@pytest.mark.parametrize("hooked", [False, True], ids=["direct", "hook installed"])
def test_a_launcher_given_launch_metadata_launches_with_it(no_driver_needed, monkeypatch, hooked):
    """kernels_triton.cluster's templates hand launch.launcher metadata of their own (num_ctas = C,
    more shared memory): the launch passes it where Triton's launcher would pass the kernel's,
    with a profiler's launch hook installed too (the runner would launch with the kernel's own)."""
    record = []
    launcher = fake_launcher(record)
    rest = (40000, 40000, 40000, 40000, 16, 8, 8192)
    tensors = [torch.empty(35, 8) for _ in range(3)]
    compiled = Compiled(launcher)
    cluster_metadata = (4, 8, 48)
    launcher(35, 1, 1, 77, compiled.function, cluster_metadata, None, None, None,
             *(t.data_ptr() for t in tensors), *rest)  # fmt: skip
    monkeypatch.setattr(launch, "_launch_hooks_installed", lambda: hooked)
    fixed = launch.launcher(compiled, packed_metadata=cluster_metadata)
    launch.template(8, 0, 3, lambda m, ts: (m, *fixed, rest))(*tensors)
    assert len(record) == 2 and record[1] == record[0]


def test_a_template_keeps_the_last_row_count_alone(no_driver_needed):
    """What a row count binds (its grid, its arguments) is made at its first call after another
    row count's, and never launched with another's; no rows, no launch."""
    binds, launches = [], []
    fixed = (lambda *args: launches.append((args[0], args[-1][2:])), *[None] * 6)

    def bind(m, ts):
        binds.append(m)
        return m, *fixed, (m,)

    run = launch.template(16, 0, 2, bind)
    for m in (4, 4, 8, 4, 0, 4):
        run(torch.empty(m, 16), torch.empty(m * 16))
    assert binds == [4, 8, 4]
    assert launches == [(4, (4,)), (4, (4,)), (8, (8,)), (4, (4,)), (4, (4,))]


def test_the_3_6_layout_passes_the_kernel_arguments_flat(no_driver_needed, monkeypatch):
    """Triton 3.6's C launch (whatever Triton is installed): scratch, metadata and hooks before the
    kernel's arguments, flat, as its CudaLauncher.__call__ passes them."""
    record = []
    monkeypatch.setattr(launch, "c_launch_layout", lambda run: "3.6")
    compiled = Compiled(fake_launcher(record))
    tensors = [torch.empty(512, 600) for _ in range(2)]
    launch.template(600, 0, 2, lambda m, ts: (m, *launch.launcher(compiled), (600, 600, m)))(*tensors)
    ptrs = tuple(t.data_ptr() for t in tensors)
    assert record == [
        (512, 1, 1, 77, 0xF00, False, True, None, None, (4, 1, 0), None, None, None, *ptrs, 600, 600, 512)
    ]


@pytest.mark.skipif(not KNOWN, reason=f"Triton {triton.__version__}: launchers call its launcher itself")
def test_a_launcher_that_needs_scratch_keeps_tritons_own_call():
    assert launch.c_launch_layout(fake_launcher([], scratch=128)) is None


def test_other_launchers_and_versions_keep_tritons_own_call():
    class CudaLauncher:  # Triton's class name, another signature
        global_scratch_size = profile_scratch_size = 0

        def __call__(self, grid, stream):
            return None

    assert launch.c_launch_layout(object()) is None
    assert launch.c_launch_layout(lambda *args: None) is None
    assert launch.c_launch_layout(CudaLauncher()) is None
    assert launch.c_launch_layout(fake_launcher([]), version="3.7.0") is None
    assert launch.c_launch_layout(fake_launcher([]), version="4.0.0") is None


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_a_new_row_count_reuses_the_compiled_kernel(monkeypatch):
    """A growing sequence (a new M every call, as in decoding without a KV cache) goes through
    Triton's JIT only when the constexprs change, and every result is right."""
    from kernels_triton import softmax

    jit_calls = []

    class Counting:  # the kernel, with its JIT entries (kernel[grid], kernel.warmup) counted
        def __init__(self, kernel):
            self.kernel = kernel

        def __getitem__(self, grid):
            jit_calls.append(grid)
            return self.kernel[grid]

        def warmup(self, *args, grid, **kwargs):
            jit_calls.append(grid)
            return self.kernel.warmup(*args, grid=grid, **kwargs)

    monkeypatch.setattr(launch, "KERNELS", {k: Counting(v) for k, v in launch.KERNELS.items()})
    for m in range(1, 41):
        x = torch.randn(m, 3001, device="cuda") * 4
        torch.testing.assert_close(softmax(x), torch.softmax(x, -1), atol=1e-6, rtol=1e-5)
    assert 1 <= len(jit_calls) <= 4  # M % ROWS == 0 or not; M < 2**31 throughout
