"""The FedAvg simulator's shared types (DESIGN: fl/).

:mod:`core.fl.fedavg` (the loop) imports the two round implementations,
:mod:`core.fl.vectorised` and :mod:`core.fl.sequential`; all three import their common types
from here, and this module imports nothing of ``core.fl``. The names are re-exported by
:mod:`core.fl.fedavg` and :mod:`core.fl`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import torch
from torch import Tensor, nn

__all__ = [
    "DeviceBatch", "FedAvgState", "LocalObjective", "Params", "RoundPlan", "StackedBatch",
    "UploadTransform", "adversary_turns", "identity_transform",
]

Params = dict[str, Tensor]


class UploadTransform(Protocol):
    """Applied to the K sampled devices' updates before aggregation (DP noise, pruning, ...).

    ``deltas`` maps each shared parameter name to a tensor with leading dim K (Δ_k = Θ_k − Θ);
    the transform returns a dict of the same names and shapes. All randomness must come from
    ``generator`` (seeded per round by the simulator)."""

    def __call__(self, deltas: dict[str, Tensor], *, generator: torch.Generator) -> dict[str, Tensor]: ...


def identity_transform(deltas: dict[str, Tensor], *, generator: torch.Generator) -> dict[str, Tensor]:
    """The no-op upload transform (no defense on the upload)."""
    return deltas


@dataclass
class RoundPlan:
    """Every random choice of one round, drawn before training (shared by both paths).

    ``index[k, s, j]`` is the data row of slot j in local step s of sampled device k (padding
    slots point at row 0 with ``mask`` False); valid slots come first in each step. Device k
    runs its E epochs back to back, each epoch cut into ceil(n_k / B) batches (the last one
    partial), so it has ``steps[k]`` valid steps; later steps are all padding. ``roll[k, s, j]``
    is the slot of x' for slot j: the next valid slot, cyclically ((j + 1) mod m).
    """

    round: int
    devices: np.ndarray  # (K,) sorted device ids
    sizes: np.ndarray  # (K,) |D_k|
    steps: np.ndarray  # (K,) valid local steps per device
    index: Tensor  # (K, T, B) int64
    mask: Tensor  # (K, T, B) bool
    count: Tensor  # (K, T) int64 valid rows per step
    roll: Tensor  # (K, T, B) int64
    dropout: Tensor | None  # (K, T, B, H) or None
    transform_seed: int

    @property
    def num_steps(self) -> int:
        return int(self.index.shape[1])


@dataclass
class StackedBatch:
    """One local step of K devices: ``fields`` (K, B, ...), ``mask`` (K, B) float,
    ``weight`` = mask / max(count, 1) (a per-device mean over valid rows), ``roll`` (K, B);
    ``scratch``: what a game objective's adversary turns share with its step (the features)."""

    fields: dict[str, Tensor]
    mask: Tensor
    weight: Tensor
    roll: Tensor
    dropout: Tensor | None
    scratch: dict[str, Any] = field(default_factory=dict)


@dataclass
class DeviceBatch:
    """One local step of one device: ``fields`` (m, ...) of the m valid rows, ``roll`` (m,);
    ``scratch`` as in :class:`StackedBatch`."""

    fields: dict[str, Tensor]
    roll: Tensor
    dropout: Tensor | None
    scratch: dict[str, Any] = field(default_factory=dict)


class LocalObjective(Protocol):
    """A device's local update, in a stacked (vectorised) and a per-module (reference) form.

    ``shared`` is the federated module Θ; ``private`` holds templates of the per-device modules
    (their parameters live stacked over all N devices in the simulator state). Both step
    functions update parameters in place with plain SGD at ``lr`` and return per-device
    statistics (sums over the step's valid rows) as tensors — shape (K, ...) for the stacked
    form, (...) for the module form; the simulator adds them up over the round and
    :meth:`round_metrics` turns the totals into the round's curve values. The module form
    stops short of Θ's update: ``module_loss`` takes any private networks' own steps and
    returns Θ's loss with the statistics, and the engine's loop takes Θ's plain SGD step
    (:mod:`core.fl.sequential`).

    ``stacked_step`` receives plain tensors (not requiring grad) with a leading device dim K;
    2-D linear weights arrive as ``<layer>.weight_t`` in (K, in, out) layout
    (:func:`core.models.nn.to_batched_layout`); the objective computes its gradients as it likes
    (TAPPFL: autograd w.r.t. layer outputs + fused updates, :func:`core.models.nn.record_linear`).
    ``module_loss`` receives the ordinary modules loaded with one device's parameters.

    A game objective (TAPPFL: per-device adversary networks trained against Θ) also declares
    ``adversary_steps`` k and its adversary's one step in each form, ``stacked_turn(theta,
    private, batch, a, lr)`` and ``module_turn(theta, private, batch, a, lr)`` (the a-th of k,
    returning its statistics); the engine's loops take the k turns before every local step
    (:class:`core.engine.hooks.Game`), and ``stacked_step`` / ``module_loss`` are then Θ's
    step alone, with the updated private networks (what the turns computed for the step, the
    features, is in ``batch.scratch``). An objective without them has no adversary turns.
    """

    shared: nn.Module
    private: dict[str, nn.Module]

    def stacked_step(self, theta: Params, private: dict[str, Params], batch: StackedBatch, lr: float) -> dict[str, Tensor]: ...

    def module_loss(self, theta: nn.Module, private: dict[str, nn.Module], batch: DeviceBatch, lr: float) -> tuple[Tensor, dict[str, Tensor]]: ...

    def round_metrics(self, totals: dict[str, Tensor]) -> dict[str, float]: ...


def adversary_turns(objective: LocalObjective, turn: str) -> int:
    """The objective's adversary steps per local step where it declares its ``turn`` method
    (``stacked_turn`` / ``module_turn``), else 0."""
    return int(getattr(objective, "adversary_steps", 0)) if hasattr(objective, turn) else 0


@dataclass
class FedAvgState:
    """The simulation's state: the global shared module, every device's private parameters
    (stacked over all N devices), the partition (row indices into ``data``), and the curves."""

    shared: nn.Module
    private: dict[str, Params]
    partition: list[np.ndarray]
    curves: dict[str, list[float]] = field(default_factory=dict)
    round: int = 0
    last_plan: RoundPlan | None = None
    rounds_trained: np.ndarray | None = None  # (N,) how many rounds each device trained

    @property
    def last_devices(self) -> np.ndarray:
        return np.array([], dtype=np.int64) if self.last_plan is None else self.last_plan.devices
