"""Plain local objectives for :func:`core.fl.fedavg.run_fedavg` (and the Flower adapter).

:class:`PlainObjective` is ordinary supervised FedAvg: each device minimises the mean
cross-entropy of a small classifier (:class:`core.models.nn.TaskHead`, linear or one hidden ReLU
layer) on its rows' ``x`` and ``y`` with plain SGD; no private networks. Any defense that just
trains a classifier (DP or pruning on the uploads, the undefended baseline) can run it, and
:func:`plain_objective` is its picklable factory for :mod:`core.fl.flower`
(``"core.fl.objectives:plain_objective"``).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from core.fl.types import DeviceBatch, Params, StackedBatch
from core.models.nn import TaskHead, record_linear, sgd_from_records

__all__ = ["PlainObjective", "plain_objective"]


class PlainObjective:
    """Supervised cross-entropy on fields ``x`` (float rows) and ``y`` (class ids).

    Statistics per step (sums over valid rows, before the step's update): ``ce_sum``,
    ``correct``, ``rows``; :meth:`round_metrics` gives ``train_ce`` (nats) and ``train_acc``.
    """

    def __init__(self, model: TaskHead) -> None:
        self.shared = model
        self.private: dict[str, nn.Module] = {}

    def stacked_step(self, theta: Params, private: dict[str, Params], batch: StackedBatch,
                     lr: float) -> dict[str, Tensor]:
        x, y, w, mask = batch.fields["x"], batch.fields["y"], batch.weight, batch.mask
        k, b = y.shape
        with record_linear() as rec:
            logits = self.shared.fforward(theta, x)
        ce_rows = F.cross_entropy(logits.reshape(k * b, -1), y.reshape(-1), reduction="none").view(k, b)
        loss = (ce_rows * w).sum()  # each device's mean over its valid rows, summed over devices
        with torch.no_grad():
            stats = {"ce_sum": (ce_rows * mask).sum(1), "rows": mask.sum(1),
                     "correct": ((logits.argmax(-1) == y).to(x.dtype) * mask).sum(1)}
        sgd_from_records(rec, torch.autograd.grad(loss, [o for *_, o in rec]), lr)
        return stats

    def module_loss(self, theta: nn.Module, private: dict[str, nn.Module], batch: DeviceBatch,
                    lr: float) -> tuple[Tensor, dict[str, Tensor]]:
        x, y = batch.fields["x"], batch.fields["y"]
        logits = theta(x)
        ce = F.cross_entropy(logits, y)
        with torch.no_grad():
            stats = {"ce_sum": ce.detach() * len(y), "rows": torch.tensor(float(len(y)), device=x.device),
                     "correct": (logits.argmax(-1) == y).to(x.dtype).sum()}
        return ce, stats

    def round_metrics(self, totals: dict[str, Tensor]) -> dict[str, float]:
        rows = float(totals["rows"]) if "rows" in totals else 0.0
        if rows <= 0:
            return {"train_ce": float("nan"), "train_acc": float("nan")}
        return {"train_ce": float(totals["ce_sum"]) / rows, "train_acc": float(totals["correct"]) / rows}


def plain_objective(in_dim: int, n_classes: int, hidden: int | None = None) -> PlainObjective:
    """The factory (JSON-able arguments): a :class:`PlainObjective` on a fresh
    ``TaskHead(in_dim, n_classes, hidden)`` (its weights are the loop's to set)."""
    return PlainObjective(TaskHead(int(in_dim), int(n_classes), None if hidden is None else int(hidden)))
