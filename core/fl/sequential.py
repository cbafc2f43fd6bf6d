"""Sequential FedAvg round: the reference path, one device after another with plain modules.

Each sampled device loads the global Θ into the shared module and its own Ψ_k, Ω_k into the
private modules, then trains through the engine's loop (:func:`core.engine.loop.fit`) on
exactly the batches of the round plan (:class:`core.engine.order.Planned`: valid rows only,
same order; the same x' roll and dropout masks). Per step the engine's loop takes a game
objective's k adversary turns (``module_turn``: TAPPFL's adversary and critic steps on the
device's private networks), then the objective's ``module_loss`` gives Θ's loss and the
engine's plain SGD at the round's learning rate updates Θ. It must give the same global model
as :mod:`core.fl.vectorised` (tests/test_fedavg.py checks this); it is also the speed
baseline of benchmarks/fedavg_speed.py and what a Flower client runs.
"""

from __future__ import annotations

import torch
from torch import Tensor

from core.engine.hooks import Game, StepState
from core.engine.loop import Objective, fit
from core.engine.order import Planned
from core.engine.recipe import Recipe
from core.fl.types import (
    DeviceBatch,
    FedAvgState,
    LocalObjective,
    Params,
    RoundPlan,
    adversary_turns,
)
from core.foundation.progress import Progress


@torch.no_grad()
def _load(module: torch.nn.Module, params: Params, row: int | None = None) -> None:
    for n, p in module.named_parameters():
        p.copy_(params[n] if row is None else params[n][row])


class ModuleLocalStep(Game):
    """One device's batches of the round plan for :func:`fit`: before each step the device's
    :class:`DeviceBatch` (rows, x' roll, dropout masks of step ``state.step``); a game
    objective's k ``module_turn`` steps of the device's private networks as this game's turns
    (their SGD is the objective's own); :meth:`objective` the objective's ``module_loss`` on
    the batch. The step's statistics add up in ``totals`` over the round, device after
    device."""

    def __init__(self, objective: LocalObjective, plan: RoundPlan, data: dict[str, Tensor],
                 lr: float) -> None:
        super().__init__(tuple(objective.private.values()), None,
                         adversary_steps=adversary_turns(objective, "module_turn"))
        self.local, self.plan, self.data, self.lr = objective, plan, data, lr
        self.device = 0
        self.batch: DeviceBatch | None = None
        self.totals: dict[str, Tensor] = {}

    def before_step(self, state: StepState) -> None:
        i, s, m, plan = self.device, state.step, state.rows, self.plan
        self.batch = DeviceBatch(
            fields={n: v[state.idx] for n, v in self.data.items()},
            roll=plan.roll[i, s, :m],
            dropout=None if plan.dropout is None else plan.dropout[i, s, :m],
        )

    def _add(self, stats: dict[str, Tensor]) -> None:
        for n, v in stats.items():
            self.totals[n] = self.totals[n] + v if n in self.totals else v

    def adversary_turn(self, state: StepState, a: int) -> None:
        obj = self.local
        self._add(obj.module_turn(obj.shared, obj.private, self.batch, a, self.lr))

    def objective(self, rows: Tensor) -> Tensor:
        obj = self.local
        loss, stats = obj.module_loss(obj.shared, obj.private, self.batch, self.lr)
        self._add(stats)
        return loss


def train_round_sequential(
    objective: LocalObjective,
    state: FedAvgState,
    glob: Params,
    plan: RoundPlan,
    data: dict[str, Tensor],
    *,
    lr: float,
    progress: Progress | None = None,
) -> tuple[Params, dict[str, Tensor]]:
    """Train the plan's devices one by one; returns their stacked Θ_k and summed statistics.
    The sampled rows of ``state.private`` are written back (Ψ_k, Ω_k persist)."""
    shared = objective.shared
    private = objective.private
    params = list(shared.parameters())  # a parameter list: the modules' modes stay the caller's
    step = ModuleLocalStep(objective, plan, data, lr)
    recipe = Recipe(epochs=1, batch_size=plan.index.shape[-1], lr=lr, optimizer="sgd")
    cancel = None if progress is None else progress.check_cancel
    thetas: list[Params] = []
    k_all = len(plan.devices)
    for i, d in enumerate(plan.devices):
        d = int(d)
        _load(shared, glob)
        for name, mod in private.items():
            _load(mod, state.private[name], d)
        t = int(plan.steps[i])
        if t:  # a device without rows takes no step
            step.device = i
            fit(params, Objective(step.objective, int(plan.sizes[i])), recipe=recipe,
                order=Planned(plan.index[i], plan.count[i, :t].tolist()), hooks=[step],
                cancel_check=cancel)
        thetas.append({n: p.detach().clone() for n, p in shared.named_parameters()})
        with torch.no_grad():
            for name, mod in private.items():
                for n, p in mod.named_parameters():
                    state.private[name][n][d] = p.detach()
        if progress is not None:
            progress.update((i + 1) / k_all, f"round {plan.round}: device {i + 1}/{k_all} done")
    local = {n: torch.stack([t[n] for t in thetas]) for n in glob}
    return local, {n: v.detach() for n, v in step.totals.items()}
