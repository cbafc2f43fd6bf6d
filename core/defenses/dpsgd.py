"""DP-SGD (Abadi et al. 2016) through Opacus: the channel-capacity paper's baseline (spec 001 §4.1,
§5.6).

Per-example gradients are clipped to L2 norm ``max_grad_norm`` (S) and the summed batch
gradient gets Gaussian noise of std z·S (z = ``noise_multiplier``); batches are Poisson
samples with rate q = 1 / ceil(n / B) (Opacus' ``DPDataLoader``: each row in each step with
probability q, ceil(n / B) steps per epoch). In the paper's capacity terms C_DP ≤ B/z² (Thm 4
with σ = z²S², S cancels; spec §4.1).

Per-sample gradient norms come from Opacus' ghost clipping (``grad_sample_mode="ghost"``, Li
et al. 2022; Bu et al. 2023): for a linear layer the norm of the per-example gradient δᵢaᵢᵀ is
‖δᵢ‖·‖aᵢ‖, so no per-example gradient is materialised and a second backward pass of the
clip-weighted loss Σᵢ cᵢ·ℓᵢ gives the summed clipped gradient directly. The result equals the
hooks mode (per-example gradients materialised, ``"hooks"``) to float rounding; on the
membership MLP (784-64-10, 500 rows per step) it is about 20× faster per step.

``noise_multiplier = 0`` is clipping without noise: no DP guarantee, ε = ∞ (reported as
``math.inf``, accountant ``"none"``), so that clipping and noise can be seen apart.

White-box audit canaries (:class:`core.noisy_training.GradientCanary`) enter through
the DP optimiser's ``add_noise``: the canary sum of the step is added to ``p.summed_grad``
(the summed clipped gradient) just before Opacus draws the noise, i.e. exactly where a
clipped example's gradient goes; each included canary takes part in a step with the loader's
sampling rate q, as a Poisson-sampled row would.

ε is computed after training from the (z, q, steps) Opacus' accountant recorded, by
:func:`core.bounds.accountants.dpsgd_accounting`: PRV by default, falling back to RDP (the
reason is recorded) when PRV would be too costly at very large ε / many steps, raises or
returns non-finite. A ``target_epsilon`` is met by solving z for the exact number of steps
that will run (:func:`core.bounds.accountants.dpsgd_noise_multiplier`) and calling
``make_private`` with it (Opacus' ``make_private_with_epsilon`` rounds the step count as
int(epochs / q) and runs an unguarded PRV search). Both the solve and the readout are memoised
per (ε or z, q, steps, δ, accountant): a target and its shadow models share them.

Reproducibility: the Poisson sampler draws from a CPU ``torch.Generator`` handed to the data
loader and the noise from ``noise_generator`` on the parameters' device, both seeded from
``seed`` (never the global RNG). Models must pass ``opacus.validators.ModuleValidator`` (no
BatchNorm). The model is trained in place; Opacus' hooks and per-sample attributes are removed
at the end.
"""

from __future__ import annotations

import functools
import math
import time
import warnings
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor, nn
from torch.utils.data import DataLoader, Dataset

from core.bounds import accountants as _acc
from core.bounds.accountants import dpsgd_accounting, dpsgd_noise_multiplier
from core.noisy_training import (
    OPTIMIZERS,
    GradientCanary,
    TrainResult,
    as_images,
    check_choice,
    check_data,
    check_int,
    check_range,
    check_test,
    evaluate_accuracy,
    make_optimizer,
)
from core.progress import Progress
from core.seeds import torch_stream

__all__ = ["GRAD_SAMPLE_MODES", "DPTrainResult", "batch_size_for", "check_opacus_compatible",
           "train_dpsgd"]

#: Opacus per-sample gradient modes offered: ghost clipping (norms only) or materialised
#: per-example gradients (hooks)
GRAD_SAMPLE_MODES: tuple[str, ...] = ("ghost", "hooks")


@dataclass(kw_only=True)
class DPTrainResult(TrainResult):
    """:class:`TrainResult` plus the privacy readout.

    ``epsilon`` at ``delta`` by ``accountant`` (the one actually used: "prv" or "rdp"; ε = ∞
    and accountant "none" at z = 0, clipping without noise);
    ``fallback_reason``: why PRV was not used when it was asked for ("" otherwise);
    ``noise_multiplier`` z, ``sample_rate`` q, ``max_grad_norm`` S, ``expected_batch_size``
    q·n; ``capacity_bound`` = B/z² nats per step (spec §4.1, Thm 4(1) with σ = z²S², the
    paper's form; the tight bound is half of it; ∞ at z = 0).
    """

    epsilon: float
    delta: float
    accountant: str
    fallback_reason: str = ""
    noise_multiplier: float
    sample_rate: float
    max_grad_norm: float
    expected_batch_size: float
    capacity_bound: float


class _Rows(Dataset):
    """(image, label) rows of tensors; ``__getitems__`` lets the DataLoader fetch a whole
    Poisson batch with one indexing op instead of one per row."""

    def __init__(self, X: Tensor, y: Tensor) -> None:
        self.X, self.y = X, y

    def __len__(self) -> int:
        return len(self.X)

    def __getitem__(self, i: int) -> tuple[Tensor, Tensor]:
        return self.X[i], self.y[i]

    def __getitems__(self, idx: list[int]) -> tuple[Tensor, Tensor]:
        t = torch.as_tensor(idx, dtype=torch.long, device=self.X.device)
        return self.X[t], self.y[t]


def _batch_as_is(batch: tuple[Tensor, Tensor]) -> tuple[Tensor, Tensor]:
    """Collate for :class:`_Rows`: the batch is already stacked (an empty Poisson batch comes
    back as (0, ...) tensors, which Opacus' DPOptimizer handles: noise only)."""
    return batch


def check_opacus_compatible(model: nn.Module) -> None:
    """One-line ValueError when Opacus cannot compute per-sample gradients for ``model``."""
    from opacus.validators import ModuleValidator

    errors = ModuleValidator.validate(model, strict=False)
    if errors:
        first = str(errors[0]).splitlines()[0]
        more = f" (+{len(errors) - 1} more)" if len(errors) > 1 else ""
        raise ValueError(f"model: not Opacus-compatible: {first}{more}; allowed: no BatchNorm "
                         "(use GroupNorm, opacus.validators.ModuleValidator.fix)")


class _FreshOutput(nn.Module):
    """``layer(x)`` returned as a fresh tensor: Opacus' per-sample hooks hand a layer's output
    on as a view, which a residual block's in-place ``out += identity`` may not modify."""

    def __init__(self, layer: nn.Module) -> None:
        super().__init__()
        self.layer = layer

    def forward(self, x: Tensor) -> Tensor:
        return self.layer(x).clone()


def dp_compatible(model: nn.Module) -> nn.Module:
    """``model`` as Opacus can train it: a network with BatchNorm (whose batch statistics mix
    the rows, so no per-sample gradient exists) gets GroupNorm in its place, as
    ``opacus.validators.ModuleValidator.fix`` does, each behind :class:`_FreshOutput`, and
    in-place activations compute out of place (same values); a model without BatchNorm is
    returned unchanged."""
    from opacus.validators import ModuleValidator

    if not ModuleValidator.validate(model, strict=False):
        return model
    dev = next(model.parameters()).device
    model = ModuleValidator.fix(model).to(dev)
    for name, m in list(model.named_modules()):
        if getattr(m, "inplace", False) is True:
            m.inplace = False
        if isinstance(m, nn.GroupNorm):
            parent, _, leaf = name.rpartition(".")
            setattr(model.get_submodule(parent) if parent else model, leaf, _FreshOutput(m))
    return model


def _check_dp_args(max_grad_norm: float, delta: float, noise_multiplier: float | None,
                   target_epsilon: float | None, accountant: str) -> None:
    # the block's own rules (ranges, exactly one of z and target ε), declared once there
    from core.catalog.dp_sgd import DPSGDDefense
    from core.checks import check_block

    check_block(DPSGDDefense, names={"clip_norm": "max_grad_norm"},
                noise_multiplier=noise_multiplier, target_epsilon=target_epsilon, delta=delta,
                clip_norm=max_grad_norm, accountant=accountant)


def batch_size_for(n: int, sample_rate: float) -> int:
    """The loader batch size B whose Poisson rate is q = 1/k, k = round(1/``sample_rate``)
    steps per epoch (Opacus samples at q = 1/ceil(n/B)): B = ceil(n/k)."""
    check_range("sample_rate", sample_rate, 0.0, 1.0, lo_open=True)
    k = max(1, min(int(n), round(1.0 / float(sample_rate))))
    return -(-int(n) // k)


@functools.lru_cache(maxsize=256)
def _solve_sigma(target_epsilon: float, q: float, steps: int, delta: float, accountant: str,
                 prv_max_points: int) -> float:
    return dpsgd_noise_multiplier(target_epsilon, q, steps, delta, accountant)


@functools.lru_cache(maxsize=256)
def _readout(sigma: float, q: float, steps: int, delta: float, accountant: str,
             prv_max_points: int) -> tuple[float, str, str]:
    out = dpsgd_accounting(sigma, q, steps, delta, accountant)
    return float(out["epsilon"]), str(out["accountant"]), str(out["fallback_reason"])


def _make_private(accountant, model, opt, loader, sigma, max_grad_norm, noise_gen, mode):
    """(engine, module, optimizer, loss function, loader) from Opacus' ``make_private``; the loss
    function is Opacus' two-pass ghost-clipping wrapper in ghost mode, cross-entropy otherwise."""
    from opacus import PrivacyEngine

    with warnings.catch_warnings():
        # Opacus warns that secure_mode is off (we want reproducible, seeded noise)
        warnings.filterwarnings("ignore", message=".*[Ss]ecure RNG.*")
        engine = PrivacyEngine(accountant=accountant)
        out = engine.make_private(
            module=model, optimizer=opt, data_loader=loader, noise_multiplier=float(sigma),
            max_grad_norm=float(max_grad_norm), noise_generator=noise_gen, poisson_sampling=True,
            grad_sample_mode=mode, criterion=nn.CrossEntropyLoss())
    if mode == "ghost":
        dp_model, dp_opt, loss_fn, dp_loader = out
    else:
        (dp_model, dp_opt, dp_loader), loss_fn = out, nn.CrossEntropyLoss()
    return engine, dp_model, dp_opt, loss_fn, dp_loader


def _install_canary(dp_opt: Any, canary: GradientCanary, sample_rate: float) -> None:
    """Add the step's canary sum to ``p.summed_grad`` (the summed clipped gradient) just before
    Opacus adds the noise: the instance's ``add_noise`` is wrapped (both DPOptimizer and its
    ghost-clipping subclass call ``self.add_noise()`` between clipping and scaling)."""
    params = list(dp_opt.params)
    canary.bind(params)
    add_noise = dp_opt.add_noise

    def add_noise_with_canaries() -> None:
        term = canary.step_term(sample_rate)
        if term is not None:
            with torch.no_grad():
                for p, t in zip(params, term, strict=True):
                    p.summed_grad.add_(t.reshape(p.summed_grad.shape))
        add_noise()

    dp_opt.add_noise = add_noise_with_canaries


def _run_epochs(dp_model, dp_opt, loss_fn, dp_loader, model, y_test, X_test, image_shape,
                epochs, progress, result: DPTrainResult) -> None:
    per_epoch = len(dp_loader)
    every = max(1, per_epoch // 5)
    params = list(dp_opt.params)
    ghost = not isinstance(loss_fn, nn.CrossEntropyLoss)
    for ep in range(int(epochs)):
        dp_model.train()
        t_ep = time.perf_counter()
        total, rows = 0.0, 0
        for j, (xb, yb) in enumerate(dp_loader):
            dp_opt.zero_grad(set_to_none=True)
            if len(yb) == 0 and ghost:
                # an empty Poisson batch still takes a (noise-only) step, which the accountant
                # counts: the ghost loss has no rows to average, so the clipped sum is set to
                # zero by hand (the hooks mode handles an empty batch itself)
                for p in params:
                    p.grad = torch.zeros_like(p)
                dp_opt.step()
            else:
                loss = loss_fn(dp_model(xb), yb)
                with warnings.catch_warnings():
                    # Opacus' backward hooks fire on module outputs (inputs need no grad)
                    warnings.filterwarnings("ignore", message="Full backward hook is firing")
                    warnings.filterwarnings("ignore", message="Using a non-full backward hook")
                    loss.backward()
                dp_opt.step()
                if len(yb):
                    total += float(loss.detach()) * len(yb)
                    rows += len(yb)
            result.steps += 1
            if progress is not None and (j + 1) % every == 0:
                progress.update((ep + (j + 1) / per_epoch) / epochs,
                                f"DP-SGD epoch {ep + 1}/{epochs}: step {j + 1}/{per_epoch}")
        result.curves.setdefault("epoch_seconds", []).append(time.perf_counter() - t_ep)
        result.curves.setdefault("train_loss", []).append(total / max(rows, 1))
        if X_test is not None:
            result.curves.setdefault("test_acc", []).append(
                evaluate_accuracy(model, X_test, y_test, image_shape))
        if progress is not None:
            progress.update((ep + 1) / epochs, f"DP-SGD epoch {ep + 1}/{epochs} done")


def train_dpsgd(
    model: nn.Module,
    X: Tensor,
    y: Tensor,
    *,
    image_shape: tuple[int, ...],
    epochs: int,
    lr: float,
    max_grad_norm: float,
    delta: float,
    batch_size: int | None = None,
    sample_rate: float | None = None,
    noise_multiplier: float | None = None,
    target_epsilon: float | None = None,
    accountant: str = "prv",
    optimizer: str = "sgd",
    momentum: float = 0.0,
    grad_sample_mode: str = "ghost",
    seed: int = 0,
    X_test: Tensor | None = None,
    y_test: Tensor | None = None,
    progress: Progress | None = None,
    canary: GradientCanary | None = None,
) -> DPTrainResult:
    """Train ``model`` in place with DP-SGD (Opacus ``PrivacyEngine.make_private``) on clean
    (X, y) (flat rows (n, d) on the model's device) for ``epochs`` × k Poisson steps.

    Give exactly one of ``batch_size`` B (k = ceil(n / B) steps per epoch, q = 1/k, Opacus'
    convention) and ``sample_rate`` q (k = round(1/q); :func:`batch_size_for`), and exactly
    one of ``noise_multiplier`` (z; 0 = clipping only, ε = ∞) and ``target_epsilon`` (z
    solved so that ε ≤ target at ``delta`` after the run's steps). ε is reported with the
    accountant used. ``canary``: white-box audit canaries added to the summed clipped gradient
    before the noise (module docstring).
    """
    check_data(X, y, image_shape)
    check_test(X_test, y_test, image_shape)
    check_int("epochs", epochs, 1)
    if (batch_size is None) == (sample_rate is None):
        got = "both" if batch_size is not None else "neither"
        raise ValueError(f"batch_size/sample_rate: got {got}; allowed: exactly one")
    if batch_size is not None:
        check_int("batch_size", batch_size, 1)
    else:
        batch_size = batch_size_for(len(X), sample_rate)
    check_range("lr", lr, 0.0, lo_open=True)
    check_choice("optimizer", optimizer, OPTIMIZERS)
    check_range("momentum", momentum, 0.0, 0.999)
    check_choice("grad_sample_mode", grad_sample_mode, GRAD_SAMPLE_MODES)
    _check_dp_args(max_grad_norm, delta, noise_multiplier, target_epsilon, accountant)
    check_opacus_compatible(model)

    t0 = time.perf_counter()
    dev = X.device
    n = len(X)
    loader = DataLoader(_Rows(as_images(X, image_shape), y), batch_size=int(batch_size),
                        collate_fn=_batch_as_is,
                        generator=torch_stream(seed, "dpsgd", "batches"))
    per_epoch = len(loader)
    q = 1.0 / per_epoch  # Opacus' own sample rate for this loader
    steps = int(epochs) * per_epoch
    prv_points = int(_acc.PRV_MAX_POINTS)
    sigma = (float(noise_multiplier) if noise_multiplier is not None else
             _solve_sigma(float(target_epsilon), q, steps, float(delta), accountant, prv_points))
    noise_gen = torch_stream(seed, "dpsgd", "noise", device=dev)
    opt = make_optimizer(model, optimizer, lr, momentum)
    engine, dp_model, dp_opt, loss_fn, dp_loader = _make_private(
        accountant, model, opt, loader, sigma, max_grad_norm, noise_gen, grad_sample_mode)
    if canary is not None:
        _install_canary(dp_opt, canary, q)
    result = DPTrainResult(noise_mode="dpsgd", epsilon=float("nan"), delta=float(delta),
                           accountant=accountant, noise_multiplier=sigma, sample_rate=q,
                           max_grad_norm=float(max_grad_norm), expected_batch_size=q * n,
                           capacity_bound=(float(batch_size) / sigma**2 if sigma > 0
                                           else math.inf))
    try:
        _run_epochs(dp_model, dp_opt, loss_fn, dp_loader, model, y_test, X_test, image_shape,
                    epochs, progress, result)
    finally:
        dp_model._close()  # remove Opacus' hooks and per-sample attributes from ``model``
    # ε from what Opacus' accountant recorded (one (z, q, steps) entry for a plain run)
    hist = engine.accountant.history
    ran = sum(int(s) for *_, s in hist)
    if sigma == 0.0:
        # clipping without noise: no (ε, δ) holds for any finite ε
        result.epsilon, result.accountant = math.inf, "none"
    elif ran:
        result.epsilon, result.accountant, result.fallback_reason = _readout(
            sigma, q, ran, float(delta), accountant, prv_points)
    result.seconds = time.perf_counter() - t0
    return result
