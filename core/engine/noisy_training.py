"""Central training on data-space-noised images, D̃ = D + ξ (spec 001 §2.6, §3.6).

The channel-capacity defense trains on noisy inputs instead of noising the parameters: with
``x̃ = x + ξ`` the data-processing inequality gives I(D; W_o | W_i) ≤ I(D; D̃) (Eq. 16), so
one draw of ξ bounds what one optimisation round can leak by κ whatever the model.

Two ways to draw ξ (spec §2.6 [UNSURE], both offered):

- ``noise_mode="redraw"``: fresh noise on every minibatch (the paper's n·κ accounting: κ per
  step, n·κ in total after n steps);
- ``noise_mode="fixed"``: one noisy copy D̃ of the training set drawn once before training and
  reused every epoch; by the DPI the **total** leakage is then ≤ I(D; D̃) ≤ κ, independent of n.

Labels are not noised and pixels are not clipped after the noise (spec §3.6). The noise comes
from ``perturb(x_flat, generator)`` (rows flattened to (n, d); the channel samplers of
:mod:`core.defenses.channel` fit this signature), so this module knows nothing of κ.
Models receive image-shaped batches (n, *image_shape) — a model taking flat rows works too if
it flattens first. All randomness comes from local generators derived from ``seed``.

The plain loop of a centrally trained classifier (no ξ) as much as a defense: the defenses'
builders (:mod:`core.defenses.central`, DP-SGD's and Inf2Guard's canary hooks) and the membership
attacks' shadow models (:mod:`core.engine.shadow_training`) all train with it, so it sits below both.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import numpy as np
import torch
from torch import Tensor, nn

from core.engine.hooks import CanaryHook, Hook, StepState
from core.engine.loop import Supervised, fit
from core.engine.recipe import Recipe

# the one range checker; core.defenses.dpsgd and core.engine.shadow_training import it from here too
from core.foundation.checks import check_choice, check_int, check_range, range_error
from core.foundation.progress import Progress
from core.foundation.seeds import torch_stream

__all__ = ["NOISE_MODES", "OPTIMIZERS", "GradientCanary", "Perturb", "TrainResult",
           "evaluate_accuracy", "train_central"]

#: ``perturb(x_flat (n, d), generator) -> noisy rows (n, d)``
Perturb = Callable[[Tensor, torch.Generator], Tensor]


@runtime_checkable
class GradientCanary(Protocol):
    """White-box audit canaries a training adds to its gradient (Steinke, Nasr & Jagielski 2023;
    :class:`core.attacks.audit.GradientCanaries` implements it).

    ``bind(params)`` is called once, before the first step, with the trainable parameters (in
    ``model.parameters()`` order; the auditor records θ₀ and reads θ_T from the same tensors
    after training). ``step_term(sample_rate)`` is called once per optimiser step and returns,
    per parameter, the sum of the canary gradients that take part in this step (each included
    canary takes part with probability ``sample_rate``, as a training row would), in the units
    of a *summed* per-example gradient (each canary has the clipping norm C), or None when none
    takes part. DP-SGD adds it to the summed clipped gradient before the noise; a non-private
    training adds term / B to its batch-mean gradient (B the batch's rows), where one row's
    gradient would go.
    """

    def bind(self, params: list[Tensor]) -> None: ...

    def step_term(self, sample_rate: float) -> list[Tensor] | None: ...

NOISE_MODES: tuple[str, ...] = ("redraw", "fixed")
OPTIMIZERS: tuple[str, ...] = ("sgd", "adam")

#: rows perturbed per call when drawing the fixed noisy copy (bounds the sampler's memory)
FIXED_CHUNK = 8192


@dataclass(kw_only=True)
class TrainResult:
    """What a central training run reports.

    ``curves["train_loss"][e]``: mean cross-entropy over epoch e+1's minibatches (on the inputs
    trained on, i.e. noisy ones), weighted by batch size; ``curves["test_acc"][e]``: clean
    test accuracy after epoch e+1 (absent without a test set); ``steps``: optimiser steps n;
    ``curves["epoch_seconds"][e]``: the epoch's training time (evaluation excluded);
    ``seconds``: wall time; ``perturbed_rows``: rows passed through ``perturb`` (fixed: n_train
    once; redraw: n_train per epoch; 0 without noise).
    """

    curves: dict[str, list[float]] = field(default_factory=dict)
    steps: int = 0
    seconds: float = 0.0
    noise_mode: str = "none"
    perturbed_rows: int = 0

    @property
    def final_test_acc(self) -> float:
        acc = self.curves.get("test_acc", [])
        return float(acc[-1]) if acc else float("nan")


# ---------------------------------------------------------------------------------------------
# validation and small helpers (shared with core.defenses.dpsgd)


def check_data(X: Tensor, y: Tensor, image_shape: tuple[int, ...], *, prefix: str = "") -> None:
    """X: float (n, d) with d = prod(image_shape); y: integer (n,)."""
    if not isinstance(X, Tensor) or X.dim() != 2 or not X.is_floating_point():
        shape = tuple(X.shape) if isinstance(X, Tensor) else type(X).__name__
        raise ValueError(f"{prefix}X: got {shape}; allowed: a float tensor of shape (n, d)")
    d = int(np.prod(image_shape)) if len(image_shape) else 0
    if len(image_shape) == 0 or d != X.shape[1]:
        raise ValueError(f"image_shape: got {tuple(image_shape)} (product {d}); allowed: "
                         f"dimensions whose product is d = {X.shape[1]}")
    if (not isinstance(y, Tensor) or y.dim() != 1 or len(y) != len(X)
            or y.is_floating_point() or y.dtype == torch.bool):
        shape = tuple(y.shape) if isinstance(y, Tensor) else type(y).__name__
        raise ValueError(f"{prefix}y: got {shape}; allowed: an integer tensor of shape ({len(X)},)")
    if len(X) == 0:
        raise range_error(f"{prefix}X rows", 0, 1, integer=True)


def check_test(X_test: Tensor | None, y_test: Tensor | None, image_shape: tuple[int, ...]) -> None:
    if (X_test is None) != (y_test is None):
        raise ValueError("X_test/y_test: got only one of them; allowed: both or neither")
    if X_test is not None:
        check_data(X_test, y_test, image_shape, prefix="test ")


def as_images(x: Tensor, image_shape: tuple[int, ...]) -> Tensor:
    """Flat rows (n, d) → (n, *image_shape) (a view)."""
    return x.reshape(x.shape[0], *image_shape)


def make_optimizer(model: nn.Module, optimizer: str, lr: float,
                   momentum: float) -> torch.optim.Optimizer:
    params = [p for p in model.parameters() if p.requires_grad]
    if optimizer == "sgd":
        return torch.optim.SGD(params, lr=lr, momentum=momentum)
    return torch.optim.Adam(params, lr=lr)


def checked_perturb(perturb: Perturb, x: Tensor, generator: torch.Generator) -> Tensor:
    """``perturb(x, generator)``, checking the rows come back with x's shape."""
    out = perturb(x, generator)
    if not isinstance(out, Tensor) or out.shape != x.shape:
        got = tuple(out.shape) if isinstance(out, Tensor) else type(out).__name__
        raise ValueError(f"perturb: returned {got}; allowed: a tensor of the input shape "
                         f"{tuple(x.shape)}")
    return out


@torch.no_grad()
def evaluate_accuracy(model: nn.Module, X: Tensor, y: Tensor, image_shape: tuple[int, ...],
                      batch: int = 1024) -> float:
    """Top-1 accuracy of ``model`` on clean (X, y), in eval mode (the mode is restored)."""
    check_data(X, y, image_shape)
    check_int("batch", batch, 1)
    was_training = model.training
    model.eval()
    try:
        correct = 0
        for i in range(0, len(X), int(batch)):
            logits = model(as_images(X[i:i + int(batch)], image_shape))
            correct += int((logits.argmax(-1) == y[i:i + int(batch)]).sum())
    finally:
        model.train(was_training)
    return correct / len(X)


# ---------------------------------------------------------------------------------------------
# central training


def _fixed_copy(X: Tensor, perturb: Perturb, generator: torch.Generator) -> Tensor:
    """One noisy copy D̃ = D + ξ of the whole training set (spec §2.6, "fixed" mode)."""
    return torch.cat([checked_perturb(perturb, X[i:i + FIXED_CHUNK], generator)
                      for i in range(0, len(X), FIXED_CHUNK)])


class ChannelNoise(Hook):
    """Data-space noise ξ as an engine hook (spec §2.6): ``"fixed"`` replaces the training rows
    by one noisy copy D̃ before the first epoch, ``"redraw"`` perturbs every minibatch afresh;
    the rows perturbed are counted in ``meta["perturbed_rows"]``."""

    def __init__(self, perturb: Perturb, mode: str, generator: torch.Generator) -> None:
        self.perturb, self.mode, self.generator = perturb, mode, generator

    def prepare(self, state: StepState) -> None:
        if self.mode == "fixed":
            with torch.no_grad():
                state.source = _fixed_copy(state.source, self.perturb, self.generator)
            state.count("perturbed_rows", state.n)

    def inputs(self, x: Tensor, state: StepState) -> Tensor:
        if self.mode != "redraw":
            return x
        with torch.no_grad():
            x = checked_perturb(self.perturb, x, self.generator)
        state.count("perturbed_rows", state.rows)
        return x


def _check_train_args(epochs: int, batch_size: int, lr: float, optimizer: str, momentum: float,
                      noise_mode: str) -> None:
    check_int("epochs", epochs, 1)
    check_int("batch_size", batch_size, 1)
    check_range("lr", lr, 0.0, lo_open=True)
    check_choice("optimizer", optimizer, OPTIMIZERS)
    check_range("momentum", momentum, 0.0, 0.999)
    check_choice("noise_mode", noise_mode, NOISE_MODES)


def train_central(
    model: nn.Module,
    X: Tensor,
    y: Tensor,
    *,
    image_shape: tuple[int, ...],
    epochs: int,
    batch_size: int,
    lr: float,
    optimizer: str = "sgd",
    momentum: float = 0.0,
    perturb: Perturb | None = None,
    noise_mode: str = "redraw",
    seed: int = 0,
    X_test: Tensor | None = None,
    y_test: Tensor | None = None,
    progress: Progress | None = None,
    canary: GradientCanary | None = None,
    hooks: Sequence[Hook] = (),
) -> TrainResult:
    """Train ``model`` in place on (X + ξ, y) with minibatch SGD/Adam and cross-entropy
    (spec §3.6, W ← W − η∇F(W; x̃, y)).

    ``X`` (n, d) flat rows on the model's device, ``y`` (n,) class ids. Each epoch the rows are
    shuffled by a local generator (seeded from ``seed``) and cut into batches of
    ``batch_size`` (the last one smaller). With ``perturb``, ``noise_mode`` picks fresh noise
    per minibatch ("redraw": κ per step, n·κ total) or one noisy copy drawn before training
    ("fixed": κ total); the noise generator is seeded from ``seed`` too, on X's device.
    ``progress`` gets per-epoch updates and a few per epoch (raises Cancelled when cancelled).
    ``canary``: white-box audit canaries (:class:`GradientCanary`), each taking part in a step
    with probability B/n (once per epoch on average, as a row does) and added to the
    batch-mean gradient as term / B, where one row's gradient would go. ``hooks``: a
    defense's own engine hooks (a game's), after the noise and before the canaries.
    """
    check_data(X, y, image_shape)
    check_test(X_test, y_test, image_shape)
    _check_train_args(epochs, batch_size, lr, optimizer, momentum, noise_mode)
    t0 = time.perf_counter()
    steps: list[Hook] = []
    if perturb is not None:
        noise_gen = torch_stream(seed, "train", "noise", device=X.device)
        steps.append(ChannelNoise(perturb, noise_mode, noise_gen))
    steps.extend(hooks)
    if canary is not None:
        steps.append(CanaryHook(canary))
    recipe = Recipe(epochs=int(epochs), batch_size=int(batch_size), lr=float(lr),
                    optimizer=optimizer, momentum=float(momentum))
    evaluate = (None if X_test is None else
                lambda: {"test_acc": evaluate_accuracy(model, X_test, y_test, image_shape)})
    log = fit(model, Supervised(X, y, tuple(image_shape)), recipe=recipe,
              order=torch_stream(seed, "train", "order"), hooks=steps, progress=progress,
              evaluate=evaluate, time_epochs=True)
    result = TrainResult(noise_mode="none" if perturb is None else noise_mode,
                         steps=log.steps, perturbed_rows=int(log.meta.get("perturbed_rows", 0)))
    result.curves = {"epoch_seconds": log.curves["epoch_seconds"],
                     "train_loss": log.train_loss,
                     **({"test_acc": log.curves["test_acc"]} if X_test is not None else {})}
    result.seconds = time.perf_counter() - t0
    return result
