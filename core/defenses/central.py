"""Builders of the defenses of centrally trained classifiers (the membership and
gradient-leakage families) as :class:`core.foundation.builds.DefenseBuild` wrappers:

- ``none``: plain minibatch training (:func:`core.engine.noisy_training.train_central`), and
  its batched form for K shadow models (:func:`stacked_shadows`);
- :func:`build_hooked`: any defense that is the engine's loop with hooks (RelaxLoss, label
  smoothing): its one-model ``train`` and, where every hook acts per example, its batched
  ``train_many`` from one hook factory;
- ``channel``: the same training on D̃ = D + ξ with ξ solved from κ (spec 001, Eqs. 18-20;
  :func:`core.defenses.channel.channel_from_block`): the data-space transform, κ per round and
  over the run, Theorem 1's information input and the Wiener floor;
- ``dp_sgd``: DP-SGD through Opacus (:func:`core.defenses.dpsgd.train_dpsgd`): ε from the
  accountant, the uploaded-gradient channel (z, S) of one observed step, capacity B/z² (Thm 4);
- ``inf2guard``: Inf2Guard's membership game (spec 004 §2.1, Algorithm 1;
  :func:`core.defenses.inf2guard.train_inf2guard`): its own encoder, head and adversary.

Every builder takes the validated block and the run's context (``image_shape``, ``n_classes``,
``train``: the training spec with ``epochs``, ``batch_size``, ``lr``, ``optimizer``;
``spectrum``: a callable returning the data spectrum; ``reference`` and ``reference_labels``:
the membership run's reference non-members, rows and labels, for a defense that trains against
them) and ignores what it does not need.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from core.engine.builds import (  # noqa: F401  (build_hooked, build_from_hooks: re-exported)
    BatchedShadows,
    build_from_hooks,
    build_hooked,
    plain_recipe,
    stacked_shadows,
    train_hooked,
)
from core.foundation.builds import (
    DefenseBuild,
    InformationBound,
    Report,
    Trained,
    softmax_predict,
)


def _central(train: Any, image_shape: tuple[int, ...], perturb=None,
             noise_mode: str = "redraw") -> Callable[..., Trained]:
    """Minibatch training on (X + ξ, y) (no ξ without ``perturb``); 0 epochs leaves the
    freshly initialised model as it is (the gradient-leakage runner attacks round 1)."""

    def train_fn(model, X, y, *, seed: int, X_test=None, y_test=None, progress=None,
                 canary=None) -> Trained:
        from core.engine.noisy_training import train_central

        if train.epochs == 0:
            return Trained(softmax_predict(model), model)
        res = train_central(model, X, y, image_shape=image_shape, epochs=train.epochs,
                            batch_size=train.batch_size, lr=train.lr, optimizer=train.optimizer,
                            perturb=perturb, noise_mode=noise_mode, seed=seed, X_test=X_test,
                            y_test=y_test, progress=progress, canary=canary)
        return Trained(softmax_predict(model), model, steps=res.steps, curves=res.curves)

    return train_fn


def build_plain(block: Any, *, image_shape: tuple[int, ...], train: Any, **_: Any) -> DefenseBuild:
    """No defense: plain training; K shadow models train together over stacked weights."""

    def train_many(model_factory, X, y, in_mask, *, seed: int) -> BatchedShadows:
        return stacked_shadows(model_factory, X, y, in_mask, seed=seed, image_shape=image_shape,
                               recipe=plain_recipe(train))

    return DefenseBuild("none", train=_central(train, image_shape), train_many=train_many)


def build_channel(block: Any, *, image_shape: tuple[int, ...], train: Any,
                  spectrum: Callable[[], Any], **_: Any) -> DefenseBuild:
    """The κ channel: κ solved into the noise on the data spectrum (Eqs. 18-20); the model
    trains on D̃ (noise redrawn every step, or one fixed noisy copy)."""
    from core.defenses.channel import channel_from_block

    spec = spectrum()
    solved, noise = channel_from_block(block, spec, image_shape)
    mode = block.noise_mode

    def perturb(x_flat: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        return noise.perturb(x_flat, generator=generator)

    def report(meta, *, steps: int = 0, batch_size: int | None = None) -> Report:
        # the attacked upload is at least one step even when the model was not trained
        return Report({"kappa_total": float(solved.total_info(max(1, int(steps)), mode))})

    def bound(spec, meta, *, steps: int, steps_observed: int, batch_size: int) -> InformationBound:
        from core.bounds.channel import wiener_mmse, wiener_mmse_diag_noise

        if block.channel == "personalized":
            wiener = wiener_mmse_diag_noise(spec.covariance(),
                                            np.asarray(solved.pixel_std, dtype=np.float64) ** 2)
        else:
            wiener = wiener_mmse(spec.eigenvalues, solved.noise_var_eig, d=len(spec.eigenvalues))
        notes = []
        if block.channel == "laplace":
            notes.append("Laplace: the Wiener curve is the linear MMSE at the noise's variance "
                         "(for non-Gaussian noise the Bayes error can be lower)")
        return InformationBound(
            per_round=block.kappa * (1 if mode == "fixed" else steps_observed),
            total=float(solved.total_info(steps, mode)),
            metrics={"bound_wiener_mmse": float(wiener)}, notes=notes)

    return DefenseBuild(
        "channel", train=_central(train, image_shape, perturb, mode), perturb=perturb,
        noise_mode=mode, report=report, bound=bound,
        metrics={"kappa": float(block.kappa), "kappa_per_dim": float(solved.kappa_per_dim),
                 "channel_sigma": float(solved.sigma),
                 "channel_pixel_std_mean": float(np.mean(solved.pixel_std))},
        artifacts={"noise_eig": np.asarray(solved.noise_var_eig, dtype=np.float64),
                   "capacity_dir": np.asarray(solved.capacity_per_direction, dtype=np.float64),
                   "pixel_std": np.asarray(solved.pixel_std, dtype=np.float64)},
        info={"channel": {"kind": block.channel, "noise_mode": mode,
                          "laplace_b": getattr(solved, "laplace_b", None)}})


def build_dpsgd(block: Any, *, image_shape: tuple[int, ...], train: Any, **_: Any) -> DefenseBuild:
    """DP-SGD (Opacus): per-sample clipping to S and N(0, z²S²) on the summed batch gradient;
    trains centrally (Opacus' loop), whatever federated setting the config names."""

    def train_fn(model, X, y, *, seed: int, X_test=None, y_test=None, progress=None,
                 canary=None) -> Trained:
        from core.defenses.dpsgd import dp_compatible, train_dpsgd

        model = dp_compatible(model)  # BatchNorm -> GroupNorm (Opacus' fix)
        # DP-SGD's own recipe (core.catalog.dp_sgd.DPSGDDefense.training: a None field takes the
        # train block's value); shadows repeat it as they repeat the target's training
        res = train_dpsgd(model, X, y, image_shape=image_shape, seed=seed, X_test=X_test,
                          y_test=y_test, progress=progress, canary=canary,
                          **block.training(train))
        meta = {"epsilon": res.epsilon, "accountant": res.accountant,
                "accountant_note": res.fallback_reason or "",
                "noise_multiplier": res.noise_multiplier, "sample_rate": res.sample_rate}
        return Trained(softmax_predict(model), model, steps=res.steps, curves=res.curves,
                       meta=meta)

    def channel(meta) -> tuple[float, float]:
        return float(meta["noise_multiplier"]), float(block.clip_norm)

    def report(meta, *, steps: int = 0, batch_size: int | None = None) -> Report:
        from core.bounds.channel import dp_capacity

        z = float(meta["noise_multiplier"])
        metrics = {"epsilon_accountant": float(meta["epsilon"]), "dp_noise_multiplier": z}
        if batch_size is not None and z > 0:  # z = 0 (clipping only): no noise, no capacity
            metrics.update(capacity_dp_paper=dp_capacity(batch_size, z),
                           capacity_dp_tight=dp_capacity(batch_size, z, tight=True))
        notes = [meta["accountant_note"]] if meta.get("accountant_note") else []
        return Report(metrics, {"accountant": meta.get("accountant")}, notes)

    def bound(spec, meta, *, steps: int, steps_observed: int, batch_size: int) -> InformationBound:
        # the tight per-step capacity B/(2z²) bounds what one step says about a batch
        z = float(meta["noise_multiplier"])
        if z == 0.0:
            return InformationBound(
                per_round=math.inf, total=math.inf,
                notes=[("DP-SGD with noise multiplier 0 (clipping only, ε = ∞): the clipped "
                       "upload is a deterministic function of the data, so Theorem 1 gives "
                       "no floor")])
        per_step = batch_size / (2 * z * z)
        return InformationBound(per_round=steps_observed * per_step, total=steps * per_step)

    from core.defenses.dpsgd import dp_compatible

    return DefenseBuild("dp_sgd", train=train_fn, settings=("central",), channel=channel,
                        report=report, bound=bound, prepare=dp_compatible)


#: the roles an architecture declares when it carries Inf2Guard's membership game
INF2GUARD_ROLES = ("encoder", "utility", "membership")


def inf2guard_networks(model: Any, image_shape: tuple[int, ...], n_classes: int):
    """The game's networks from ``model`` (a ``ModelSpec``) when its architecture declares
    :data:`INF2GUARD_ROLES` (Inf2Guard's ResNet-18 pieces), else None (the MLP game)."""
    if model is None or not set(INF2GUARD_ROLES) <= set(model.part.roles):
        return None
    from core.defenses.inf2guard import TwoLogits
    from core.models import build_model

    def networks(gen: torch.Generator):
        enc, head, adv = (build_model(model.arch, image_shape, n_classes, model.width, role=r,
                                      seed=gen) for r in INF2GUARD_ROLES)
        return enc, head, TwoLogits(adv)

    return networks


def build_inf2guard(block: Any, *, n_classes: int, train: Any, reference: torch.Tensor,
                    image_shape: tuple[int, ...] = (), model: Any = None,
                    **_: Any) -> DefenseBuild:
    """Inf2Guard (Algorithm 1): pre-training on a quarter of the epochs, then the game of Eq. 6
    against a membership adversary that also sees the ``reference`` non-members D0. The
    networks are ``model``'s roles where its architecture declares them, else the MLP game's."""
    networks = inf2guard_networks(model, image_shape, n_classes)
    notes = []
    if networks is None and model is not None and model != type(model)():
        notes.append(f"Inf2Guard trains its own MLP encoder, head and adversary: model.arch "
                     f"{model.arch!r} declares no {'/'.join(INF2GUARD_ROLES)} roles")

    def train_fn(model, X, y, *, seed: int, X_test=None, y_test=None, progress=None,
                 canary=None) -> Trained:
        from core.defenses.inf2guard import train_inf2guard

        pre = max(1, train.epochs // 4)
        m = train_inf2guard(X, y, reference, n_classes=n_classes,
                            tradeoff_lambda=block.tradeoff_lambda,
                            epochs=max(1, train.epochs - pre), pretrain_epochs=pre,
                            batch_size=train.batch_size, lr=train.lr, seed=seed,
                            progress=progress, canary=canary, networks=networks)
        return Trained(lambda Z: torch.softmax(m.logits(Z), -1), m, m.representations,
                       lambda Z, _labels: m.membership_proba(Z), curves=m.curves)

    return DefenseBuild("inf2guard", train=train_fn, notes=notes,
                        metrics={"tradeoff_lambda": float(block.tradeoff_lambda)})
