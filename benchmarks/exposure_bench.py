"""Per-record exposure (:mod:`core.report.exposure`): which families keep per-record scores, and on a
small membership comparison which records each defense protects.

1. Every family that declares a per-record extractor (``core.foundation.parts.FAMILIES``, ``exposure``)
   runs one tiny config; it counts when its extractor reads at least one scored record and
   the top-N come out most exposed first (``per_record_families``).
2. The per-record arrays move no metric: the tiny membership run again with its
   ``record_arrays`` switched off, every metric compared for exact equality
   (``metrics_identical``, not in the headline).
3. A membership comparison on ``digits`` (:data:`SPEC`: the undefended MLP, DP-SGD at ε = 8,
   RelaxLoss at α = 1; 250 members, 40 epochs; loss, offline LiRA and RMIA with 8 shadow
   models, 4 target models pooled: a record's score is its mean over the ones that trained
   on it) run through :func:`core.runs.compare.run_comparison` on a
   private store, then :func:`core.report.exposure.exposure_overlap` of its three points at k =
   :data:`K`: the Jaccard index of each pair of top-k sets and the number of records in
   every top-k set, beside Jaccard's chance level k / (2n − k).

Headline: ``per_record_families``, ``jaccard`` ("A | B" -> value), ``always_exposed``. The
load (``uptime``) at the start and the end is recorded beside the timings.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
from typing import Any

#: the top-k compared across defenses
K = 20
TINY: dict[str, dict[str, Any]] = {
    "membership": {"kind": "membership", "data": {"name": "digits"},
                   "train": {"members": 60, "epochs": 6, "batch_size": 32},
                   "attack": {"shadows": 4, "rmia_references": 1, "targets": 2,
                              "attackers": ["loss", "lira_offline"]},
                   "projection_points": 0},
    "gradient_leakage": {"kind": "gradient_leakage", "data": {"name": "digits"},
                         "train": {"model": "mlp", "epochs": 1, "batch_size": 64},
                         "attack": {"attackers": ["idlg"], "targets": 3, "batch_size": 2,
                                    "iterations": 20, "model_inversion": False}},
    "fisher_information": {"kind": "fisher_information", "data": {"name": "digits"},
                           "irfil": {"iterations": 2},
                           "attack": {"noise_trials": 2, "crb_trials": 50, "sigma_grid": 2}},
    "attribute_privacy": {"kind": "attribute_privacy",
                          "data": {"name": "synthetic", "n_samples": 400, "dependence": 0.6},
                          "fl": {"num_devices": 2, "fraction_fit": 1.0, "rounds": 1,
                                 "batch_size": 32},
                          "pretrain_epochs": 1, "projection_points": 0,
                          "attack": {"mlp_epochs": 5}},
}


def spec(quick: bool = False):
    """The membership comparison (quick: 2 shadow models, 20 epochs, no pooling)."""
    from core.runs.compare import ComparisonSpec, DefenseSpec

    attack = {"attackers": ["loss", "lira_offline", "rmia"], "shadows": 8, "rmia_references": 1,
              "targets": 4}
    train = {"members": 250, "epochs": 40, "lr": 0.005}
    if quick:
        attack = {**attack, "shadows": 2, "targets": 1}
        train = {**train, "epochs": 20}
    return ComparisonSpec(
        family="membership", data="digits", utility="utility_acc", privacy="mia_auc_best",
        defenses=(DefenseSpec.of("dp_sgd", (8.0,)), DefenseSpec.of("relaxloss", (1.0,))),
        seeds=(0,), base={"train": train, "attack": attack, "projection_points": 0})


def _uptime() -> str:
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True, timeout=5,
                              check=False).stdout.strip()
    except OSError:
        return "load average: " + ", ".join(f"{x:.2f}" for x in os.getloadavg())


def families() -> tuple[list[dict[str, Any]], list[str]]:
    """One tiny run per family that declares an extractor: (rows, the families that read)."""
    import numpy as np

    from core.foundation.parts import FAMILIES
    from core.report.exposure import record_exposure
    from core.runs.experiments import run

    rows, ok = [], []
    for name, fam in FAMILIES.items():
        if fam.exposure is None:
            continue
        t0 = time.perf_counter()
        r = run(TINY[name])
        ex = record_exposure(r, top_n=5)
        good = ex.n_scored > 0 and bool(np.all(np.diff(ex.top_values) <= 0))
        rows.append({"part": "family", "family": name, "score": ex.title,
                     "scored": ex.n_scored, "top": ex.top.tolist(),
                     "top_values": [round(float(v), 4) for v in ex.top_values],
                     "reads": good, "seconds": round(time.perf_counter() - t0, 2),
                     "sentence": ex.sentence})
        if good:
            ok.append(name)
    return rows, ok


def metrics_identical() -> bool:
    """The tiny membership run with and without its per-record arrays: every metric equal
    (timings aside)."""
    import core.runs.membership_stages as MS
    from core.runs.experiments import run

    def metrics(r) -> dict[str, float]:
        return {k: v for k, v in r.metrics.items() if "seconds" not in k}

    with_arrays = run(TINY["membership"])
    keep = MS.record_arrays
    MS.record_arrays = lambda *a, **k: {}
    try:
        without = run(TINY["membership"])
    finally:
        MS.record_arrays = keep
    return metrics(with_arrays) == metrics(without) and "record_index" not in without.artifacts


def comparison(quick: bool = False) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The membership comparison on a private store and the overlap of its points."""
    from cache.store import ResultStore
    from core.report.exposure import comparison_results, exposure_overlap
    from core.runs.compare import run_comparison

    with tempfile.TemporaryDirectory() as root:
        store = ResultStore(root)
        t0 = time.perf_counter()
        cmp = run_comparison(spec(quick), store)
        seconds = time.perf_counter() - t0
        results = comparison_results(cmp, store, position=0)
        ov = exposure_overlap(results, k=K)
    names = ov.names
    jac = {f"{names[i]} | {names[j]}": round(float(ov.jaccard[i, j]), 4)
           for i in range(len(names)) for j in range(i + 1, len(names))}
    rows = [{"part": "comparison", "defense": n, "auc_best": round(r.metrics["mia_auc_best"], 4),
             "utility": round(r.metrics["utility_acc"], 4), "top_k": s.tolist()}
            for (n, r), s in zip(results.items(), ov.sets, strict=True)]
    out = {"jaccard": jac, "always_exposed": len(ov.always), "always": ov.always.tolist(),
           "k": ov.k, "n_common": ov.n_common, "chance": round(ov.chance, 4),
           "sentence": ov.sentence, "seconds": round(seconds, 1), "score": ov.title}
    return out, rows


def main(quick: bool = False) -> dict[str, Any]:
    load_start = _uptime()
    fam_rows, ok = families()
    same = metrics_identical()
    cmp, cmp_rows = comparison(quick)
    load_end = _uptime()
    notes = (f"Families reading per-record scores: {', '.join(ok)}. Metrics with and without "
             f"the per-record arrays (tiny membership run): identical = {same}. Membership "
             f"comparison on digits ({cmp['seconds']} s, {cmp['score']}): {cmp['sentence']} "
             f"Load: start '{load_start}', end '{load_end}'.")
    return {"name": "exposure",
            "headline": {"per_record_families": len(ok), "jaccard": cmp["jaccard"],
                         "always_exposed": cmp["always_exposed"]},
            "rows": fam_rows + cmp_rows, "notes": notes,
            "comparison": cmp, "metrics_identical": same,
            "uptime": {"start": load_start, "end": load_end},
            "targets": {"per_record_families": ">= 4"}}
