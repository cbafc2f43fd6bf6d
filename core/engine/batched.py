"""The batched form of the engine: :func:`fit_batched` trains K models of one architecture
together over stacked parameters (name → (K, *shape)), with the hooks of :func:`core.engine.
loop.fit`, each model as ``fit`` would train it alone.

Model k draws its epoch order from its own generator (``torch.randperm(n_k, generator=
orders[k])``, as ``fit`` does) and cuts its n_k rows into batches of the recipe's batch size.
Per step the K batches are one (K, b) index, padded where a model has fewer rows (padding rows
weigh 0: ``StepState.weights`` (K, b) sums to 1 over each model's own rows); one backward runs
through the sum of the K models' mean losses (model k's loss depends only on its slice, so each
slice's gradient is its own), then a per-model SGD (momentum, weight decay) or Adam update
written with tensor ops, at the schedule's ``Recipe.lr_at(epoch)``; the steps of an epoch run
through the engine's step driver (:func:`core.engine.steps.run_steps`). A model without a batch
left in the epoch takes no step at all (weights, moments and step count unchanged), as it
would not alone.

Forward strategies (the loop is the same for all):

- ``"vmap"``: ``vmap(functional_call)`` over the stacked state; ``transpose_linear`` keeps the
  linear weights as (K, in, out) leaves seen as (K, out, in) views inside the call (their
  gradients come out contiguous: a cheaper update for MLPs);
- ``"grouped"``: :class:`core.models.stacked.GroupedNet` (channels side by side, one grouped
  convolution), the faster form of a conv net on a CPU.

A network with BatchNorm (batch statistics couple a batch's rows) never sees padding: at a step
where the models' batch sizes differ the models run in groups of equal batch size, each group
writing back its running statistics. Only hooks whose ``per_example`` is True apply here: a
loss hook gets logits (K, b, C), labels (K, b) and returns the K models' losses (K,).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.func import functional_call, vmap

from core.engine.hooks import Hook, StepState
from core.engine.loop import TrainLog
from core.engine.options import autocast_for
from core.engine.recipe import Recipe
from core.engine.steps import Steps, run_steps

__all__ = ["ADAM_BETAS", "ADAM_EPS", "LAYOUTS", "BatchedFit", "batch_coupled", "fit_batched"]

#: Adam's constants (torch.optim.Adam's defaults, as the single-model loop uses them)
ADAM_BETAS = (0.9, 0.999)
ADAM_EPS = 1e-8

#: the forward strategies (module docstring)
LAYOUTS = ("vmap", "grouped")


@dataclass(kw_only=True)
class BatchedFit:
    """The K trained models: ``params`` and ``buffers`` name → (K, *shape) and the run's
    ``log`` (``steps`` of the longest model, ``seconds``, the hooks' ``meta`` summed over the
    models; no per-epoch loss curve)."""

    params: dict[str, Tensor]
    buffers: dict[str, Tensor]
    log: TrainLog


def batch_coupled(module: nn.Module) -> bool:
    """True when a row's output depends on the other rows of its batch in training (BatchNorm's
    batch statistics): such models cannot take padded batches."""
    return any(isinstance(m, nn.modules.batchnorm._BatchNorm) for m in module.modules())


def epoch_index(rows: list[Tensor], orders: Sequence[torch.Generator], steps: int, b: int,
                device: Any) -> tuple[Tensor, Tensor, np.ndarray]:
    """This epoch's padded batches: pool indices (steps, K, b) and validity (steps, K, b) on
    ``device``, and the rows per model and step (steps, K) on the host (a step's bookkeeping
    reads these, never the device)."""
    K = len(rows)
    idx = torch.zeros(K, steps * b, dtype=torch.long)
    valid = torch.zeros(K, steps * b, dtype=torch.bool)
    for k in range(K):
        n_k = len(rows[k])
        idx[k, :n_k] = rows[k][torch.randperm(n_k, generator=orders[k])]
        valid[k, :n_k] = True
    idx = idx.view(K, steps, b).transpose(0, 1).contiguous()
    valid = valid.view(K, steps, b).transpose(0, 1).contiguous()
    counts = valid.sum(2).numpy()
    return idx.to(device), valid.to(device), counts


@torch.no_grad()
def adam_step(leaves: list[Tensor], grads: list[Tensor], m1: list[Tensor], m2: list[Tensor],
              t: Tensor, active: Tensor, lr: float, all_active: bool | None = None,
              weight_decay: float = 0.0) -> None:
    """torch.optim.Adam's update (single-tensor form, L2 ``weight_decay`` added to the
    gradient) for each of the K stacked models, with per-model step counts ``t`` (K,); models
    not ``active`` keep weights and moments. ``all_active``: whether every model steps, known
    on the host (None: read from ``active``, a device sync)."""
    b1, b2 = ADAM_BETAS
    K = len(t)
    all_active = bool(active.all()) if all_active is None else all_active
    t += active.to(t.dtype)
    tt = t.clamp(min=1)
    step = (lr / (1 - b1 ** tt)).to(leaves[0].dtype)
    bc2_sqrt = (1 - b2 ** tt).sqrt().to(leaves[0].dtype)
    for p, g, e1, e2 in zip(leaves, grads, m1, m2):
        shape = (K,) + (1,) * (p.dim() - 1)
        if weight_decay:
            g = g.add(p, alpha=weight_decay)
        if all_active:
            e1.lerp_(g, 1 - b1)
            e2.mul_(b2).addcmul_(g, g, value=1 - b2)
            denom = (e2.sqrt() / bc2_sqrt.view(shape)).add_(ADAM_EPS)
            p.sub_(step.view(shape) * e1 / denom)
        else:
            a = active.view(shape)
            e1.copy_(torch.where(a, torch.lerp(e1, g, 1 - b1), e1))
            e2.copy_(torch.where(a, e2 * b2 + (1 - b2) * g * g, e2))
            denom = (e2.sqrt() / bc2_sqrt.view(shape)).add_(ADAM_EPS)
            p.sub_(torch.where(a, step.view(shape) * e1 / denom, 0.0))


@torch.no_grad()
def sgd_step(leaves: list[Tensor], grads: list[Tensor], bufs: list[Tensor] | None,
             active: Tensor, lr: float, all_active: bool, momentum: float = 0.0,
             weight_decay: float = 0.0) -> None:
    """torch.optim.SGD's update (no dampening, not Nesterov) for each of the K stacked
    models; ``bufs`` the momentum buffers (zeros before a model's first step, which gives
    torch's first step, buf = d_p). Models not ``active`` keep weights and buffers."""
    K = len(active)
    if not momentum and not weight_decay:
        if not all_active:  # an idle model's gradient set to 0: it takes no step
            grads = [torch.where(active.view((K,) + (1,) * (g.dim() - 1)), g, 0.0)
                     for g in grads]
        torch._foreach_add_(leaves, grads, alpha=-lr)
        return
    for i, (p, g) in enumerate(zip(leaves, grads)):
        a = active.view((K,) + (1,) * (p.dim() - 1))
        d = g.add(p, alpha=weight_decay) if weight_decay else g
        if momentum:
            buf = bufs[i]
            buf.copy_(torch.where(a, buf * momentum + d, buf))
            d = buf
        p.copy_(torch.where(a, p.add(d, alpha=-lr), p))


def _host_to(a: np.ndarray, device: torch.device) -> Tensor:
    """A host index array on ``device``; to a GPU through pinned memory without waiting for
    the queue (a plain pageable copy would synchronise the stream)."""
    t = torch.from_numpy(np.ascontiguousarray(a))
    if device.type != "cuda":
        return t.to(device)
    return t.pin_memory().to(device, non_blocking=True)


def _forward(template: nn.Module, layout: str) -> Callable[..., Tensor]:
    """``fwd(params, buffers, x (K, b, ...)) -> (K, b, classes)`` of K stacked copies of
    ``template``."""
    if layout == "grouped":
        from core.models.stacked import GroupedNet

        return GroupedNet(template)
    return vmap(lambda p, bf, xb: functional_call(template, (p, bf), (xb,)))


def _hook_loss(hooks: Sequence[Hook], logits: Tensor, y: Tensor, state: StepState
               ) -> Tensor | None:
    loss = None
    for h in hooks:
        term = h.loss(logits, y, state)
        if term is not None:
            if loss is not None:
                raise ValueError("hooks: two hooks replace the loss; allowed: one")
            loss = term
    return loss


def _padded_loss(fwd: Callable[..., Tensor], params: dict[str, Tensor],
                 buffers: dict[str, Tensor], y: Tensor, xb: Tensor, state: StepState,
                 hooks: Sequence[Hook]) -> Tensor:
    """Sum over the K models of each one's mean loss on its padded batch."""
    ij, w = state.idx, state.weights
    logits = fwd(params, buffers, xb)
    term = _hook_loss(hooks, logits, y[ij], state)
    if term is not None:
        return term.sum()
    K, b = ij.shape
    ce = F.cross_entropy(logits.reshape(K * b, -1), y[ij].view(-1), reduction="none")
    return (ce * w.view(-1)).sum()


def _grouped_loss(fwd: Callable[..., Tensor], params: dict[str, Tensor],
                  buffers: dict[str, Tensor], y: Tensor, state: StepState,
                  hooks: Sequence[Hook], shape: tuple[int, ...], counts: np.ndarray) -> Tensor:
    """Sum over models of each one's mean loss on its own batch (the first ``counts[k]`` rows
    of ``state.idx[k]``; ``counts`` on the host), running models of equal batch size together
    so that no BatchNorm sees a padding row; each group's running statistics are written
    back. A loss hook sees one group at a time (``state.models`` its size)."""
    ij, w_all, K = state.idx, state.weights, state.models
    sizes = np.unique(counts[counts > 0]).tolist()
    total: Tensor | float = 0.0
    for size in sizes:
        ks = _host_to(np.flatnonzero(counts == size), ij.device)
        rows = ij[ks, :size]
        whole = len(ks) == len(counts)
        p = params if whole else {n: v[ks] for n, v in params.items()}
        bf = buffers if whole else {n: v[ks] for n, v in buffers.items()}
        state.idx, state.models = rows, len(ks)
        state.weights = torch.full(rows.shape, 1.0 / size, dtype=w_all.dtype, device=ij.device)
        xb = state.source[rows]
        for h in hooks:
            xb = h.inputs(xb, state)
        logits = fwd(p, bf, xb.reshape(len(ks), size, *shape))
        term = _hook_loss(hooks, logits, y[rows], state)
        if term is None:
            ce = F.cross_entropy(logits.reshape(len(ks) * size, -1), y[rows].reshape(-1),
                                 reduction="sum")
            total = total + ce / size
        else:
            total = total + term.sum()
        if not whole:
            with torch.no_grad():
                for n, v in bf.items():
                    buffers[n][ks] = v
    state.idx, state.weights, state.models = ij, w_all, K
    return total


def _overrides(hooks: Sequence[Hook], name: str) -> bool:
    return any(getattr(type(h), name) is not getattr(Hook, name) for h in hooks)


def _check_batched(K: int, n_orders: int, mask_shape: tuple[int, ...], n: int, layout: str,
                   hooks: Sequence[Hook]) -> None:
    """One-line errors for what :func:`fit_batched` cannot train."""
    if K < 1 or n_orders != K or mask_shape != (K, n):
        raise ValueError(f"models: got {K} models, {n_orders} orders and a mask of shape "
                         f"{mask_shape}; allowed: K ≥ 1 of each, mask (K, {n})")
    if layout not in LAYOUTS:
        raise ValueError(f"layout: got {layout!r}; allowed: {', '.join(LAYOUTS)}")
    whole = [type(h).__name__ for h in hooks if not h.per_example]
    if whole:
        raise ValueError(f"hooks: {whole[0]} acts on one model's whole step; allowed: hooks "
                         "whose per_example is True in the batched form")


def _stacked(models: Sequence[nn.Module], names: list[str], lin: set[str]
             ) -> tuple[list[Tensor], dict[str, Tensor]]:
    """The K models' parameters stacked into leaves (linear weights held transposed where
    ``lin`` names them) and their buffers stacked."""
    leaves = []
    for n in names:
        s = torch.stack([dict(m.named_parameters())[n].detach() for m in models])
        leaves.append((s.transpose(1, 2) if n in lin else s).contiguous().requires_grad_(True))
    buffers = {n: torch.stack([dict(m.named_buffers())[n].detach() for m in models]).clone()
               for n, _ in models[0].named_buffers()}
    return leaves, buffers


def _stacked_optimizer(recipe: Recipe, leaves: list[Tensor], K: int, dev: Any
                       ) -> Callable[[list[Tensor], Tensor, float, bool], None]:
    """``update(grads, active, lr, all_active)``: the recipe's optimiser step on the stacked
    leaves, each model with its own state (Adam's moments and step count, SGD's momentum)."""
    adam, mom, wd = recipe.optimizer == "adam", float(recipe.momentum), float(recipe.weight_decay)
    if adam:
        m1 = [torch.zeros_like(p) for p in leaves]
        m2 = [torch.zeros_like(p) for p in leaves]
        t = torch.zeros(K, dtype=torch.float64, device=dev)  # bias corrections in float64

        def update(grads: list[Tensor], active: Tensor, lr: float, all_active: bool) -> None:
            adam_step(leaves, grads, m1, m2, t, active, lr, all_active=all_active,
                      weight_decay=wd)
        return update
    bufs = [torch.zeros_like(p) for p in leaves] if mom else None

    def update(grads: list[Tensor], active: Tensor, lr: float, all_active: bool) -> None:
        sgd_step(leaves, grads, bufs, active, lr, all_active, mom, wd)
    return update


def fit_batched(models: Sequence[nn.Module], X: Tensor, y: Tensor, in_mask: np.ndarray, *,
                recipe: Recipe, orders: Sequence[torch.Generator], shape: tuple[int, ...],
                hooks: Sequence[Hook] = (), layout: str = "vmap",
                transpose_linear: bool = False, progress: Any = None, label: str = "epoch",
                cancel_check: Callable[[], None] | None = None) -> BatchedFit:
    """Train the K = len(``models``) initialised copies of one architecture together, model k
    on the rows ``in_mask[k]`` of (X (n, d), y (n,)) fed as (b, *``shape``), with its epoch
    order from ``orders[k]``, under ``recipe`` and the per-example ``hooks`` (module
    docstring). The modules are templates: their weights are read once and left as they
    were; the result holds the trained stacked state."""
    K, b, epochs, dev = len(models), int(recipe.batch_size), int(recipe.epochs), X.device
    _check_batched(K, len(orders), np.shape(in_mask), len(X), layout, hooks)
    t0 = time.perf_counter()
    template = models[0]
    template.train()
    coupled = batch_coupled(template)
    names = [n for n, _ in template.named_parameters()]
    lin = ({f"{n}.weight" for n, m in template.named_modules() if isinstance(m, nn.Linear)}
           if transpose_linear else set())
    leaves, buffers = _stacked(models, names, lin)
    rows = [torch.as_tensor(np.flatnonzero(np.asarray(in_mask)[k])) for k in range(K)]
    steps = max(-(-len(r) // b) for r in rows)
    update = _stacked_optimizer(recipe, leaves, K, dev)
    state = StepState(model=template, params=leaves, optimizer=None, recipe=recipe,
                      n=max(len(r) for r in rows), device=dev, models=K, source=X)
    for h in hooks:
        h.prepare(state)
    grad_hooks = _overrides(hooks, "gradient")
    fwd = _forward(template, layout)
    every = max(1, steps // 5)
    for ep in range(1, epochs + 1):
        state.epoch = ep
        lr = recipe.lr_at(ep)
        idx, valid, host_counts = epoch_index(rows, orders, steps, b, dev)

        def step(state: StepState, j: int, valid: Tensor = valid,
                 host_counts: np.ndarray = host_counts, lr: float = lr) -> None:
            active = valid[j].any(1)
            params = {n: (v.transpose(1, 2) if n in lin else v) for n, v in zip(names, leaves)}
            with autocast_for(dev):  # bf16 when the engine option asks, else nothing changes
                if coupled:
                    loss = _grouped_loss(fwd, params, buffers, y, state, hooks, shape,
                                         host_counts[j])
                else:
                    xb = state.source[state.idx]
                    for h in hooks:
                        xb = h.inputs(xb, state)
                    loss = _padded_loss(fwd, params, buffers, y, xb.reshape(K, b, *shape),
                                        state, hooks)
            grads = list(torch.autograd.grad(loss, leaves))
            if grad_hooks:  # a gradient hook reads and edits p.grad, as in the single loop
                for p, g in zip(leaves, grads):
                    p.grad = g
                for h in hooks:
                    h.gradient(state)
                grads = [p.grad for p in leaves]
                for p in leaves:
                    p.grad = None
            update(grads, active, lr, bool(host_counts[j].all()))

        run_steps(state, Steps(idx, valid, host_counts), hooks, step, dtype=X.dtype,
                  progress=progress, every=every, cancel_check=cancel_check,
                  report=lambda j, ep=ep: ((ep - 1 + (j + 1) / steps) / epochs,
                                           f"{label} {ep}/{epochs}: step {j + 1}/{steps}"))
        for h in hooks:
            h.epoch_end(state)
        if progress is not None:
            progress.update(ep / epochs, f"{label} {ep}/{epochs} done")
    log = TrainLog(epochs_run=epochs, steps=state.step, seconds=time.perf_counter() - t0,
                   meta={k: v.item() if isinstance(v, Tensor) and v.numel() == 1 else v
                         for k, v in state.meta.items()})
    params = {n: (v.detach().transpose(1, 2) if n in lin else v.detach()).contiguous()
              for n, v in zip(names, leaves)}
    return BatchedFit(params=params, buffers=buffers, log=log)
