"""The step driver of the engine's batched form: K models' steps, given ahead, one after another.

:func:`core.engine.batched.fit_batched` (an epoch of K seeded orders) and a FedAvg round
(:mod:`core.fl.vectorised`: a round plan's batches per device, some devices with fewer steps
than others) hand it :class:`Steps`: for each of T steps each model's rows (K, b) with their
validity (padding rows point anywhere and weigh 0). Per step it owns the cancel check, the
:class:`~core.engine.hooks.StepState` (``idx`` (K, b); ``weights`` (K, b), each model's
row weights summing to 1 over its own rows, 0 for a model without rows; ``rows`` the largest
count), the hooks' ``before_step``, the k adversary turns of every game among the hooks
(:class:`~core.engine.hooks.Game`), the step itself and the progress a few times per pass.

The step is the loop's own (forward, backward, per-model optimiser update) unless one hook
takes the whole step (:meth:`core.engine.hooks.Hook.step`): an FL objective's local step whose
update is its own (SGD fused into recorded linear layers, a game's adversary and critic ascent
on per-device networks) runs there, between the same cancel checks and progress as any step;
a game's adversary turns (TAPPFL's k steps of the attribute adversary per local step) run
before it, here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import Tensor

from core.engine.hooks import Hook, StepState, games

__all__ = ["Steps", "run_steps", "step_hook"]


@dataclass(frozen=True)
class Steps:
    """T steps of K models: ``index`` (T, K, b) rows and ``valid`` (T, K, b) on the device
    (valid rows first in each model's batch), ``counts`` (T, K) the valid rows per model and
    step on the host (a step's bookkeeping reads these, never the device)."""

    index: Tensor
    valid: Tensor
    counts: np.ndarray

    def __len__(self) -> int:
        return len(self.counts)


def step_hook(hooks: Sequence[Hook]) -> Hook | None:
    """The hook that takes the whole step (overrides :meth:`Hook.step`), or None; one at most."""
    takers = [h for h in hooks if type(h).step is not Hook.step]
    if len(takers) > 1:
        names = ", ".join(type(h).__name__ for h in takers)
        raise ValueError(f"hooks: {names} each take the whole step; allowed: one")
    return takers[0] if takers else None


def run_steps(state: StepState, steps: Steps, hooks: Sequence[Hook],
              step: Callable[[StepState, int], None] | None = None, *, dtype: torch.dtype,
              progress: Any = None, every: int = 1,
              report: Callable[[int], tuple[float, str]] | None = None,
              cancel_check: Callable[[], None] | None = None) -> None:
    """Run ``steps`` in order (module docstring). ``step(state, j)`` is the loop's own step
    (j the step's position in ``steps``), replaced by a hook's whole step; ``weights`` are in
    ``dtype``. ``report(j)`` gives the progress (fraction, text) after step j, shown every
    ``every`` steps; ``cancel_check`` runs before every step (it raises to cancel)."""
    taker = step_hook(hooks)
    if taker is None and step is None:
        raise ValueError("step: got none and no hook takes the step; allowed: a step function "
                         "or one hook overriding Hook.step")
    players = games(hooks)
    for j in range(len(steps)):
        if cancel_check is not None:
            cancel_check()
        vj = steps.valid[j]
        counts = vj.sum(1)
        state.idx, state.rows, state.reported = steps.index[j], int(steps.counts[j].max()), None
        state.weights = vj.to(dtype) / counts.clamp(min=1).unsqueeze(1).to(dtype)
        for h in hooks:
            h.before_step(state)
        for g in players:
            for a in range(g.adversary_steps):
                g.adversary_turn(state, a)
        if taker is not None:
            taker.step(state)
        else:
            step(state, j)
        state.step += 1
        if progress is not None and report is not None and (j + 1) % every == 0:
            progress.update(*report(j))
