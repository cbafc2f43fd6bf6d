"""A Result shaped like the ``attribute_privacy`` runner's (core/runs/attribute_privacy.py), for
page tests that must not depend on how long (or how well) the real engine trains: the page
renders any Result that follows the contract. Values are derived from the config (λ, the
defense, the attackers) and the closed-form bounds, not typed in; every attack metric carries a
95 % interval, as the runner's do."""

from __future__ import annotations

import numpy as np

from core.bounds.tappfl import (
    thm1_informative_below,
    thm1_tradeoff,
    thm2_exact_bound,
    thm2_paper_bound,
)
from core.foundation.result import Result

N_SCORED = 400
HALF_WIDTH = 0.04


def contract_runner(cfg, progress=None, cancel=None) -> Result:
    """Runner with the store's signature producing a contract-shaped ``attribute_privacy``
    Result."""
    rng = np.random.default_rng(cfg.seed)
    lam = float(cfg.tradeoff_lambda)  # the TAPPFL block's λ, else 0
    defense = cfg.defense.kind
    k = 7 if cfg.data.private_attribute == "marital_status" else 2
    rounds = cfg.fl.rounds
    chance = 1.0 / k
    util = 0.85 - 0.1 * lam
    fresh = tuple(cfg.attack.attackers)
    acc = {"in_training": 0.8 - 0.3 * lam, "prior": chance}
    base = {"logreg": 0.82 - 0.25 * lam, "mlp": 0.84 - 0.2 * lam}
    for who in fresh:
        acc[who] = base.get(who, 0.8 - 0.2 * lam)
        acc[f"raw_{who}"] = {"logreg": 0.83, "mlp": 0.86}.get(who, 0.84)
    h = float(np.clip(0.3 + 0.6 * lam, 0, 1))
    on_release = [w for w in ("in_training", *fresh)]
    best = max(on_release, key=lambda w: acc[w])
    t1 = thm1_tradeoff(delta_y_u=0.2, R=3.0, C_L=0.5, adv=2 * acc[best] - 1)
    m = {"utility_acc": util, "utility_acc_paper": util + 0.01, "utility_acc_raw": 0.86,
         "utility_majority": 0.55, "chance": chance, "n_values": float(k), "h_u_given_r_bits": h,
         "bound_thm2_paper": float(thm2_paper_bound(h)), "bound_thm2_exact": float(thm2_exact_bound(h)),
         "bound_thm2_valid": 1.0, "bound_thm1_rhs": float(t1["rhs"]), "bound_thm1_delta": 0.2,
         "bound_thm1_R": 3.0, "bound_thm1_CL": 0.5, "bound_thm1_adv": float(t1["adv"]),
         "bound_thm1_vacuous": float(t1["vacuous"]),
         "bound_thm1_adv_threshold": thm1_informative_below(0.2, 3.0, 0.5),
         "ce_loss": 0.6, "jsd_loss": -0.3, "seconds_train": 0.1, "seconds_eval": 0.1}
    if k > 2:  # the theorems cover binary attributes only: no Thm 1 numbers, Thm 2 not valid
        m = {n: v for n, v in m.items() if not n.startswith("bound_thm1_")}
        m.update(bound_thm2_valid=0.0, bound_thm2_paper=float("nan"), bound_thm2_exact=float("nan"))
    intervals: dict[str, dict[str, float]] = {}

    def put(name: str, v: float, lo: float = 0.0, hi: float = 1.0) -> None:
        m[name] = v
        intervals[name] = {"lo": max(v - HALF_WIDTH, lo), "hi": min(v + HALF_WIDTH, hi), "n": N_SCORED}

    for who, a in acc.items():
        auc = 0.5 if who == "prior" else min(a + 0.05, 1.0)
        put(f"attack_{who}_acc", a)
        put(f"attack_{who}_bacc", 0.5 if who == "prior" else a)
        put(f"attack_{who}_auc", auc)
        put(f"attack_{who}_adv", max(2 * a - 1, 0.0) if who != "prior" else 0.0)
        m[f"attack_{who}_ce_nats"] = 0.69 - 0.3 * (a - chance)
        m[f"gap_{who}"] = a - chance
    for stat, name in (("auc", "attack_auc_best"), ("bacc", "attack_bacc_best"),
                       ("acc", "attack_acc_best"), ("adv", "advantage_best")):
        m[name] = m[f"attack_{best}_{stat}"]
        intervals[name] = dict(intervals[f"attack_{best}_{stat}"])
    if k == 2:
        m.update(tpr_at_1pct_fpr=0.03, tpr_at_0p1pct_fpr=0.004)
    if defense == "tappfl":
        m["tradeoff_lambda"] = lam
    elif defense in ("dp_gaussian", "dp_laplace"):
        eps = cfg.defense.epsilon
        m.update({"dp_sigma" if defense == "dp_gaussian" else "dp_laplace_b": 1.0 / eps,
                  "dp_epsilon_round": eps, "dp_epsilon_total": eps * rounds,
                  "epsilon_accountant": eps * rounds, "dp_delta_total": cfg.defense.delta * rounds})
    elif defense == "pruning":
        m["pruning_rate"] = cfg.defense.rate
    n = 60
    u = rng.integers(0, k, n)
    curves = {"round": [float(r) for r in range(1, rounds + 1)]}
    for name in ("ce_loss", "jsd_loss", "in_training_acc", "utility_acc", "attack_logreg_auc", "seconds"):
        curves[name] = list(np.linspace(0.5, 0.7, rounds))
    arts = {"proj_raw": rng.normal(size=(n, 2)) + u[:, None], "proj_repr": rng.normal(size=(n, 2)),
            "proj_attribute": u, "proj_label": rng.integers(0, 2, n)}
    if k == 2:
        for who in on_release:
            arts[f"roc_{who}_fpr"] = np.array([0.0, 0.2, 1.0], np.float32)
            arts[f"roc_{who}_tpr"] = np.array([0.0, acc[who], 1.0], np.float32)
    info = {"dataset": cfg.data.name, "private_attribute": cfg.data.private_attribute,
            "attribute_values": [f"u={i}" for i in range(k)],
            "label_names": ["y=0", "y=1"], "defense": defense, "notes": [],
            "best_attacker": best, "bound_caveat": "estimate, not a certificate",
            "stages": {"train": "computed", "release": "computed", "attack": "computed"}}
    if defense in ("dp_gaussian", "dp_laplace"):
        info["accountant"] = "contract"
    if k > 2:
        info["thm2_message"] = "Theorem 2 covers binary attributes only"
    return Result(kind="attribute_privacy", config=cfg.model_dump(mode="json"), seed=cfg.seed,
                  metrics=m, intervals=intervals, curves=curves, artifacts=arts, info=info,
                  timings={"total_s": 0.1})
