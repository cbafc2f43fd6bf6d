"""Fresh attackers, evaluation heads and TAPPFL's central pretraining on the engine's loop.

- :func:`adam_train`: minibatch Adam over row indices through :func:`core.engine.loop.fit`,
  shuffled each epoch by a *local* ``torch.Generator`` (the global torch RNG is never touched),
  optional early stopping on a validation loss that keeps the best epoch's weights, per-epoch
  curves in a :class:`~core.engine.loop.TrainLog`;
- :func:`train_until_plateau`: the early-stopping helper of every learned attacker: a seeded
  held-out validation split (:func:`validation_rows`, drawn with :func:`core.foundation.seeds.stream`),
  training until its loss has not fallen for :data:`PATIENCE` epochs (a max-epoch cap), the
  best epoch's weights kept;
- :func:`train_classifier`: a classifier on (X, y) with (class-weighted) cross-entropy built on
  it: ``class_weight="balanced"`` weighs class c by n / (k · count_c) over the k classes present
  (scikit-learn's rule), so an imbalanced label cannot collapse the model to the majority class.

Thread counts are not set here: a run's single thread budget is applied once by the engine.
Initialisation is the caller's business (see ``core.models.nn``); this module only trains.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Literal

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from core.engine.loop import Objective, TrainLog, fit, params_of
from core.engine.recipe import Recipe
from core.foundation.checks import check_range
from core.foundation.seeds import stream

__all__ = ["MIN_PATIENCE_STEPS", "PATIENCE", "TrainLog", "adam_train", "balanced_class_weights", "train_classifier",
           "train_until_plateau", "validation_rows"]

#: epochs without a fall of the validation loss before a learned attacker stops (every learned
#: attacker uses it through :func:`train_until_plateau`)
PATIENCE = 8
#: ... and at least this many optimiser steps: on a few hundred rows an epoch is 2-3 steps, and
#: the validation loss of a fresh network can wobble up for more than 8 of them before it falls
#: (the property MLP on 600 shadow subsets stopped at epoch 9 reading 0.20 where the logistic
#: attacker read 0.59)
MIN_PATIENCE_STEPS = 200


def adam_train(
    params_or_module: nn.Module | Iterable[Tensor],
    loss_fn: Callable[[Tensor], Tensor],
    n: int,
    *,
    epochs: int,
    batch_size: int,
    lr: float,
    weight_decay: float = 0.0,
    generator: torch.Generator,
    val_loss_fn: Callable[[], Tensor | float] | None = None,
    patience: int | None = None,
    min_delta: float = 1e-6,
    on_epoch: Callable[[int, TrainLog], None] | None = None,
    cancel_check: Callable[[], None] | None = None,
) -> TrainLog:
    """Train with Adam (``lr``, ``weight_decay``) for ``epochs`` passes over ``n`` rows through
    the engine's loop (:func:`core.engine.loop.fit` on an :class:`~core.engine.loop.Objective`).

    ``loss_fn(idx)`` returns the scalar loss of the rows ``idx`` (a LongTensor on the
    parameters' device), shuffled each epoch by ``generator``. With ``val_loss_fn`` the weights
    of the epoch with the lowest validation loss are kept (an improvement must exceed
    ``min_delta``); with ``patience`` as well, training stops after ``patience`` epochs without
    improvement. ``on_epoch(epoch, log)`` runs after each epoch (it may raise to cancel);
    ``cancel_check()`` runs before each minibatch.
    """
    check_range("epochs", epochs, 0)
    check_range("batch_size", batch_size, 1)
    check_range("n", n, 1)
    if patience is not None:
        check_range("patience", patience, 1, note="or None")
    recipe = Recipe(epochs=int(epochs), batch_size=int(batch_size), lr=float(lr),
                    optimizer="adam", weight_decay=float(weight_decay))
    return fit(params_or_module, Objective(loss_fn, int(n)), recipe=recipe, order=generator,
               validation=val_loss_fn, patience=patience, min_delta=min_delta,
               on_epoch=on_epoch, cancel_check=cancel_check)


def balanced_class_weights(y: np.ndarray | Tensor, n_classes: int) -> np.ndarray:
    """scikit-learn's ``class_weight="balanced"``: w_c = n / (k · count_c) over the k classes
    present in ``y``; classes absent from ``y`` get weight 0 (they have no rows to weigh)."""
    yy = y.detach().cpu().numpy() if isinstance(y, Tensor) else np.asarray(y)
    counts = np.bincount(yy.astype(np.int64), minlength=n_classes).astype(np.float64)
    present = counts > 0
    w = np.zeros(n_classes, dtype=np.float64)
    w[present] = yy.size / (present.sum() * counts[present])
    return w


def validation_rows(n: int, fraction: float, seed: int, *path: str | int,
                    strata: np.ndarray | None = None, min_rows: int = 20) -> np.ndarray:
    """A boolean mask of the held-out validation rows of an early-stopped fit: ``round(fraction
    · count_c)`` rows of every stratum c (of all n rows without ``strata``), drawn by
    ``core.foundation.seeds.stream(seed, "early_stopping", *path)``; no rows when n < ``min_rows``."""
    check_range("fraction", fraction, 0, 1, hi_open=True)
    mask = np.zeros(n, dtype=bool)
    if fraction == 0 or n < min_rows:
        return mask
    perm = stream(seed, "early_stopping", *path).permutation(n)
    groups = np.zeros(n, dtype=np.int64) if strata is None else np.asarray(strata)[perm]
    for c in np.unique(groups):
        rows = perm[groups == c]
        mask[rows[: round(fraction * rows.size)]] = True
    return mask


def train_until_plateau(
    params_or_module: nn.Module | Iterable[Tensor],
    loss_fn: Callable[[Tensor], Tensor],
    val_mask: np.ndarray,
    *,
    max_epochs: int,
    batch_size: int,
    lr: float,
    generator: torch.Generator,
    patience: int = PATIENCE,
    min_patience_steps: int = MIN_PATIENCE_STEPS,
    weight_decay: float = 0.0,
    val_loss_fn: Callable[[Tensor], Tensor] | None = None,
    on_epoch: Callable[[int, TrainLog], None] | None = None,
    cancel_check: Callable[[], None] | None = None,
) -> TrainLog:
    """Train on the rows outside ``val_mask`` (:func:`validation_rows`) until the loss on the
    rows inside it has not fallen for ``patience`` epochs and ``min_patience_steps`` optimiser
    steps (0: epochs only), at most ``max_epochs``; the best
    epoch's weights are kept (:func:`adam_train`). ``loss_fn(rows)`` is the mean loss of the
    given row indices (into all n rows); ``val_loss_fn(rows)`` (default ``loss_fn``) scores the
    validation rows. Without validation rows it runs ``max_epochs`` and keeps the last weights.
    ``TrainLog.stopped_early`` says whether the loss stopped falling before the cap (False: the
    cap was hit; raise it)."""
    check_range("max_epochs", max_epochs, 0)
    dev = next(iter(params_of(params_or_module)[1])).device
    tr = torch.as_tensor(np.flatnonzero(~val_mask), device=dev)
    va = torch.as_tensor(np.flatnonzero(val_mask), device=dev)
    if min_patience_steps:
        steps = max(1, math.ceil(int(tr.numel()) / batch_size))
        patience = max(patience, math.ceil(min_patience_steps / steps))
    vfn = val_loss_fn or loss_fn
    return adam_train(
        params_or_module, lambda idx: loss_fn(tr[idx]), int(tr.numel()), epochs=max_epochs,
        batch_size=batch_size, lr=lr, weight_decay=weight_decay, generator=generator,
        val_loss_fn=(lambda: vfn(va)) if va.numel() else None,
        patience=patience if va.numel() else None, on_epoch=on_epoch, cancel_check=cancel_check)


def _class_weights(class_weight: Literal["balanced"] | None | np.ndarray | list[float],
                   y_np: np.ndarray, k: int) -> np.ndarray:
    """The k per-class weights of :func:`train_classifier`'s ``class_weight`` argument."""
    if isinstance(class_weight, str):
        if class_weight != "balanced":
            raise ValueError(
                f"class_weight: got {class_weight!r}; allowed: 'balanced', None, or k weights"
            )
        return balanced_class_weights(y_np, k)
    if class_weight is None:
        return np.ones(k, dtype=np.float64)
    w = np.asarray(class_weight, dtype=np.float64)
    if w.shape != (k,) or not np.all(np.isfinite(w)) or np.any(w < 0):
        raise ValueError(f"class_weight: got shape {w.shape}; expected {k} finite weights >= 0")
    return w


def _held_out_rows(y_np: np.ndarray, val_mask: np.ndarray | None, val_fraction: float,
                   generator: torch.Generator) -> np.ndarray:
    """The validation rows of :func:`train_classifier`: ``val_mask`` as given, else a stratified
    ``val_fraction`` of each class drawn by ``generator`` (n ≥ 20), else none."""
    check_range("val_fraction", val_fraction, 0, 1, hi_open=True)
    if val_mask is not None:
        val = np.asarray(val_mask, dtype=bool)
        if val.shape != y_np.shape:
            raise ValueError(f"val_mask: got shape {val.shape}; expected {y_np.shape}")
        return val
    val = np.zeros(y_np.size, dtype=bool)
    if val_fraction > 0 and y_np.size >= 20:
        perm = torch.randperm(y_np.size, generator=generator).numpy()
        for c in np.unique(y_np):
            rows = perm[y_np[perm] == c]
            val[rows[: round(val_fraction * rows.size)]] = True
    return val


def train_classifier(
    net: nn.Module,
    X: Tensor | np.ndarray,
    y: Tensor | np.ndarray,
    *,
    class_weight: Literal["balanced"] | None | np.ndarray | list[float] = "balanced",
    epochs: int,
    batch_size: int,
    lr: float,
    weight_decay: float = 0.0,
    generator: torch.Generator,
    val_fraction: float = 0.0,
    patience: int | None = None,
    val_weighted: bool = True,
    val_mask: np.ndarray | None = None,
    min_patience_steps: int = 0,
    on_epoch: Callable[[int, TrainLog], None] | None = None,
    cancel_check: Callable[[], None] | None = None,
) -> dict:
    """Train ``net`` (logits over k = its output width) on ``X`` → ``y`` with Adam and the
    (weighted) cross-entropy mean_i w_{y_i} · CE_i via :func:`adam_train`; ``net`` is updated in
    place and left in eval mode. ``X``/``y`` are moved to the device of ``net``.

    ``class_weight``: ``"balanced"`` (n / (k · count_c) over the classes present in ``y``, see
    :func:`balanced_class_weights`), ``None`` (plain CE) or an array of k per-class weights.
    ``val_mask`` (:func:`validation_rows`; or ``val_fraction`` > 0 with n ≥ 20: a stratified
    fraction drawn by ``generator``) holds rows out; their weighted CE (plain CE with
    ``val_weighted=False``) drives early stopping (``patience``, :func:`train_until_plateau`)
    and the best epoch's weights are kept.

    Returns ``class_weight`` (the k weights used, a numpy array), ``n_train``, ``n_val``,
    ``epochs_run``, ``best_epoch``, ``val_ce_nats`` (best weighted validation CE, NaN without
    validation), ``train_loss`` and ``val_loss`` (per-epoch lists) and ``log`` (the TrainLog).
    """
    params = list(net.parameters())
    dev = params[0].device if params else torch.device("cpu")
    Xt = torch.as_tensor(X, dtype=torch.float32, device=dev)
    yt = torch.as_tensor(y, dtype=torch.long, device=dev)
    if Xt.shape[0] != yt.shape[0] or yt.dim() != 1:
        raise ValueError(f"y: got shape {tuple(yt.shape)}; expected ({Xt.shape[0]},) to match X")
    y_np = yt.cpu().numpy()
    was_training = net.training
    net.eval()  # the output width, without a random draw (dropout) from the global RNG
    with torch.no_grad():
        k = int(net(Xt[:1]).shape[-1])
    net.train(was_training)
    if y_np.size and (y_np.min() < 0 or y_np.max() >= k):
        raise ValueError(f"y: got codes outside 0..{k - 1} (the network has {k} outputs)")
    w = _class_weights(class_weight, y_np, k)
    val = _held_out_rows(y_np, val_mask, val_fraction, generator)
    weighted = class_weight is not None
    wt = torch.as_tensor(w, dtype=torch.float32, device=dev)

    def ce(logits: Tensor, target: Tensor) -> Tensor:
        if not weighted:
            return F.cross_entropy(logits, target)
        return (wt[target] * F.cross_entropy(logits, target, reduction="none")).mean()

    def val_ce(rows: Tensor) -> Tensor:
        return (ce if val_weighted else F.cross_entropy)(net(Xt[rows]), yt[rows])

    log = train_until_plateau(
        net, lambda rows: ce(net(Xt[rows]), yt[rows]), val, max_epochs=epochs,
        batch_size=batch_size, lr=lr, weight_decay=weight_decay, generator=generator,
        patience=patience if patience is not None else epochs + 1,
        min_patience_steps=min_patience_steps, val_loss_fn=val_ce,
        on_epoch=on_epoch, cancel_check=cancel_check)
    n_val = int(val.sum())
    return {
        "class_weight": w,
        "n_train": int(y_np.size - n_val),
        "n_val": n_val,
        "epochs_run": log.epochs_run,
        "best_epoch": log.best_epoch,
        "val_ce_nats": log.best_val_loss,
        "train_loss": list(log.train_loss),
        "val_loss": list(log.val_loss),
        "log": log,
    }
