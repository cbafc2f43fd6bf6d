"""Sequential FedAvg round: the reference path, one device after another with plain modules.

Each sampled device loads the global Θ into the shared module and its own Ψ_k, Ω_k into the
private modules, then runs the objective's ``module_step`` on exactly the batches of the round
plan (valid rows only, same order, same x' roll, same dropout masks). It must give the same
global model as :mod:`core.fl.vectorised` (tests/test_fedavg.py checks this); it is also the
speed baseline of benchmarks/fedavg_speed.py.
"""

from __future__ import annotations

import torch
from torch import Tensor

from core.fl.types import DeviceBatch, FedAvgState, LocalObjective, Params, RoundPlan
from core.progress import Progress


@torch.no_grad()
def _load(module: torch.nn.Module, params: Params, row: int | None = None) -> None:
    for n, p in module.named_parameters():
        p.copy_(params[n] if row is None else params[n][row])


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
    thetas: list[Params] = []
    totals: dict[str, Tensor] = {}
    k_all = len(plan.devices)
    for i, d in enumerate(plan.devices):
        d = int(d)
        _load(shared, glob)
        for name, mod in private.items():
            _load(mod, state.private[name], d)
        for s in range(int(plan.steps[i])):
            m = int(plan.count[i, s])
            batch = DeviceBatch(
                fields={n: v[plan.index[i, s, :m]] for n, v in data.items()},
                roll=plan.roll[i, s, :m],
                dropout=None if plan.dropout is None else plan.dropout[i, s, :m],
            )
            stats = objective.module_step(shared, private, batch, lr)
            for n, v in stats.items():
                totals[n] = totals[n] + v if n in totals else v
        thetas.append({n: p.detach().clone() for n, p in shared.named_parameters()})
        with torch.no_grad():
            for name, mod in private.items():
                for n, p in mod.named_parameters():
                    state.private[name][n][d] = p.detach()
        if progress is not None:
            progress.update((i + 1) / k_all, f"round {plan.round}: device {i + 1}/{k_all} done")
    local = {n: torch.stack([t[n] for t in thetas]) for n in glob}
    return local, {n: v.detach() for n, v in totals.items()}
