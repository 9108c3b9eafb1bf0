"""torch.compile of the port's forward: one small compile on the CPU (slow on 2 cores)."""

import torch
from minigpt_torch.weights import example_inputs, load_pretrained


def test_compiled_forward_equals_eager_on_cpu():
    model = load_pretrained()
    x = example_inputs(batch=2, seq=8, seed=7)
    compiled = torch.compile(model, dynamic=False)
    with torch.no_grad():
        eager, out = model(x), compiled(x)
    assert out.dtype == torch.float32 and out.shape == eager.shape
    torch.testing.assert_close(out, eager, atol=1e-6, rtol=1e-6)
