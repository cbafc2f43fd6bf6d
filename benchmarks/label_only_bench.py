"""Label-only membership inference (Choquette-Choo et al. 2021; ``core/catalog/label_only.py``)
undefended and under DP-SGD at target ε = 8 with its recipe that trains (the config defaults:
full-batch SGD, lr 2, 150 epochs, clip norm 1), the strongest existing attacks (loss, LiRA
offline / online, RMIA, which see class probabilities) beside them in the same runs.

Two settings: ``mnist5k`` exactly as ``membership_bench`` runs its undefended point (500
members, 60 epochs, 16 shadows trained together, 8 pooled targets) and its DP-SGD ε = 8 point
(8 shadows, 8 pooled targets), so the figures sit beside ``lira_auc_undefended`` and
``dpsgd_lira_auc_eps_8`` of ``membership.json``; and ``digits``, the Membership page's
first-run setting (500 members, 60 epochs, 8 shadows, 8 targets).

Headline (the issue's names, from mnist5k):
``label_only_{aug,noise}_{auc,tpr_at_1pct_fpr}_{undefended,dpsgd}``.
:func:`merge_into_membership` copies them into ``benchmarks/results/membership.json``'s
headline without rerunning the rest of that benchmark.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

ATTACKERS = ("label_only_aug", "label_only_noise", "loss", "lira_offline", "lira_online", "rmia")
LABEL_ONLY = ("label_only_aug", "label_only_noise")
DEFENSES = {"undefended": {"kind": "none"}, "dpsgd": {"kind": "dp_sgd", "target_epsilon": 8.0}}
#: data -> (members, epochs, {point: (shadows, targets)}); quick: 150 members, 4 shadows
SETTINGS = {"mnist5k": (500, 60, {"undefended": (16, 8), "dpsgd": (8, 8)}),
            "digits": (500, 60, {"undefended": (8, 8), "dpsgd": (8, 8)})}
HEADLINE_DATA = "mnist5k"
RESULTS = Path(__file__).resolve().parent / "results"


def _config(data: str, point: str, quick: bool) -> dict[str, Any]:
    members, epochs, shadows = SETTINGS[data]
    K, T = (4, 3) if quick else shadows[point]
    return {"kind": "membership", "data": {"name": data}, "defense": DEFENSES[point],
            "train": {"members": 150 if quick else members, "epochs": epochs},
            "attack": {"attackers": list(ATTACKERS), "shadows": K, "targets": T,
                       "rmia_references": 1},
            "projection_points": 0}


def _row(data: str, point: str, quick: bool) -> dict[str, Any]:
    from core.runs.experiments import run

    t0 = time.perf_counter()
    r = run(_config(data, point, quick))
    m = r.metrics
    row = {"data": data, "point": point, "utility": m["utility_acc"],
           "gap": m["train_test_gap"], "epsilon": m.get("epsilon_accountant"),
           "seconds": round(time.perf_counter() - t0, 1)}
    for a in ATTACKERS:
        row[f"{a}_auc"] = m[f"mia_{a}_auc"]
        row[f"{a}_tpr_1pct"] = m[f"mia_{a}_tpr_at_1pct_fpr"]
        row[f"{a}_scored"] = r.info["scored"][a]
    row["strongest_probability_attack"] = max(
        (a for a in ATTACKERS if a not in LABEL_ONLY), key=lambda a: m[f"mia_{a}_auc"])
    print(row, flush=True)
    return row


def main(quick: bool = False) -> dict[str, Any]:
    rows = [_row(data, point, quick) for data in SETTINGS for point in DEFENSES]
    headline = {}
    for row in rows:
        if row["data"] == HEADLINE_DATA:
            for a in LABEL_ONLY:
                headline[f"{a}_auc_{row['point']}"] = row[f"{a}_auc"]
                headline[f"{a}_tpr_at_1pct_fpr_{row['point']}"] = row[f"{a}_tpr_1pct"]
    return {"name": "label_only", "headline": headline, "rows": rows,
            "notes": ("label-only attacks see predicted labels only, calibrated per record on "
                      "the shadows; loss / LiRA / RMIA see class probabilities; scores pooled "
                      "over the target and shadow targets. DP-SGD: target ε 8 with its own "
                      "recipe. Headline from mnist5k (membership_bench's settings)."),
            "quick": quick}


def merge_into_membership(source: Path | None = None, target: Path | None = None) -> dict:
    """Put the headline figures of ``source`` (this benchmark's written result, default
    ``results/label_only.json``) into ``target``'s headline (default ``results/membership.json``;
    the rest of that file untouched), noting where and on which machine they were measured."""
    result = json.loads((source or RESULTS / "label_only.json").read_text())
    if result.get("quick"):
        raise ValueError("source: got a --quick result; merge the full run's figures only")
    target = target or RESULTS / "membership.json"
    data = json.loads(target.read_text())
    data["headline"].update(result["headline"])
    data.setdefault("merged", {})["label_only"] = {
        "keys": sorted(result["headline"]), "from": "benchmarks/results/label_only.json",
        "machine": result.get("machine")}
    target.write_text(json.dumps(data, indent=1) + "\n")
    return data
