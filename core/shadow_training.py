"""Shadow (reference) models for membership inference (LiRA / RMIA): K copies of the target's
training procedure, each on its own subset of the attacker's shadow pool, trained **together**.

Training, not attacking: the undefended defense trains its K shadow models with it
(:mod:`core.defenses.central`) and the membership runners draw their splits from it, so it sits
beside :mod:`core.noisy_training`, below both ``core.attacks`` and ``core.defenses``.

- :func:`shadow_splits`: which pool rows are "in" each shadow model. With ``fraction = 0.5``
  and K even this is LiRA's *paired* design: every row is in exactly K/2 models (and out of
  the other K/2), so each row has as many IN as OUT models for its per-example statistics.
- :func:`train_shadows`: the K trainings. Model k is
  :func:`core.noisy_training.train_central` (the target's loop: per-epoch shuffle by a local generator, batches of
  ``batch_size`` with a smaller last one, mean cross-entropy, SGD or Adam) on the rows
  ``in_mask[k]``, with seed ``s_k = derive(seed, "shadow", k)`` (:mod:`core.seeds`): initial
  weights from ``torch_stream(s_k, "init")`` (:func:`core.nn.init_module_`), batch order from
  ``torch_stream(s_k, "train", "order")`` exactly as ``train_central(seed=s_k)`` draws it.
  ``batched=True`` runs all K in one computation over stacked parameters (name → (K, *shape)):
  ``vmap(functional_call)`` on (K, B, d) batches, one backward through the sum of the K
  per-model mean losses (model k's loss depends only on its slice, so each slice's gradient is
  its own), and a per-model SGD / Adam update written with tensor ops. Models with fewer rows
  have fewer steps per epoch: their batches are padded (padding rows weigh 0, the mean is over
  the valid rows) and a model without a batch left in the epoch takes no step at all (Adam's
  moments and step count included). ``batched=False`` calls ``train_central`` K times on plain
  modules: the reference, equal to the batched result up to float rounding.
- :func:`per_example_true_prob`, :func:`per_example_loss`: (K, n) statistics of every model on
  given rows, the raw material of LiRA / RMIA scores.

Not supported: modules with buffers (BatchNorm), dropout (the batched forward runs without
random ops), the noisy-input defense of ``train_central`` (``perturb``) and SGD momentum.
All randomness comes from local generators derived from ``seed``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.func import functional_call, vmap

from core.checks import range_error
from core.engine import autocast_for
from core.models.stacked import groupable
from core.nn import init_module_
from core.noisy_training import (
    OPTIMIZERS,
    as_images,
    check_choice,
    check_data,
    check_int,
    check_range,
    train_central,
)
from core.progress import Progress
from core.seeds import derive, stream, torch_stream

__all__ = ["MAX_SHADOWS", "ShadowModels", "per_example_loss", "per_example_true_prob",
           "shadow_splits", "train_shadows"]

#: the most shadow models one call handles
MAX_SHADOWS = 1024

#: Adam's constants (torch.optim.Adam's defaults, as train_central uses them)
ADAM_BETAS = (0.9, 0.999)
ADAM_EPS = 1e-8

#: how :func:`train_stacked` lays K models out (see there)
LAYOUTS = ("auto", "grouped", "vmap")

#: rows per chunk in :meth:`ShadowModels.outputs`
OUTPUT_CHUNK = 4096


def shadow_splits(pool_size: int, K: int, *, seed: int, fraction: float = 0.5) -> np.ndarray:
    """Bool (K, pool_size): ``[k, i]`` = pool row i is in shadow model k's training set.

    Each row independently joins a uniformly random set of m models, m = K·fraction when that
    is an integer (K even, fraction 0.5: exactly K/2, the paired design), otherwise
    ⌊K·fraction⌋ or ⌈K·fraction⌉ with the probabilities that make its mean K·fraction. Model
    sizes are then about fraction·pool_size each (not exactly equal). Drawn from the stream
    ``(seed, "shadow_splits")``."""
    check_int("pool_size", pool_size, 1)
    check_int("K", K, 1, MAX_SHADOWS)
    check_range("fraction", fraction, 0.0, 1.0, lo_open=True, hi_open=True)
    rng = stream(seed, "shadow_splits")
    target = K * float(fraction)
    lo = math.floor(target)
    m = lo + (rng.random(pool_size) < target - lo) if target > lo else np.full(pool_size, lo)
    ranks = rng.random((K, pool_size)).argsort(0).argsort(0)  # a random permutation per row
    return ranks < m[None, :]


@dataclass(kw_only=True)
class ShadowModels:
    """K trained models of one architecture: ``params`` name → (K, *shape) stacked weights,
    ``module`` the template the names belong to (its own weights are unused), ``in_mask``
    (K, n) the training rows of each, ``seconds`` the training wall time."""

    params: dict[str, Tensor]
    module: nn.Module
    image_shape: tuple[int, ...]
    in_mask: np.ndarray
    seconds: float = 0.0

    @property
    def n_models(self) -> int:
        return int(next(iter(self.params.values())).shape[0])

    def model(self, k: int) -> nn.Module:
        """A plain module holding model k's weights (a copy)."""
        check_int("k", k, 0, self.n_models - 1)
        import copy

        m = copy.deepcopy(self.module)
        with torch.no_grad():
            for n, p in m.named_parameters():
                p.copy_(self.params[n][k])
        return m

    @torch.no_grad()
    def outputs(self, X: Tensor, *, chunk: int = OUTPUT_CHUNK) -> Tensor:
        """Logits (K, n, classes) of every model on the flat rows X (n, d), in eval mode."""
        if not isinstance(X, Tensor) or X.dim() != 2 or X.shape[1] != int(np.prod(self.image_shape)):
            shape = tuple(X.shape) if isinstance(X, Tensor) else type(X).__name__
            raise ValueError(f"X: got {shape}; allowed: a float tensor of shape "
                             f"(n, {int(np.prod(self.image_shape))})")
        check_int("chunk", chunk, 1)
        was = self.module.training
        self.module.eval()
        try:
            fwd = vmap(lambda p, x: functional_call(self.module, p, (x,)), in_dims=(0, None))
            out = [fwd(self.params, as_images(X[i:i + chunk], self.image_shape))
                   for i in range(0, len(X), chunk)]
        finally:
            self.module.train(was)
        return torch.cat(out, dim=1)


def per_example_loss(shadows: ShadowModels, X: Tensor, y: Tensor) -> Tensor:
    """Cross-entropy (K, n) of every shadow model on every row (X (n, d), y (n,))."""
    check_data(X, y, shadows.image_shape)
    logits = shadows.outputs(X)
    K, n, c = logits.shape
    return F.cross_entropy(logits.reshape(K * n, c), y.repeat(K), reduction="none").reshape(K, n)


def per_example_true_prob(shadows: ShadowModels, X: Tensor, y: Tensor) -> Tensor:
    """Softmax probability (K, n) each shadow model gives the true label of each row."""
    check_data(X, y, shadows.image_shape)
    logp = torch.log_softmax(shadows.outputs(X), dim=-1)
    return logp.gather(2, y.view(1, -1, 1).expand(logp.shape[0], -1, 1)).squeeze(2).exp()


# ---------------------------------------------------------------------------------------------
# training


def shadow_seed(seed: int, k: int) -> int:
    """Shadow model k's own seed s_k: its training (``train_central(seed=s_k)``) and its
    initial weights (``torch_stream(s_k, "init")``) draw from streams under it."""
    return derive(seed, "shadow", k, bits=63)


def _init_model(model_factory: Callable[[], nn.Module], seed: int, k: int, device) -> nn.Module:
    """Model k's initial weights: ``init_module_`` from ``torch_stream(s_k, "init")``."""
    m = model_factory()
    if not isinstance(m, nn.Module):
        raise TypeError(f"model_factory: returned {type(m).__name__}; allowed: an nn.Module")
    if any(True for _ in m.buffers()):
        raise ValueError("model_factory: module has buffers (e.g. BatchNorm); allowed: "
                         "modules with parameters only")
    return init_module_(m, torch_stream(shadow_seed(seed, k), "init")).to(device)


def _check_mask(in_mask, n: int) -> np.ndarray:
    mask = np.asarray(in_mask)
    if mask.dtype != bool or mask.ndim != 2 or mask.shape[1] != n:
        raise ValueError(f"in_mask: got {mask.dtype} {mask.shape}; allowed: bool (K, {n})")
    check_int("K", mask.shape[0], 1, MAX_SHADOWS)
    empty = np.flatnonzero(~mask.any(1))
    if len(empty):
        raise range_error(f"in_mask rows of model {int(empty[0])}", 0, 1, integer=True)
    return mask


def train_shadows(
    model_factory: Callable[[], nn.Module],
    X: Tensor,
    y: Tensor,
    in_mask: np.ndarray,
    *,
    image_shape: tuple[int, ...],
    epochs: int,
    batch_size: int,
    lr: float,
    optimizer: str = "sgd",
    seed: int = 0,
    batched: bool = True,
    progress: Progress | None = None,
) -> ShadowModels:
    """Train K = len(in_mask) models, model k on the rows ``in_mask[k]`` of (X (n, d), y (n,)),
    each as ``train_central`` would (see the module docstring for seeds and padding).
    ``batched`` runs them together over stacked parameters; False loops (the reference)."""
    check_data(X, y, image_shape)
    mask = _check_mask(in_mask, len(X))
    check_int("epochs", epochs, 1)
    check_int("batch_size", batch_size, 1)
    check_range("lr", lr, 0.0, lo_open=True)
    check_choice("optimizer", optimizer, OPTIMIZERS)
    image_shape = tuple(int(s) for s in image_shape)
    t0 = time.perf_counter()
    K = mask.shape[0]
    models = [_init_model(model_factory, seed, k, X.device) for k in range(K)]
    if batched:
        params = _train_batched(models, X, y, mask, image_shape=image_shape, epochs=int(epochs),
                                batch_size=int(batch_size), lr=float(lr), optimizer=optimizer,
                                seed=seed, progress=progress)
    else:
        dev_mask = torch.as_tensor(mask, device=X.device)
        for k, m in enumerate(models):
            rows = dev_mask[k]
            train_central(m, X[rows], y[rows], image_shape=image_shape, epochs=epochs,
                          batch_size=batch_size, lr=lr, optimizer=optimizer,
                          seed=shadow_seed(seed, k),
                          progress=None if progress is None else progress.sub(k / K, (k + 1) / K))
        params = {n: torch.stack([dict(m.named_parameters())[n].detach() for m in models])
                  for n, _ in models[0].named_parameters()}
    return ShadowModels(params=params, module=models[0], image_shape=image_shape,
                        in_mask=mask, seconds=time.perf_counter() - t0)


def _epoch_index(rows: list[Tensor], gens: list[torch.Generator], steps: int, b: int,
                 device) -> tuple[Tensor, Tensor, np.ndarray]:
    """This epoch's padded batches: pool indices (steps, K, b) and validity (steps, K, b) on
    ``device``, and the rows per model and step (steps, K) on the host (a step's bookkeeping
    reads these, never the device)."""
    K = len(rows)
    idx = torch.zeros(K, steps * b, dtype=torch.long)
    valid = torch.zeros(K, steps * b, dtype=torch.bool)
    for k in range(K):
        n_k = len(rows[k])
        idx[k, :n_k] = rows[k][torch.randperm(n_k, generator=gens[k])]
        valid[k, :n_k] = True
    idx = idx.view(K, steps, b).transpose(0, 1).contiguous()
    valid = valid.view(K, steps, b).transpose(0, 1).contiguous()
    counts = valid.sum(2).numpy()
    return idx.to(device), valid.to(device), counts


def _train_batched(models: list[nn.Module], X: Tensor, y: Tensor, mask: np.ndarray, *,
                   image_shape: tuple[int, ...], epochs: int, batch_size: int, lr: float,
                   optimizer: str, seed: int, progress: Progress | None) -> dict[str, Tensor]:
    K, b, dev = len(models), batch_size, X.device
    template = models[0]
    template.train()
    names = [n for n, _ in template.named_parameters()]
    # linear weights are kept as (K, in, out) contiguous and seen as (K, out, in) transposed
    # views inside functional_call: their gradients come out contiguous, which made the
    # update ~25 % of a step cheaper than with (K, out, in) leaves (measured, 1 thread)
    lin = {f"{n}.weight" for n, m in template.named_modules() if isinstance(m, nn.Linear)}
    stacked = {n: torch.stack([dict(m.named_parameters())[n].detach() for m in models])
               for n in names}
    leaves = [(stacked[n].transpose(1, 2) if n in lin else stacked[n]).contiguous()
              .requires_grad_(True) for n in names]
    rows = [torch.as_tensor(np.flatnonzero(mask[k])) for k in range(K)]
    per_epoch = [-(-len(r) // b) for r in rows]
    steps = max(per_epoch)
    gens = [torch_stream(shadow_seed(seed, k), "train", "order") for k in range(K)]
    adam = optimizer == "adam"
    if adam:
        m1 = [torch.zeros_like(p) for p in leaves]
        m2 = [torch.zeros_like(p) for p in leaves]
        t = torch.zeros(K, dtype=torch.float64, device=dev)  # bias corrections in float64

    # only the forward is vmapped; the masked mean loss is computed on the (K·b, classes)
    # logits outside vmap (cross-entropy inside vmap ran ~0.3 ms per step slower)
    fwd = vmap(lambda p, xb: functional_call(template, p, (xb,)))
    every = max(1, steps // 5)
    for ep in range(epochs):
        idx, valid, host_counts = _epoch_index(rows, gens, steps, b, dev)
        for j in range(steps):
            ij, vj = idx[j], valid[j]
            counts = vj.sum(1)
            active = counts > 0
            w = vj.to(X.dtype) / counts.clamp(min=1).unsqueeze(1).to(X.dtype)
            xb = X[ij].reshape(K, b, *image_shape)
            params = {n: (v.transpose(1, 2) if n in lin else v) for n, v in zip(names, leaves)}
            logits = fwd(params, xb)
            ce = F.cross_entropy(logits.reshape(K * b, -1), y[ij].view(-1), reduction="none")
            loss = (ce * w.view(-1)).sum()
            grads = torch.autograd.grad(loss, leaves)
            with torch.no_grad():
                if adam:
                    _adam_step(leaves, list(grads), m1, m2, t, active, lr,
                               all_active=bool(host_counts[j].all()))
                else:  # an inactive model's gradient is exactly 0: no step
                    torch._foreach_add_(leaves, list(grads), alpha=-lr)
            if progress is not None and (j + 1) % every == 0:
                progress.update((ep + (j + 1) / steps) / epochs,
                                f"epoch {ep + 1}/{epochs}: step {j + 1}/{steps}")
        if progress is not None:
            progress.update((ep + 1) / epochs, f"epoch {ep + 1}/{epochs} done")
    return {n: (v.detach().transpose(1, 2) if n in lin else v.detach()).contiguous()
            for n, v in zip(names, leaves)}


@torch.no_grad()
def _adam_step(leaves: list[Tensor], grads: list[Tensor], m1: list[Tensor], m2: list[Tensor],
               t: Tensor, active: Tensor, lr: float, all_active: bool | None = None) -> None:
    """torch.optim.Adam's update (single-tensor form) for each of the K stacked models, with
    per-model step counts ``t`` (K,); models not ``active`` keep weights and moments.
    ``all_active``: whether every model steps, known on the host (None: read from
    ``active``, a device sync)."""
    b1, b2 = ADAM_BETAS
    K = len(t)
    all_active = bool(active.all()) if all_active is None else all_active
    t += active.to(t.dtype)
    tt = t.clamp(min=1)
    step = (lr / (1 - b1 ** tt)).to(leaves[0].dtype)
    bc2_sqrt = (1 - b2 ** tt).sqrt().to(leaves[0].dtype)
    for p, g, e1, e2 in zip(leaves, grads, m1, m2):
        shape = (K,) + (1,) * (p.dim() - 1)
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


# ---------------------------------------------------------------------------------------------
# any architecture (convolutions, BatchNorm): K models trained together over stacked state


def _batch_coupled(module: nn.Module) -> bool:
    """True when a row's output depends on the other rows of its batch in training (BatchNorm's
    batch statistics): such models cannot take padded batches."""
    return any(isinstance(m, nn.modules.batchnorm._BatchNorm) for m in module.modules())


def _init_any(model_factory: Callable[[], nn.Module], seed: int, k: int, device) -> nn.Module:
    """Model k's initial weights (buffers allowed): ``init_module_`` from
    ``torch_stream(s_k, "init")`` (a network with BatchNorm declares its rule through
    ``seeded_init_``, as every :mod:`core.models` network does)."""
    m = model_factory()
    if not isinstance(m, nn.Module):
        raise TypeError(f"model_factory: returned {type(m).__name__}; allowed: an nn.Module")
    drop = [n for n, d in m.named_modules()
            if isinstance(d, nn.modules.dropout._DropoutNd) and d.p > 0]
    if drop:
        raise ValueError(f"model_factory: module has dropout ({drop[0]}); allowed: modules "
                         "without random layers (K models together would draw other masks "
                         "than one by one)")
    return init_module_(m, torch_stream(shadow_seed(seed, k), "init")).to(device)


@dataclass(kw_only=True)
class StackedModels:
    """K trained models of one architecture: ``params`` and ``buffers`` (BatchNorm running
    statistics) name → (K, *shape), ``module`` the template the names belong to (its own
    weights are unused), ``image_shape`` the shape each row is fed in, ``in_mask`` (K, n) the
    training rows of each."""

    params: dict[str, Tensor]
    buffers: dict[str, Tensor]
    module: nn.Module
    image_shape: tuple[int, ...]
    in_mask: np.ndarray
    seconds: float = 0.0

    @property
    def n_models(self) -> int:
        return int(next(iter(self.params.values())).shape[0])

    def model(self, k: int) -> nn.Module:
        """A plain module holding model k's weights and buffers (a copy)."""
        check_int("k", k, 0, self.n_models - 1)
        import copy

        m = copy.deepcopy(self.module)
        with torch.no_grad():
            for n, t in (*m.named_parameters(), *m.named_buffers()):
                t.copy_((self.params | self.buffers)[n][k])
        return m

    @torch.no_grad()
    def outputs(self, X: Tensor, *, chunk: int = OUTPUT_CHUNK) -> Tensor:
        """Logits (K, n, C) of every model on the flat rows X (n, d) in eval mode (BatchNorm
        on each model's own running statistics)."""
        if not isinstance(X, Tensor) or X.dim() != 2 or X.shape[1] != int(np.prod(self.image_shape)):
            shape = tuple(X.shape) if isinstance(X, Tensor) else type(X).__name__
            raise ValueError(f"X: got {shape}; allowed: a float tensor of shape "
                             f"(n, {int(np.prod(self.image_shape))})")
        check_int("chunk", chunk, 1)
        was = self.module.training
        self.module.eval()
        try:
            fwd = vmap(lambda p, b, x: functional_call(self.module, (p, b), (x,)),
                       in_dims=(0, 0, None))
            out = [fwd(self.params, self.buffers, as_images(X[i:i + chunk], self.image_shape))
                   for i in range(0, len(X), chunk)]
        finally:
            self.module.train(was)
        return torch.cat(out, dim=1)

    def predict(self, X: Tensor) -> Tensor:
        """Class probabilities (K, n, C) of every model on the rows X."""
        return torch.softmax(self.outputs(X), dim=-1)


def train_stacked(
    model_factory: Callable[[], nn.Module],
    X: Tensor,
    y: Tensor,
    in_mask: np.ndarray,
    *,
    epochs: int,
    batch_size: int,
    lr: float,
    optimizer: str = "sgd",
    seed: int = 0,
    image_shape: tuple[int, ...] | None = None,
    batched: bool = True,
    layout: str = "auto",
    progress: Progress | None = None,
) -> StackedModels:
    """Train K = len(in_mask) models of any architecture (convolutions, BatchNorm), model k on
    the rows ``in_mask[k]`` of (X (n, d), y (n,)), each as ``train_central`` would: initial
    weights from ``torch_stream(s_k, "init")``, per-epoch order from ``torch_stream(s_k,
    "train", "order")``, batches of ``batch_size`` with a smaller last one, mean cross-entropy,
    SGD or Adam (s_k = :func:`shadow_seed`). For shadow, reference and audit models alike.

    ``batched`` trains the K together over stacked state (``torch.func.stack_module_state``,
    ``vmap(functional_call)``: a convolution with K stacked kernels runs as one grouped
    convolution) with one backward through the sum of the K per-model mean losses and a
    per-model update. Each model keeps its own BatchNorm running statistics (stacked buffers,
    updated in place inside vmap). Batch statistics couple a batch's rows, so a model with
    BatchNorm never sees padding: at a step where the models' batch sizes differ (the last
    batch of an epoch when training sets differ in size) the models are run in groups of equal
    batch size; a model without BatchNorm takes padded batches whose padding weighs 0, as
    :func:`train_shadows` does. ``batched=False`` calls ``train_central`` K times (the
    reference; equal up to float rounding). ``image_shape``: the shape the model receives each
    row in (default (d,): flat rows, which every :mod:`core.models` network takes). Models with
    dropout are refused (vmap would draw other masks than a one-by-one run).

    ``layout`` (batched only): ``"grouped"`` runs the K models as one grouped network
    (:class:`core.models.stacked.GroupedNet`: channels side by side, ``channels_last``), the
    fastest form on a CPU; ``"vmap"`` as ``vmap(functional_call)``; ``"auto"`` grouped where
    every layer has a grouped form, else vmap. The two agree up to float rounding."""
    if image_shape is None:
        image_shape = tuple(X.shape[1:]) if isinstance(X, Tensor) else ()
    shape = tuple(int(s) for s in image_shape)
    check_data(X, y, shape)
    mask = _check_mask(in_mask, len(X))
    check_int("epochs", epochs, 1)
    check_int("batch_size", batch_size, 1)
    check_range("lr", lr, 0.0, lo_open=True)
    check_choice("optimizer", optimizer, OPTIMIZERS)
    check_choice("layout", layout, LAYOUTS)
    t0 = time.perf_counter()
    K = mask.shape[0]
    models = [_init_any(model_factory, seed, k, X.device) for k in range(K)]
    if not batched:
        dev_mask = torch.as_tensor(mask, device=X.device)
        for k, m in enumerate(models):
            rows = dev_mask[k]
            train_central(m, X[rows], y[rows], image_shape=shape,
                          epochs=epochs, batch_size=batch_size, lr=lr, optimizer=optimizer,
                          seed=shadow_seed(seed, k),
                          progress=None if progress is None else progress.sub(k / K, (k + 1) / K))
        params = {n: torch.stack([dict(m.named_parameters())[n].detach() for m in models])
                  for n, _ in models[0].named_parameters()}
        buffers = {n: torch.stack([dict(m.named_buffers())[n] for m in models])
                   for n, _ in models[0].named_buffers()}
    else:
        params, buffers = _train_stacked(models, X.reshape(len(X), *shape), y, mask,
                                         epochs=int(epochs), batch_size=int(batch_size),
                                         lr=float(lr), optimizer=optimizer, seed=seed,
                                         progress=progress,
                                         grouped=layout == "grouped" or (
                                             layout == "auto" and groupable(models[0])))
    return StackedModels(params=params, buffers=buffers, module=models[0], image_shape=shape,
                         in_mask=mask, seconds=time.perf_counter() - t0)


def _stacked_forward(template: nn.Module, grouped: bool):
    """``fwd(params, buffers, x (K, b, ...)) -> (K, b, classes)`` of K stacked copies of
    ``template``: its grouped form (:class:`core.models.stacked.GroupedNet`) or
    ``vmap(functional_call)``."""
    if grouped:
        from core.models.stacked import GroupedNet

        return GroupedNet(template)
    return vmap(lambda p, bf, xb: functional_call(template, (p, bf), (xb,)))


def _train_stacked(models: list[nn.Module], X: Tensor, y: Tensor, mask: np.ndarray, *,
                   epochs: int, batch_size: int, lr: float, optimizer: str, seed: int,
                   progress: Progress | None, grouped: bool = False
                   ) -> tuple[dict[str, Tensor], dict[str, Tensor]]:
    from torch.func import stack_module_state

    K, b, dev = len(models), batch_size, X.device
    template = models[0]
    template.train()
    coupled = _batch_coupled(template)
    stacked_p, stacked_b = stack_module_state(models)
    names = list(stacked_p)
    leaves = [stacked_p[n].detach().clone().requires_grad_(True) for n in names]
    buffers = {n: v.detach().clone() for n, v in stacked_b.items()}
    rows = [torch.as_tensor(np.flatnonzero(mask[k])) for k in range(K)]
    steps = max(-(-len(r) // b) for r in rows)
    gens = [torch_stream(shadow_seed(seed, k), "train", "order") for k in range(K)]
    adam = optimizer == "adam"
    if adam:
        m1 = [torch.zeros_like(p) for p in leaves]
        m2 = [torch.zeros_like(p) for p in leaves]
        t = torch.zeros(K, dtype=torch.float64, device=dev)
    fwd = _stacked_forward(template, grouped)
    every = max(1, steps // 5)
    for ep in range(epochs):
        idx, valid, host_counts = _epoch_index(rows, gens, steps, b, dev)
        for j in range(steps):
            ij, vj = idx[j], valid[j]
            counts = vj.sum(1)
            active = counts > 0
            params = dict(zip(names, leaves))
            with autocast_for(dev):  # core.engine: bf16 when asked, else nothing changes
                if not coupled:
                    w = vj.to(X.dtype) / counts.clamp(min=1).unsqueeze(1).to(X.dtype)
                    logits = fwd(params, buffers, X[ij])
                    ce = F.cross_entropy(logits.reshape(K * b, -1), y[ij].view(-1),
                                         reduction="none")
                    loss = (ce * w.view(-1)).sum()
                else:
                    loss = _grouped_loss(fwd, params, buffers, X, y, ij, host_counts[j])
            grads = torch.autograd.grad(loss, leaves)
            with torch.no_grad():
                if adam:
                    _adam_step(leaves, list(grads), m1, m2, t, active, lr,
                               all_active=bool(host_counts[j].all()))
                else:  # a model without a batch this step has a zero gradient: no step
                    torch._foreach_add_(leaves, list(grads), alpha=-lr)
            if progress is not None and (j + 1) % every == 0:
                progress.update((ep + (j + 1) / steps) / epochs,
                                f"epoch {ep + 1}/{epochs}: step {j + 1}/{steps}")
        if progress is not None:
            progress.update((ep + 1) / epochs, f"epoch {ep + 1}/{epochs} done")
    return {n: v.detach() for n, v in zip(names, leaves)}, buffers


def _host_to(a: np.ndarray, device: torch.device) -> Tensor:
    """A host index array on ``device``; to a GPU through pinned memory without waiting for
    the queue (a plain pageable copy would synchronise the stream)."""
    t = torch.from_numpy(np.ascontiguousarray(a))
    if device.type != "cuda":
        return t.to(device)
    return t.pin_memory().to(device, non_blocking=True)


def _grouped_loss(fwd, params: dict[str, Tensor], buffers: dict[str, Tensor], X: Tensor,
                  y: Tensor, ij: Tensor, counts: np.ndarray) -> Tensor:
    """Sum over models of each one's mean cross-entropy on its own batch (the first
    ``counts[k]`` rows of ``ij[k]``; ``counts`` on the host), running models of equal batch
    size together so that no BatchNorm sees a padding row; each group's running statistics
    are written back."""
    counts = np.asarray(counts)
    sizes = np.unique(counts[counts > 0]).tolist()
    total = 0.0
    for size in sizes:
        ks = _host_to(np.flatnonzero(counts == size), ij.device)
        rows = ij[ks, :size]
        whole = len(ks) == len(counts)
        p = params if whole else {n: v[ks] for n, v in params.items()}
        bf = buffers if whole else {n: v[ks] for n, v in buffers.items()}
        logits = fwd(p, bf, X[rows])
        ce = F.cross_entropy(logits.reshape(len(ks) * size, -1), y[rows].reshape(-1),
                             reduction="sum")
        total = total + ce / size
        if not whole:
            with torch.no_grad():
                for n, v in bf.items():
                    buffers[n][ks] = v
    return total
