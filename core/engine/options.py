"""Engine options of the training engine (:func:`core.engine.loop.fit` and the K stacked
models of its batched form): what fills a GPU without changing what a CPU computes.

The loops keep their data on the run's device and never read a number back to the host inside
an epoch (the epoch's loss is summed on the device in float64, which gives the same bits as
the Python float sum it replaced; a step's bookkeeping comes from host-side indices). On top,
three options, off by default so that every stored number stays bit-identical:

- ``channels_last``: the model's 4-D weights (and so its convolutions' outputs) in NHWC,
  what tensor-core convolutions read without a transpose (a CUDA option; harmless elsewhere);
- ``autocast``: ``"bf16"`` runs the forward and the loss under ``torch.autocast`` in bfloat16
  (weights, gradients and the optimiser stay float32). Never for gradient inversion's double
  backward nor an accountant's loop (DP-SGD): those do not read these options;
- ``compile``: ``torch.compile`` of the single-model loop's network (not of the vmapped
  stacked forward).

Options are set for a block of code (``with engine_options(autocast="bf16"): run(cfg)``) in a
context variable, so concurrent runs in other threads keep the defaults; nothing enters a
config or a cache key (a run made with an option is the same experiment at another precision:
benchmarks state which).
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any, Literal

__all__ = ["EngineOptions", "autocast_for", "current", "engine_options", "prepare_model"]

AUTOCAST = (None, "bf16")


@dataclass(frozen=True)
class EngineOptions:
    """See the module docstring; the defaults are the engine's bit-identical behaviour."""

    channels_last: bool = False
    autocast: Literal["bf16"] | None = None
    compile: bool = False

    def __post_init__(self) -> None:
        if self.autocast not in AUTOCAST:
            raise ValueError(f"autocast: got {self.autocast!r}; allowed: None, 'bf16'")


#: the defaults (frozen: the one instance is shared safely)
DEFAULT = EngineOptions()
_OPTIONS: contextvars.ContextVar[EngineOptions | None] = contextvars.ContextVar(
    "privlab_engine_options", default=None)


def current() -> EngineOptions:
    """The options in force in this context (the defaults unless a block set others)."""
    return _OPTIONS.get() or DEFAULT


@contextlib.contextmanager
def engine_options(**changes: Any) -> Iterator[EngineOptions]:
    """Run a block with the options changed (``channels_last``, ``autocast``, ``compile``)."""
    opts = replace(current(), **changes)
    token = _OPTIONS.set(opts)
    try:
        yield opts
    finally:
        _OPTIONS.reset(token)


def autocast_for(device: Any) -> contextlib.AbstractContextManager:
    """``torch.autocast`` in bfloat16 on ``device``'s type when the option is on, else a no-op
    context (the default: nothing changes)."""
    import torch

    opts = current()
    if opts.autocast is None:
        return contextlib.nullcontext()
    dev = torch.device(device) if not isinstance(device, torch.device) else device
    return torch.autocast(device_type=dev.type, dtype=torch.bfloat16)


def prepare_model(model: Any, *, allow_compile: bool = True) -> Any:
    """``model`` in channels-last memory (in place) and, with ``compile`` (and
    ``allow_compile``), the ``torch.compile``'d module to call; ``model`` itself by default."""
    import torch

    opts = current()
    if opts.channels_last and any(p.dim() == 4 for p in model.parameters()):
        model.to(memory_format=torch.channels_last)
    if opts.compile and allow_compile:
        return torch.compile(model)
    return model
