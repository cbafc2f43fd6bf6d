"""Defenses at equal privacy against a DP-SGD that trains (issue #22 item 2):
``PYTHONPATH=. python benchmarks/equal_privacy.py [--quick] [--seeds N] [--out FILE.json]``;
follows the benchmark convention (``main(quick) -> dict`` with a ``headline``). Not registered
in :data:`benchmarks.BENCHMARKS` (tens of minutes on 2 cores).

One comparison (:func:`core.runs.compare.run_comparison`, every point a stored membership run) on
the Membership default (mnist5k, 500 members, the train block's defaults; DP-SGD with its own
recipe): Inf2Guard over λ, the Natural and White κ channels over κ, DP-SGD over its target-ε
grid and its ε = ∞ point (clipping, no noise), and the undefended model, each over seeds,
attacked by the loss attack and offline LiRA with 2 shadow models (the default's 16 would
cost 6× the training on a shared 2-core machine; stated in the output). Grids: λ 0.5 / 0.9,
κ 5 / 20 / 80 / 320, target ε 1 / 4 / 8 and ∞.

Equal privacy: the level L is the lowest LiRA AUC that both Inf2Guard and DP-SGD reach on their
seed-mean curves (the most private level they share); each defense's utility at L is its best
test accuracy with LiRA AUC ≤ L along its curve (:func:`core.runs.compare.utility_at_level`: a
measured point, or interpolated on a crossing segment), per seed for the interval. Utility is
also reported above the majority class, (acc − majority) / (undefended − majority), since a
model at the majority rate already scores a large share of the undefended accuracy.

Headline: ``inf2guard_utility_at_equal_lira_auc``, ``dpsgd_utility_at_equal_lira_auc``,
``kappa_natural_utility_at_equal_lira_auc``, ``kappa_white_utility_at_equal_lira_auc``, the
ratios above majority, the level, the undefended utility and LiRA AUC, DP-SGD's ratio at ε = 8
and at ε = ∞. Timings on a shared, loaded 2-core machine.
"""

from __future__ import annotations

import argparse
import json
import math
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

OUT = Path(__file__).resolve().parent / "results" / "equal_privacy.json"
PRIVACY = "mia_lira_offline_auc"
#: shadow models of offline LiRA: the fewest it reads (each row OUT of one); the Membership
#: default's 16 cost 6× the training, which a shared 2-core machine cannot give every point
SHADOWS = 2


def spec(quick: bool, seeds: int):
    from core.runs import compare as C

    base: dict[str, Any] = {
        "attack": {"attackers": ["loss", "lira_offline"], "shadows": SHADOWS,
                   "rmia_references": 1, "targets": 1},
        "projection_points": 0}
    if quick:
        base["train"] = {"members": 200, "epochs": 20}
    return C.ComparisonSpec(
        family="membership", data="mnist5k", utility="utility_acc", privacy=PRIVACY,
        defenses=(C.DefenseSpec.of("inf2guard", (0.5, 0.9)),
                  C.DefenseSpec.of("dp_sgd", (1.0, 4.0, 8.0) if not quick else (1.0, 8.0)),
                  C.DPSGD_NO_NOISE,
                  C.DefenseSpec.of("channel", (5.0, 20.0, 80.0, 320.0), channel="natural"),
                  C.DefenseSpec.of("channel", (5.0, 20.0, 80.0, 320.0), channel="white")),
        seeds=tuple(range(seeds)), base=base, executor="serial")


def _above(acc: float | None, majority: float, undefended: float) -> float | None:
    return None if acc is None else (acc - majority) / (undefended - majority)


def _interval(vals: list[float | None]) -> dict[str, Any]:
    v = [x for x in vals if x is not None and math.isfinite(x)]
    if not v:
        return {"mean": None, "lo": None, "hi": None, "n": 0, "per_seed": vals}
    return {"mean": float(np.mean(v)), "lo": float(min(v)), "hi": float(max(v)), "n": len(v),
            "per_seed": vals}


def main(quick: bool = False, seeds: int = 2, store_dir: Path | None = None) -> dict[str, Any]:
    from cache.store import ResultStore
    from core.runs import compare as C

    t0 = time.perf_counter()
    sp = spec(quick, seeds)
    with tempfile.TemporaryDirectory() as tmp:
        # a kept store lets a run with more seeds reuse the points already measured
        store = ResultStore(store_dir or Path(tmp) / "cache")
        cmp = C.run_comparison(sp, store, progress=lambda f, m: print(f"{f:.2f} {m}", flush=True))
        majority = next(float(store.get(k).metrics["utility_majority"])
                    for c in cmp.curves for row in c.keys for k in row if k)
    und = cmp.undefended
    und_acc = float(und.utility_mean[0])
    curves = {c.name: c for c in cmp.defended}
    by = {"inf2guard": next(c for c in cmp.defended if c.defense == "inf2guard"),
          "dpsgd": next(c for c in cmp.defended if c.defense == "dp_sgd" and c.knob_field),
          "kappa_natural": next(c for c in cmp.defended if c.params.get("channel") == "natural"),
          "kappa_white": next(c for c in cmp.defended if c.params.get("channel") == "white")}
    no_noise = next(c for c in cmp.defended if c.defense == "dp_sgd" and not c.knob_field)
    level = max(float(np.nanmin(by["inf2guard"].leakage_mean)),
                float(np.nanmin(by["dpsgd"].leakage_mean)))
    headline: dict[str, Any] = {"equal_lira_auc_level": level,
                                "undefended_utility": und_acc,
                                "undefended_lira_auc": float(und.leakage_mean[0]),
                                "utility_majority": majority}
    detail: dict[str, Any] = {}
    for name, c in by.items():
        m = c.at_level(level)
        per_seed = [c.at_level(level, j).utility for j in range(len(c.seeds))]
        headline[f"{name}_utility_at_equal_lira_auc"] = m.utility
        headline[f"{name}_utility_ratio_above_majority_at_equal_lira_auc"] = _above(
            m.utility, majority, und_acc)
        detail[name] = {"at_level": m.utility, "how": m.how, "knob": m.knob,
                        "seeds": _interval(per_seed),
                        "ratio_above_majority_seeds": _interval(
                            [_above(u, majority, und_acc) for u in per_seed])}
    dp = by["dpsgd"]
    if 8.0 in dp.knob.tolist():
        i = dp.knob.tolist().index(8.0)
        headline["dpsgd_utility_ratio_eps_8"] = _above(float(dp.utility_mean[i]), majority,
                                                       und_acc)
        headline["dpsgd_lira_auc_eps_8"] = float(dp.leakage_mean[i])
    headline["dpsgd_no_noise_utility_ratio"] = _above(float(no_noise.utility_mean[0]),
                                                      majority, und_acc)
    headline["dpsgd_no_noise_lira_auc"] = float(no_noise.leakage_mean[0])
    points = [{"defense": c.name, "knob": None if not c.knob_field else float(k),
               "utility_mean": float(c.utility_mean[i]), "utility_std": float(c.utility_std[i]),
               "lira_auc_mean": float(c.leakage_mean[i]), "lira_auc_std": float(c.leakage_std[i]),
               "utility_per_seed": [float(u) for u in c.utility[i]],
               "lira_auc_per_seed": [float(a) for a in c.leakage[i]],
               "budget": [("inf" if b == math.inf else (None if math.isnan(b) else float(b)))
                          for b in c.budget[i]]}
              for c in cmp.curves for i, k in enumerate(c.knob)]
    return {"headline": headline, "at_equal_lira_auc": detail, "points": points,
            "table": cmp.table([level]), "curves": list(curves),
            "settings": {"quick": quick, "seeds": list(sp.seeds), "data": sp.data,
                         "privacy": PRIVACY, "base": sp.base,
                         "level": "lowest LiRA AUC both Inf2Guard and DP-SGD reach (seed means)"},
            "seconds": time.perf_counter() - t0,
            "notes": ["timings on a shared, loaded 2-core machine (about 7 engineers)",
                      ("LiRA offline with 2 shadow models (the Membership default has 16): "
                      "a weaker attacker than the page's, the same for every defense")]}


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--store", type=Path, default=None, help="keep the points in this store")
    a = ap.parse_args()
    out = main(a.quick, a.seeds, a.store)
    try:
        from benchmarks.harness import machine_info

        out["machine"] = machine_info()
    except ImportError:  # pragma: no cover
        pass
    from core.foundation.provenance import stamp

    out["provenance"] = stamp("python -m benchmarks.equal_privacy" + (" --quick" if a.quick else ""))
    path = a.out or (OUT.with_suffix(".quick.json") if a.quick else OUT)
    path.write_text(json.dumps(out, indent=2, allow_nan=False, default=str) + "\n")
    print(json.dumps(out["headline"], indent=2))
