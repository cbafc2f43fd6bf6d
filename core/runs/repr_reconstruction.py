"""Runner for ``kind: repr_reconstruction`` (spec 004 §2.3, §3.3, §4 Theorem 3): train the
encoder with the noise channel in the loop (Algorithm 4), release r + δ, reconstruct the target
images with the in-training decoder, a fresh decoder and optimisation inversion, score them
(MSE / PSNR / SSIM), and put Theorem 3 beside the measured errors.

Splits: *train* (the defender's rows, capped at ``train.max_train``), *aux* (the attacker's
auxiliary images for its fresh decoder), *test* (utility on r + δ, and the first
``attack.targets`` of a seeded order are the attacked images). Stages (:mod:`core.foundation.stages`):
``rr_train`` (encoder, head, decoder Ψ, p_Φ) keyed by data, seed, defense and training; one
``rr_attack`` per attacker (a registered part of the family, called through
:func:`core.attacks.protocol.run_attack`) keyed by the trained model's key and the attack's own
parameters, so a change of attacker, targets or bound never retrains. The released noise draws
come from streams of the run's seed, so every attacker sees the same r + δ.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from core.config.schema import ReprReconstructionConfig
from core.foundation import caveats
from core.foundation.progress import Progress
from core.foundation.result import Result
from core.foundation.seeds import stream, torch_stream
from core.foundation.stages import StageOutput, Stages

FAMILY = "repr_reconstruction"


def _train_part(cfg: ReprReconstructionConfig, device: str) -> dict[str, Any]:
    d = cfg.model_dump(mode="json")
    # the default model keeps the keys stored runs have
    keys = ("data", "defense", "train") + (("model",) if cfg.model != type(cfg.model)() else ())
    return {"kind": cfg.kind, "device": device, "seed": cfg.seed, **{k: d[k] for k in keys}}


def _encoder(cfg: ReprReconstructionConfig, shape: tuple[int, ...], n_classes: int):
    """``model``'s encoder role (flattened) and r's width, for a model other than the default;
    None: the MLP encoder of ``train.hidden_dim`` / ``representation_dim``."""
    if cfg.model == type(cfg.model)():
        return None
    from core.models import build_encoder

    m = cfg.model
    return lambda: build_encoder(m.arch, shape, n_classes, m.width, data=cfg.data.name)


def _net_kwargs(cfg: ReprReconstructionConfig, shape: tuple[int, ...] = (),
                n_classes: int = 2) -> dict[str, Any]:
    t, d = cfg.train, cfg.defense
    return {"channel": d.channel, "epsilon": d.epsilon, "hidden_dim": t.hidden_dim,
            "representation_dim": t.representation_dim, "decoder_hidden": t.decoder_hidden,
            "clip_norm": d.dp_clip_norm, "dp_delta": d.dp_delta,
            "encoder": _encoder(cfg, shape, n_classes)}


def _rows(ds, cfg: ReprReconstructionConfig) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(train rows, aux rows, target rows): seeded, the targets a prefix of the test order."""
    rng = stream(cfg.seed, "repr_reconstruction", "rows")
    tr = np.array(ds.split("train"))  # a writable copy: torch indexes with it
    if len(tr) > cfg.train.max_train:
        tr = np.sort(rng.choice(tr, size=cfg.train.max_train, replace=False))
    te = np.array(ds.split("test"))
    targets = rng.permutation(te)[: min(cfg.attack.targets, len(te))]
    return tr, np.array(ds.split("aux")), targets


@dataclass
class _Data:
    """The loaded image set on the run's device and its seeded rows."""

    ds: Any
    shape: tuple[int, ...]
    dev: torch.device
    X: torch.Tensor
    y: torch.Tensor
    n_classes: int
    dim: int
    tr: np.ndarray
    ax: np.ndarray
    tg: np.ndarray
    te: np.ndarray


def run_repr_reconstruction(cfg: ReprReconstructionConfig, progress: Progress,
                            stages: Stages | None = None) -> Result:
    """Load → train with the channel in the loop → release r + δ → attacks → scores →
    Theorem 3 (uniform prior and the data's entropy) → the Result."""
    from core.defenses import inf2guard_reconstruction as D

    stages = stages or Stages(None)
    t0 = time.perf_counter()
    d = _load(cfg, progress)
    trained, train_key = stages.get("rr_train", _train_part(cfg, str(d.dev)),
                                    lambda: _train(cfg, d, progress.sub(0.03, 0.55)))
    model = D.load_model(trained.weights, d.dim, d.n_classes, device=d.dev, seed=cfg.seed,
                         **_net_kwargs(cfg, d.shape, d.n_classes))
    progress.update(0.56, "releasing r + δ")
    Z_tg, R_tr, metrics = _release(cfg, d, model, trained)
    noise = _noise(cfg, model.perturbation, metrics)
    recon = _attacks(cfg, d, model, Z_tg, train_key, stages, progress.sub(0.58, 0.92))
    progress.update(0.93, "scoring")
    targets, intervals, artifacts, best = _score(cfg, d, recon, metrics)
    notes: list[str] = []
    mi, etas = _theorem3(cfg, d, R_tr, noise, recon, targets, metrics, notes)
    _theorem3_data_entropy(cfg, d, mi, etas, recon, metrics, notes)
    _bound_notes(cfg, metrics, notes)
    for k in ("mu", "sigma"):
        if k in noise:
            artifacts[f"noise_{k}"] = noise[k]
    return _report(cfg, d, trained, stages, t0, best, metrics=metrics, intervals=intervals,
                   artifacts=artifacts, notes=notes)


def _load(cfg: ReprReconstructionConfig, progress: Progress) -> _Data:
    """The image set as tensors on the run's device and the train, aux and target rows."""
    from core.data import load_dataset
    from core.foundation.device import get_device

    progress.update(0.01, f"loading {cfg.data.name}")
    ds = load_dataset(cfg.data, cfg.seed)
    dev = get_device(cfg.device)
    X = torch.tensor(np.array(ds.X, dtype=np.float32), device=dev)
    y = torch.tensor(np.array(ds.y, dtype=np.int64), device=dev)
    tr, ax, tg = _rows(ds, cfg)
    return _Data(ds=ds, shape=tuple(ds.image_shape), dev=dev, X=X, y=y,
                 n_classes=len(ds.label_names), dim=int(X.shape[1]), tr=tr, ax=ax, tg=tg,
                 te=np.array(ds.split("test")))


def _train(cfg: ReprReconstructionConfig, d: _Data, progress: Progress) -> StageOutput:
    """The ``rr_train`` stage: Algorithm 4 with the channel in the loop on the train rows."""
    from core.defenses import inf2guard_reconstruction as D

    dfn, t = cfg.defense, cfg.train
    m = D.train_inf2guard_dra(
        d.X[d.tr], d.y[d.tr], n_classes=d.n_classes, channel=dfn.channel, epsilon=dfn.epsilon,
        tradeoff_lambda=dfn.tradeoff_lambda, entropy_alpha=dfn.entropy_alpha,
        mc_samples=dfn.mc_samples, epochs=t.epochs, batch_size=t.batch_size, lr=t.lr,
        hidden_dim=t.hidden_dim, representation_dim=t.representation_dim,
        decoder_hidden=t.decoder_hidden, clip_norm=dfn.dp_clip_norm, dp_delta=dfn.dp_delta,
        seed=cfg.seed, progress=progress, encoder=_encoder(cfg, d.shape, d.n_classes))
    return StageOutput(meta={"curves": m.curves, "seconds_train": m.seconds},
                       weights=D.state_of(m))


def _release(cfg: ReprReconstructionConfig, d: _Data, model, trained: StageOutput
             ) -> tuple[torch.Tensor, torch.Tensor, dict[str, float]]:
    """r + δ of the test rows and of the targets, one seeded draw each, and the utility of
    the head on them (and on clean r): (targets' r + δ, the train rows' prepared r, the
    run's first metrics)."""
    from core.defenses import inf2guard_reconstruction as D

    X, y, te, tg, tr = d.X, d.y, d.te, d.tg, d.tr
    pert = model.perturbation
    with torch.no_grad():
        Z_test = model.release(X[te], torch_stream(cfg.seed, "release", "test"))
        Z_tg = model.release(X[tg], torch_stream(cfg.seed, "release", "targets"))
        R_tr = pert.prepare(model.representations(X[tr]))
        acc = float((model.head(Z_test).argmax(-1) == y[te]).float().mean())
        acc_clean = float((model.head(model.representations(X[te])).argmax(-1) == y[te])
                          .float().mean())
    y_np = np.asarray(d.ds.y)
    dfn = cfg.defense
    metrics: dict[str, float] = {
        "utility_acc": acc, "utility_acc_clean": acc_clean,
        "utility_majority": float(np.bincount(y_np[te]).max() / len(te)),
        "perturbation_scale": float(dfn.epsilon), "tradeoff_lambda": float(dfn.tradeoff_lambda),
        "entropy_beta": D.beta_of(dfn.tradeoff_lambda, dfn.entropy_alpha),
        "representation_dim": float(R_tr.shape[1]), "data_dim": float(d.dim),
        "recon_targets": float(len(tg)),
        "seconds_train": float(trained.meta["seconds_train"]),
    }
    return Z_tg, R_tr, metrics


def _noise(cfg: ReprReconstructionConfig, pert, metrics: dict[str, float]
           ) -> dict[str, np.ndarray]:
    """The channel's per-coordinate entropy and variance (seeded Monte Carlo), their means
    into ``metrics``, and the DP channel's ε; returns the summary."""
    from core.defenses import inf2guard_reconstruction as D

    noise = D.noise_summary(pert, seed=cfg.seed)
    metrics["noise_entropy_nats"] = (float(np.mean(noise["entropy"])) if cfg.defense.epsilon > 0
                                     else math.nan)
    metrics["noise_std_mean"] = float(np.mean(np.sqrt(noise["variance"])))
    if cfg.defense.channel == "dp":
        metrics["epsilon_accountant"] = float(pert.dp_epsilon())
    return noise


def _attacks(cfg: ReprReconstructionConfig, d: _Data, model, Z_tg: torch.Tensor,
             train_key: str, stages: Stages, sub: Progress) -> dict[str, np.ndarray]:
    """Each chosen attacker's reconstructions of the targets (an ``rr_attack`` stage keyed by
    the trained model's key, the targets and its own parameters)."""
    from core.attacks import reconstruction as RA
    from core.attacks.protocol import attack_params, attack_part, run_attack
    from core.foundation.knowledge import AdversaryKnowledge

    a, t = cfg.attack, cfg.train
    recon: dict[str, np.ndarray] = {}
    release = RA.NoisyRepresentationRelease(targets=Z_tg, encoder=model.encoder,
                                            perturbation=model.perturbation,
                                            image_shape=d.shape, decoder=model.decoder)
    # the attacker's auxiliary images; it trains with the defender's optimiser settings
    knowledge = AdversaryKnowledge(n_classes=d.n_classes, extra={"aux_images": d.X[d.ax]})
    for i, name in enumerate(a.attackers):
        params = attack_params(attack_part(name, FAMILY), a)
        part = {"train": train_key, "attack": name, "targets": d.tg.tolist(), "params": params}
        step = sub.sub(i / len(a.attackers), (i + 1) / len(a.attackers))

        def attack_stage(name=name, step=step, params=params) -> StageOutput:
            t1 = time.perf_counter()
            out = run_attack(name, release, knowledge, family=FAMILY, seed=cfg.seed,
                             lr=t.lr, batch_size=t.batch_size, progress=step, **params)
            return StageOutput(arrays={"recon": out.cpu().numpy().astype(np.float32)},
                               meta={"seconds": time.perf_counter() - t1})

        step.update(0.0, f"attack: {name}")
        got, _ = stages.get("rr_attack", part, attack_stage, label=f"attack_{name}")
        recon[name] = got.arrays["recon"]
    return recon


def _score(cfg: ReprReconstructionConfig, d: _Data, recon: dict[str, np.ndarray],
           metrics: dict[str, float]
           ) -> tuple[np.ndarray, dict[str, dict[str, float]], dict[str, np.ndarray], str]:
    """MSE / PSNR / SSIM of every attacker against the clean targets, with intervals, and the
    strongest attacker (by SSIM) as ``recon_*``: (targets, intervals, artifacts, strongest)."""
    from core.attacks import reconstruction as RA
    from core.attacks.protocol import attack_part

    tg, shape = d.tg, d.shape
    targets = np.asarray(d.ds.X, np.float64)[tg]
    intervals: dict[str, dict[str, float]] = {}
    artifacts: dict[str, np.ndarray] = {"originals": targets.reshape(len(tg), *shape).astype(np.float32)}
    for name, rec in recon.items():
        sc = RA.score(rec, targets, shape, seed=cfg.seed)
        ap = attack_part(name, FAMILY)
        for stat in ("mse", "psnr", "ssim"):
            metrics[ap.metric_name(stat)] = float(sc[f"recon_{stat}"])
            intervals[ap.metric_name(stat)] = {"lo": float(sc[f"recon_{stat}_lo"]),
                                               "hi": float(sc[f"recon_{stat}_hi"]), "n": len(tg)}
        artifacts[f"recon_{name}"] = rec.reshape(len(tg), *shape).astype(np.float32)
        artifacts[f"ssim_{name}"] = np.asarray(sc["per_image"]["ssim"], np.float64)
    best_part = max((attack_part(n, FAMILY) for n in recon),
                    key=lambda p: metrics[p.metric_name("ssim")])
    for stat in ("mse", "psnr", "ssim"):
        metrics[f"recon_{stat}"] = metrics[best_part.metric_name(stat)]
        intervals[f"recon_{stat}"] = intervals[best_part.metric_name(stat)]
    return targets, intervals, artifacts, best_part.key


def _theorem3(cfg: ReprReconstructionConfig, d: _Data, R_tr: torch.Tensor,
              noise: dict[str, np.ndarray], recon: dict[str, np.ndarray], targets: np.ndarray,
              metrics: dict[str, float], notes: list[str]) -> tuple[float, dict[str, float]]:
    """Theorem 3 (x uniform on [0, 1]^d) at an estimated upper bound on I(x; r + δ), in ℓ2
    and ℓ∞, beside each attacker's share of targets reconstructed no closer than η; a
    measured share below a non-vacuous bound is counted and explained. Returns (I, η by
    norm)."""
    from core.attacks.protocol import attack_part
    from core.bounds import reconstruction as B

    var_r = R_tr.double().var(0).cpu().numpy()
    mi = B.mi_upper_bound_additive(var_r, noise["variance"], noise["entropy"])
    metrics["bound_thm3_mi_nats"] = mi if math.isfinite(mi) else math.nan  # nan: unbounded
    etas = {"l2": cfg.bound.eta_rmse * math.sqrt(d.dim), "linf": cfg.bound.eta_linf}
    violations = 0
    for norm, eta in etas.items():
        pt = B.theorem3_unit_cube(mi, d.dim, eta, norm)
        metrics[f"bound_thm3_{norm}"] = pt.bound
        metrics[f"bound_thm3_{norm}_vacuous"] = float(pt.vacuous)
        metrics[f"bound_thm3_eta_{norm}"] = float(eta)
        metrics[f"bound_thm3_denominator_{norm}"] = pt.denominator
        for name, rec in recon.items():
            frac = float(np.mean(B.reconstruction_errors(rec, targets)[norm] >= eta))
            metrics[attack_part(name, FAMILY).metric_name(f"frac_{norm}_ge_eta")] = frac
            if not pt.vacuous and frac < pt.bound:
                violations += 1
                notes.append(f"Theorem 3 ({norm}, η = {eta:.3g}): {name} reconstructs "
                             f"{1 - frac:.0%} of targets within η, above the bound's "
                             f"{1 - pt.bound:.0%}: the bound assumes x uniform on [0, 1]^d and "
                             "real images are far from it (the proof's Fano step), and I is "
                             "an estimate")
    metrics["bound_thm3_violations"] = float(violations)
    return mi, etas


def _theorem3_data_entropy(cfg: ReprReconstructionConfig, d: _Data, mi: float,
                           etas: dict[str, float], recon: dict[str, np.ndarray],
                           metrics: dict[str, float], notes: list[str]) -> None:
    """The same bound under the data's own entropy instead of the uniform prior: the
    dequantised pixels' Gaussian maximum-entropy value, an upper estimate of h(x), so this is
    an upper estimate of the bound (no share below it is conclusive)."""
    from core.bounds import reconstruction as B
    from core.bounds.entropy import dequantised

    deq = dequantised(np.asarray(d.ds.X, np.float64)[d.tr], knn=False, seed=cfg.seed)
    metrics["bound_thm3_data_entropy_nats"] = deq.h_gaussian
    est_below = 0
    for norm, eta in etas.items():
        pt = B.theorem3_dequantised(mi if math.isfinite(mi) else math.inf, deq, eta, norm)
        metrics[f"bound_thm3_est_{norm}"] = pt.bound
        metrics[f"bound_thm3_est_{norm}_vacuous"] = float(pt.vacuous)
        est_below += sum(not pt.vacuous and metrics[f"recon_{n}_frac_{norm}_ge_eta"] < pt.bound
                         for n in recon)
    metrics["bound_thm3_est_violations"] = float(est_below)
    notes.append(f"Theorem 3 under the data's entropy (an estimate): h(x) ≈ "
                 f"{deq.h_gaussian:.1f} nats on {deq.d} varying pixels dequantised by "
                 f"Δ = {deq.step:.3g} (Gaussian maximum-entropy value, an upper estimate of "
                 f"h), against {deq.log_volume:.2f} nats for the uniform prior the theorem "
                 "assumes; the bound loses that deficit, evaluated at η + ‖u‖ (core.bounds."
                 "reconstruction.theorem3_dequantised)"
                 + ("; vacuous here" if all(metrics[f"bound_thm3_est_{n}_vacuous"]
                                            for n in etas) else ""))


def _bound_notes(cfg: ReprReconstructionConfig, metrics: dict[str, float],
                 notes: list[str]) -> None:
    """How I(x; r + δ) was estimated, and what ε = 0 and the DP channel mean for the bound."""
    dfn = cfg.defense
    notes.append("Theorem 3 uses an upper estimate of I(x; r + δ): Σ ½ ln(2πe(Var r_i + Var "
                 "δ_i)) − h(δ_i), with Var r measured on the training rows (estimated) and "
                 + ("h(δ) of the learned channel by Monte Carlo" if dfn.channel == "learned"
                    else "h(δ) exact for the fixed channel")
                 + "; the ℓ2 denominator uses the ball's volume (a valid lower estimate).")
    if dfn.epsilon == 0:
        notes.append("ε = 0: no noise, I(x; r) is unbounded for a continuous encoder and "
                     "Theorem 3 says nothing (vacuous).")
    if dfn.channel == "dp":
        notes.append(f"dp: Gaussian mechanism on r clipped to ‖r‖₂ ≤ {dfn.dp_clip_norm:g} "
                     f"(sensitivity {2 * dfn.dp_clip_norm:g}), σ = ε = {dfn.epsilon:g}: "
                     f"(ε_DP, δ) = ({metrics['epsilon_accountant']:.3g}, {dfn.dp_delta:g}) for "
                     "one release, exact Gaussian-mechanism δ(ε) (Balle & Wang 2018)")


def _report(cfg: ReprReconstructionConfig, d: _Data, trained: StageOutput, stages: Stages,
            t0: float, best: str, *, metrics: dict[str, float],
            intervals: dict[str, dict[str, float]], artifacts: dict[str, np.ndarray],
            notes: list[str]) -> Result:
    """The Result: the training curves per epoch, the stage log, the caveats."""
    curves = {"epoch": [float(i + 1) for i in range(len(trained.meta["curves"]["utility_ce"]))]}
    for src, dst in (("utility_ce", "train_utility_ce"), ("decoder_mse", "train_decoder_mse"),
                     ("noise_entropy", "train_noise_entropy")):
        curves[dst] = [float(v) for v in trained.meta["curves"][src]]
    metrics["seconds_total"] = time.perf_counter() - t0
    dfn = cfg.defense
    info = {"notes": notes, "strongest_attack": best, "stages": dict(stages.log),
            "channel": dfn.channel, "image_shape": list(d.shape),
            "accountant": "Gaussian mechanism, exact δ(ε) (Balle & Wang 2018)"
            if dfn.channel == "dp" else None}
    info["caveats"] = caveats.collect(cfg.kind, metrics, info, cfg.model_dump(mode="json"),
                                      intervals=intervals)
    return Result(kind=cfg.kind, config=cfg.model_dump(mode="json"), seed=cfg.seed,
                  metrics=metrics, intervals=intervals, curves=curves, artifacts=artifacts,
                  info=info)
