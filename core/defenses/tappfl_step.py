"""TAPPFL's local step on plain modules (the reference form every extractor shares) and its
per-round metrics: one home for :mod:`core.defenses.tappfl` (the MLP) and
:mod:`core.defenses.tappfl_conv` (registered architectures). The step is a game's: the
engine's loop takes the adversary's k turns (:func:`tappfl_module_turn`), then the
extractor's loss (:func:`tappfl_module_loss`) and Θ's plain SGD step (:mod:`core.fl.sequential`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from core.fl.types import DeviceBatch
from core.models.nn import jsd_mi

__all__ = ["step_features", "tappfl_module_loss", "tappfl_module_turn", "tappfl_round_metrics"]


def _sgd_(params: list[Tensor], grads: tuple[Tensor, ...], lr: float) -> None:
    with torch.no_grad():
        torch._foreach_add_(params, list(grads), alpha=-lr)


@contextmanager
def _frozen(params: list[Tensor]) -> Iterator[None]:
    """``params`` as constants while a graph is built (the extractor's loss reaches Ψ and Ω,
    whose gradients it does not need: the engine's backward then computes Θ's only)."""
    for p in params:
        p.requires_grad_(False)
    try:
        yield
    finally:
        for p in params:
            p.requires_grad_(True)


def step_features(batch: DeviceBatch, compute: Callable[[], Tensor]) -> Tensor:
    """The local step's representations r = f(x; Θ), computed once per step (by the first
    adversary turn) and kept in ``batch.scratch``: the turns read r.detach(), Θ's loss r."""
    if "r" not in batch.scratch:
        batch.scratch["r"] = compute()
    return batch.scratch["r"]


def tappfl_module_turn(obj, r: Tensor, private: dict[str, nn.Module], batch: DeviceBatch,
                       a: int, lr: float) -> dict[str, Tensor]:
    """One device's a-th adversary turn on plain modules (``obj`` carries the adversary steps
    k and the scale), given its representations ``r = theta(x)``: Ψ's SGD step on r.detach(),
    Ω's with it at the last turn; the statistics of the first turn's pass (before Ψ trains on
    the batch) and the last turn's JSD estimate."""
    adv, crit = private["adversary"], private["critic"]
    x, u = batch.fields["x"], batch.fields["u"]
    oh = F.one_hot(u, obj.n_values).to(x.dtype)
    adv_p, crit_p = list(adv.parameters()), list(crit.parameters())
    rd = r.detach()
    stats: dict[str, Tensor] = {}
    logits = adv(rd)
    ce = F.cross_entropy(logits, u)
    if a == 0:
        with torch.no_grad():
            hit = (logits.argmax(-1) == u).to(x.dtype)
            stats["ce_sum"] = ce.detach() * len(u)
            stats["rows"] = torch.tensor(float(len(u)), device=x.device)
            stats["correct_by_class"] = (oh * hit.unsqueeze(-1)).sum(0)
            stats["rows_by_class"] = oh.sum(0)
    if a < obj.adversary_steps - 1:
        _sgd_(adv_p, torch.autograd.grad(obj.adv_scale * ce, adv_p), lr)
        return stats
    jsd = jsd_mi(*crit.score_pair(crit.embed_x(x), crit.embed_r(rd), oh, batch.roll))
    grads = torch.autograd.grad(obj.adv_scale * ce - jsd, adv_p + crit_p)
    _sgd_(adv_p, grads[: len(adv_p)], lr)
    _sgd_(crit_p, grads[len(adv_p):], lr)
    stats["jsd_sum"] = jsd.detach() * len(u)
    return stats


def tappfl_module_loss(obj, r: Tensor, private: dict[str, nn.Module], batch: DeviceBatch
                       ) -> tuple[Tensor, dict[str, Tensor]]:
    """One device's extractor loss −λ·CE − (1−λ)·I_JSD (Eq. 7) on its representations ``r``
    with the Ψ, Ω its adversary turns left (no statistics: the turns report them)."""
    adv, crit = private["adversary"], private["critic"]
    x, u = batch.fields["x"], batch.fields["u"]
    oh = F.one_hot(u, obj.n_values).to(x.dtype)
    adv_p, crit_p = list(adv.parameters()), list(crit.parameters())
    loss = torch.zeros((), dtype=x.dtype, device=x.device)
    with _frozen(adv_p + crit_p):
        if obj.lam > 0:
            loss = loss - obj.lam * F.cross_entropy(adv(r), u)
        if obj.lam < 1:
            with torch.no_grad():
                ex = crit.embed_x(x)
            loss = loss - (1 - obj.lam) * jsd_mi(*crit.score_pair(ex, crit.embed_r(r), oh,
                                                                  batch.roll))
    return loss, {}


def tappfl_round_metrics(totals: dict[str, Tensor]) -> dict[str, float]:
    """Mean adversary CE (nats) and accuracy / balanced accuracy on the round's batches,
    mean JSD-MI estimate (nats)."""
    rows = float(totals["rows"])
    if rows <= 0:
        nan = float("nan")
        return {"adversary_ce": nan, "adversary_acc": nan, "adversary_bacc": nan, "jsd_mi": nan}
    by = totals["rows_by_class"].cpu().numpy()
    cor = totals["correct_by_class"].cpu().numpy()
    present = by > 0
    return {
        "adversary_ce": float(totals["ce_sum"]) / rows,
        "adversary_acc": float(cor.sum()) / rows,
        "adversary_bacc": float(np.mean(cor[present] / by[present])),
        "jsd_mi": float(totals["jsd_sum"]) / rows,
    }
