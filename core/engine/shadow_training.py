"""Shadow (reference) models for membership inference (LiRA / RMIA): K copies of the target's
training procedure, each on its own subset of the attacker's shadow pool, trained **together**.

Training, not attacking: the undefended defense trains its K shadow models with it
(:mod:`core.defenses.central`) and the membership runners draw their splits from it, so it sits
beside :mod:`core.engine.noisy_training`, below both ``core.attacks`` and ``core.defenses``.

- :func:`shadow_splits`: which pool rows are "in" each shadow model. With ``fraction = 0.5``
  and K even this is LiRA's *paired* design: every row is in exactly K/2 models (and out of
  the other K/2), so each row has as many IN as OUT models for its per-example statistics.
- :func:`train_shadows` (MLPs) and :func:`train_stacked` (any architecture): the K trainings,
  entry points that draw each model's seeds and hand the K models to the engine's batched form
  (:func:`core.engine.batched.fit_batched`: the loop, the padding, the per-model optimiser).
  Model k is the target's training (:func:`core.engine.loop.fit`: per-epoch shuffle by a
  local generator, batches of ``batch_size`` with a smaller last one, mean cross-entropy or a
  defense's per-example loss hook, the recipe's optimiser) on the rows ``in_mask[k]``, with
  seed ``s_k = derive(seed, "shadow", k)`` (:mod:`core.foundation.seeds`): initial weights from
  ``torch_stream(s_k, "init")`` (:func:`core.models.nn.init_module_`), batch order from
  ``torch_stream(s_k, "train", "order")`` exactly as ``train_central(seed=s_k)`` draws it.
  ``batched=False`` runs the single loop K times on plain modules: the reference, equal to the
  batched result up to float rounding.
- :func:`per_example_true_prob`, :func:`per_example_loss`: (K, n) statistics of every model on
  given rows, the raw material of LiRA / RMIA scores.

:func:`train_shadows` refuses modules with buffers (BatchNorm; :func:`train_stacked` takes
them), :func:`train_stacked` dropout (the batched forward runs without random ops); neither
takes the noisy-input defense of ``train_central`` (``perturb``) nor a hook that needs one
model's whole step. All randomness comes from local generators derived from ``seed``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.func import functional_call, vmap

from core.engine.batched import fit_batched
from core.engine.hooks import Hook
from core.engine.loop import Supervised, fit
from core.engine.noisy_training import (
    OPTIMIZERS,
    as_images,
    check_choice,
    check_data,
    check_int,
    check_range,
)
from core.engine.recipe import Recipe
from core.foundation.checks import range_error
from core.foundation.progress import Progress
from core.foundation.seeds import derive, stream, torch_stream
from core.models.nn import init_module_
from core.models.stacked import groupable

__all__ = ["MAX_SHADOWS", "ShadowModels", "per_example_loss", "per_example_true_prob",
           "shadow_splits", "train_shadows"]

#: the most shadow models one call handles
MAX_SHADOWS = 1024

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
    epochs: int | None = None,
    batch_size: int | None = None,
    lr: float | None = None,
    optimizer: str = "sgd",
    recipe: Recipe | None = None,
    hooks: Sequence[Hook] = (),
    seed: int = 0,
    batched: bool = True,
    progress: Progress | None = None,
) -> ShadowModels:
    """Train K = len(in_mask) models, model k on the rows ``in_mask[k]`` of (X (n, d), y (n,)),
    each as ``train_central`` would (see the module docstring for seeds and padding), under
    ``recipe`` (or plain ``epochs`` / ``batch_size`` / ``lr`` / ``optimizer``) with the
    defense's per-example ``hooks``. ``batched`` runs them together over stacked parameters
    (:func:`core.engine.batched.fit_batched`); False loops (the reference)."""
    check_data(X, y, image_shape)
    mask = _check_mask(in_mask, len(X))
    rec = _recipe(recipe, epochs, batch_size, lr, optimizer)
    image_shape = tuple(int(s) for s in image_shape)
    t0 = time.perf_counter()
    models = [_init_model(model_factory, seed, k, X.device) for k in range(mask.shape[0])]
    if batched:
        params = fit_batched(models, X, y, mask, recipe=rec, orders=_orders(seed, len(models)),
                             shape=image_shape, hooks=hooks, layout="vmap",
                             transpose_linear=True, progress=progress).params
    else:
        params, _ = _one_by_one(models, X, y, mask, rec, hooks, image_shape, seed, progress)
    return ShadowModels(params=params, module=models[0], image_shape=image_shape,
                        in_mask=mask, seconds=time.perf_counter() - t0)


def _recipe(recipe: Recipe | None, epochs: int | None, batch_size: int | None,
            lr: float | None, optimizer: str) -> Recipe:
    """``recipe``, or the plain recipe of the four settings (checked here: at least one epoch)."""
    if recipe is not None:
        check_int("epochs", recipe.epochs, 1)
        return recipe
    check_int("epochs", epochs, 1)
    check_int("batch_size", batch_size, 1)
    check_range("lr", lr, 0.0, lo_open=True)
    check_choice("optimizer", optimizer, OPTIMIZERS)
    return Recipe(epochs=int(epochs), batch_size=int(batch_size), lr=float(lr),
                  optimizer=optimizer)


def _orders(seed: int, K: int) -> list[torch.Generator]:
    """Each model's batch-order stream, ``torch_stream(s_k, "train", "order")`` as
    ``train_central(seed=s_k)`` draws it."""
    return [torch_stream(shadow_seed(seed, k), "train", "order") for k in range(K)]


def _one_by_one(models: list[nn.Module], X: Tensor, y: Tensor, mask: np.ndarray,
                recipe: Recipe, hooks: Sequence[Hook], shape: tuple[int, ...], seed: int,
                progress: Progress | None) -> tuple[dict[str, Tensor], dict[str, Tensor]]:
    """The reference: the engine's single loop on each model in turn; the stacked state."""
    K = len(models)
    dev_mask = torch.as_tensor(mask, device=X.device)
    for k, (m, order) in enumerate(zip(models, _orders(seed, K))):
        rows = dev_mask[k]
        fit(m, Supervised(X[rows], y[rows], shape), recipe=recipe, order=order, hooks=hooks,
            progress=None if progress is None else progress.sub(k / K, (k + 1) / K))
    params = {n: torch.stack([dict(m.named_parameters())[n].detach() for m in models])
              for n, _ in models[0].named_parameters()}
    buffers = {n: torch.stack([dict(m.named_buffers())[n] for m in models])
               for n, _ in models[0].named_buffers()}
    return params, buffers


# ---------------------------------------------------------------------------------------------
# any architecture (convolutions, BatchNorm): K models trained together over stacked state


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
    epochs: int | None = None,
    batch_size: int | None = None,
    lr: float | None = None,
    optimizer: str = "sgd",
    recipe: Recipe | None = None,
    hooks: Sequence[Hook] = (),
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
    SGD or Adam, or ``recipe`` and the defense's per-example ``hooks`` (s_k =
    :func:`shadow_seed`). For shadow, reference and audit models alike.

    ``batched`` trains the K together over stacked state (:func:`core.engine.batched.
    fit_batched`: one backward through the sum of the K per-model mean losses and a per-model
    update). Each model keeps its own BatchNorm running statistics (stacked buffers, updated
    in place). Batch statistics couple a batch's rows, so a model with BatchNorm never sees
    padding: at a step where the models' batch sizes differ (the last batch of an epoch when
    training sets differ in size) the models are run in groups of equal batch size; a model
    without BatchNorm takes padded batches whose padding weighs 0. ``batched=False`` runs the
    single loop K times (the reference; equal up to float rounding). ``image_shape``: the shape the model receives each
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
    rec = _recipe(recipe, epochs, batch_size, lr, optimizer)
    check_choice("layout", layout, LAYOUTS)
    t0 = time.perf_counter()
    models = [_init_any(model_factory, seed, k, X.device) for k in range(mask.shape[0])]
    if not batched:
        params, buffers = _one_by_one(models, X, y, mask, rec, hooks, shape, seed, progress)
    else:
        grouped = layout == "grouped" or (layout == "auto" and groupable(models[0]))
        fitted = fit_batched(models, X, y, mask, recipe=rec, orders=_orders(seed, len(models)),
                             shape=shape, hooks=hooks, layout="grouped" if grouped else "vmap",
                             progress=progress)
        params, buffers = fitted.params, fitted.buffers
    return StackedModels(params=params, buffers=buffers, module=models[0], image_shape=shape,
                         in_mask=mask, seconds=time.perf_counter() - t0)
