"""The membership defenses added through the engine's hooks over their knob grids, and RelaxLoss
before and after its reference options, on the Membership page's default run.

Label smoothing (s), adversarial regularisation (λ) and RelaxLoss (α) at every value of their
knob's comparison and teaching grids, beside the undefended target, each over :data:`SEEDS`
(:func:`benchmarks.relaxloss_bench.base_config`: the page's default data, members and epochs,
loss / offline and online LiRA / RMIA with 8 shadows trained the target's way). RelaxLoss runs twice per α:
with Algorithm 1's epoch parity as printed (``parity: paper``, what the engine trained before
the reference options) and with the reference code's (the default now), so the headline says
how far the parity moves its figures.

Headline (seed means keyed by the knob's value, ``"none"`` the undefended point):
``label_smoothing_utility`` / ``label_smoothing_best_auc``,
``adversarial_regularization_utility`` / ``adversarial_regularization_best_auc``,
``relaxloss_utility_paper_parity`` / ``relaxloss_best_auc_paper_parity`` (before) and
``relaxloss_utility_reference`` / ``relaxloss_best_auc_reference`` (after). A full run merges
them into ``benchmarks/results/membership.json``'s headline, leaving the rest of it as it was.
"""

from __future__ import annotations

import json
import time
from typing import Any

import numpy as np

from benchmarks.relaxloss_bench import MEMBERSHIP_JSON, base_config

SEEDS = (0, 1)
#: (headline prefix, defense kind, extra block fields)
DEFENSES_RUN = (
    ("label_smoothing", "label_smoothing", {}),
    ("adversarial_regularization", "adversarial_regularization", {}),
    ("relaxloss_paper_parity", "relaxloss", {"parity": "paper"}),
    ("relaxloss_reference", "relaxloss", {"parity": "reference"}),
)


def grid(kind: str, quick: bool = False) -> tuple[float, ...]:
    """The knob's comparison and teaching grids together (quick: the ends)."""
    from core.foundation.parts import DEFENSES

    knob = DEFENSES.get(kind).knob
    values = tuple(sorted(set(knob.comparison_grid()) | set(knob.teaching_grid())))
    return (values[0], values[-1]) if quick else values


def _row(cfg: dict[str, Any], seed: int, defense: dict[str, Any], value: float | None
         ) -> dict[str, Any]:
    from core.runs.experiments import run

    t0 = time.perf_counter()
    r = run({**cfg, "seed": seed, "defense": defense})
    m = r.metrics
    lo, hi = r.interval("mia_auc_best")
    return {"defense": defense["kind"], "block": defense, "value": value, "seed": seed,
            "utility": m["utility_acc"], "gap": m["train_test_gap"],
            "best_auc": m["mia_auc_best"], "best_auc_lo": lo, "best_auc_hi": hi,
            "best_attack": r.info["best_attack"],
            **{f"{a}_auc": m[f"mia_{a}_auc"] for a in cfg["attack"]["attackers"]},
            "seconds": round(time.perf_counter() - t0, 1)}


def _means(rows: list[dict[str, Any]], key: str) -> dict[str, float]:
    out: dict[str, list[float]] = {}
    for r in rows:
        out.setdefault("none" if r["value"] is None else f"{r['value']:g}", []).append(r[key])
    return {k: float(np.mean(v)) for k, v in out.items()}


def main(quick: bool = False) -> dict[str, Any]:
    from benchmarks.harness import _jsonable, machine_info
    from core.foundation.parts import DEFENSES

    t0 = time.perf_counter()
    cfg = base_config(quick)
    seeds = SEEDS[:1] if quick else SEEDS
    undefended = [_row(cfg, s, {"kind": "none"}, None) for s in seeds]
    headline: dict[str, Any] = {}
    rows = list(undefended)
    for prefix, kind, extra in DEFENSES_RUN:
        field = DEFENSES.get(kind).knob.field
        mine = [_row(cfg, s, {"kind": kind, field: v, **extra}, v)
                for v in grid(kind, quick) for s in seeds]
        for r in mine:
            print(prefix, r["value"], r["seed"], r["utility"], r["best_auc"], r["seconds"],
                  flush=True)
        rows += mine
        both = undefended + mine
        headline[f"{prefix}_utility"] = _means(both, "utility")
        headline[f"{prefix}_best_auc"] = _means(both, "best_auc")
    seconds = time.perf_counter() - t0
    notes = (f"The Membership page's default run ({cfg['data']['name']}, "
             f"{cfg['train']['members']} members, {cfg['train']['epochs']} epochs, "
             f"{', '.join(cfg['attack']['attackers'])}; {cfg['attack']['shadows']} shadows "
             f"trained the target's way) over seeds {list(seeds)}; headline values are seed "
             f"means keyed by the knob's value ('none': undefended); best AUC is the strongest "
             f"of the attacks; {seconds:.0f} s.")
    if not quick:
        doc = json.loads(MEMBERSHIP_JSON.read_text())
        doc["headline"] = {**doc["headline"], **headline}
        doc["defense_grids"] = _jsonable({"rows": rows, "config": cfg, "seeds": list(seeds),
                                          "notes": notes, "seconds": round(seconds, 1),
                                          "machine": machine_info()})
        MEMBERSHIP_JSON.write_text(json.dumps(doc, indent=1) + "\n")
    return {"name": "defense_grids", "headline": headline, "rows": rows, "notes": notes}
