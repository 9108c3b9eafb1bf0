"""What `lab inductor` compiles.

A target is a function `target(device: str) -> (fn_or_module, example_inputs)`: it builds
the function or nn.Module to compile and a tuple of example inputs, both on `device`.
Named targets:

- `tinyhead`: the lab's stand-in, Linear(64, 600) -> softmax, seed 42, input (2, 64);
- `minigpt`: the grammar MiniGPT, `minigpt_torch.load_pretrained()` run on
  `minigpt_torch.example_inputs()` (moved to `device`);
- `package.module:function`: any importable function following the convention above.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from typing import Any

import torch
import torch.nn as nn

from labtools.inductor.capture import leaves


class TinyHead(nn.Module):
    """The lab's minimal stand-in for a language model's head: logits, then softmax."""

    def __init__(self, d: int = 64, vocab: int = 600):
        super().__init__()
        self.fc = nn.Linear(d, vocab)

    def forward(self, x):  # x: (B, d) -> (B, vocab), rows sum to 1
        return torch.softmax(self.fc(x), dim=-1)


def tinyhead(device: str, batch: int = 2) -> tuple[nn.Module, tuple]:
    torch.manual_seed(42)
    model = TinyHead().to(device).eval()
    return model, (torch.randn(batch, 64, device=device),)


def minigpt(device: str) -> tuple[nn.Module, tuple]:
    try:
        import minigpt_torch
    except ImportError as exc:
        raise ValueError(
            f"target 'minigpt' needs the minigpt_torch package, which does not import here: {exc}"
        ) from exc
    missing = [
        f for f in ("load_pretrained", "example_inputs") if not callable(getattr(minigpt_torch, f, None))
    ]
    if missing:
        raise ValueError(
            f"target 'minigpt' needs minigpt_torch.load_pretrained() and minigpt_torch.example_inputs(); "
            f"this minigpt_torch ({minigpt_torch.__file__}) has no {', '.join(missing)}"
        )
    model = minigpt_torch.load_pretrained()
    inputs = minigpt_torch.example_inputs()
    inputs = inputs if isinstance(inputs, tuple) else (inputs,)
    return model.to(device).eval(), tuple(_to(x, device) for x in inputs)


TARGETS: dict[str, Callable[[str], tuple[Any, tuple]]] = {"tinyhead": tinyhead, "minigpt": minigpt}


def _to(x: Any, device: str) -> Any:
    return x.to(device) if isinstance(x, torch.Tensor) else x


def check_device(device: str) -> None:
    if device not in ("cpu", "cuda"):
        raise ValueError(f"device must be 'cpu' or 'cuda', got {device!r}")
    if device == "cuda" and not torch.cuda.is_available():
        raise ValueError("device 'cuda' asked for, but torch.cuda.is_available() is False on this machine")


def resolve(spec: str, device: str) -> tuple[Callable, tuple]:
    """`tinyhead`, `minigpt` or `package.module:function` -> (fn_or_module, example_inputs) on `device`."""
    check_device(device)
    if spec in TARGETS:
        factory = TARGETS[spec]
    elif ":" in spec:
        module_name, _, attr = spec.partition(":")
        try:
            factory = getattr(importlib.import_module(module_name), attr)
        except (ImportError, AttributeError) as exc:
            raise ValueError(f"target {spec!r}: cannot import {attr} from {module_name}: {exc}") from exc
        if not callable(factory) or "device" not in inspect.signature(factory).parameters:
            raise ValueError(
                f"target {spec!r} must be a function taking `device` and returning (fn_or_module, inputs)"
            )
    else:
        raise ValueError(f"unknown target {spec!r}: use one of {sorted(TARGETS)} or package.module:function")
    got = factory(device=device)
    if not (isinstance(got, tuple) and len(got) == 2 and callable(got[0])):
        raise ValueError(
            f"target {spec!r} must return (fn_or_module, example_inputs), got {type(got).__name__}"
        )
    fn, inputs = got
    inputs = inputs if isinstance(inputs, tuple) else (inputs,)
    wrong = {t.device.type for t in leaves(list(inputs))} - {device}
    if wrong:
        raise ValueError(f"target {spec!r} returned inputs on {sorted(wrong)}, not on {device!r}")
    return fn, inputs
