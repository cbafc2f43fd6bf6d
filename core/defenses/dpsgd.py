"""DP-SGD (Abadi et al. 2016) through Opacus: the channel-capacity paper's baseline (spec 001 §4.1,
§5.6).

Per-example gradients are clipped to L2 norm ``max_grad_norm`` (S) and the summed batch
gradient gets Gaussian noise of std z·S (z = ``noise_multiplier``); batches are Poisson
samples with rate q = 1 / ceil(n / B) (each row in each step with probability q, int(1/q)
steps per epoch: the engine's :class:`core.engine.order.Poisson`, drawing what Opacus'
``DPDataLoader`` would). In the paper's capacity terms C_DP ≤ B/z² (Thm 4 with σ = z²S², S
cancels; spec §4.1).

Training runs through the one engine loop (:func:`core.engine.loop.fit`): :class:`OpacusStep`
is the gradient step as a hook — its prepare wraps the model and the engine's optimiser by
Opacus' ``PrivacyEngine.make_private``, so the DPOptimizer clips, noises and steps in the
optimiser's place.

Per-sample gradient norms come from Opacus' ghost clipping (``grad_sample_mode="ghost"``, Li
et al. 2022; Bu et al. 2023): for a linear layer the norm of the per-example gradient δᵢaᵢᵀ is
‖δᵢ‖·‖aᵢ‖, so no per-example gradient is materialised and a second backward pass of the
clip-weighted loss Σᵢ cᵢ·ℓᵢ gives the summed clipped gradient directly. The result equals the
hooks mode (per-example gradients materialised, ``"hooks"``) to float rounding; on the
membership MLP (784-64-10, 500 rows per step) it is about 20× faster per step.

``noise_multiplier = 0`` is clipping without noise: no DP guarantee, ε = ∞ (reported as
``math.inf``, accountant ``"none"``), so that clipping and noise can be seen apart.

White-box audit canaries (:class:`core.engine.noisy_training.GradientCanary`) enter through
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

Reproducibility: the Poisson sampler draws from a CPU ``torch.Generator`` and the noise from
``noise_generator`` on the parameters' device, both seeded from ``seed`` (never the global
RNG). Models must pass ``opacus.validators.ModuleValidator`` (no
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
from torch.utils.data import DataLoader, TensorDataset

from core.bounds import accountants as _acc
from core.bounds.accountants import dpsgd_accounting, dpsgd_noise_multiplier
from core.engine.hooks import Hook, StepState
from core.engine.loop import Supervised, fit
from core.engine.noisy_training import (
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
)
from core.engine.order import Poisson
from core.engine.recipe import Recipe
from core.foundation.progress import Progress
from core.foundation.seeds import torch_stream

__all__ = ["GRAD_SAMPLE_MODES", "DPTrainResult", "OpacusStep", "batch_size_for",
           "check_opacus_compatible", "train_dpsgd"]

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
    from core.foundation.checks import check_block

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


def _make_private(accountant: str, model: nn.Module, opt: torch.optim.Optimizer,
                  loader: DataLoader, sigma: float, max_grad_norm: float,
                  noise_gen: torch.Generator, mode: str) -> tuple[Any, nn.Module, Any, Any]:
    """(engine, module, optimizer, loss function) from Opacus' ``make_private``; the loss
    function is Opacus' two-pass ghost-clipping wrapper in ghost mode, None (the engine's
    cross-entropy) otherwise. ``loader`` only tells Opacus n and B (q = 1/len(loader), the
    expected batch q·n): the engine samples the batches, so Opacus' loader is not used."""
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
        dp_model, dp_opt, loss_fn, _ = out
    else:
        (dp_model, dp_opt, _), loss_fn = out, None
    return engine, dp_model, dp_opt, loss_fn


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


class OpacusStep(Hook):
    """DP-SGD's gradient step as an engine hook (Abadi et al. 2016, Algorithm 1): before the
    first epoch Opacus' ``make_private`` wraps the model (per-sample gradient norms) and the
    engine's optimiser, whose place the DPOptimizer takes (clip to S, add N(0, z²S²) to the
    sum, divide by the expected batch q·n, step); canaries enter its summed clipped gradient
    (:func:`_install_canary`). In ghost mode the step's loss is Opacus' two-pass wrapper.
    Call :meth:`close` after training to remove Opacus' hooks from the model."""

    def __init__(self, loader: DataLoader, *, accountant: str, sigma: float,
                 max_grad_norm: float, noise_generator: torch.Generator, mode: str,
                 canary: GradientCanary | None = None) -> None:
        self.loader, self.accountant, self.sigma = loader, accountant, sigma
        self.max_grad_norm, self.noise_generator, self.mode = max_grad_norm, noise_generator, mode
        self.canary = canary
        self.engine: Any = None
        self.module: nn.Module | None = None
        self.loss_fn: Any = None

    def prepare(self, state: StepState) -> None:
        self.engine, self.module, state.optimizer, self.loss_fn = _make_private(
            self.accountant, state.model, state.optimizer, self.loader, self.sigma,
            self.max_grad_norm, self.noise_generator, self.mode)
        if self.canary is not None:
            _install_canary(state.optimizer, self.canary, 1.0 / len(self.loader))

    def forward(self, x: Tensor) -> Tensor:
        """The wrapped model's forward pass (its hooks see every row)."""
        return self.module(x)

    def loss(self, logits: Tensor, y: Tensor, state: StepState) -> Any:
        # an empty Poisson step works through the wrapper too: its clipped sum is zero and
        # the DPOptimizer still adds the noise the accountant counts
        return None if self.loss_fn is None else self.loss_fn(logits, y)

    def close(self) -> None:
        if self.module is not None:
            self.module._close()  # Opacus' hooks and per-sample attributes leave the model


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
    batch_size = _check_args(X, y, image_shape, X_test, y_test, epochs=epochs,
                             batch_size=batch_size, sample_rate=sample_rate, lr=lr,
                             optimizer=optimizer, momentum=momentum, mode=grad_sample_mode)
    _check_dp_args(max_grad_norm, delta, noise_multiplier, target_epsilon, accountant)
    model.train()  # Opacus validates a model in training mode (fit trains in it anyway)
    check_opacus_compatible(model)

    t0 = time.perf_counter()
    n = len(X)
    per_epoch = -(-n // batch_size)  # the batches of a plain loader: Opacus' q = 1/per_epoch
    q = 1.0 / per_epoch
    prv_points = int(_acc.PRV_MAX_POINTS)
    sigma = (float(noise_multiplier) if noise_multiplier is not None else
             _solve_sigma(float(target_epsilon), q, int(epochs) * per_epoch, float(delta),
                          accountant, prv_points))
    step = OpacusStep(DataLoader(TensorDataset(as_images(X, image_shape), y),
                                 batch_size=batch_size),
                      accountant=accountant, sigma=sigma, max_grad_norm=float(max_grad_norm),
                      noise_generator=torch_stream(seed, "dpsgd", "noise", device=X.device),
                      mode=grad_sample_mode, canary=canary)
    recipe = Recipe(epochs=int(epochs), batch_size=batch_size, lr=float(lr),
                    optimizer=optimizer, momentum=float(momentum))
    evaluate = (None if X_test is None else
                lambda: {"test_acc": evaluate_accuracy(model, X_test, y_test, image_shape)})
    try:
        with warnings.catch_warnings():
            # Opacus' backward hooks fire on module outputs (the inputs need no grad)
            warnings.filterwarnings("ignore", message="Full backward hook is firing")
            warnings.filterwarnings("ignore", message="Using a non-full backward hook")
            log = fit(model, Supervised(X, y, tuple(image_shape), forward=step.forward),
                      recipe=recipe, order=Poisson(torch_stream(seed, "dpsgd", "batches"), q),
                      hooks=[step], progress=progress, label="DP-SGD epoch",
                      evaluate=evaluate, time_epochs=True)
    finally:
        step.close()
    result = DPTrainResult(noise_mode="dpsgd", steps=log.steps, epsilon=float("nan"),
                           delta=float(delta), accountant=accountant, noise_multiplier=sigma,
                           sample_rate=q, max_grad_norm=float(max_grad_norm),
                           expected_batch_size=q * n,
                           capacity_bound=(batch_size / sigma**2 if sigma > 0 else math.inf))
    result.curves = {"epoch_seconds": log.curves["epoch_seconds"], "train_loss": log.train_loss,
                     **({"test_acc": log.curves["test_acc"]} if X_test is not None else {})}
    _read_epsilon(result, step.engine, prv_points)
    result.seconds = time.perf_counter() - t0
    return result


def _check_args(X: Tensor, y: Tensor, image_shape: tuple[int, ...], X_test: Tensor | None,
                y_test: Tensor | None, *, epochs: int, batch_size: int | None,
                sample_rate: float | None, lr: float, optimizer: str, momentum: float,
                mode: str) -> int:
    """Check :func:`train_dpsgd`'s data and recipe; returns the loader batch size B."""
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
    check_choice("grad_sample_mode", mode, GRAD_SAMPLE_MODES)
    return int(batch_size)


def _read_epsilon(result: DPTrainResult, engine: Any, prv_points: int) -> None:
    """ε from the (z, q, steps) Opacus' accountant recorded (one entry for a plain run)."""
    ran = sum(int(s) for *_, s in engine.accountant.history)
    if result.noise_multiplier == 0.0:
        # clipping without noise: no (ε, δ) holds for any finite ε
        result.epsilon, result.accountant = math.inf, "none"
    elif ran:
        result.epsilon, result.accountant, result.fallback_reason = _readout(
            result.noise_multiplier, result.sample_rate, ran, result.delta, result.accountant,
            prv_points)
