"""The hook protocol: what a defense contributes to the one training loop instead of a loop.

A :class:`Hook` overrides any of:

- ``prepare(state)``: once, before the first epoch (bind audit canaries, draw a fixed noisy
  copy of the training rows into ``state.source``);
- ``inputs(x, state)``: a minibatch's inputs before the forward pass (fresh channel noise);
- ``loss(logits, y, state)``: the objective of the step in place of the cross-entropy (RelaxLoss,
  label smoothing, a game's utility-minus-adversary term); return None to leave it alone. In
  the batched form ``logits`` is (K, b, C), ``y`` (K, b) and the hook returns the K models'
  losses (K,), their mean over each model's own rows taken with :meth:`StepState.mean`;
- ``before_step(state)``: before the main forward pass and before any game's adversary turns
  (the step's inputs the turns and the model's step share);
- ``gradient(state)``: after the backward pass, before the optimiser step (canary terms);
- ``epoch_end(state)``: after each epoch;
- ``step(state)``: the whole step in place of the loop's forward, backward and optimiser
  update, for a step whose update is its own (an FL objective's local step: SGD fused into
  recorded linear layers, a game's per-device adversary and critic); only the batched step
  driver (:mod:`core.engine.steps`) runs it, and one hook at most may take the step.

A game defense (Inf2Guard, adversarial regularisation, TAPPFL's local step) is a :class:`Game`:
a hook that declares its adversary's networks, their :class:`~core.engine.recipe.Recipe`, its
``adversary_steps`` k and its ``adversary_turn(state, a)``, one adversary step (the a-th of
k, 0-based). The engine alternates: per model step, after the hooks' ``before_step``, it takes
the k turns of every game (:func:`games`), then the model's step. A game whose adversary steps
on the features of the model's own forward pass takes that step from ``loss`` or
``gradient`` instead (k = 0: Inf2Guard).

``per_example`` says whether the hook's terms act on each model's own rows only, so that K
models train together in the batched form (label smoothing, RelaxLoss); a hook that needs one
model's whole step (Opacus' per-sample clipping, canaries bound to one model's parameters)
leaves it False and its shadows train one by one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from torch import Tensor, nn

    from core.engine.recipe import Recipe

__all__ = ["CanaryHook", "Game", "Hook", "StepState", "games"]


@dataclass(kw_only=True)
class StepState:
    """What a hook sees. ``epoch`` is 1-based, ``step`` counts optimiser steps taken so far
    (of this model; in the batched form, of the longest model), ``idx`` the step's rows
    (single form: (m,); batched: (K, b) with ``weights`` (K, b) each model's row weights,
    summing to 1 over its own rows), ``source`` the rows the step indexes (a prepare hook may
    replace it), ``reported`` the loss recorded in the ``train_loss`` curve when a hook sets it
    (default: the objective), ``meta`` the hooks' counters (device tensors or numbers)."""

    model: nn.Module | None
    params: list[Tensor]
    optimizer: Any
    recipe: Recipe
    n: int
    device: Any
    source: Tensor | None = None
    epoch: int = 0
    step: int = 0
    idx: Tensor | None = None
    rows: int = 0
    weights: Tensor | None = None
    models: int | None = None
    reported: Tensor | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def batch_size(self) -> int:
        return self.recipe.batch_size

    @property
    def epochs(self) -> int:
        return self.recipe.epochs

    @property
    def batched(self) -> bool:
        return self.weights is not None

    def mean(self, per_row: Tensor) -> Tensor:
        """Each model's mean of a per-row term: () in the single form, (K,) batched."""
        if self.weights is None:
            return per_row.mean()
        return (per_row * self.weights).sum(-1)

    def count(self, key: str, value: Any) -> None:
        """Add ``value`` (a number or a device tensor: no host read) to ``meta[key]``."""
        self.meta[key] = self.meta[key] + value if key in self.meta else value


class Hook:
    """A defense's contribution to the training loop; every method a no-op by default."""

    #: the hook's terms act on each model's own rows: its K shadows train batched
    per_example: ClassVar[bool] = False

    def prepare(self, state: StepState) -> None:
        """Once, before the first epoch."""

    def inputs(self, x: Tensor, state: StepState) -> Tensor:
        """The minibatch's inputs as the model sees them."""
        return x

    def before_step(self, state: StepState) -> None:
        """Before the main forward pass of every step, before the games' adversary turns."""

    def loss(self, logits: Tensor, y: Tensor, state: StepState) -> Tensor | None:
        """The step's objective in place of the cross-entropy, or None."""
        return None

    def gradient(self, state: StepState) -> None:
        """After the backward pass, before the optimiser step."""

    def epoch_end(self, state: StepState) -> None:
        """After every epoch."""

    def step(self, state: StepState) -> None:
        """The whole step (only where a hook overrides it; :mod:`core.engine.steps`)."""


class CanaryHook(Hook):
    """White-box audit canaries (:class:`core.engine.noisy_training.GradientCanary`) added where one
    row's gradient would go: each takes part in a step with probability B/n and adds term / m
    to the batch-mean gradient (m the step's rows), with the sign ``state.meta["grad_sign"]``
    when a loss hook set one (−1 on RelaxLoss's ascent steps, as a member's gradient is).

    A game's loss hook may say where a member's gradient goes in its step:
    ``meta["canary_rows"]`` the rows its term is a mean over (0: no member row in the step, no
    canary takes part) and ``meta["grad_weight"]`` the term's weight (1 − λ in Inf2Guard).
    ``bind=False`` keeps the binding of an earlier phase of the same training (θ₀ stays the
    weights before that phase)."""

    def __init__(self, canary: Any, *, bind: bool = True) -> None:
        self.canary, self.bind = canary, bind

    def prepare(self, state: StepState) -> None:
        if self.bind:
            self.canary.bind(state.params)
        state.meta["canaries"] = True

    def gradient(self, state: StepState) -> None:
        import torch

        rows = state.meta.get("canary_rows", state.rows)
        if rows == 0:
            return
        term = self.canary.step_term(min(1.0, state.batch_size / state.n))
        if term is None:
            return
        sign, weight = state.meta.get("grad_sign"), state.meta.get("grad_weight")
        with torch.no_grad():
            for p, t in zip(state.params, term, strict=True):
                if weight is not None:
                    t = weight * t
                t = t.reshape(p.shape)
                if sign is not None:
                    t = t * sign
                if p.grad is None:
                    p.grad = t / rows
                else:
                    p.grad.add_(t, alpha=1.0 / rows)


class Game(Hook):
    """A min-max game's hook: the adversary's ``networks`` trained by their own ``recipe``
    (its optimiser built in :meth:`prepare`, or ``optimizer`` carried over from a warm-up),
    beside the model the loop trains. ``adversary_steps`` k: the adversary's steps per model
    step, each one :meth:`adversary_turn`, taken by the engine's loop before the model's step
    (0: the game steps from its ``loss`` or ``gradient`` hook). :meth:`adversary_step` is one
    step of its optimiser; :meth:`record` the step's values once per model step, whose means
    per epoch are :attr:`curves` (named up front by ``curves``, empty until an epoch ends)."""

    def __init__(self, networks: Sequence[nn.Module], recipe: Recipe | None, *,
                 optimizer: Any = None, curves: Sequence[str] = (),
                 adversary_steps: int = 0) -> None:
        self.networks, self.recipe, self.optimizer = tuple(networks), recipe, optimizer
        self.adversary_steps = int(adversary_steps)
        self.curves: dict[str, list[float]] = {k: [] for k in curves}
        self._sums: dict[str, float] = {}
        self._steps = 0

    def adversary_params(self) -> list[Tensor]:
        """The adversary's trainable parameters, network by network."""
        return [p for net in self.networks for p in net.parameters() if p.requires_grad]

    def prepare(self, state: StepState) -> None:
        if self.optimizer is None and self.recipe is not None:
            self.optimizer = self.recipe.optimizer_for(self.adversary_params())

    def adversary_turn(self, state: StepState, a: int) -> None:
        """The adversary's a-th step (0 ≤ a < ``adversary_steps``) before the model's step."""
        raise NotImplementedError(f"{type(self).__name__} declares adversary_steps = "
                                  f"{self.adversary_steps} but no adversary_turn")

    def adversary_step(self, loss: Tensor) -> None:
        """One step of the adversary's optimiser descending ``loss``."""
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.optimizer.step()

    def record(self, **values: float) -> None:
        """This step's values (host floats) for the epoch's curves."""
        for k, v in values.items():
            self._sums[k] = self._sums.get(k, 0.0) + v
        self._steps += 1

    def epoch_end(self, state: StepState) -> None:
        for k, v in self._sums.items():
            self.curves.setdefault(k, []).append(v / max(1, self._steps))
        self._sums, self._steps = {}, 0


def games(hooks: Sequence[Hook]) -> list[Game]:
    """The hooks whose adversary takes turns before each model step (``adversary_steps`` > 0),
    in the hooks' order: the engine's loops take their turns."""
    return [h for h in hooks if isinstance(h, Game) and h.adversary_steps > 0]
