"""A training recipe: the optimiser, its settings and its learning-rate schedule.

The settings the papers' and LiRA's reference code train with: SGD with momentum and weight
decay under a step or cosine schedule (RelaxLoss, LiRA's WRN), or Adam (most of privlab's
defaults). A schedule is stepped once per epoch, as ``torch.optim.lr_scheduler`` expects.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from core.foundation.checks import check_choice, check_int, check_range

if TYPE_CHECKING:
    import torch

OPTIMIZERS: tuple[str, ...] = ("sgd", "adam")
SCHEDULES: tuple[str | None, ...] = (None, "step", "cosine")


@dataclass(frozen=True, kw_only=True)
class Recipe:
    """``epochs`` passes over the rows in minibatches of ``batch_size`` with ``optimizer`` at
    ``lr`` (``momentum`` for SGD; ``weight_decay`` an L2 term added to the gradient, as
    ``torch.optim`` applies it); ``schedule``: None (constant lr), ``"step"`` (lr × ``gamma``
    every ``step_size`` epochs) or ``"cosine"`` (cosine annealing to 0 over the epochs)."""

    epochs: int
    batch_size: int
    lr: float
    optimizer: Literal["sgd", "adam"] = "adam"
    momentum: float = 0.0
    weight_decay: float = 0.0
    schedule: Literal["step", "cosine"] | None = None
    step_size: int = 30
    gamma: float = 0.1

    def __post_init__(self) -> None:
        check_int("epochs", self.epochs, 0)
        check_int("batch_size", self.batch_size, 1)
        check_range("lr", self.lr, 0.0, lo_open=True)
        check_choice("optimizer", self.optimizer, OPTIMIZERS)
        check_range("momentum", self.momentum, 0.0, 0.999)
        check_range("weight_decay", self.weight_decay, 0.0, 1.0)
        if self.schedule is not None:
            check_choice("schedule", self.schedule, SCHEDULES[1:])
        check_int("step_size", self.step_size, 1)
        check_range("gamma", self.gamma, 0.0, 1.0, lo_open=True)

    def optimizer_for(self, params: list[torch.Tensor]) -> torch.optim.Optimizer:
        """The optimiser over ``params`` (SGD's momentum only where it is set: ``momentum=0``
        is torch's plain SGD step, bit for bit)."""
        import torch

        if self.optimizer == "sgd":
            return torch.optim.SGD(params, lr=self.lr, momentum=self.momentum,
                                   weight_decay=self.weight_decay)
        return torch.optim.Adam(params, lr=self.lr, weight_decay=self.weight_decay)

    def scheduler_for(self, opt: torch.optim.Optimizer
                      ) -> torch.optim.lr_scheduler.LRScheduler | None:
        """The epoch schedule of ``opt`` (None: a constant learning rate)."""
        import torch

        if self.schedule == "step":
            return torch.optim.lr_scheduler.StepLR(opt, step_size=self.step_size,
                                                   gamma=self.gamma)
        if self.schedule == "cosine":
            return torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=max(1, self.epochs))
        return None

    def lr_at(self, epoch: int) -> float:
        """The learning rate of 1-based ``epoch`` under the schedule (the batched form's
        hand-written optimisers read it; equal to what the torch scheduler sets)."""
        import math

        e = epoch - 1
        if self.schedule == "step":
            return self.lr * self.gamma ** (e // self.step_size)
        if self.schedule == "cosine":
            t = max(1, self.epochs)
            return self.lr * (1 + math.cos(math.pi * e / t)) / 2
        return self.lr
