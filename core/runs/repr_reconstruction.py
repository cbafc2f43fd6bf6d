"""Runner for ``kind: repr_reconstruction`` (spec 004 §2.3, §3.3, §4 Theorem 3): train the
encoder with the noise channel in the loop (Algorithm 4), release r + δ, reconstruct the target
images with the in-training decoder, a fresh decoder and optimisation inversion, score them
(MSE / PSNR / SSIM), and put Theorem 3 beside the measured errors.

Splits: *train* (the defender's rows, capped at ``train.max_train``), *aux* (the attacker's
auxiliary images for its fresh decoder), *test* (utility on r + δ, and the first
``attack.targets`` of a seeded order are the attacked images). Stages (:mod:`core.stages`):
``rr_train`` (encoder, head, decoder Ψ, p_Φ) keyed by data, seed, defense and training; one
``rr_attack`` per attacker (a registered part of the family, called through
:func:`core.attacks.protocol.run_attack`) keyed by the trained model's key and the attack's own
parameters, so a change of attacker, targets or bound never retrains. The released noise draws
come from streams of the run's seed, so every attacker sees the same r + δ.
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np
import torch

from core import caveats
from core.config import ReprReconstructionConfig
from core.progress import Progress
from core.result import Result
from core.seeds import stream, torch_stream
from core.stages import StageOutput, Stages

FAMILY = "repr_reconstruction"


def _train_part(cfg: ReprReconstructionConfig, device: str) -> dict[str, Any]:
    d = cfg.model_dump(mode="json")
    return {"kind": cfg.kind, "device": device, "seed": cfg.seed,
            **{k: d[k] for k in ("data", "defense", "train")}}


def _net_kwargs(cfg: ReprReconstructionConfig) -> dict[str, Any]:
    t, d = cfg.train, cfg.defense
    return {"channel": d.channel, "epsilon": d.epsilon, "hidden_dim": t.hidden_dim,
            "representation_dim": t.representation_dim, "decoder_hidden": t.decoder_hidden,
            "clip_norm": d.dp_clip_norm, "dp_delta": d.dp_delta}


def _rows(ds, cfg: ReprReconstructionConfig) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(train rows, aux rows, target rows): seeded, the targets a prefix of the test order."""
    rng = stream(cfg.seed, "repr_reconstruction", "rows")
    tr = np.array(ds.split("train"))  # a writable copy: torch indexes with it
    if len(tr) > cfg.train.max_train:
        tr = np.sort(rng.choice(tr, size=cfg.train.max_train, replace=False))
    te = np.array(ds.split("test"))
    targets = rng.permutation(te)[: min(cfg.attack.targets, len(te))]
    return tr, np.array(ds.split("aux")), targets


def run_repr_reconstruction(cfg: ReprReconstructionConfig, progress: Progress,
                            stages: Stages | None = None) -> Result:
    from core.attacks import reconstruction as RA
    from core.attacks.protocol import attack_params, attack_part, run_attack
    from core.bounds import reconstruction as B
    from core.data import load_dataset
    from core.defenses import inf2guard_reconstruction as D
    from core.device import get_device
    from core.knowledge import AdversaryKnowledge

    stages = stages or Stages(None)
    t0 = time.perf_counter()
    progress.update(0.01, f"loading {cfg.data.name}")
    ds = load_dataset(cfg.data, cfg.seed)
    shape = tuple(ds.image_shape)
    dev = get_device(cfg.device)
    X = torch.tensor(np.array(ds.X, dtype=np.float32), device=dev)
    y = torch.tensor(np.array(ds.y, dtype=np.int64), device=dev)
    n_classes, d = len(ds.label_names), int(X.shape[1])
    tr, ax, tg = _rows(ds, cfg)
    te = np.array(ds.split("test"))
    dfn, t = cfg.defense, cfg.train
    kw = _net_kwargs(cfg)

    # -- train (cached): Algorithm 4 with the channel in the loop
    def train_stage() -> StageOutput:
        m = D.train_inf2guard_dra(
            X[tr], y[tr], n_classes=n_classes, channel=dfn.channel, epsilon=dfn.epsilon,
            tradeoff_lambda=dfn.tradeoff_lambda, entropy_alpha=dfn.entropy_alpha,
            mc_samples=dfn.mc_samples, epochs=t.epochs, batch_size=t.batch_size, lr=t.lr,
            hidden_dim=t.hidden_dim, representation_dim=t.representation_dim,
            decoder_hidden=t.decoder_hidden, clip_norm=dfn.dp_clip_norm, dp_delta=dfn.dp_delta,
            seed=cfg.seed, progress=progress.sub(0.03, 0.55))
        return StageOutput(meta={"curves": m.curves, "seconds_train": m.seconds},
                           weights=D.state_of(m))

    trained, train_key = stages.get("rr_train", _train_part(cfg, str(dev)), train_stage)
    model = D.load_model(trained.weights, d, n_classes, device=dev, seed=cfg.seed, **kw)
    pert = model.perturbation

    # -- the release: r + δ of the test rows and targets, one seeded draw each
    progress.update(0.56, "releasing r + δ")
    with torch.no_grad():
        Z_test = model.release(X[te], torch_stream(cfg.seed, "release", "test"))
        Z_tg = model.release(X[tg], torch_stream(cfg.seed, "release", "targets"))
        R_tr = pert.prepare(model.representations(X[tr]))
        acc = float((model.head(Z_test).argmax(-1) == y[te]).float().mean())
        acc_clean = float((model.head(model.representations(X[te])).argmax(-1) == y[te])
                          .float().mean())
    y_np = np.asarray(ds.y)
    metrics: dict[str, float] = {
        "utility_acc": acc, "utility_acc_clean": acc_clean,
        "utility_majority": float(np.bincount(y_np[te]).max() / len(te)),
        "perturbation_scale": float(dfn.epsilon), "tradeoff_lambda": float(dfn.tradeoff_lambda),
        "entropy_beta": D.beta_of(dfn.tradeoff_lambda, dfn.entropy_alpha),
        "representation_dim": float(t.representation_dim), "data_dim": float(d),
        "recon_targets": float(len(tg)),
        "seconds_train": float(trained.meta["seconds_train"]),
    }
    noise = D.noise_summary(pert, seed=cfg.seed)
    metrics["noise_entropy_nats"] = float(np.mean(noise["entropy"])) if dfn.epsilon > 0 else math.nan
    metrics["noise_std_mean"] = float(np.mean(np.sqrt(noise["variance"])))
    if dfn.channel == "dp":
        metrics["epsilon_accountant"] = float(pert.dp_epsilon())
    notes: list[str] = []

    # -- attacks (each cached under the trained model's key and its own parameters)
    a = cfg.attack
    recon: dict[str, np.ndarray] = {}
    sub = progress.sub(0.58, 0.92)
    release = RA.NoisyRepresentationRelease(targets=Z_tg, encoder=model.encoder,
                                            perturbation=pert, image_shape=shape,
                                            decoder=model.decoder)
    # the attacker's auxiliary images; it trains with the defender's optimiser settings
    knowledge = AdversaryKnowledge(n_classes=n_classes, extra={"aux_images": X[ax]})
    for i, name in enumerate(a.attackers):
        params = attack_params(attack_part(name, FAMILY), a)
        part = {"train": train_key, "attack": name, "targets": tg.tolist(), "params": params}
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

    # -- scores
    progress.update(0.93, "scoring")
    targets = np.asarray(ds.X, np.float64)[tg]
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
    best = best_part.key
    for stat in ("mse", "psnr", "ssim"):
        metrics[f"recon_{stat}"] = metrics[best_part.metric_name(stat)]
        intervals[f"recon_{stat}"] = intervals[best_part.metric_name(stat)]

    # -- Theorem 3 at an estimated upper bound on I(x; r + δ)
    var_r = R_tr.double().var(0).cpu().numpy()
    mi = B.mi_upper_bound_additive(var_r, noise["variance"], noise["entropy"])
    metrics["bound_thm3_mi_nats"] = mi if math.isfinite(mi) else math.nan  # nan: unbounded
    etas = {"l2": cfg.bound.eta_rmse * math.sqrt(d), "linf": cfg.bound.eta_linf}
    violations = 0
    for norm, eta in etas.items():
        pt = B.theorem3_unit_cube(mi, d, eta, norm)
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
    # -- the same bound under the data's own entropy instead of the uniform prior (issue #22):
    # the dequantised pixels' Gaussian maximum-entropy value, an upper estimate of h(x), so
    # this is an upper estimate of the bound (no share below it is conclusive)
    from core.bounds.entropy import dequantised

    deq = dequantised(np.asarray(ds.X, np.float64)[tr], knn=False, seed=cfg.seed)
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
    for k in ("mu", "sigma"):
        if k in noise:
            artifacts[f"noise_{k}"] = noise[k]
    curves = {"epoch": [float(i + 1) for i in range(len(trained.meta["curves"]["utility_ce"]))]}
    for src, dst in (("utility_ce", "train_utility_ce"), ("decoder_mse", "train_decoder_mse"),
                     ("noise_entropy", "train_noise_entropy")):
        curves[dst] = [float(v) for v in trained.meta["curves"][src]]
    metrics["seconds_total"] = time.perf_counter() - t0
    info = {"notes": notes, "strongest_attack": best, "stages": dict(stages.log),
            "channel": dfn.channel, "image_shape": list(shape),
            "accountant": "Gaussian mechanism, exact δ(ε) (Balle & Wang 2018)"
            if dfn.channel == "dp" else None}
    info["caveats"] = caveats.collect(cfg.kind, metrics, info, cfg.model_dump(mode="json"),
                                      intervals=intervals)
    return Result(kind=cfg.kind, config=cfg.model_dump(mode="json"), seed=cfg.seed,
                  metrics=metrics, intervals=intervals, curves=curves, artifacts=artifacts,
                  info=info)
