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

    from core import seeds as S
    from core.attacks import membership as M
    from core.attacks.shadows import shadow_splits
    from core.config import MembershipConfig
    from core.data import load_dataset
    from core.defenses.inf2guard import train_inf2guard

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

            def train(rows_: np.ndarray, s: int, lam=lam, pre=pre):
                return train_inf2guard(X[rows_], y[rows_], X[d0], n_classes=n_classes,
                                       tradeoff_lambda=lam, epochs=max(1, epochs - pre),
                                       pretrain_epochs=pre, batch_size=t.batch_size, lr=t.lr,
                                       seed=s)

            def outputs(m) -> dict[str, np.ndarray]:
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
# 5. FIL against membership: LiRA on the FIL page's own output-perturbed GLM


def _tpr_at(scores_in: np.ndarray, scores_out: np.ndarray, fpr: float) -> float:
    from core.metrics import tpr_at_fpr

    s = np.concatenate([scores_in.ravel(), scores_out.ravel()])
    y = np.r_[np.ones(scores_in.size, np.int64), np.zeros(scores_out.size, np.int64)]
    return float(tpr_at_fpr(y, s, fpr))


def _fil_view_lira(data: dict[str, Any], *, seed: int, shadows: int, draws: int,
                   top: float, eta_target: float | None) -> dict[str, Any]:
    """LiRA against the FIL kind's release on one view, before and after IRFIL; σ solved for
    ``eta_target`` (None: the config's default)."""
    from core import fil
    from core import seeds as S
    from core.attacks import fil_membership as FM
    from core.attacks.shadows import shadow_splits
    from core.bounds.fil import sigma_for_eta
    from core.config import FisherInformationConfig
    from core.runs.fisher_information import fit_labels, load_view
    from core.metrics import roc_curve_points

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
    th_s = FM.shadow_fits(X, y, in_mask, model=m.model, l2=m.l2)
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
    # -- IRFIL released (the attacker knows it: its shadows run IRFIL on their own rows)
    clamp = (ir.min_weight, math.inf if ir.max_weight is None else ir.max_weight)
    tr_ir = fil.irfil(view.X, y_tr, model=m.model, l2=m.l2, iterations=ir.iterations,
                      method=ir.weight_method, clamp=clamp)
    fit_ir = tr_ir.final.fit
    eta_ir_unit = fil.per_example_fil(fit_ir, view.X, y_tr)
    th_s_ir = FM.irfil_shadow_fits(X, y, in_mask, model=m.model, l2=m.l2,
                                   iterations=ir.iterations, method=ir.weight_method,
                                   clamp=clamp)
    k_top = max(1, int(round(top * n)))
    exposed = np.argsort(-per_ex0)[:k_top]  # LiRA's most exposed training rows (plain model)
    by_eta = np.argsort(-eta_unit)[:k_top]
    sigma_eq = sigma_for_eta(eta_ir_unit, eta_target=dfn.eta_target, reduce=dfn.eta_reduce)
    irfil_rows = {}
    for label, s in (("same_sigma", sigma), ("same_max_eta", sigma_eq)):
        sc1, _ = attack(fit_ir.theta, th_s_ir, s, f"irfil_{label}")
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
        }
    row["irfil"] = {
        "iterations": ir.iterations, "method": ir.weight_method,
        "top_fraction": top, "top_rows": int(k_top),
        "plain": {"sigma": sigma, "test_acc_noiseless": plain.accuracy(view.X_test, y_te),
                  "top_exposed_mean_score": float(per_ex0[exposed].mean()),
                  "top_exposed_tpr_at_1pct": _tpr_at(sc0[:, exposed], sc0[:, ~member], 0.01),
                  "top_exposed_tpr_at_5pct": _tpr_at(sc0[:, exposed], sc0[:, ~member], 0.05),
                  "top_eta_mean_score": float(per_ex0[by_eta].mean()),
                  "all_members_mean_score": float(per_ex0.mean())},
        **irfil_rows,
        "overlap_top_exposed_top_eta": float(np.intersect1d(exposed, by_eta).size / k_top),
    }
    row["seconds"] = round(time.perf_counter() - t0, 1)
    return row


def fil_lira(*, seeds: tuple[int, ...], shadows: int, draws: int, adult: bool,
             eta_targets: tuple[float, ...], quick: bool) -> dict[str, Any]:
    views = [{"name": "digits"}]  # the FIL page's default view: 0 vs 1, PCA 20
    if adult and not quick:
        views.append({"name": "adult", "adult_view": "paper"})
    rows = []
    for data in views:
        for seed, eta_t in [(s_, e_) for e_ in eta_targets for s_ in seeds]:
            try:
                row = _fil_view_lira(data, seed=seed, shadows=8 if quick else shadows,
                                     draws=10 if quick else draws, top=0.1, eta_target=eta_t)
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
                      "training rows by the plain model's per-example LiRA score.")}


# =============================================================================================


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="benchmarks.faithfulness_research")
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("repr-mia")
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    p.add_argument("--lambdas", type=float, nargs="+", default=[0.0, 0.5, 1.0])
    p.add_argument("--shadows", type=int, default=16)
    p = sub.add_parser("fil-lira")
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    p.add_argument("--shadows", type=int, default=128)
    p.add_argument("--draws", type=int, default=100)
    p.add_argument("--adult", action="store_true")
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
    elif a.cmd == "fil-lira":
        res = fil_lira(seeds=tuple(a.seeds), shadows=a.shadows, draws=a.draws, adult=a.adult,
                       eta_targets=tuple(a.eta_targets), quick=a.quick)
    res["seconds"] = round(time.perf_counter() - t0, 1)
    res["command"] = " ".join(["python -m benchmarks.faithfulness_research", *sys.argv[1:]])
    a.out.write_text(json.dumps(res, indent=1, default=float))
    print(json.dumps(res.get("headline"), indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
