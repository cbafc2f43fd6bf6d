"""RelaxLoss (core/catalog/relaxloss.py) over its α grid on the Membership page's default run.

The page's first run (:func:`core.report.teaching.default_config`: digits, 500 members, 60 epochs,
loss / offline LiRA / online LiRA / RMIA with 8 shadow models trained the target's way, 2 RMIA
references, 8 targets pooled) with the undefended target beside RelaxLoss at every α of its
knob's comparison and teaching grids, each over :data:`SEEDS`; the t-SNE panel is left out
(``projection_points: 0``: it moves no metric). Per point: test accuracy, the train–test gap,
each attack's AUC and the strongest (``mia_auc_best``) with its interval.

Headline (seed means; keys are α, ``"none"`` the undefended point): ``relaxloss_utility`` and
``relaxloss_best_auc``. Besides ``benchmarks/results/relaxloss.json`` (the harness), a full run
merges them into ``benchmarks/results/membership.json``'s headline and its rows under a
``relaxloss`` block, leaving the rest of that file as it was.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import numpy as np

SEEDS = (0, 1)
ATTACKS = ("loss", "lira_offline", "lira_online", "rmia")
MEMBERSHIP_JSON = Path(__file__).resolve().parent / "results" / "membership.json"


def alphas(quick: bool = False) -> tuple[float, ...]:
    """The knob's comparison and teaching grids together (quick: their ends and middle)."""
    from core.foundation.parts import DEFENSES

    knob = DEFENSES.get("relaxloss").knob
    grid = tuple(sorted(set(knob.comparison_grid()) | set(knob.teaching_grid())))
    return (grid[0], grid[len(grid) // 2], grid[-1]) if quick else grid


def base_config(quick: bool = False) -> dict[str, Any]:
    """The Membership page's default run without its projection (quick: 4 shadows, 2 pooled,
    20 epochs)."""
    from core.report.teaching import default_config

    cfg = {**default_config("membership"), "projection_points": 0}
    if quick:
        cfg["train"] = {**cfg["train"], "epochs": 20}
        cfg["attack"] = {**cfg["attack"], "shadows": 4, "rmia_references": 1, "targets": 2}
    return cfg


def _row(cfg: dict[str, Any], seed: int, alpha: float | None) -> dict[str, Any]:
    from core.runs.experiments import run

    defense = {"kind": "none"} if alpha is None else {"kind": "relaxloss", "alpha": alpha}
    t0 = time.perf_counter()
    r = run({**cfg, "seed": seed, "defense": defense})
    m = r.metrics
    lo, hi = r.interval("mia_auc_best")
    row = {"point": "undefended" if alpha is None else "relaxloss", "alpha": alpha, "seed": seed,
           "utility": m["utility_acc"], "gap": m["train_test_gap"],
           "best_auc": m["mia_auc_best"], "best_auc_lo": lo, "best_auc_hi": hi,
           "best_attack": r.info["best_attack"]}
    row.update({f"{a}_auc": m[f"mia_{a}_auc"] for a in cfg["attack"]["attackers"]})
    row["relaxed_note"] = next((n for n in r.info["notes"] if n.startswith("RelaxLoss:")), None)
    row["seconds"] = round(time.perf_counter() - t0, 1)
    return row


def _means(rows: list[dict[str, Any]], key: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for point in dict.fromkeys("none" if r["alpha"] is None else f"{r['alpha']:g}" for r in rows):
        vals = [r[key] for r in rows
                if ("none" if r["alpha"] is None else f"{r['alpha']:g}") == point]
        out[point] = float(np.mean(vals))
    return out


def merge_into_membership(headline: dict[str, Any], block: dict[str, Any],
                          path: Path = MEMBERSHIP_JSON) -> None:
    """Put the RelaxLoss figures into membership.json (read now, written back whole): its
    headline gains ``relaxloss_utility`` and ``relaxloss_best_auc``, the file a ``relaxloss``
    block (rows, config, seeds, machine); nothing else in it changes."""
    doc = json.loads(path.read_text())
    doc["headline"] = {**doc["headline"], "relaxloss_utility": headline["relaxloss_utility"],
                       "relaxloss_best_auc": headline["relaxloss_best_auc"]}
    doc["relaxloss"] = block
    path.write_text(json.dumps(doc, indent=1) + "\n")


def main(quick: bool = False) -> dict[str, Any]:
    from benchmarks.harness import _jsonable, machine_info

    t0 = time.perf_counter()
    cfg = base_config(quick)
    seeds = SEEDS[:1] if quick else SEEDS
    rows = []
    for seed in seeds:
        for alpha in (None, *alphas(quick)):
            rows.append(_row(cfg, seed, alpha))
            print(rows[-1], flush=True)
    headline = {"relaxloss_utility": _means(rows, "utility"),
                "relaxloss_best_auc": _means(rows, "best_auc")}
    seconds = time.perf_counter() - t0
    notes = (f"The Membership page's default run ({cfg['data']['name']}, "
             f"{cfg['train']['members']} members, {cfg['train']['epochs']} epochs, "
             f"{', '.join(cfg['attack']['attackers'])}; {cfg['attack']['shadows']} shadows "
             f"trained with RelaxLoss, {cfg['attack']['targets']} targets pooled) over seeds "
             f"{list(seeds)}; headline values are seed means keyed by α ('none': undefended); "
             f"{seconds:.0f} s.")
    if not quick:
        merge_into_membership(headline, _jsonable({
            "rows": rows, "config": cfg, "seeds": list(seeds), "notes": notes,
            "seconds": round(seconds, 1), "machine": machine_info()}))
    return {"name": "relaxloss", "headline": headline, "rows": rows, "notes": notes}
