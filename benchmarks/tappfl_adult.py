"""TAPPFL Table 2 on real UCI Adult (private sex and marital status, λ ∈ {0, .25, .5, .75, 1}),
paper preset, with the paper's numbers beside ours; then DP-Gaussian, DP-Laplace and pruning
tuned to the fresh-attacker AUC of TAPPFL at λ = 0.5 (sex) and their utility (the paper's Fig. 4
protocol). Every run goes through the result store, so a re-run is instant, and the stage cache
trains each encoder once: the raw-x attackers are shared by every run, and changing only the
attacker retrains nothing (headline ``retrained_on_attack_change``).

Data: ``$PRIVLAB_DATA_DIR`` or ``../shared/data/adult`` beside the repo.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from cache import default_store
from core.catalog.dp_gaussian import DPGaussianDefense
from core.catalog.dp_laplace import DPLaplaceDefense
from core.catalog.pruning import PruningDefense
from core.catalog.tappfl import TappflDefense
from core.config.schema import AttributePrivacyConfig, DataSpec
from core.defenses.tappfl import paper_preset, quick_preset
from core.runs.compare import beats_at_level, match_attack_level

LAMBDAS = (0.0, 0.25, 0.5, 0.75, 1.0)
#: in-training adversary settings: (Ψ steps per Θ step, Ψ learning rate / Θ learning rate).
#: "paper": one step at the same lr; "strong": Algorithm 1's separate lr1 = 10·lr3 with 5 steps.
ADVERSARY = {"paper": (1, 1.0), "strong": (5, 10.0)}
#: TAPPFL Table 2, Adult columns: λ -> (test acc, inference acc, gap) (spec B11)
PAPER = {
    "sex": {0.0: (0.825, 0.700, 0.20), 0.25: (0.750, 0.550, 0.05), 0.5: (0.750, 0.550, 0.05),
            0.75: (0.725, 0.550, 0.05), 1.0: (0.700, 0.525, 0.025)},
    "marital_status": {0.0: (0.825, 0.375, 0.232), 0.25: (0.800, 0.275, 0.112), 0.5: (0.800, 0.250, 0.107),
                       0.75: (0.725, 0.243, 0.043), 1.0: (0.700, 0.175, 0.032)},
}


def adult_dir() -> str:
    env = os.environ.get("PRIVLAB_DATA_DIR")
    if env:
        return env
    return str(Path(__file__).resolve().parents[2] / "shared" / "data" / "adult")


def with_(cfg: AttributePrivacyConfig, **changes: Any) -> AttributePrivacyConfig:
    """A validated copy with ``changes`` (model_copy would skip validation)."""
    return AttributePrivacyConfig.model_validate({**cfg.model_dump(), **changes})


def base_config(attribute: str, quick: bool, adversary: str = "strong") -> AttributePrivacyConfig:
    data = DataSpec(name="adult", private_attribute=attribute, data_dir=adult_dir())
    cfg = quick_preset(data) if quick else paper_preset(data)
    steps, scale = ADVERSARY[adversary]
    return with_(cfg, projection_points=0, adversary_steps=steps, adversary_lr_scale=scale)


def _row(cfg: AttributePrivacyConfig, r, attribute: str, label: str, seconds: float) -> dict[str, Any]:
    m = r.metrics
    tappfl = cfg.defense.kind == "tappfl"
    paper = PAPER[attribute].get(cfg.tradeoff_lambda) if tappfl else None
    return {
        "attribute": attribute, "defense": label, "lambda": cfg.tradeoff_lambda if tappfl else None,
        "adversary": f"{cfg.adversary_steps} step(s), lr x{cfg.adversary_lr_scale:g}",
        "utility": round(m["utility_acc"], 4), "utility_paper_head": round(m["utility_acc_paper"], 4),
        "paper_test": paper[0] if paper else None,
        "in_acc": round(m["attack_in_training_acc"], 4), "in_bacc": round(m["attack_in_training_bacc"], 4),
        "in_auc": round(m["attack_in_training_auc"], 4),
        "paper_infer": paper[1] if paper else None,
        "lr_acc": round(m["attack_logreg_acc"], 4), "lr_bacc": round(m["attack_logreg_bacc"], 4),
        "lr_auc": round(m["attack_logreg_auc"], 4),
        "mlp_acc": round(m["attack_mlp_acc"], 4), "mlp_bacc": round(m["attack_mlp_bacc"], 4),
        "mlp_auc": round(m["attack_mlp_auc"], 4),
        "prior_acc": round(m["attack_prior_acc"], 4),
        "best_auc": round(m["attack_auc_best"], 4),
        "best_auc_95ci": [round(x, 4) for x in r.interval("attack_auc_best")],
        "best_bacc": round(m["attack_bacc_best"], 4),
        "gap_in": round(m["gap_in_training"], 4), "paper_gap": paper[2] if paper else None,
        "eps_total": round(m["dp_epsilon_total"], 3) if "dp_epsilon_total" in m else None,
        "train_s": round(m["seconds_train"], 1), "wall_s": round(seconds, 1),
        "cached": r.from_cache,
        "train_stage": r.info.get("stages", {}).get("train"),
    }


def _run(cfg: AttributePrivacyConfig):
    t = time.perf_counter()
    r = default_store().get_or_run(cfg)
    return r, time.perf_counter() - t


def main(quick: bool = False) -> dict[str, Any]:
    rows: list[dict[str, Any]] = []
    results: dict[tuple[str, float], Any] = {}
    for attribute, adversary in (("sex", "strong"), ("marital_status", "strong"), ("sex", "paper")):
        base = base_config(attribute, quick, adversary)
        for lam in LAMBDAS:
            cfg = with_(base, defense=TappflDefense(tradeoff_lambda=lam))
            r, s = _run(cfg)
            if adversary == "strong":
                results[(attribute, lam)] = r
            rows.append(_row(cfg, r, attribute, "tappfl", s))
            print(f"  {attribute} ({adversary} adversary) λ={lam}: utility {r.metrics['utility_acc']:.3f}, "
                  f"in-training bacc {r.metrics['attack_in_training_bacc']:.3f}, "
                  f"LR AUC {r.metrics['attack_logreg_auc']:.3f}, MLP AUC {r.metrics['attack_mlp_auc']:.3f} "
                  f"({s:.0f} s)", flush=True)
    base = base_config("sex", quick)

    # baselines tuned to TAPPFL's fresh-attacker AUC at λ = 0.5 (sex)
    target = results[("sex", 0.5)].metrics["attack_mlp_auc"]
    tappfl_utility = results[("sex", 0.5)].metrics["utility_acc"]
    tuned: dict[str, Any] = {}
    for defense, lo, hi, inc, log in (
        ("dp_gaussian", 0.05, 200.0, True, True),
        ("dp_laplace", 0.05, 200.0, True, True),
        ("pruning", 0.0, 0.99, False, False),
    ):
        made: dict[float, Any] = {}

        def evaluate(knob: float, defense: str = defense, made: dict = made) -> tuple[float, float]:
            block = {"pruning": lambda: PruningDefense(rate=float(knob)),
                     "dp_gaussian": lambda: DPGaussianDefense(epsilon=float(knob)),
                     "dp_laplace": lambda: DPLaplaceDefense(epsilon=float(knob))}[defense]()
            cfg = with_(base, defense=block)
            r, s = _run(cfg)
            made[float(knob)] = (cfg, r, s)
            return r.metrics["attack_mlp_auc"], r.metrics["utility_acc"]

        res = match_attack_level(evaluate, target=target, lo=lo, hi=hi, increasing=inc, tol=0.01,
                                 max_evals=4 if quick else 8, log_scale=log)
        cfg, r, s = made[res.knob]
        row = _row(cfg, r, "sex", f"{defense} (knob {res.knob:.3g})", s)
        row["matched"] = bool(res.converged)
        rows.append(row)
        # TAPPFL wins at equal privacy when every baseline setting that pushed the attack down to
        # TAPPFL's level (or below) kept less utility; with a cliff (DP: divergence) there may be
        # no setting *at* the level, so this dominance test is the honest comparison
        best_below, better = beats_at_level(tappfl_utility, [h[1] for h in res.history],
                                            [h[2] for h in res.history], target, tol=0.01)
        tuned[defense] = {"knob": res.knob, "attack_mlp_auc": res.attack, "utility": res.utility,
                          "bracketed": res.bracketed, "converged": res.converged,
                          "history": res.history, "tappfl_utility": tappfl_utility,
                          "baseline_best_utility_at_or_below_target": best_below,
                          "tappfl_better": better}
        print(f"  {defense}: knob {res.knob:.3g} → MLP AUC {res.attack:.3f} (target {target:.3f}), "
              f"utility {res.utility:.3f} vs TAPPFL {tappfl_utility:.3f}", flush=True)

    r0 = results[("sex", 0.0)].metrics
    hi = [results[("sex", lam)].metrics for lam in (0.75, 1.0)]
    targets = {
        "lambda0_utility>=0.82": r0["utility_acc"] >= 0.82,
        "lambda0_fresh_mlp_auc_sex>=0.85": r0["attack_mlp_auc"] >= 0.85,
        "high_lambda_in_training_bacc<=0.60_with_utility>=0.78": any(
            m["attack_in_training_bacc"] <= 0.60 and m["utility_acc"] >= 0.78 for m in hi),
        "some_lambda_fresh_logreg_auc<=0.70_with_utility>=0.80": any(
            results[("sex", lam)].metrics["attack_logreg_auc"] <= 0.70
            and results[("sex", lam)].metrics["utility_acc"] >= 0.80 for lam in LAMBDAS),
        "tappfl_utility_above_each_baseline_at_equal_auc": all(t["tappfl_better"] for t in tuned.values()),
    }
    # change only the attacker on a cached run: the trained encoder must be reused
    lam_cfg = with_(base_config("sex", quick), defense=TappflDefense(tradeoff_lambda=0.5))
    changed = with_(lam_cfg, attack=lam_cfg.attack.model_copy(update={"mlp_hidden": 32}))
    r_changed, s_changed = _run(changed)
    retrained = int(r_changed.info.get("stages", {}).get("train") != "hit")
    print(f"  attacker change on a cached run: train stage {r_changed.info['stages'].get('train')}, "
          f"{s_changed:.1f} s", flush=True)
    headline = {name: int(bool(v)) for name, v in targets.items()}
    headline["retrained_on_attack_change"] = retrained
    return {
        "name": "tappfl_adult",
        "headline": headline,
        "rows": rows,
        "targets": targets,
        "attack_change": {"train_stage": r_changed.info["stages"].get("train"),
                          "stages": r_changed.info["stages"], "seconds": round(s_changed, 2)},
        "tuned_baselines": tuned,
        "notes": ("preset=" + ("quick" if quick else "paper") + "; adversary 'strong' = Algorithm 1's "
                  "lr1 = 10 x lr3 with 5 adversary steps per extractor step, 'paper' = 1 step at one lr; "
                  "targets use the strong sweep; utility = logistic probe on frozen r "
                  "(utility_paper_head = the authors' MLP eval head); in_* = devices' in-training adversaries, "
                  "lr_*/mlp_* = fresh server-side attackers on aux-split representations, scored on the "
                  "test split; paper_* = TAPPFL Table 2 (their 'Infer' is the in-training privacy head). "
                  f"Baselines tuned to TAPPFL λ=0.5 fresh-MLP AUC {target:.3f}."),
    }
