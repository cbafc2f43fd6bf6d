"""Gradient inversion (DLG, iDLG, Inverting Gradients) and model inversion, batched over targets.

Attacks (spec 001 §1.3-§1.4):

- **DLG** (Zhu et al. 2019, "Deep Leakage from Gradients"): optimise a dummy image *and* soft
  dummy labels so that the dummy's gradient matches the observed one in squared L2; L-BFGS.
- **iDLG** (Zhao et al. 2020): the same, but the labels are read off the observed last-layer
  gradient first (for a single image the true class is the one whose row has negative sign).
- **Inverting Gradients** (Geiping et al. 2020): cosine distance over all parameter tensors plus
  a total-variation prior, Adam on the *sign* of the gradient, pixels clamped to the valid box,
  MultiStepLR (×0.1 at 3/8, 5/8, 7/8 of the iterations); the FedAvg variant matches a simulated
  local update W_o − W_i instead of one gradient.
- **Model inversion** (Fredrikson et al. 2015, the seed paper's Fig. 10): one dummy per class,
  Adam on the cross-entropy toward that class from an auxiliary mean image.

**Many targets, one optimisation.** T independent targets (each one observed upload of b images)
are stacked as dummies of shape (T, b, C, H, W). The per-target losses are *summed*, so the
gradient each dummy receives is exactly that of its own loss. The dummy's parameter gradient is
``torch.func.vmap(torch.func.grad(ce))`` over targets, called inside ordinary autograd; the
outer ``torch.autograd.grad`` then differentiates the matching loss w.r.t. the dummies (double
backprop). Measured on 1 CPU thread (32 MNIST targets, LeNet-sigmoid, L2): this form took 19 ms
per evaluation, against 27 ms for expanded per-target parameter copies with
``create_graph=True``, 34 ms for a fully functional ``vmap(grad_and_value(match))`` and 140 ms
for a Python loop over targets.

Every target's dummy is drawn from its own generator seeded by (seed, target id, restart,
attempt), and both optimisers keep **per-target state**, so attacking targets together or one
at a time gives the same reconstruction up to floating-point reassociation in batched kernels.

**L-BFGS decision.** ``torch.optim.LBFGS`` on one stacked tensor would couple the targets: one
shared step size / line search, one curvature history, one stopping test. Instead
:func:`_lbfgs` is a per-target batched L-BFGS that replays ``torch.optim.LBFGS`` without a line
search (DLG's setting: lr 1, history 100, first step ``min(1, 1/|g|₁)·lr``, the same
``tolerance_grad`` / ``tolerance_change`` stopping rules applied per target, a stopped target
freezes while the others go on). One documented difference: the curvature history is a ring
buffer with one write position shared by all targets; a target whose new pair is rejected
(yᵀs ≤ 1e-10, as torch does) writes a neutral all-zero pair there, so it may forget its oldest
pair one iteration earlier than torch would. With yᵀs > 1e-10 (the usual case) the iterates
equal torch's up to rounding.

**Loss scale.** With ``spec.normalized`` (the DLG / iDLG presets) each target's loss is
divided by its value at the target's first dummy, so every target starts at 1. The minimiser is
unchanged; what changes is that torch's *absolute* L-BFGS constants (a curvature pair is kept
only if yᵀs > 1e-10; ``tolerance_change`` 1e-9; first step ``min(1, 1/|g|₁)``) become scale-free.
On a LeNet-sigmoid with PyTorch's default init (before issue #20, not DLG's U(−0.5, 0.5)) the raw L2 loss is
~5e-3 with tiny pixel gradients: every pair failed yᵀs > 1e-10, L-BFGS degenerated into unit-step
gradient descent and stayed at ~5 dB PSNR after 300 iterations (measured, torch.optim.LBFGS
alike); normalised, the same optimiser reaches > 60 dB in ~130 iterations. Reported losses are
raw. Adam is scale-invariant up to its eps, and cosine is scale-free, so IG leaves it off.

**DLG vs iDLG.** DLG's jointly optimised soft labels saturate towards one-hot (logits → ∞),
a flat valley in which L-BFGS crawls. On a LeNet-sigmoid with PyTorch's default init (8×8
images, 4 targets, 300 iterations) DLG stalled at ~7 dB PSNR with correct argmax labels, where
iDLG (labels fixed first) reached > 75 dB. **LeNet-sigmoid is now initialised as in the DLG
setting**, every weight and bias ~ U(−0.5, 0.5) (:class:`core.models.nn.LeNetSigmoid`, issue #20):
its sigmoids leave their linear middle, the gradient carries far more of the image, and at
the unchanged presets (300 iterations, one start) DLG reaches a median of ~67 dB and iDLG
~80 dB on 32 single ``digits`` uploads (``benchmarks/dlg_lenet.py``); a few targets (4-5 of 32)
stay below 10 dB from their one start, and two starts per target (``restarts=2``) recover
them all at twice the cost.

**NaN guard.** A target whose loss or gradient becomes non-finite is re-initialised from a fresh
seed (attempt + 1), its optimiser state is reset, and it continues with the iterations left;
after ``spec.max_nan_restarts`` re-initialisations it is stopped (its loss reported as NaN).
A re-drawn target keeps its loss scale and the global learning-rate schedule.

**Speed** (``benchmarks/dlg_speed.py``, 2 shared CPU cores): iDLG on 32 ``mnist5k`` targets with
a fresh LeNet-sigmoid, batched vs one ``torch.optim.LBFGS`` per target: 3.6 s vs 21.6 s on 1
thread (6.0x), 2.7 s vs 20.1 s on 2 threads (7.3x), same median PSNR (63.7 / 63.8 dB); 80
iterations reach a median of 41.6 dB in 1.4 s on 2 threads.

Images are float32 in [0, 1], shape (C, H, W). Everything runs on the device of ``params``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from functools import partial
from typing import Any, ClassVar

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.func import functional_call, grad, vmap

from core.foundation.checks import check_choice, check_range
from core.foundation.progress import Progress, ProgressCallback, as_progress
from core.foundation.seeds import torch_stream

__all__ = [
    "PRESETS", "InversionResult", "InversionSpec", "UploadRelease", "WhiteBoxModelRelease",
    "class_centres", "fedavg_update_observation", "invert", "invert_upload",
    "labels_from_gradient", "match_reconstructions", "model_inversion", "model_inversion_attack",
    "preset", "score_model_inversion", "score_reconstructions", "target_gradients",
    "total_variation",
]

MAX_BATCH = 64
DISTANCES = ("l2", "cosine")
OPTIMIZERS = ("lbfgs", "adam")
LABEL_MODES = ("joint", "idlg", "known")
INITS = ("randn", "rand", "mean")
SCHEDULES = ("none", "multistep")
PSNR_CAP_DB = 100.0  # per-image PSNR cap (MSE <= 1e-10) so that means stay finite
_MEAN_INIT_NOISE = 0.01  # "mean" init: std of the noise that breaks symmetry inside a batch


# ---------------------------------------------------------------------------------------------
# the attack specification


@dataclass(frozen=True)
class InversionSpec:
    """One gradient-inversion attack (DLG / iDLG / Inverting Gradients are presets of it).

    distance: "l2" (DLG) or "cosine" (IG, over all parameter tensors with equal weights);
    optimizer: "lbfgs" (per-target batched, see the module docstring) or "adam";
    lr, iterations: step size and number of optimiser iterations (one loss evaluation each);
    tv: weight of the total-variation prior (IG: 1e-4);
    signed: Adam on the sign of the dummy's gradient (IG); boxed: clamp pixels to [0, 1]
    after each step (IG); labels: "joint" (optimise soft labels, DLG), "idlg" (read from the
    observed last-layer gradient) or "known" (given to :func:`invert`);
    restarts: independent dummies per target, the lowest final loss wins (IG);
    init: "randn", "rand" (U[0,1]) or "mean" (``prior_mean`` plus N(0, 0.01²));
    schedule: "multistep" = IG's MultiStepLR (×0.1 at 3/8, 5/8, 7/8 of the iterations);
    normalized: divide each target's loss by its value at the target's first dummy (same
    minimiser; see the module docstring, "Loss scale");
    max_nan_restarts: re-initialisations per target allowed by the NaN guard;
    history_size: L-BFGS curvature pairs kept.
    """

    distance: str = "l2"
    optimizer: str = "lbfgs"
    lr: float = 1.0
    iterations: int = 300
    tv: float = 0.0
    signed: bool = False
    boxed: bool = False
    labels: str = "joint"
    restarts: int = 1
    init: str = "randn"
    schedule: str = "none"
    normalized: bool = True
    max_nan_restarts: int = 5
    history_size: int = 100

    def __post_init__(self) -> None:
        check_choice("distance", self.distance, DISTANCES)
        check_choice("optimizer", self.optimizer, OPTIMIZERS)
        check_choice("labels", self.labels, LABEL_MODES)
        check_choice("init", self.init, INITS)
        check_choice("schedule", self.schedule, SCHEDULES)
        check_range("lr", self.lr, 0.0, 100.0, lo_open=True)
        check_range("iterations", self.iterations, 1, 100_000)
        check_range("tv", self.tv, 0.0, 100.0)
        check_range("restarts", self.restarts, 1, 64)
        check_range("max_nan_restarts", self.max_nan_restarts, 0, 1000)
        check_range("history_size", self.history_size, 1, 1000)
        for name in ("iterations", "restarts", "max_nan_restarts", "history_size"):
            if int(getattr(self, name)) != getattr(self, name):
                raise ValueError(f"{name}: got {getattr(self, name)}; expected an integer")
        if self.signed and self.optimizer != "adam":
            raise ValueError(f"signed: got True with optimizer {self.optimizer!r}; signed "
                             "gradients need optimizer 'adam'")


PRESETS: dict[str, InversionSpec] = {
    # Zhu et al. 2019: L2 gradient distance, L-BFGS lr 1, dummy labels optimised jointly
    "dlg": InversionSpec(distance="l2", optimizer="lbfgs", lr=1.0, iterations=300,
                         labels="joint", init="randn"),
    # Zhao et al. 2020: as DLG, labels recovered analytically from the last layer first
    "idlg": InversionSpec(distance="l2", optimizer="lbfgs", lr=1.0, iterations=300,
                          labels="idlg", init="randn"),
    # Geiping et al. 2020, the public repo's CLI defaults (spec §1.4)
    "ig": InversionSpec(distance="cosine", optimizer="adam", lr=0.1, iterations=4000, tv=1e-4,
                        signed=True, boxed=True, labels="idlg", restarts=1, init="randn",
                        schedule="multistep", normalized=False),
}


def preset(name: str, **overrides: Any) -> InversionSpec:
    """The named preset (``dlg``, ``idlg``, ``ig``) with ``overrides`` applied (validated)."""
    if name not in PRESETS:
        raise ValueError(f"preset: got {name!r}; allowed: {', '.join(PRESETS)}")
    unknown = sorted(set(overrides) - set(asdict(PRESETS[name])))
    if unknown:
        raise ValueError(f"preset: unknown field {unknown[0]!r}; allowed: "
                         f"{', '.join(asdict(PRESETS[name]))}")
    return replace(PRESETS[name], **overrides)


@dataclass
class InversionResult:
    """What :func:`invert` returns (tensors on the CPU).

    images (T, b, C, H, W) clamped to [0, 1]; labels (T, b) the labels used or recovered
    (argmax of the soft labels for "joint"); loss (T,) the final matching loss (NaN for a
    target the NaN guard gave up on); iterations: optimiser iterations run (L-BFGS: until the
    last target stopped); nan_restarts: total
    re-initialisations, per_target_restarts (T,) of them per target; seconds: wall time."""

    images: Tensor
    labels: Tensor
    loss: Tensor
    iterations: int
    nan_restarts: int
    per_target_restarts: Tensor
    seconds: float


# ---------------------------------------------------------------------------------------------
# losses and observations


def _params_of(model: nn.Module, params: dict[str, Tensor] | None) -> dict[str, Tensor]:
    src = dict(model.named_parameters()) if params is None else params
    return {k: v.detach() for k, v in src.items()}


def _hard_ce(model: nn.Module, params: dict[str, Tensor], x: Tensor, y: Tensor) -> Tensor:
    """Batch-mean cross-entropy: what the victim differentiates."""
    return F.cross_entropy(functional_call(model, params, (x,)), y)


def _soft_ce(model: nn.Module, params: dict[str, Tensor], x: Tensor, lab: Tensor) -> Tensor:
    """Batch-mean cross-entropy against label distributions ``lab`` (b, K); equals
    :func:`_hard_ce` for one-hot rows (DLG optimises ``lab = softmax(logits)``)."""
    logits = functional_call(model, params, (x,))
    return -(lab * F.log_softmax(logits, dim=-1)).sum(-1).mean()


def _local_update(loss: Callable, params: dict[str, Tensor], x: Tensor, lab: Tensor, *,
                  local_steps: int, local_lr: float) -> dict[str, Tensor]:
    """W_o − W_i after ``local_steps`` full-batch SGD steps (IG's FedAvg reconstructor);
    differentiable in ``x`` and ``lab`` (no detach between steps)."""
    g = grad(loss)
    p = params
    for _ in range(local_steps):
        gs = g(p, x, lab)
        p = {k: p[k] - local_lr * gs[k] for k in p}
    return {k: p[k] - params[k] for k in p}


def _check_targets(x: Tensor, y: Tensor) -> None:
    if x.dim() != 5:
        raise ValueError(f"x: got shape {tuple(x.shape)}; expected (T, b, C, H, W)")
    if tuple(y.shape) != tuple(x.shape[:2]):
        raise ValueError(f"y: got shape {tuple(y.shape)}; expected {tuple(x.shape[:2])} (T, b)")


def target_gradients(model: nn.Module, params: dict[str, Tensor] | None, x: Tensor,
                     y: Tensor) -> dict[str, Tensor]:
    """Observed gradients of T targets at once: for each target t the gradient of the
    batch-mean cross-entropy of its b images ``x[t]`` (labels ``y[t]``) at ``params``.
    x (T, b, C, H, W), y (T, b) → name → (T, *shape). ``vmap`` over T of ``grad``."""
    _check_targets(x, y)
    p = _params_of(model, params)
    return {k: v.detach() for k, v in
            vmap(grad(partial(_hard_ce, model)), in_dims=(None, 0, 0))(p, x, y).items()}


def fedavg_update_observation(model: nn.Module, params: dict[str, Tensor] | None, x: Tensor,
                              y: Tensor, *, local_steps: int, local_lr: float) -> dict[str, Tensor]:
    """Observed FedAvg updates W_o − W_i of T targets: ``local_steps`` full-batch SGD steps of
    rate ``local_lr`` on each target's b images, from ``params``. name → (T, *shape)."""
    _check_targets(x, y)
    check_range("local_steps", local_steps, 1, 1000)
    check_range("local_lr", local_lr, 0.0, 100.0, lo_open=True)
    p = _params_of(model, params)
    fn = partial(_local_update, partial(_hard_ce, model), local_steps=int(local_steps),
                 local_lr=float(local_lr))
    return {k: v.detach() for k, v in vmap(fn, in_dims=(None, 0, 0))(p, x, y).items()}


def total_variation(x: Tensor) -> Tensor:
    """Anisotropic TV of images (..., C, H, W) as in Inverting Gradients: mean |horizontal
    difference| + mean |vertical difference| over the trailing (C, H, W) and any dims after
    the first (one value per leading row)."""
    dx = (x[..., :, :, 1:] - x[..., :, :, :-1]).abs().flatten(1).mean(1)
    dy = (x[..., :, 1:, :] - x[..., :, :-1, :]).abs().flatten(1).mean(1)
    return dx + dy


def _distance(kind: str, g: dict[str, Tensor], obs: dict[str, Tensor],
              obs_norm: Tensor | None) -> Tensor:
    """Per-row distance between the dummies' and the observed gradients (rows = targets)."""
    if kind == "l2":
        return sum((g[k] - obs[k]).pow(2).flatten(1).sum(1) for k in obs)
    dot = sum((g[k] * obs[k]).flatten(1).sum(1) for k in obs)
    gn = sum(g[k].pow(2).flatten(1).sum(1) for k in obs)
    return 1.0 - dot / (gn.sqrt() * obs_norm)


class _Objective:
    """The per-target matching loss of the dummies and its gradient, all rows at once."""

    def __init__(self, model: nn.Module, params: dict[str, Tensor], observed: dict[str, Tensor],
                 spec: InversionSpec, observation: str, local_steps: int, local_lr: float) -> None:
        self.params, self.obs, self.spec = params, observed, spec
        self.scale = torch.ones(next(iter(observed.values())).shape[0],
                                dtype=next(iter(observed.values())).dtype,
                                device=next(iter(observed.values())).device)
        self.obs_norm = (torch.sqrt(sum(v.pow(2).flatten(1).sum(1) for v in observed.values()))
                         if spec.distance == "cosine" else None)
        loss = partial(_soft_ce, model)
        if observation == "gradient":
            self.sim = vmap(grad(loss), in_dims=(None, 0, 0))
        else:
            self.sim = vmap(partial(_local_update, loss, local_steps=local_steps,
                                    local_lr=local_lr), in_dims=(None, 0, 0))

    def calibrate(self, x: Tensor, lab: Tensor) -> None:
        """scale = 1 / the loss at these (initial) dummies, where finite and positive."""
        loss = self(x, lab)[0]
        ok = torch.isfinite(loss) & (loss > 0)
        self.scale = torch.where(ok, 1.0 / torch.where(ok, loss, 1.0), 1.0)

    def __call__(self, x: Tensor, lab: Tensor, rows: Tensor | None = None, *, scaled: bool = True
                 ) -> tuple[Tensor, Tensor, Tensor | None]:
        """(loss (R,), d loss/d x, d loss/d label logits or None) for ``rows`` (None = all);
        the loss times ``self.scale`` unless ``scaled`` is False."""
        obs, norm, scale = self.obs, self.obs_norm, self.scale
        if rows is not None:
            obs = {k: v.index_select(0, rows) for k, v in obs.items()}
            norm = None if norm is None else norm.index_select(0, rows)
            scale = scale.index_select(0, rows)
        joint = self.spec.labels == "joint"
        x = x.detach().requires_grad_(True)
        lab = lab.detach().requires_grad_(joint)
        probs = torch.softmax(lab, dim=-1) if joint else lab
        with torch.enable_grad():
            g = self.sim(self.params, x, probs)
            loss = _distance(self.spec.distance, g, obs, norm)
            if self.spec.tv > 0:
                loss = loss + self.spec.tv * total_variation(x)
            if scaled:
                loss = loss * scale
            grads = torch.autograd.grad(loss.sum(), [x, lab] if joint else [x])
        return loss.detach(), grads[0], (grads[1] if joint else None)


# ---------------------------------------------------------------------------------------------
# labels


def _last_layer(model: nn.Module, n_classes: int) -> tuple[str, str | None]:
    """Parameter names (weight, bias or None) of the last nn.Linear with n_classes outputs."""
    found = None
    for name, m in model.named_modules():
        if isinstance(m, nn.Linear) and m.out_features == n_classes:
            found = (f"{name}.weight", f"{name}.bias" if m.bias is not None else None)
    if found is None:
        raise ValueError(f"model: no nn.Linear layer with n_classes={n_classes} outputs; "
                         "label recovery needs one")
    return found


def labels_from_gradient(observed: dict[str, Tensor], model: nn.Module, *, batch_size: int,
                         n_classes: int, sign: float = 1.0, scale: float = 1.0,
                         probs: Tensor | None = None) -> Tensor:
    """Labels (T, b) read off the observed last-layer gradient (iDLG, Zhao et al. 2020).

    With a batch-mean CE, g_c = d/d bias_c = p̄_c − n_c/b (p̄: the batch's mean softmax, n_c:
    the count of class c), negative for the classes present while p is small (a fresh model).
    b = 1: argmin (iDLG's rule; without a bias the weight rows, p_c − y_c times non-negative
    activations, give the same sign). b > 1, the count extension (in the spirit of LLG,
    Wainakh et al. 2022): with ``probs`` (K,) or (T, K), the attacker's estimate of p̄ (the
    model's softmax on a probe image, see :func:`invert`), n_c ≈ b·(probs_c − g_c), rounded by
    handing out the b labels one at a time to the largest remaining estimate. Without
    ``probs`` (or without a bias): every class with a negative entry gets one label, then
    each label of class c is taken to add ``−(sum of negative entries)/b`` to g_c and the next
    goes to the argmin. ``sign`` · ``scale`` turns the observation into bias-gradient units:
    −1/(local_lr · local_steps) for a FedAvg update W_o − W_i."""
    w_name, b_name = _last_layer(model, n_classes)
    g = observed[b_name] if b_name is not None else observed[w_name].sum(-1)
    g = (sign * scale) * g.detach().double()
    if batch_size == 1:
        return g.argmin(-1, keepdim=True).to(torch.long)
    est = None
    if probs is not None and b_name is not None:
        est = batch_size * (probs.detach().double().to(g.device).expand_as(g) - g)
    out = torch.empty(g.shape[0], batch_size, dtype=torch.long)
    for t, row in enumerate(g.cpu()):
        labs = _count_labels(row, batch_size) if est is None else _apportion(est[t].cpu(), batch_size)
        out[t] = torch.as_tensor(labs)
    return out.to(g.device)


def _apportion(est: Tensor, b: int) -> list[int]:
    """b labels handed out one at a time to the class with the largest remaining count."""
    r, labs = est.clone(), []
    for _ in range(b):
        c = int(r.argmax())
        labs.append(c)
        r[c] -= 1.0
    return sorted(labs)


def _count_labels(row: Tensor, b: int) -> list[int]:
    """The sign heuristic without p̄ (see :func:`labels_from_gradient`)."""
    neg = row.clamp(max=0.0)
    impact = float(-neg.sum()) / b if float(neg.sum()) < 0 else 1.0 / b
    r = row.clone()
    order = [int(c) for c in torch.argsort(row) if row[c] < 0][:b]
    for c in order:
        r[c] += impact
    while len(order) < b:
        c = int(r.argmin())
        order.append(c)
        r[c] += impact
    return order


# ---------------------------------------------------------------------------------------------
# dummies


def _row_generator(seed: int, tid: int, restart: int, attempt: int) -> torch.Generator:
    """A CPU generator for one dummy: the stream (seed, "dummy", target id, restart, attempt)."""
    return torch_stream(seed, "dummy", int(tid), int(restart), int(attempt))


def _draw_dummy(gen: torch.Generator, spec: InversionSpec, shape: tuple[int, ...], n_classes: int,
                prior_mean: Tensor | None) -> tuple[Tensor, Tensor]:
    """(images (b, C, H, W), label logits (b, K)) from ``gen`` (CPU, float32)."""
    if spec.init == "randn":
        x = torch.randn(shape, generator=gen)
    elif spec.init == "rand":
        x = torch.rand(shape, generator=gen)
    else:
        x = prior_mean.cpu().float().expand(shape) + _MEAN_INIT_NOISE * torch.randn(shape, generator=gen)
    return x, torch.randn(shape[0], n_classes, generator=gen)


class _Dummies:
    """Stacked dummies (P, b, C, H, W) and label logits (P, b, K), one generator per row."""

    def __init__(self, spec: InversionSpec, ids: list[tuple[int, int]], seed: int,
                 shape: tuple[int, ...], n_classes: int, prior_mean: Tensor | None,
                 device: torch.device, dtype: torch.dtype) -> None:
        self.spec, self.ids, self.seed, self.shape = spec, ids, seed, shape
        self.n_classes, self.prior_mean, self.device, self.dtype = n_classes, prior_mean, device, dtype
        self.attempts = torch.zeros(len(ids), dtype=torch.long)
        xs, ls = zip(*(self._draw(r) for r in range(len(ids))))
        self.x = torch.stack(xs)
        self.lab = torch.stack(ls)

    def _draw(self, row: int) -> tuple[Tensor, Tensor]:
        tid, restart = self.ids[row]
        gen = _row_generator(self.seed, tid, restart, int(self.attempts[row]))
        x, lab = _draw_dummy(gen, self.spec, self.shape, self.n_classes, self.prior_mean)
        return x.to(self.device, self.dtype), lab.to(self.device, self.dtype)

    def reinit(self, row: int) -> None:
        """Fresh draw for ``row`` from the next attempt's seed (NaN guard)."""
        self.attempts[row] += 1
        x, lab = self._draw(row)
        self.x[row] = x
        if self.spec.labels == "joint":
            self.lab[row] = lab


# ---------------------------------------------------------------------------------------------
# optimisers (per-target state, batched)


def _lr_at(spec: InversionSpec, it: int) -> float:
    """IG's MultiStepLR: ×0.1 at 3/8, 5/8 and 7/8 of the iterations (``it`` counts from 0)."""
    if spec.schedule != "multistep":  # a constant rate
        return spec.lr
    n = spec.iterations
    drops = sum(it >= m for m in (int(n * 3 / 8), int(n * 5 / 8), int(n * 7 / 8)))
    return spec.lr * 0.1 ** drops


def _bad_rows(loss: Tensor, *grads: Tensor | None) -> Tensor:
    bad = ~torch.isfinite(loss)
    for g in grads:
        if g is not None:
            bad |= ~torch.isfinite(g.flatten(1)).all(1)
    return bad


class _Guard:
    """NaN guard bookkeeping: re-initialise a non-finite row, or stop it after the cap."""

    def __init__(self, dummies: _Dummies, cap: int) -> None:
        self.d, self.cap = dummies, cap
        self.count = torch.zeros(len(dummies.ids), dtype=torch.long)
        self.gave_up = torch.zeros(len(dummies.ids), dtype=torch.bool)

    def handle(self, rows: Tensor, active: Tensor) -> Tensor:
        """Re-draw ``rows`` (global indices) still under the cap; deactivate the others.
        Returns the rows re-drawn (to be re-evaluated and their optimiser state reset)."""
        redo = []
        for r in rows.tolist():
            if self.count[r] < self.cap:
                self.count[r] += 1
                self.d.reinit(r)
                redo.append(r)
            else:
                self.d.reinit(r)  # give up: keep a finite image, report the loss as NaN
                self.gave_up[r] = True
                active[r] = False
        return torch.tensor(redo, dtype=torch.long, device=self.d.x.device)


def _evaluate(obj: _Objective, d: _Dummies, rows: Tensor | None) -> tuple[Tensor, Tensor]:
    """Loss and flat gradient (R, n) of the variables (images, then label logits if joint)."""
    if rows is None:
        loss, gx, gl = obj(d.x, d.lab)
    else:
        loss, gx, gl = obj(d.x.index_select(0, rows), d.lab.index_select(0, rows), rows)
    flat = gx.flatten(1) if gl is None else torch.cat([gx.flatten(1), gl.flatten(1)], 1)
    return loss, flat


def _vars(d: _Dummies, joint: bool) -> Tensor:
    return torch.cat([d.x.flatten(1), d.lab.flatten(1)], 1) if joint else d.x.flatten(1)


def _set_vars(d: _Dummies, flat: Tensor, joint: bool, boxed: bool) -> None:
    nx = d.x[0].numel()
    d.x.copy_(flat[:, :nx].view_as(d.x))
    if joint:
        d.lab.copy_(flat[:, nx:].view_as(d.lab))
    if boxed:
        d.x.clamp_(0.0, 1.0)


def _guarded_eval(obj: _Objective, d: _Dummies, guard: _Guard, active: Tensor,
                  rows: Tensor | None) -> tuple[Tensor, Tensor, Tensor]:
    """Evaluate ``rows``; re-draw non-finite ones until finite or stopped. Returns (loss,
    flat grad, rows that were re-drawn) for the rows asked for (full size P when None)."""
    loss, g = _evaluate(obj, d, rows)
    idx = torch.arange(len(d.ids), device=d.x.device) if rows is None else rows
    redrawn = []
    while True:
        bad = _bad_rows(loss, g) & active.index_select(0, idx)
        if not bool(bad.any()):
            break
        where = bad.nonzero().squeeze(1)
        redo = guard.handle(idx[where], active)
        redrawn.append(redo)
        if len(redo) == 0:
            break
        l2, g2 = _evaluate(obj, d, redo)
        pos = torch.searchsorted(idx, redo) if rows is not None else redo
        loss[pos], g[pos] = l2, g2
    done = torch.cat(redrawn) if redrawn else idx[:0]
    live = active.index_select(0, idx)
    # a stopped row must not feed NaN into the batched optimiser arithmetic (NaN * 0 = NaN)
    return loss, torch.where(live.unsqueeze(1), g, torch.zeros_like(g)), done


def _adam(obj: _Objective, d: _Dummies, spec: InversionSpec, guard: _Guard, active: Tensor,
          tick: Callable[[int], None]) -> int:
    """Batched Adam (torch.optim.Adam's update, betas (0.9, 0.999), eps 1e-8) with per-row
    step counts, optionally on the gradient's sign (IG) and boxed to [0, 1]."""
    joint = spec.labels == "joint"
    v = _vars(d, joint)
    m1, m2 = torch.zeros_like(v), torch.zeros_like(v)
    steps = torch.zeros(len(v), dtype=v.dtype, device=v.device)
    b1, b2, eps = 0.9, 0.999, 1e-8
    for it in range(spec.iterations):
        _, g, redo = _guarded_eval(obj, d, guard, active, None)
        if len(redo):
            m1[redo], m2[redo], steps[redo] = 0.0, 0.0, 0.0
        v = _vars(d, joint)
        if spec.signed:
            g = g.sign()
        g = g * active.unsqueeze(1)  # a stopped row neither moves nor ages
        steps += active.to(v.dtype)
        m1.mul_(b1).add_(g, alpha=1 - b1)
        m2.mul_(b2).addcmul_(g, g, value=1 - b2)
        bc1 = 1 - b1 ** steps.clamp(min=1)
        bc2 = (1 - b2 ** steps.clamp(min=1)).sqrt()
        step = (m1 / bc1.unsqueeze(1)) / (m2.sqrt() / bc2.unsqueeze(1) + eps)
        _set_vars(d, v - _lr_at(spec, it) * step * active.unsqueeze(1), joint, spec.boxed)
        tick(it)
    return spec.iterations


class _LBFGSState:
    """Per-row L-BFGS state; the history is a ring with one write position (module docstring).
    Pairs are stored slot-major (m, rows, n) so each slot is one contiguous (rows, n) block."""

    def __init__(self, n_rows: int, n: int, m: int, like: Tensor) -> None:
        self.m, self.ptr, self.filled = m, 0, 0
        self.S = like.new_zeros(m, n_rows, n)
        self.Y = like.new_zeros(m, n_rows, n)
        self.ro = like.new_zeros(m, n_rows)
        self.H = like.new_ones(n_rows)
        self.d = like.new_zeros(n_rows, n)
        self.t = like.new_zeros(n_rows)
        self.prev_g = like.new_zeros(n_rows, n)
        self.n_iter = torch.zeros(n_rows, dtype=torch.long, device=like.device)

    def reset(self, rows: Tensor) -> None:
        self.S[:, rows], self.Y[:, rows], self.ro[:, rows] = 0.0, 0.0, 0.0
        self.H[rows] = 1.0
        self.n_iter[rows] = 0

    def push(self, s: Tensor, y: Tensor, accept: Tensor) -> None:
        """Append (s, y) for rows where ``accept``, a neutral zero pair elsewhere."""
        ys = torch.linalg.vecdot(y, s)
        a = accept.to(s.dtype).unsqueeze(1)
        self.S[self.ptr] = s * a
        self.Y[self.ptr] = y * a
        self.ro[self.ptr] = torch.where(accept, 1.0 / torch.where(accept, ys, 1.0), 0.0)
        yy = torch.linalg.vecdot(y, y)
        self.H = torch.where(accept, ys / torch.where(accept, yy, 1.0), self.H)
        self.ptr = (self.ptr + 1) % self.m
        self.filled = min(self.filled + 1, self.m)

    def direction(self, g: Tensor) -> Tensor:
        """Two-loop recursion, newest pair first (torch.optim.LBFGS's order); a zero pair
        (ro = 0) contributes nothing."""
        order = [(self.ptr - 1 - j) % self.m for j in range(self.filled)]
        q = -g
        al = []
        for i in order:
            a = torch.linalg.vecdot(self.S[i], q) * self.ro[i]
            q.addcmul_(a.unsqueeze(1), self.Y[i], value=-1.0)
            al.append(a)
        r = q * self.H.unsqueeze(1)
        for i, a in zip(reversed(order), reversed(al)):
            be = torch.linalg.vecdot(self.Y[i], r) * self.ro[i]
            r.addcmul_((a - be).unsqueeze(1), self.S[i])
        return r


def _lbfgs_iterations(max_iter: int) -> int:
    """Iterations torch.optim.LBFGS runs without a line search: it also stops once
    1 + iterations reaches its default ``max_eval = max_iter * 5 // 4`` (so 1 for 2, 2 for 3)."""
    max_eval = max_iter * 5 // 4
    return max_iter if max_eval - 1 >= max_iter else max(1, max_eval - 1)


def _lbfgs(obj: _Objective, d: _Dummies, spec: InversionSpec, guard: _Guard, active: Tensor,
           tick: Callable[[int], None], tolerance_grad: float = 1e-7,
           tolerance_change: float = 1e-9) -> int:
    """Per-row batched L-BFGS replaying torch.optim.LBFGS(lr, max_iter=iterations,
    history_size, line_search_fn=None) on each row (module docstring). Returns the number of
    iterations run (fewer when every row stopped early)."""
    joint = spec.labels == "joint"
    v = _vars(d, joint)
    st = _LBFGSState(len(v), v.shape[1], spec.history_size, v)
    loss, g, _ = _guarded_eval(obj, d, guard, active, None)
    active &= g.abs().amax(1) > tolerance_grad
    all_rows = torch.arange(len(v), device=v.device)
    n_iter = _lbfgs_iterations(spec.iterations)
    done = 0
    for it in range(n_iter):
        if not bool(active.any()):
            break
        done = it + 1
        first = active & (st.n_iter == 0)
        st.n_iter += active.to(torch.long)
        later = active & ~first
        if bool(later.any()):
            s_k, y_k = st.d * st.t.unsqueeze(1), g - st.prev_g
            st.push(s_k, y_k, later & ((y_k * s_k).sum(1) > 1e-10))
        d_new = st.direction(g)
        st.d = torch.where(first.unsqueeze(1), -g, torch.where(active.unsqueeze(1), d_new, st.d))
        st.prev_g = torch.where(active.unsqueeze(1), g, st.prev_g)
        prev_loss = loss.clone()
        lr = _lr_at(spec, it)
        t_first = torch.clamp(1.0 / g.abs().sum(1), max=1.0) * lr
        st.t = torch.where(first, t_first, torch.where(active, torch.full_like(st.t, lr), st.t))
        gtd = (g * st.d).sum(1)
        active &= gtd <= -tolerance_change
        step = st.d * (st.t * active).unsqueeze(1)
        _set_vars(d, _vars(d, joint) + step, joint, spec.boxed)
        tick(it)
        if it == n_iter - 1:
            break  # torch does not evaluate after the last step
        rows = None if bool(active.all()) else all_rows[active]
        if rows is not None and len(rows) == 0:
            break
        l_new, g_new, redo = _guarded_eval(obj, d, guard, active, rows)
        if rows is None:
            loss, g = l_new, g_new
        else:
            loss[rows], g[rows] = l_new, g_new
        if len(redo):
            st.reset(redo)
        ok = active.clone()
        ok &= g.abs().amax(1) > tolerance_grad
        ok &= step.abs().amax(1) > tolerance_change
        ok &= (loss - prev_loss).abs() >= tolerance_change
        if len(redo):
            ok[redo] = active[redo]  # a fresh draw is not "converged"
        active &= ok
    return done


# ---------------------------------------------------------------------------------------------
# the attack


def _check_observed(observed: dict[str, Tensor], params: dict[str, Tensor]) -> int:
    missing = [k for k in params if k not in observed]
    if missing:
        raise ValueError(f"observed: missing parameter {missing[0]!r}; expected one entry per "
                         "model parameter")
    T = next(iter(observed.values())).shape[0]
    for k, p in params.items():
        if tuple(observed[k].shape) != (T, *p.shape):
            raise ValueError(f"observed[{k!r}]: got shape {tuple(observed[k].shape)}; expected "
                             f"{(T, *p.shape)} (T targets first)")
    return int(T)


def _probe_probs(model: nn.Module, params: dict[str, Tensor], image_shape: tuple[int, ...],
                 prior_mean: Tensor | None) -> Tensor:
    """The attacker's estimate of the batch's mean softmax p̄ (K,): the model's softmax on one
    probe image, ``prior_mean`` if given, else mid-grey (a fresh model's output hardly depends
    on its input)."""
    p0 = next(iter(params.values()))
    probe = (torch.full(image_shape, 0.5) if prior_mean is None else prior_mean.reshape(image_shape))
    with torch.no_grad():
        logits = functional_call(model, params, (probe.to(p0.device, p0.dtype).unsqueeze(0),))
    return torch.softmax(logits.double(), -1)[0]


def _labels_for(spec: InversionSpec, observed: dict[str, Tensor], model: nn.Module,
                params: dict[str, Tensor], T: int, b: int, n_classes: int, known: Tensor | None,
                observation: str, local_steps: int, local_lr: float,
                image_shape: tuple[int, ...], prior_mean: Tensor | None) -> Tensor | None:
    if spec.labels == "known":
        if known is None or tuple(known.shape) != (T, b):
            got = None if known is None else tuple(known.shape)
            raise ValueError(f"known_labels: got {got}; labels 'known' needs shape {(T, b)}")
        if int(known.min()) < 0 or int(known.max()) >= n_classes:
            raise ValueError(f"known_labels: got values outside 0..{n_classes - 1}")
        return known.to(torch.long)
    if spec.labels == "idlg":
        fed = observation == "fedavg"
        probs = _probe_probs(model, params, image_shape, prior_mean) if b > 1 else None
        return labels_from_gradient(observed, model, batch_size=b, n_classes=n_classes,
                                    sign=-1.0 if fed else 1.0,
                                    scale=1.0 / (local_lr * local_steps) if fed else 1.0,
                                    probs=probs)
    return None


def invert(model: nn.Module, params: dict[str, Tensor] | None, observed: dict[str, Tensor], *,
           spec: InversionSpec, batch_size: int, image_shape: tuple[int, int, int],
           n_classes: int, seed: int, observation: str = "gradient", local_steps: int = 1,
           local_lr: float = 1e-4, known_labels: Tensor | None = None,
           prior_mean: Tensor | np.ndarray | None = None, target_ids: Sequence[int] | None = None,
           progress: Progress | ProgressCallback | None = None) -> InversionResult:
    """Reconstruct the images of T observed uploads in one batched optimisation.

    ``observed``: name → (T, *param shape), a gradient (``observation="gradient"``) or a FedAvg
    update W_o − W_i after ``local_steps`` SGD steps of rate ``local_lr`` (``"fedavg"``; the
    attacker simulates the same steps). ``params`` (None = the model's): the model the upload
    was computed from. ``known_labels`` (T, b) for ``spec.labels == "known"``; ``prior_mean``
    (C, H, W) for ``spec.init == "mean"`` (also the probe image of the label count for b > 1).
    ``target_ids`` (default 0..T-1) seed each target's
    dummies, so a subset attacked alone with its own ids reproduces the joint result.
    ``progress`` gets the fraction done and polls its cancel token (raises ``Cancelled``)."""
    t0 = time.perf_counter()
    check_range("batch_size", batch_size, 1, MAX_BATCH)
    check_choice("observation", observation, ("gradient", "fedavg"))
    check_range("local_steps", local_steps, 1, 1000)
    check_range("local_lr", local_lr, 0.0, 100.0, lo_open=True)
    image_shape = tuple(int(s) for s in image_shape)
    if len(image_shape) != 3 or min(image_shape) < 1:
        raise ValueError(f"image_shape: got {image_shape}; expected (C, H, W)")
    check_range("n_classes", n_classes, 2, 100_000)
    p = _params_of(model, params)
    T = _check_observed(observed, p)
    ids = list(range(T)) if target_ids is None else [int(i) for i in target_ids]
    if len(ids) != T:
        raise ValueError(f"target_ids: got {len(ids)} ids; expected {T} (one per target)")
    if spec.init == "mean" and prior_mean is None:
        raise ValueError("prior_mean: got None; init 'mean' needs a (C, H, W) mean image")
    if prior_mean is not None:
        prior_mean = torch.as_tensor(np.asarray(prior_mean, dtype=np.float32)).reshape(image_shape)
    prog = as_progress(progress, None)
    device, dtype = next(iter(p.values())).device, next(iter(p.values())).dtype
    observed = {k: observed[k].detach().to(device, dtype) for k in p}
    labels = _labels_for(spec, observed, model, p, T, batch_size, n_classes, known_labels,
                         observation, int(local_steps), float(local_lr), image_shape, prior_mean)

    # restarts are just more rows: row r*T + t is target t, restart r
    R = spec.restarts
    rows_ids = [(ids[t], r) for r in range(R) for t in range(T)]
    obs_rows = {k: v.repeat(R, *([1] * (v.dim() - 1))) for k, v in observed.items()}
    d = _Dummies(spec, rows_ids, seed, (batch_size, *image_shape), n_classes, prior_mean,
                 device, dtype)
    if labels is not None:
        d.lab = F.one_hot(labels.to(device), n_classes).to(dtype).repeat(R, 1, 1)
    obj = _Objective(model, p, obs_rows, spec, observation, int(local_steps), float(local_lr))
    if spec.normalized:
        obj.calibrate(d.x, d.lab)
    guard = _Guard(d, spec.max_nan_restarts)
    active = torch.ones(len(rows_ids), dtype=torch.bool, device=device)
    stride = max(1, spec.iterations // 100)

    def tick(it: int) -> None:
        if it % stride == 0 or it == spec.iterations - 1:
            prog.update((it + 1) / spec.iterations, f"inversion iteration {it + 1}/{spec.iterations}")

    n_run = (_lbfgs if spec.optimizer == "lbfgs" else _adam)(obj, d, spec, guard, active, tick)
    final = obj(d.x, d.lab, scaled=False)[0].cpu()  # the raw loss at the final dummies
    final[guard.gave_up | ~torch.isfinite(final)] = torch.nan
    return _pick_restarts(d, final, guard, labels, T, R, n_run, time.perf_counter() - t0)


def _pick_restarts(d: _Dummies, final: Tensor, guard: _Guard, labels: Tensor | None, T: int,
                   R: int, iterations: int, seconds: float) -> InversionResult:
    """Keep the restart with the lowest final loss per target (IG); NaN loses."""
    loss = final.view(R, T)
    best = torch.where(torch.isnan(loss), torch.inf, loss).argmin(0)
    rows = best * T + torch.arange(T)
    x = d.x.detach().cpu()[rows].clamp(0.0, 1.0).float()
    lab = (d.lab.detach().cpu()[rows].argmax(-1) if labels is None else labels.cpu())
    counts = guard.count.view(R, T).sum(0)
    return InversionResult(images=x, labels=lab.to(torch.long), loss=loss[best, torch.arange(T)],
                           iterations=iterations, nan_restarts=int(guard.count.sum()),
                           per_target_restarts=counts, seconds=seconds)


# ---------------------------------------------------------------------------------------------
# scoring


def _np_images(a: Tensor | np.ndarray) -> np.ndarray:
    return (a.detach().cpu().numpy() if isinstance(a, Tensor) else np.asarray(a)).astype(np.float64)


def match_reconstructions(recon: Tensor | np.ndarray, targets: Tensor | np.ndarray) -> np.ndarray:
    """Permutation ``perm`` (b,) with ``recon[perm[j]]`` matched to ``targets[j]``: the
    assignment of least total pairwise MSE (scipy ``linear_sum_assignment``); a batch's
    gradient does not reveal the order of its images."""
    from scipy.optimize import linear_sum_assignment

    r, t = _np_images(recon), _np_images(targets)
    if r.shape != t.shape or r.ndim != 4:
        raise ValueError(f"recon: got shape {r.shape}; expected {t.shape} (b, C, H, W) like targets")
    cost = ((t.reshape(len(t), 1, -1) - r.reshape(1, len(r), -1)) ** 2).mean(-1)
    _, perm = linear_sum_assignment(cost)
    return perm.astype(np.int64)


def _ssim_image(a: np.ndarray, b: np.ndarray) -> float:
    from core.foundation.metrics import ssim

    if a.shape[0] == 1:
        return ssim(a[0], b[0], data_range=1.0)
    return ssim(a, b, data_range=1.0, channel_axis=0)


def _summary(name: str, values: np.ndarray, stat: Callable[[np.ndarray], float], n_boot: int,
             seed: int) -> dict[str, float]:
    """``name``, ``name_lo``, ``name_hi``: the statistic and its 95 % percentile bootstrap."""
    from core.foundation.metrics import bootstrap_interval

    v = np.asarray(values, dtype=np.float64)
    if v.size == 0:
        return {name: math.nan, f"{name}_lo": math.nan, f"{name}_hi": math.nan}
    lo, hi = bootstrap_interval(lambda _y, s: stat(s), np.zeros(v.size), v, n_boot=n_boot,
                                seed=seed, stratified=False)
    return {name: float(stat(v)), f"{name}_lo": lo, f"{name}_hi": hi}


def score_reconstructions(recon: Tensor | np.ndarray, targets: Tensor | np.ndarray,
                          labels_pred: Tensor | np.ndarray | None,
                          labels_true: Tensor | np.ndarray | None, *, n_boot: int = 1000,
                          seed: int = 0) -> dict[str, Any]:
    """Scores of reconstructions (T, b, C, H, W) (or one batch (b, C, H, W)) against the clean
    targets, each batch matched first (:func:`match_reconstructions`; predicted labels follow
    the same permutation).

    Returns the metrics ``recon_mse`` (mean), ``recon_psnr`` (mean, dB, data range 1, capped
    at 100 dB), ``recon_psnr_median``, ``recon_ssim`` (mean), ``recon_label_acc``, each with
    ``_lo`` / ``_hi`` (95 % percentile bootstrap over images), plus ``per_image``: a dict of
    arrays (T·b,) ``mse``, ``psnr``, ``ssim``, ``label_correct`` and ``perm`` (T, b)."""
    from core.foundation.metrics import mse, psnr

    r, t = _np_images(recon), _np_images(targets)
    if r.ndim == 4:
        r, t = r[None], t[None]
    if r.shape != t.shape or r.ndim != 5:
        raise ValueError(f"recon: got shape {r.shape}; expected {t.shape} (T, b, C, H, W) like targets")
    perms = np.stack([match_reconstructions(r[i], t[i]) for i in range(len(r))])
    r = np.stack([r[i][perms[i]] for i in range(len(r))])
    flat_r, flat_t = r.reshape(-1, *r.shape[2:]), t.reshape(-1, *t.shape[2:])
    m = np.array([mse(a, b) for a, b in zip(flat_r, flat_t)])
    p = np.minimum([psnr(a, b) for a, b in zip(flat_r, flat_t)], PSNR_CAP_DB)
    s = np.array([_ssim_image(a, b) for a, b in zip(flat_r, flat_t)])
    if labels_pred is None or labels_true is None:
        correct = np.full(m.size, np.nan)
    else:
        lp = np.asarray(labels_pred).reshape(len(r), -1)
        lp = np.stack([lp[i][perms[i]] for i in range(len(r))])
        correct = (lp.reshape(-1) == np.asarray(labels_true).reshape(-1)).astype(np.float64)
    out: dict[str, Any] = {}
    out.update(_summary("recon_mse", m, np.mean, n_boot, seed))
    out.update(_summary("recon_psnr", p, np.mean, n_boot, seed))
    out.update(_summary("recon_psnr_median", p, np.median, n_boot, seed))
    out.update(_summary("recon_ssim", s, np.mean, n_boot, seed))
    if np.isnan(correct).all():
        out.update({"recon_label_acc": math.nan, "recon_label_acc_lo": math.nan,
                    "recon_label_acc_hi": math.nan})
    else:
        out.update(_summary("recon_label_acc", correct, np.mean, n_boot, seed))
    out["per_image"] = {"mse": m, "psnr": p, "ssim": s, "label_correct": correct, "perm": perms}
    return out


# ---------------------------------------------------------------------------------------------
# model inversion (Fredrikson et al. 2015; the seed paper's Fig. 10)


def model_inversion(model: nn.Module, params: dict[str, Tensor] | None, *, n_classes: int,
                    image_shape: tuple[int, int, int], init: Tensor | np.ndarray,
                    iterations: int = 600, lr: float = 1e-2, tv: float = 1e-3, seed: int = 0,
                    init_noise: float = 0.0,
                    progress: Progress | ProgressCallback | None = None) -> Tensor:
    """One representative image per class (n_classes, C, H, W) in [0, 1] (CPU).

    All classes start from ``init`` (C, H, W): the seed paper uses the mean of images outside
    the training set (plus N(0, ``init_noise``²) drawn from ``seed``, 0 by default). They are
    optimised together (one batched forward; no layer mixes rows, so each dummy's gradient is
    its own) by Adam (lr 1e-2, 600 iterations: the paper's settings) on the cross-entropy
    toward its class plus ``tv``·TV, a small total-variation prior (not in the paper, which
    does not state the loss; it keeps the image from turning into high-frequency adversarial
    noise), clamped to [0, 1] after each step. Score against the class centres with
    :func:`score_model_inversion`."""
    check_range("iterations", iterations, 1, 100_000)
    check_range("lr", lr, 0.0, 100.0, lo_open=True)
    check_range("tv", tv, 0.0, 100.0)
    check_range("n_classes", n_classes, 2, 100_000)
    p = _params_of(model, params)
    device, dtype = next(iter(p.values())).device, next(iter(p.values())).dtype
    shape = tuple(int(s) for s in image_shape)
    x0 = torch.as_tensor(np.asarray(init, dtype=np.float32)).reshape(shape)
    x = x0.expand(n_classes, *shape).clone()
    if init_noise > 0:
        x += init_noise * torch.randn(x.shape, generator=torch.Generator().manual_seed(int(seed)))
    x = x.clamp(0, 1).to(device, dtype).requires_grad_(True)
    target = torch.arange(n_classes, device=device)
    opt = torch.optim.Adam([x], lr=lr)
    prog = as_progress(progress, None)
    for it in range(iterations):
        opt.zero_grad(set_to_none=True)
        logits = functional_call(model, p, (x,))
        # sum, not mean: each class's dummy gets the gradient of its own loss
        loss = F.cross_entropy(logits, target, reduction="sum") + tv * total_variation(x).sum()
        loss.backward()
        opt.step()
        with torch.no_grad():
            x.clamp_(0.0, 1.0)
        if it % max(1, iterations // 50) == 0:
            prog.update((it + 1) / iterations, f"model inversion {it + 1}/{iterations}")
    return x.detach().cpu().float()


def class_centres(X: np.ndarray, y: np.ndarray, n_classes: int,
                  image_shape: tuple[int, int, int]) -> np.ndarray:
    """Mean image of each class (n_classes, C, H, W) (NaN for an absent class)."""
    X = np.asarray(X, dtype=np.float64).reshape(len(X), *image_shape)
    y = np.asarray(y)
    out = np.full((n_classes, *image_shape), np.nan)
    for c in range(n_classes):
        if np.any(y == c):
            out[c] = X[y == c].mean(0)
    return out


def score_model_inversion(inverted: Tensor | np.ndarray, centres: np.ndarray) -> dict[str, Any]:
    """Per-class MSE / PSNR / SSIM of the inverted images against the class centres and their
    medians over classes (the paper reports the median MSE): ``mi_mse_median``,
    ``mi_psnr_median``, ``mi_ssim_median`` and ``per_class`` arrays. Absent classes skipped."""
    from core.foundation.metrics import mse, psnr

    a, c = _np_images(inverted), np.asarray(centres, dtype=np.float64)
    if a.shape != c.shape:
        raise ValueError(f"inverted: got shape {a.shape}; expected {c.shape} like centres")
    keep = [i for i in range(len(c)) if np.isfinite(c[i]).all()]
    m = np.array([mse(a[i], c[i]) for i in keep])
    p = np.minimum([psnr(a[i], c[i]) for i in keep], PSNR_CAP_DB)
    s = np.array([_ssim_image(a[i], c[i]) for i in keep])
    med = (lambda v: float(np.median(v)) if len(v) else math.nan)
    return {"mi_mse_median": med(m), "mi_psnr_median": med(p), "mi_ssim_median": med(s),
            "per_class": {"class": np.array(keep), "mse": m, "psnr": p, "ssim": s}}


# ---------------------------------------------------------------------------------------------
# the protocol: what the attacker observes, and the functions the registered parts name


@dataclass(frozen=True)
class UploadRelease:
    """What a gradient-inversion attacker observes (spec 001 §1.3): each target's upload
    ``observed`` (name → (T, *param shape)) and the global model ``params`` it started from,
    with the architecture ``model`` and the images' shape (it knows the model and the loss)."""

    kind: ClassVar[str] = "update"
    model: nn.Module
    params: dict[str, Tensor]
    observed: dict[str, Tensor]
    image_shape: tuple[int, int, int]


@dataclass(frozen=True)
class WhiteBoxModelRelease:
    """A trained model in white-box form: its architecture ``model`` and weights ``params``."""

    kind: ClassVar[str] = "model"
    model: nn.Module
    params: dict[str, Tensor]
    image_shape: tuple[int, int, int]


def _preset_spec(name: str, iterations: int | None) -> InversionSpec:
    return preset(name) if iterations is None else preset(name, iterations=iterations)


def invert_upload(release: UploadRelease, knowledge: Any, *, preset: str, seed: int,
                  batch_size: int, iterations: int | None = None, observation: str = "gradient",
                  local_steps: int = 1, local_lr: float = 1e-4,
                  progress: Progress | ProgressCallback | None = None,
                  **_: Any) -> InversionResult:
    """The named preset of :func:`invert` (DLG, iDLG, Inverting Gradients) on every upload of
    the release (``iterations``: the preset's default when None)."""
    return invert(release.model, release.params, release.observed,
                  spec=_preset_spec(preset, iterations), batch_size=batch_size,
                  image_shape=release.image_shape, n_classes=knowledge.n_classes, seed=seed,
                  observation=observation, local_steps=local_steps, local_lr=local_lr,
                  progress=progress)


def model_inversion_attack(release: WhiteBoxModelRelease, knowledge: Any, *, seed: int = 0,
                           progress: Progress | ProgressCallback | None = None,
                           **_: Any) -> Tensor:
    """:func:`model_inversion` of the released model from the start image the attacker knows
    (``knowledge.extra["init"]``: the mean of images outside the training set)."""
    return model_inversion(release.model, release.params, n_classes=knowledge.n_classes,
                           image_shape=release.image_shape, init=knowledge.extra["init"],
                           seed=seed, progress=progress)
