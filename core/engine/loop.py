"""The one minibatch training loop of privlab: :func:`fit`.

Every epoch the n rows are shuffled by ``torch.randperm(n, generator=order)`` (a local
generator from :mod:`core.foundation.seeds`; the global torch RNG is never touched) and cut into
minibatches of the recipe's batch size, the last one smaller; another
:class:`core.engine.order.Order` may choose the rows instead (:class:`~core.engine.order.Poisson`
sampling for DP-SGD, whose steps may be empty). Per step: the hooks'
``before_step``, the k adversary turns of every game among them
(:class:`core.engine.hooks.Game`: k = its ``adversary_steps``), the task's objective (a :class:`Supervised` classifier's cross-entropy unless
a loss hook replaces it, or any ``objective(rows)`` of an :class:`Objective`), the backward
pass, the hooks' ``gradient``, the optimiser step (:class:`core.engine.recipe.Recipe`; a
prepare hook may wrap it, as Opacus' DPOptimizer does). The epoch's loss is summed on the
device in float64 over the rows the steps took (no host read inside an epoch; the same bits
as a Python float sum of ``float(loss) · rows``; an empty step adds nothing). The schedule
steps once per epoch.

Besides: progress a few times per epoch (its ``update`` raises :class:`core.foundation.progress.Cancelled`
when the run is cancelled) and a ``cancel_check`` before every step; per-epoch curves
(``train_loss``, an ``evaluate`` callback's values, ``epoch_seconds`` on request); early
stopping on a validation loss that keeps the best epoch's weights; the engine options
(channels-last, bf16 autocast, compile) for a supervised module.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from core.engine.hooks import Game, Hook, StepState, games
from core.engine.options import autocast_for, prepare_model
from core.engine.order import Order, Shuffle
from core.engine.recipe import Recipe

__all__ = ["Objective", "Supervised", "TrainLog", "fit", "params_of"]


@dataclass
class TrainLog:
    """Per-epoch curves of :func:`fit`.

    ``train_loss[e]``: the mean minibatch loss of epoch e+1 (the objective, or what a hook
    reported), weighted by batch size; ``val_loss[e]``: the validation loss after epoch e+1
    (empty without one); ``curves``: the ``evaluate`` callback's values per epoch and
    ``epoch_seconds`` when timed; ``epochs_run`` (fewer than asked after an early stop);
    ``best_epoch``: 1-based epoch whose weights were kept (0: no validation, the last weights);
    ``best_val_loss`` (NaN without one); ``steps``: optimiser steps; ``meta``: the hooks'
    counters read back to the host once, at the end.
    """

    train_loss: list[float] = field(default_factory=list)
    val_loss: list[float] = field(default_factory=list)
    curves: dict[str, list[float]] = field(default_factory=dict)
    epochs_run: int = 0
    best_epoch: int = 0
    best_val_loss: float = float("nan")
    stopped_early: bool = False
    steps: int = 0
    seconds: float = 0.0
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass
class Supervised:
    """A classifier's task: rows ``X`` (n, d) with labels ``y`` (n,), each minibatch reshaped
    to (m, *``shape``) when a shape is given and passed through ``forward`` (default: the
    trained module, prepared with the engine options); the objective is the mean
    cross-entropy unless a hook's ``loss`` replaces it."""

    X: Tensor
    y: Tensor
    shape: tuple[int, ...] | None = None
    forward: Callable[[Tensor], Tensor] | None = None

    @property
    def n(self) -> int:
        return len(self.X)

    def prepare(self, state: StepState) -> None:
        state.source = self.X

    def objective(self, state: StepState, hooks: Sequence[Hook], net: Any) -> Tensor:
        idx = state.idx
        xb = state.source[idx]
        for h in hooks:
            xb = h.inputs(xb, state)
        yb = self.y[idx]
        fwd = self.forward or net
        with autocast_for(xb.device):
            logits = fwd(xb.reshape(len(xb), *self.shape) if self.shape else xb)
            loss = None
            for h in hooks:
                term = h.loss(logits, yb, state)
                if term is not None:
                    if loss is not None:
                        raise ValueError("hooks: two hooks replace the loss; allowed: one")
                    loss = term
            return F.cross_entropy(logits, yb) if loss is None else loss


@dataclass
class Objective:
    """Any objective over row indices: ``fn(rows)`` the scalar loss of the rows (a LongTensor
    on the parameters' device) of ``n``."""

    fn: Callable[[Tensor], Tensor]
    n: int

    def prepare(self, state: StepState) -> None:
        return None

    def objective(self, state: StepState, hooks: Sequence[Hook], net: Any) -> Tensor:
        return self.fn(state.idx)


def params_of(model: nn.Module | Iterable[Tensor]) -> tuple[nn.Module | None, list[Tensor]]:
    """The module (None for a plain parameter list) and its trainable parameters."""
    if isinstance(model, nn.Module):
        return model, [p for p in model.parameters() if p.requires_grad]
    params = list(model)
    if not params or not all(isinstance(p, Tensor) for p in params):
        raise ValueError("model: expected an nn.Module or a non-empty iterable of tensors")
    return None, params


def _snapshot(module: nn.Module | None, params: list[Tensor]) -> Any:
    if module is not None:
        return {k: t.detach().clone() for k, t in module.state_dict().items()}
    return [p.detach().clone() for p in params]


@torch.no_grad()
def _restore(module: nn.Module | None, params: list[Tensor], snap: Any) -> None:
    if module is not None:
        module.load_state_dict(snap)
    else:
        for p, s in zip(params, snap, strict=True):
            p.copy_(s)


def _host(v: Any) -> Any:
    return v.item() if isinstance(v, Tensor) and v.numel() == 1 else v


@dataclass
class _BestEpoch:
    """Early stopping on a validation loss: the best epoch's weights and the epochs since."""

    module: nn.Module | None
    params: list[Tensor]
    min_delta: float
    patience: int | None
    best: float = math.inf
    weights: Any = None
    bad: int = 0

    def after(self, ep: int, log: TrainLog, validation: Callable[[], Tensor | float]) -> bool:
        """Record epoch ``ep``'s validation loss; whether training stops here."""
        if self.module is not None:
            self.module.eval()
        with torch.no_grad():
            v = float(validation())
        log.val_loss.append(v)
        if v < self.best - self.min_delta:
            self.best, self.weights, self.bad = v, _snapshot(self.module, self.params), 0
            log.best_epoch, log.best_val_loss = ep, v
            return False
        self.bad += 1
        return self.patience is not None and self.bad >= self.patience


def _epoch_steps(state: StepState, task: Supervised | Objective, net: Any,
                 hooks: Sequence[Hook], players: Sequence[Game], batches: Order, *,
                 label: str, progress: Any,
                 cancel_check: Callable[[], None] | None) -> tuple[Tensor, int]:
    """The steps of epoch ``state.epoch``: (the loss summed over the rows taken, a float64
    device scalar; the rows taken). Before each model step, the adversary turns of the
    ``players`` (the games among the hooks), k of each."""
    n, b, ep, epochs, opt = state.n, state.batch_size, state.epoch, state.epochs, state.optimizer
    per_epoch = batches.steps(n, b)
    every = max(1, per_epoch // 5)
    tot, seen = torch.zeros((), dtype=torch.float64, device=state.device), 0
    for j, (idx, rows) in enumerate(batches.epoch(n, b, state.device)):
        if cancel_check is not None:
            cancel_check()
        state.idx, state.rows, state.reported = idx, rows, None
        for h in hooks:
            h.before_step(state)
        for g in players:
            for a in range(g.adversary_steps):
                g.adversary_turn(state, a)
        loss = task.objective(state, hooks, net)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        for h in hooks:
            h.gradient(state)
        opt.step()
        if rows:  # an empty step's loss is the mean of nothing (NaN)
            shown = loss if state.reported is None else state.reported
            tot += shown.detach().double() * rows
            seen += rows
        state.step += 1
        if progress is not None and (j + 1) % every == 0:
            progress.update((ep - 1 + (j + 1) / per_epoch) / epochs,
                            f"{label} {ep}/{epochs}: step {j + 1}/{per_epoch}")
    return tot, seen


def fit(model: nn.Module | Iterable[Tensor], task: Supervised | Objective, *, recipe: Recipe,
        order: torch.Generator | Order, hooks: Sequence[Hook] = (), progress: Any = None,
        label: str = "epoch", cancel_check: Callable[[], None] | None = None,
        validation: Callable[[], Tensor | float] | None = None, patience: int | None = None,
        min_delta: float = 1e-6, on_epoch: Callable[[int, TrainLog], None] | None = None,
        evaluate: Callable[[], dict[str, float]] | None = None,
        time_epochs: bool = False, optimizer: torch.optim.Optimizer | None = None
        ) -> TrainLog:
    """Train ``model`` (a module, or a list of parameters whose modes the caller owns) on
    ``task`` under ``recipe``, in place; see the module docstring. ``order``: a generator (a
    :class:`~core.engine.order.Shuffle` of it) or an :class:`~core.engine.order.Order`.

    ``validation`` (no arguments; called under ``torch.no_grad()`` after every epoch, with a
    module in eval mode): the weights of the epoch with the lowest value are kept (an
    improvement must exceed ``min_delta``); with ``patience``, training stops after that many
    epochs without one. ``evaluate()`` returns curve values recorded after each epoch (a test
    accuracy); ``on_epoch(epoch, log)`` runs last in each epoch (it may raise to cancel). A
    module trains in train mode and is left in eval mode. ``optimizer``: one carried over from
    an earlier phase (a game's pretraining) in place of the recipe's."""
    module, params = params_of(model)
    dev = params[0].device
    opt = recipe.optimizer_for(params) if optimizer is None else optimizer
    sched = recipe.scheduler_for(opt)
    n, epochs = int(task.n), int(recipe.epochs)
    if n < 1:
        raise ValueError("rows: got 0; allowed: at least 1 training row")
    state = StepState(model=module, params=params, optimizer=opt, recipe=recipe, n=n, device=dev)
    task.prepare(state)
    for h in hooks:
        h.prepare(state)
    batches = order if isinstance(order, Order) else Shuffle(order)
    net = prepare_model(module) if (module is not None and isinstance(task, Supervised)
                                    and task.forward is None) else module
    players = games(hooks)
    log = TrainLog()
    keep = _BestEpoch(module, params, min_delta, patience)
    t0 = time.perf_counter()
    for ep in range(1, epochs + 1):
        state.epoch = ep
        if module is not None:
            module.train()
        t_ep = time.perf_counter()
        tot, seen = _epoch_steps(state, task, net, hooks, players, batches, label=label,
                                 progress=progress, cancel_check=cancel_check)
        if sched is not None:
            sched.step()
        for h in hooks:
            h.epoch_end(state)
        if time_epochs:
            log.curves.setdefault("epoch_seconds", []).append(time.perf_counter() - t_ep)
        log.train_loss.append(float(tot) / max(seen, 1))
        log.epochs_run = ep
        if evaluate is not None:
            for k, v in evaluate().items():
                log.curves.setdefault(k, []).append(float(v))
        stop = validation is not None and keep.after(ep, log, validation)
        if progress is not None:
            progress.update(ep / epochs, f"{label} {ep}/{epochs} done")
        if on_epoch is not None:
            on_epoch(ep, log)
        if stop:
            log.stopped_early = True
            break
    if keep.weights is not None:
        _restore(module, params, keep.weights)
    if module is not None:
        module.eval()
    log.steps = state.step
    log.seconds = time.perf_counter() - t0
    log.meta = {k: _host(v) for k, v in state.meta.items()}
    return log
