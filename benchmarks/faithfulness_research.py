"""Research measurements for issue #22 (threats that exist, bounds under their assumptions, FIL
against membership); each subcommand writes one JSON the lead folds into
``benchmarks/results/faithfulness.json``::

    PYTHONPATH=. python -m benchmarks.faithfulness_research repr-mia --out repr_mia.json
    PYTHONPATH=. python -m benchmarks.faithfulness_research repr-ssim --out repr_ssim.json
    PYTHONPATH=. python -m benchmarks.faithfulness_research thm3 --out thm3.json
    PYTHONPATH=. python -m benchmarks.faithfulness_research kappa-thm1 --out kappa_thm1.json
    PYTHONPATH=. python -m benchmarks.faithfulness_research fil-lira --out fil_lira.json

Every subcommand takes ``--quick`` (a tiny setting that checks the plumbing in seconds).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np


def _mean_interval(values: list[float], confidence: float = 0.95) -> dict[str, Any]:
    """Mean over seeds with a Student-t interval (n >= 2; wide for two seeds, as it should be)."""
    from scipy import stats

    v = np.asarray([x for x in values if x is not None and math.isfinite(x)], np.float64)
    if v.size == 0:
        return {"mean": None, "lo": None, "hi": None, "n": 0}
    if v.size == 1:
        return {"mean": float(v[0]), "lo": None, "hi": None, "n": 1}
    half = stats.t.ppf(0.5 + confidence / 2, v.size - 1) * v.std(ddof=1) / math.sqrt(v.size)
    return {"mean": float(v.mean()), "lo": float(v.mean() - half), "hi": float(v.mean() + half),
            "n": int(v.size), "values": [float(x) for x in v]}


# =============================================================================================
# 1. membership at the representation (Inf2Guard, kind membership's default setting)


def _representation_attack(R: np.ndarray, member: np.ndarray, seed: int):
    """The paper's attack (fresh MLP on r alone), wherever the engine keeps it."""
    try:
        from core.attacks.membership import representation_attack as f  # after branch reg
    except ImportError:
        from core.runs.membership import _representation_attack as f
    return f(R, member, seed)


def repr_mia(*, seeds: tuple[int, ...], lambdas: tuple[float, ...], shadows: int,
             quick: bool) -> dict[str, Any]:
    """Inf2Guard (membership, mnist5k, 500 members, 60 epochs: MembershipConfig's defaults) at
    each λ and seed: the target and ``shadows`` shadow encoders trained the target's way on
    halves of the pool; scored by the in-training adversary, the paper's representation
    attack (fresh MLP on r), the head statistic on (r, y) alone and LiRA on it (online and
    offline), and LiRA on the released model C∘f."""
    import torch

    from core.attacks import membership as M
    from core.config.schema import MembershipConfig
    from core.data import load_dataset
    from core.defenses.inf2guard import train_inf2guard
    from core.engine.shadow_training import shadow_splits
    from core.foundation import seeds as S

    base = MembershipConfig()
    t = base.train
    members = 100 if quick else t.members
    epochs = 8 if quick else t.epochs
    data = "digits" if quick else base.data.name
    rows: list[dict[str, Any]] = []
    for seed in seeds:
        ds = load_dataset(base.data.model_copy(update={"name": data}), seed)
        X = torch.tensor(np.asarray(ds.X), dtype=torch.float32)
        y = torch.tensor(np.asarray(ds.y), dtype=torch.int64)
        n_classes = len(ds.label_names)
        tr, ax, te = (np.array(ds.split(s)) for s in ("train", "aux", "test"))
        rng = S.stream(seed, "pool")
        pool = np.sort(rng.choice(tr, size=2 * members, replace=False))
        member = np.zeros(2 * members, bool)
        member[rng.choice(2 * members, size=members, replace=False)] = True
        d0 = np.sort(S.stream(seed, "d0").choice(ax, size=min(len(ax) // 2, members),
                                                  replace=False))
        z = np.setdiff1d(ax, d0)  # population: in no model's training set
        in_mask = shadow_splits(len(pool), shadows, seed=S.derive(seed, "shadow_splits"))
        y_pool, y_z = np.asarray(ds.y)[pool], np.asarray(ds.y)[z]
        for lam in lambdas:
            t0 = time.perf_counter()
            pre = max(1, epochs // 4)

            def train(rows_: np.ndarray, s: int, lam: float = lam, pre: int = pre,
                      X: Any = X, y: Any = y, d0: np.ndarray = d0, n_classes: int = n_classes):
                return train_inf2guard(X[rows_], y[rows_], X[d0], n_classes=n_classes,
                                       tradeoff_lambda=lam, epochs=max(1, epochs - pre),
                                       pretrain_epochs=pre, batch_size=t.batch_size, lr=t.lr,
                                       seed=s)

            def outputs(m, X: Any = X, pool: np.ndarray = pool, z: np.ndarray = z,
                        y_pool: np.ndarray = y_pool) -> dict[str, np.ndarray]:
                p = torch.softmax(m.logits(X[pool]), -1)
                return {"r_pool": m.representations(X[pool]).double().numpy(),
                        "r_z": m.representations(X[z]).double().numpy(),
                        "p_true": p[np.arange(len(pool)), y_pool].double().numpy()}

            tgt = train(pool[member], S.derive(seed, "target"))
            T = outputs(tgt)
            util = float((tgt.logits(X[te]).argmax(-1) == y[te]).float().mean())
            train_acc = float((tgt.logits(X[pool[member]]).argmax(-1)
                               == y[pool[member]]).float().mean())
            adv = tgt.membership_proba(X[pool]).double().numpy()
            sh = [outputs(train(pool[in_mask[k]], S.derive(seed, "shadow", k)))
                  for k in range(shadows)]
            secs = time.perf_counter() - t0
            ins = in_mask.T
            phi = M.logit_scale(np.stack([s["p_true"] for s in sh], 1))
            scores = {
                "in_training": adv,
                "representation_paper": _representation_attack(T["r_pool"], member, seed)[0],
                "representation_head": M.head_statistic(T["r_pool"], y_pool, T["r_z"], y_z),
                "representation_lira": M.representation_lira(
                    T["r_pool"], T["r_z"], np.stack([s["r_pool"] for s in sh]),
                    np.stack([s["r_z"] for s in sh]), y_pool, y_z, in_mask),
                "representation_lira_offline": M.representation_lira(
                    T["r_pool"], T["r_z"], np.stack([s["r_pool"] for s in sh]),
                    np.stack([s["r_z"] for s in sh]), y_pool, y_z, in_mask, online=False),
                "model_loss": M.confidence_attack(T["p_true"]),
                "model_lira": M.lira_online(M.logit_scale(T["p_true"]),
                                            np.where(ins, phi, np.nan), np.where(~ins, phi, np.nan)),
            }
            row: dict[str, Any] = {"seed": seed, "lambda": lam, "utility": util,
                                   "train_acc": train_acc, "train_test_gap": train_acc - util,
                                   "seconds": round(secs, 1)}
            for name, sc in scores.items():
                rep = M.membership_report(sc, member, seed=seed)
                row[f"{name}_auc"] = rep["auc"]
                row[f"{name}_auc_interval"] = list(rep["auc_interval"])
                row[f"{name}_tpr_at_1pct"] = rep["tpr_at_1pct"]
                row[f"{name}_bacc"] = rep["balanced_accuracy"]
            rows.append(row)
            print({k: (round(v, 3) if isinstance(v, float) else v) for k, v in row.items()
                   if "interval" not in k}, flush=True)
    attacks = ("in_training", "representation_paper", "representation_head",
               "representation_lira", "representation_lira_offline", "model_loss", "model_lira")
    summary = {}
    for lam in lambdas:
        pts = [r for r in rows if r["lambda"] == lam]
        summary[f"{lam:g}"] = {"utility": _mean_interval([r["utility"] for r in pts]),
                               **{f"{a}_auc": _mean_interval([r[f"{a}_auc"] for r in pts])
                                  for a in attacks}}
    und = summary[f"{lambdas[0]:g}"]
    return {"name": "repr_mia", "data": data, "members": members, "epochs": epochs,
            "shadows": shadows, "seeds": list(seeds), "lambdas": list(lambdas), "rows": rows,
            "summary": summary,
            "headline": {"repr_mia_undefended": und["representation_lira_auc"]["mean"]},
            "notes": ("λ = lambdas[0] is the undefended encoder. representation_lira: LiRA "
                      "online on the head statistic (core.attacks.membership."
                      "representation_lira), population = aux rows outside D0 (never trained "
                      "on); model_lira: LiRA online on C∘f's true-class probability with the "
                      "same shadows; intervals: per seed a stratified bootstrap of the AUC, "
                      "over seeds a Student-t interval of the mean.")}


# =============================================================================================
# 2. representation reconstruction: learned δ against every fixed channel at matched utility,
#    and (4a) Theorem 3 under an estimated entropy of x on the same runs

RR_CHANNELS = ("learned", "gaussian", "laplace", "uniform", "dp")
RR_EPS = (0.5, 1.0, 2.0, 4.0)
RR_ETAS = {"l2": (0.1, 0.15, 0.2), "linf": (0.1, 0.25, 0.4)}
RR_ATTACKERS = ("decoder_in_training", "decoder_fresh", "inversion")


def _lowest_ssim_with_utility(pts: list[dict[str, Any]], u_ref: float) -> dict[str, Any]:
    """The lowest SSIM a channel reaches along its ε curve while keeping utility >= u_ref:
    :func:`core.runs.compare.utility_at_level` with the two axes' roles swapped (the engine matches
    utility at a leakage level; here leakage at a utility level: leakage → −utility, utility →
    −SSIM), crossings interpolated linearly in ε."""
    from core.runs.compare import utility_at_level

    k = [p["epsilon"] for p in pts]
    m = utility_at_level(k, [-p["utility"] for p in pts], [-p["ssim"] for p in pts], -u_ref)
    return {"ssim": None if m.utility is None else -m.utility, "how": m.how, "epsilon": m.knob}


def _utility_at_ssim(pts: list[dict[str, Any]], level: float) -> float | None:
    from core.runs.compare import utility_at_level

    return utility_at_level([p["epsilon"] for p in pts], [p["ssim"] for p in pts],
                            [p["utility"] for p in pts], level).utility


def _thm3_counts(r: Any, mi: float, data: Any, d_full: int) -> dict[str, Any]:
    """Theorem 3 at every η of RR_ETAS for one run, under the uniform prior (the paper's) and
    under the data's estimated entropy (Gaussian maximum-entropy value and k-NN), with the
    strongest attacker's share of errors >= η against each."""
    from core.bounds import reconstruction as B

    X = np.asarray(r.artifacts["originals"], np.float64).reshape(len(r.artifacts["originals"]), -1)
    errs = {a: B.reconstruction_errors(np.asarray(r.artifacts[f"recon_{a}"]).reshape(len(X), -1),
                                       X) for a in RR_ATTACKERS if f"recon_{a}" in r.artifacts}
    out: dict[str, Any] = {"uniform": [0, 0], "gaussian": [0, 0], "knn": [0, 0], "below": []}
    if not math.isfinite(mi):
        return out
    for norm, etas in RR_ETAS.items():
        for e in etas:
            eta = e * math.sqrt(d_full) if norm == "l2" else e
            share = min(float(np.mean(v[norm] >= eta)) for v in errs.values())
            pts = {"uniform": B.theorem3_unit_cube(mi, d_full, eta, norm),
                   "gaussian": B.theorem3_dequantised(mi, data, eta, norm, entropy="gaussian"),
                   "knn": B.theorem3_dequantised(mi, data, eta, norm, entropy="knn")}
            for name, pt in pts.items():
                if pt.vacuous:
                    continue
                out[name][0] += 1
                if share < pt.bound:
                    out[name][1] += 1
                    out["below"].append({"prior": name, "norm": norm, "eta": eta,
                                         "share_ge_eta": share, "bound": pt.bound})
    return out


def repr_ssim(*, data: str, seeds: tuple[int, ...], eps_ref: tuple[float, ...],
              quick: bool) -> dict[str, Any]:
    """The repr_reconstruction kind at its defaults (λ = 0.4, the default encoder and attacks)
    on ``data``: ε = 0 once (λ = 0.4 and λ = 0), then every channel over RR_EPS, per seed."""
    from core.bounds.entropy import dequantised
    from core.config.schema import DataSpec, ReprReconstructionConfig
    from core.data import load_dataset
    from core.runs.experiments import run

    base = ReprReconstructionConfig().model_dump(mode="json")
    eps_grid = RR_EPS[1:3] if quick else RR_EPS
    rows: list[dict[str, Any]] = []
    thm3: dict[str, list[int]] = {"uniform": [0, 0], "gaussian": [0, 0], "knn": [0, 0]}
    below: list[dict[str, Any]] = []
    ent_info: dict[str, Any] = {}
    for seed in seeds:
        ds = load_dataset(DataSpec(name=data), seed)
        Xtr = np.asarray(ds.X, np.float64)[ds.split("train")]
        deq = dequantised(Xtr, seed=seed)
        d_full = int(Xtr.shape[1])
        ent_info[str(seed)] = {"informative_pixels": deq.d, "pixels": d_full, "step": deq.step,
                               "h_gaussian_nats": deq.h_gaussian, "h_knn_nats": deq.h_knn,
                               "log_volume_nats": deq.log_volume}

        def record(channel: str, eps: float, lam: float, seed: int = seed, deq: Any = deq,
                   d_full: int = d_full) -> None:
            cfg = {**base, "seed": seed, "data": {"name": data},
                   "defense": {**base["defense"], "channel": channel, "epsilon": eps,
                               "tradeoff_lambda": lam}}
            if quick:
                cfg["train"] = {**base["train"], "epochs": 3}
                cfg["attack"] = {**base["attack"], "targets": 10, "fresh_epochs": 5,
                                 "inversion_iterations": 30}
            t1 = time.perf_counter()
            r = run(cfg)
            m = r.metrics
            mi = float(m.get("bound_thm3_mi_nats", math.nan))
            c = _thm3_counts(r, mi, deq, d_full)
            for k, tally in thm3.items():
                tally[0] += c[k][0]
                tally[1] += c[k][1]
            below.extend({"seed": seed, "channel": channel, "epsilon": eps, **b}
                         for b in c["below"])
            row = {"seed": seed, "channel": channel, "epsilon": eps, "lambda": lam,
                   "utility": m["utility_acc"], "ssim": m["recon_ssim"],
                   "strongest": r.info["strongest_attack"], "mi_nats": mi,
                   "epsilon_dp": m.get("epsilon_accountant"),
                   "seconds": round(time.perf_counter() - t1, 1),
                   **{f"ssim_{a}": m[f"recon_{a}_ssim"] for a in RR_ATTACKERS}}
            rows.append(row)
            print({k: (round(v, 4) if isinstance(v, float) else v) for k, v in row.items()},
                  flush=True)

        lam = base["defense"]["tradeoff_lambda"]
        record("learned", 0.0, 0.0)
        record("learned", 0.0, lam)
        for ch in RR_CHANNELS:
            for eps in eps_grid:
                record(ch, eps, lam)
    # -- matched utility, per seed: the learned channel at ε_ref against each fixed channel
    matched: list[dict[str, Any]] = []
    for seed in seeds:
        zero = next(r for r in rows if r["seed"] == seed and r["epsilon"] == 0.0
                    and r["lambda"] > 0)
        for e_ref in (eps_ref if not quick else eps_grid[:1]):
            ref = next(r for r in rows if r["seed"] == seed and r["channel"] == "learned"
                       and r["epsilon"] == e_ref)
            per = {}
            for ch in RR_CHANNELS[1:]:
                pts = [zero, *[r for r in rows if r["seed"] == seed and r["channel"] == ch]]
                per[ch] = {**_lowest_ssim_with_utility(pts, ref["utility"]),
                           "utility_at_learned_ssim": _utility_at_ssim(pts, ref["ssim"])}
            reached = {ch: v["ssim"] for ch, v in per.items() if v["ssim"] is not None}
            best = min(reached, key=reached.get) if reached else None
            matched.append({"seed": seed, "eps_ref": e_ref, "learned_utility": ref["utility"],
                            "learned_ssim": ref["ssim"], "fixed": per, "best_fixed": best,
                            "best_fixed_ssim": reached.get(best),
                            "learned_minus_best_fixed": (ref["ssim"] - reached[best])
                            if best else None})
    summary = {}
    for e_ref in {m["eps_ref"] for m in matched}:
        ms = [m for m in matched if m["eps_ref"] == e_ref]
        summary[f"{e_ref:g}"] = {
            "learned_minus_best_fixed": _mean_interval([m["learned_minus_best_fixed"]
                                                        for m in ms]),
            "learned_ssim": _mean_interval([m["learned_ssim"] for m in ms]),
            "learned_utility": _mean_interval([m["learned_utility"] for m in ms]),
            **{f"{ch}_ssim": _mean_interval([m["fixed"][ch]["ssim"] for m in ms])
               for ch in RR_CHANNELS[1:]},
            "best_fixed_by_seed": [m["best_fixed"] for m in ms]}
    und = [r for r in rows if r["epsilon"] == 0.0]
    head_ref = f"{(eps_ref if not quick else eps_grid[:1])[0]:g}"
    return {"name": "repr_ssim", "data": data, "seeds": list(seeds), "rows": rows,
            "matched": matched, "summary": summary, "entropy": ent_info,
            "thm3": {"points_and_below": thm3, "below": below},
            "defaults": {k: base[k] for k in ("train", "attack", "defense")},
            "headline": {
                "repr_ssim_undefended": _mean_interval([r["ssim"] for r in und
                                                        if r["lambda"] == 0.0])["mean"],
                "repr_ssim_eps0_at_default_lambda": _mean_interval(
                    [r["ssim"] for r in und if r["lambda"] > 0])["mean"],
                "learned_minus_best_fixed_ssim_at_matched_utility":
                    summary[head_ref]["learned_minus_best_fixed"]["mean"],
                "thm3_points_below_estimated_bound": thm3["gaussian"][1]},
            "notes": ("SSIM = the strongest of the three attackers per point. Matched utility: "
                      "the learned channel at ε_ref; each fixed channel's lowest SSIM with "
                      "utility >= that (core.runs.compare.utility_at_level with the axes swapped, "
                      "crossings interpolated in ε; the ε = 0 run, no noise, starts every "
                      "curve); utility_at_learned_ssim is the engine's own direction (utility "
                      "at the learned SSIM). Theorem 3 points: non-vacuous (run, norm, η) "
                      "evaluations and those where the strongest attacker's share of errors "
                      ">= η falls below the bound, under the uniform prior (the paper's) and "
                      "under the data's entropy (dequantised pixels; Gaussian maximum-entropy "
                      "value: an upper estimate of the bound; k-NN: an estimate).")}


# =============================================================================================
# 4b. κ paper Theorem 1 against the mean MSE (the gradient-leakage benchmark's κ/d = 1 setting)


def kappa_thm1(*, seeds: tuple[int, ...], kappa_per_dim: float, quick: bool) -> dict[str, Any]:
    from benchmarks.gradient_leakage import IG_ITERATIONS, TARGETS
    from core.bounds.expectation import expected_error_check, mse_from_psnr
    from core.runs.experiments import run

    base = {"kind": "gradient_leakage", "data": {"name": "digits"},
            "train": {"model": "mlp", "epochs": 2 if quick else 10, "batch_size": 32,
                      "lr": 0.003, "optimizer": "adam"},
            "attack": {"attackers": ["idlg", "ig"], "targets": 4 if quick else TARGETS,
                       "batch_size": 1, "iterations": 50 if quick else IG_ITERATIONS,
                       "model_state": "fresh", "model_inversion": False}}
    out: dict[str, Any] = {"channels": {}}
    for ch in ("natural", "white", "personalized"):
        errs, bounds, runs = [], [], []
        for seed in seeds:
            r = run({**base, "seed": seed, "defense": {"kind": "channel", "channel": ch,
                                                       "kappa": kappa_per_dim * 64}})
            best = r.info["best_inverter"]
            mse = mse_from_psnr(r.artifacts[f"recon_{best}_psnr"])
            errs.append(mse)
            bounds.append(r.metrics["bound_thm1_round"])
            runs.append({"seed": seed, "best": best, "mean_mse": float(mse.mean()),
                         "engine_mean_mse": r.metrics["recon_best_mse"],
                         "bound": r.metrics["bound_thm1_round"],
                         "engine_points_below": r.metrics.get("bound_below_count")})
            print(ch, runs[-1], flush=True)
        chk = expected_error_check(errs, bounds)
        out["channels"][ch] = {"runs": runs, "seed_means_below": chk.seed_means_below,
                               "seeds": chk.seeds, "points_below": chk.points_below,
                               "points": chk.points, "mean": chk.mean,
                               "interval": list(chk.interval), "bound": chk.bound,
                               "explanation": chk.explanation}
    tot = out["channels"].values()
    out.update(name="kappa_thm1", kappa_per_dim=kappa_per_dim, seeds=list(seeds),
               headline={"kappa_thm1_seed_means_below_bound": sum(c["seed_means_below"]
                                                                  for c in tot)},
               points_below=sum(c["points_below"] for c in tot),
               points=sum(c["points"] for c in tot), seed_means=sum(c["seeds"] for c in tot),
               notes=("The gradient-leakage benchmark's defended setting (digits, MLP, idlg + "
                      "ig, 32 single-image uploads from the round-1 model) at κ/d = "
                      f"{kappa_per_dim:g}, Natural, White and Personalized; per-image MSE of "
                      "the strongest inverter from its per-image PSNR; the bound is the "
                      "per-round Theorem 1 floor (per pixel) the engine reports per run."))
    return out


# =============================================================================================
# 5. FIL against membership: LiRA on the FIL page's own output-perturbed GLM


def _tpr_at(scores_in: np.ndarray, scores_out: np.ndarray, fpr: float) -> float:
    from core.foundation.metrics import tpr_at_fpr

    s = np.concatenate([scores_in.ravel(), scores_out.ravel()])
    y = np.r_[np.ones(scores_in.size, np.int64), np.zeros(scores_out.size, np.int64)]
    return float(tpr_at_fpr(y, s, fpr))


_FIL_SHADOWS: dict[tuple[str, int, int], tuple[np.ndarray, np.ndarray]] = {}


def _fil_view_lira(data: dict[str, Any], *, seed: int, shadows: int, draws: int,
                   top: float, eta_target: float | None, with_irfil: bool = True
                   ) -> dict[str, Any]:
    """LiRA against the FIL kind's release on one view, before and after IRFIL; σ solved for
    ``eta_target`` (None: the config's default)."""
    from core.attacks import fil_membership as FM
    from core.bounds import fil_regression as fil
    from core.bounds.fil import sigma_for_eta
    from core.config.schema import FisherInformationConfig
    from core.engine.shadow_training import shadow_splits
    from core.foundation import seeds as S
    from core.foundation.metrics import roc_curve_points
    from core.runs.fisher_information import fit_labels, load_view

    raw: dict[str, Any] = {"kind": "fisher_information", "data": data, "seed": seed}
    if eta_target is not None:
        raw["defense"] = {"eta_target": eta_target}
    cfg = FisherInformationConfig.model_validate(raw)
    view = load_view(cfg)
    m, ir, dfn = cfg.model, cfg.irfil, cfg.defense
    y_tr, y_te = fit_labels(m.model, view.y), fit_labels(m.model, view.y_test)
    X = np.vstack([view.X, view.X_test])
    y = np.r_[y_tr, y_te]
    n, n_pool = len(y_tr), len(y)
    member = np.r_[np.ones(n, bool), np.zeros(n_pool - n, bool)]
    in_mask = shadow_splits(n_pool, shadows, seed=S.derive(seed, "fil_lira", "splits"),
                            fraction=n / n_pool)
    t0 = time.perf_counter()

    def auc(sc: np.ndarray) -> float:
        fpr, tpr = roc_curve_points(member.astype(np.int64), sc, drop_intermediate=False)
        return float(np.sum(np.diff(fpr) * (tpr[1:] + tpr[:-1]) / 2.0))

    def attack(theta_t: np.ndarray, theta_s: np.ndarray, sigma: float, tag: str):
        rng = S.stream(seed, "fil_lira", tag)
        st = FM.signed_margin(X, y, FM.releases(np.repeat(theta_t[None], draws, 0),
                                                sigma=sigma, rng=rng))
        ss = FM.signed_margin(X, y, FM.releases(theta_s, sigma=sigma, rng=rng))
        sc = FM.fil_lira(st, ss, in_mask)  # (draws, n_pool)
        return sc, FM.per_example_separation(FM.signed_margin(X, y, theta_s), in_mask)

    # -- the page's released model (IRFIL shown beside it, not released: irfil.release False)
    plain = fil.fit_glm(view.X, y_tr, model=m.model, l2=m.l2)
    eta_unit = fil.per_example_fil(plain, view.X, y_tr)
    sigma = sigma_for_eta(eta_unit, eta_target=dfn.eta_target, reduce=dfn.eta_reduce)
    key = (json.dumps(data, sort_keys=True), seed, shadows)
    if key not in _FIL_SHADOWS:  # σ-free: every η target reuses the shadows' fits
        clamp0 = (cfg.irfil.min_weight,
                  math.inf if cfg.irfil.max_weight is None else cfg.irfil.max_weight)
        _FIL_SHADOWS[key] = (
            FM.shadow_fits(X, y, in_mask, model=m.model, l2=m.l2),
            FM.irfil_shadow_fits(X, y, in_mask, model=m.model, l2=m.l2,
                                 iterations=cfg.irfil.iterations,
                                 method=cfg.irfil.weight_method, clamp=clamp0)
            if with_irfil else None)
    th_s, th_s_ir = _FIL_SHADOWS[key]
    sc0, sep0 = attack(plain.theta, th_s, sigma, "plain")
    per_ex0 = sc0[:, :n].mean(0)  # each training row's LiRA score, mean over release draws
    eta = eta_unit / sigma
    loss = plain.loss(view.X, y_tr)
    row: dict[str, Any] = {
        "view": data, "seed": seed, "n_train": n, "n_nonmembers": n_pool - n, "d": view.d,
        "model": m.model, "l2": m.l2, "eta_target": dfn.eta_target, "sigma": sigma,
        "eta_max": float(eta.max()),
        "shadows": shadows, "release_draws": draws,
        "lira_auc_mean_over_draws": _mean_interval([auc(s) for s in sc0]),
        "lira_tpr_at_1pct_pooled": _tpr_at(sc0[:, member], sc0[:, ~member], 0.01),
    }
    for name, other in (("lira_score", per_ex0), ("lira_separation", sep0[:n]), ("loss", loss)):
        rho, lo, hi = FM.spearman_interval(eta, other, seed=seed)
        row[f"spearman_eta_{name}"] = {"rho": rho, "lo": lo, "hi": hi}
    rho, lo, hi = FM.spearman_interval(per_ex0, loss, seed=seed)
    row["spearman_lira_score_loss"] = {"rho": rho, "lo": lo, "hi": hi}
    if th_s_ir is None:
        row["seconds"] = round(time.perf_counter() - t0, 1)
        return row
    # -- IRFIL released (the attacker knows it: its shadows run IRFIL on their own rows)
    clamp = (ir.min_weight, math.inf if ir.max_weight is None else ir.max_weight)
    tr_ir = fil.irfil(view.X, y_tr, model=m.model, l2=m.l2, iterations=ir.iterations,
                      method=ir.weight_method, clamp=clamp)
    fit_ir = tr_ir.final.fit
    eta_ir_unit = fil.per_example_fil(fit_ir, view.X, y_tr)
    k_top = max(1, round(top * n))
    # LiRA's most exposed training rows, chosen on the first half of the plain release draws
    # and scored on the second half (choosing and scoring on the same draws would favour them)
    half = draws // 2
    exposed = np.argsort(-sc0[:half, :n].mean(0))[:k_top]
    ev0 = sc0[half:]
    by_eta = np.argsort(-eta_unit)[:k_top]
    sigma_eq = sigma_for_eta(eta_ir_unit, eta_target=dfn.eta_target, reduce=dfn.eta_reduce)
    irfil_rows = {}
    for label, s in (("same_sigma", sigma), ("same_max_eta", sigma_eq)):
        sc1, _ = attack(fit_ir.theta, th_s_ir, s, f"irfil_{label}")
        sc1 = sc1[half:]
        per_ex1 = sc1[:, :n].mean(0)
        irfil_rows[label] = {
            "sigma": s, "eta_max": float((eta_ir_unit / s).max()),
            "test_acc_noiseless": fit_ir.accuracy(view.X_test, y_te),
            "lira_auc_mean_over_draws": _mean_interval([auc(x) for x in sc1]),
            "lira_tpr_at_1pct_pooled": _tpr_at(sc1[:, member], sc1[:, ~member], 0.01),
            "top_exposed_mean_score": float(per_ex1[exposed].mean()),
            "top_exposed_tpr_at_1pct": _tpr_at(sc1[:, exposed], sc1[:, ~member], 0.01),
            "top_exposed_tpr_at_5pct": _tpr_at(sc1[:, exposed], sc1[:, ~member], 0.05),
            "top_eta_mean_score": float(per_ex1[by_eta].mean()),
            "all_members_mean_score": float(per_ex1.mean()),
        }
    row["irfil"] = {
        "iterations": ir.iterations, "method": ir.weight_method,
        "top_fraction": top, "top_rows": int(k_top),
        "plain": {"sigma": sigma, "test_acc_noiseless": plain.accuracy(view.X_test, y_te),
                  "lira_auc_mean_over_draws": _mean_interval([auc(x) for x in ev0]),
                  "top_exposed_mean_score": float(ev0[:, exposed].mean()),
                  "top_exposed_tpr_at_1pct": _tpr_at(ev0[:, exposed], ev0[:, ~member], 0.01),
                  "top_exposed_tpr_at_5pct": _tpr_at(ev0[:, exposed], ev0[:, ~member], 0.05),
                  "top_eta_mean_score": float(ev0[:, by_eta].mean()),
                  "all_members_mean_score": float(ev0[:, :n].mean())},
        **irfil_rows,
        "overlap_top_exposed_top_eta": float(np.intersect1d(exposed, by_eta).size / k_top),
    }
    row["seconds"] = round(time.perf_counter() - t0, 1)
    return row


def fil_lira(*, seeds: tuple[int, ...], shadows: int, draws: int, adult: bool,
             eta_targets: tuple[float, ...], quick: bool, with_irfil: bool = True
             ) -> dict[str, Any]:
    views = [{"name": "digits"}]  # the FIL page's default view: 0 vs 1, PCA 20
    if adult and not quick:
        views = [{"name": "adult", "adult_view": "paper"}]
    rows = []
    for data in views:
        for seed, eta_t in [(s_, e_) for e_ in eta_targets for s_ in seeds]:
            try:
                row = _fil_view_lira(data, seed=seed, shadows=8 if quick else shadows,
                                     draws=10 if quick else draws, top=0.1, eta_target=eta_t,
                                     with_irfil=with_irfil)
            except (FileNotFoundError, OSError) as exc:  # Adult's files are optional
                rows.append({"view": data, "skipped": str(exc).splitlines()[0]})
                continue
            rows.append(row)
            print({k: v for k, v in row.items() if k != "irfil"}, flush=True)
    default_eta = eta_targets[0]
    dig = [r for r in rows if r.get("view", {}).get("name") == "digits" and "seed" in r
           and r["eta_target"] == default_eta]
    return {"name": "fil_lira", "rows": rows,
            "headline": {"fil_lira_spearman": _mean_interval(
                [r["spearman_eta_lira_score"]["rho"] for r in dig])["mean"]},
            "notes": ("Target: the FIL kind's default release (plain fit on every training row, "
                      "σ solved for max η = eta_target); members = training rows, non-members "
                      "= the view's test rows; shadows fit the same model on subsets of "
                      "train ∪ test of the target's size (each row IN with probability "
                      "n/(n + n_test)), each released with its own noise draw. Per-example "
                      "LiRA score = online LiRA (per-example variances) averaged over the "
                      "release draws; lira_separation = d' of LiRA's IN/OUT Gaussians. "
                      "Spearman intervals: paired percentile bootstrap over training rows. "
                      "IRFIL: the page's irfil block (5 iterations, sample weights) released; "
                      "the attacker's shadows run IRFIL too. 'top exposed' = the top 10 % of "
                      "training rows by the plain model's per-example LiRA score on the first half of the "
                      "release draws; every 'before / after' figure is scored on the second "
                      "half (independent draws).")}


# =============================================================================================


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="benchmarks.faithfulness_research")
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("repr-mia")
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    p.add_argument("--lambdas", type=float, nargs="+", default=[0.0, 0.5, 1.0])
    p.add_argument("--shadows", type=int, default=16)
    p = sub.add_parser("repr-ssim")
    p.add_argument("--data", default="mnist5k")
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    p.add_argument("--eps-ref", type=float, nargs="+", default=[2.0, 1.0, 4.0],
                   help="learned-channel ε where utility is matched; the first is the headline")
    p = sub.add_parser("kappa-thm1")
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--kappa-per-dim", type=float, default=1.0)
    p = sub.add_parser("fil-lira")
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    p.add_argument("--shadows", type=int, default=128)
    p.add_argument("--draws", type=int, default=100)
    p.add_argument("--adult", action="store_true",
                   help="the Adult paper view instead of the default digits view")
    p.add_argument("--no-irfil", action="store_true",
                   help="LiRA on the plain release only (no IRFIL shadows)")
    p.add_argument("--eta-targets", type=float, nargs="+", default=[3.2, 32.0, 320.0],
                   help="max-η targets σ is solved for; the first is the page's default")
    for q in sub.choices.values():
        q.add_argument("--quick", action="store_true")
        q.add_argument("--out", type=Path, required=True)
    a = ap.parse_args(argv)
    t0 = time.perf_counter()
    if a.cmd == "repr-mia":
        res = repr_mia(seeds=tuple(a.seeds), lambdas=tuple(a.lambdas), shadows=a.shadows,
                       quick=a.quick)
    elif a.cmd == "repr-ssim":
        res = repr_ssim(data=a.data, seeds=tuple(a.seeds), eps_ref=tuple(a.eps_ref),
                        quick=a.quick)
    elif a.cmd == "kappa-thm1":
        res = kappa_thm1(seeds=tuple(a.seeds), kappa_per_dim=a.kappa_per_dim, quick=a.quick)
    elif a.cmd == "fil-lira":
        res = fil_lira(seeds=tuple(a.seeds), shadows=a.shadows, draws=a.draws, adult=a.adult,
                       eta_targets=tuple(a.eta_targets), quick=a.quick,
                       with_irfil=not a.no_irfil)
    res["seconds"] = round(time.perf_counter() - t0, 1)
    res["command"] = " ".join(["python -m benchmarks.faithfulness_research", *sys.argv[1:]])
    from core.foundation.provenance import stamp

    res["provenance"] = stamp(res["command"])
    a.out.write_text(json.dumps(res, indent=1, default=float))
    print(json.dumps(res.get("headline"), indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
