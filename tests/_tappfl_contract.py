"""A Result shaped exactly like notes/TAPPFL_RESULT.md, for page tests that must not depend on
how long (or how well) the real TAPPFL engine trains: the page renders any Result that follows
the contract. Values are derived from the config (λ) and the closed-form bounds, not typed in."""

from __future__ import annotations

import numpy as np

from core.bounds.tappfl import thm1_tradeoff, thm2_exact_bound, thm2_paper_bound
from core.result import Result


def contract_runner(cfg, progress=None, cancel=None) -> Result:
    """Runner with the store's signature producing a contract-shaped ``tappfl`` Result."""
    rng = np.random.default_rng(cfg.seed)
    lam = float(cfg.tradeoff_lambda) if cfg.defense == "tappfl" else 0.0
    k = 7 if cfg.data.private_attribute == "marital_status" else 2
    rounds = cfg.fl.rounds
    chance = 1.0 / k
    util = 0.85 - 0.1 * lam
    acc = {"in_training": 0.8 - 0.3 * lam, "logreg": 0.82 - 0.25 * lam, "mlp": 0.84 - 0.2 * lam,
           "prior": chance, "raw_logreg": 0.83, "raw_mlp": 0.86}
    h = float(np.clip(0.3 + 0.6 * lam, 0, 1))
    t1 = thm1_tradeoff(delta_y_u=0.2, R=3.0, C_L=0.5, adv=2 * acc["mlp"] - 1)
    m = {"utility_acc": util, "utility_acc_paper": util + 0.01, "utility_acc_raw": 0.86,
         "chance": chance, "n_values": float(k), "h_u_given_r_bits": h,
         "bound_thm2_paper": float(thm2_paper_bound(h)), "bound_thm2_exact": float(thm2_exact_bound(h)),
         "bound_thm2_valid": 1.0, "bound_thm1_rhs": float(t1["rhs"]), "bound_thm1_delta": 0.2,
         "bound_thm1_R": 3.0, "bound_thm1_CL": 0.5, "bound_thm1_adv": float(t1["adv"]),
         "bound_thm1_vacuous": float(t1["vacuous"]), "ce_loss": 0.6, "jsd_loss": -0.3,
         "seconds_train": 0.1, "seconds_eval": 0.1}
    if k > 2:  # the theorems cover binary attributes only: no Thm 1 numbers, Thm 2 not valid
        m = {n: v for n, v in m.items() if not n.startswith("bound_thm1_")}
        m.update(bound_thm2_valid=0.0, bound_thm2_paper=float("nan"), bound_thm2_exact=float("nan"))
    for who, a in acc.items():
        m.update({f"attack_{who}_acc": a, f"attack_{who}_bacc": a, f"attack_{who}_auc": min(a + 0.05, 1.0),
                  f"attack_{who}_adv": 2 * a - 1, f"gap_{who}": a - chance})
    n = 60
    u = rng.integers(0, k, n)
    curves = {"round": [float(r) for r in range(1, rounds + 1)]}
    for name in ("ce_loss", "jsd_loss", "in_training_acc", "utility_acc", "attack_logreg_auc", "seconds"):
        curves[name] = list(np.linspace(0.5, 0.7, rounds))
    arts = {"proj_raw": rng.normal(size=(n, 2)) + u[:, None], "proj_repr": rng.normal(size=(n, 2)),
            "proj_attribute": u, "proj_label": rng.integers(0, 2, n)}
    info = {"dataset": cfg.data.name, "private_attribute": cfg.data.private_attribute,
            "attribute_values": [f"u={i}" for i in range(k)],
            "label_names": ["y=0", "y=1"], "defense": cfg.defense, "notes": [],
            "bound_caveat": "estimate, not a certificate"}
    if k > 2:
        info["thm2_message"] = "Theorem 2 covers binary attributes only"
    return Result(kind="tappfl", config=cfg.model_dump(mode="json"), seed=cfg.seed, metrics=m,
                  curves=curves, artifacts=arts, info=info, timings={"total_s": 0.1})
