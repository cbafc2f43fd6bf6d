"""Lessons of the Attribute and Property pages, measured (issue #20): the teaching sweeps'
endpoints over a few seeds with 95 % intervals, the default config's cold time, and the
before/after of the attackers that under-read (the in-training adversary's decision, the MLP
attacker's training length) on Adult race at λ = 0.

    python -m benchmarks.attr_prop_lessons attackers   # needs Adult ($PRIVLAB_DATA_DIR)
    python -m benchmarks.attr_prop_lessons attribute --seeds 0,1,2
    python -m benchmarks.attr_prop_lessons property --seeds 0,1,2
    python -m benchmarks.attr_prop_lessons headline    # recompute the headline only

Each part merges its numbers into ``benchmarks/results/lessons_attr_prop.json`` and the
``headline`` is recomputed from whatever parts are there. Nothing in it is typed in: every
number comes from a run of this script (timings on the machine it ran on).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time
from pathlib import Path
from typing import Any

import numpy as np

OUT = Path(__file__).parent / "results" / "lessons_attr_prop.json"


def _t95(n: int) -> float:
    """Two-sided 95 % Student-t quantile for n − 1 degrees of freedom (n ≤ 10; else 1.96)."""
    table = {2: 12.706, 3: 4.303, 4: 3.182, 5: 2.776, 6: 2.571, 7: 2.447, 8: 2.365, 9: 2.306,
             10: 2.262}
    return table.get(n, 1.96)


def seed_interval(values: list[float]) -> dict[str, Any]:
    """Mean over seeds with its 95 % t-interval (one seed: the interval is NaN)."""
    v = np.asarray(values, dtype=np.float64)
    mean = float(v.mean())
    if v.size < 2:
        return {"mean": mean, "lo": math.nan, "hi": math.nan, "values": v.tolist()}
    half = _t95(v.size) * float(v.std(ddof=1)) / math.sqrt(v.size)
    return {"mean": mean, "lo": mean - half, "hi": mean + half, "values": v.tolist()}


def _separated(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Whether two seed intervals do not overlap."""
    return bool(a["hi"] < b["lo"] or b["hi"] < a["lo"])


def _endpoint_summary(rows: list[dict[str, Any]], metric: str, grid: tuple[float, ...]) -> dict:
    lo_g, hi_g = grid[0], grid[-1]
    out: dict[str, Any] = {"grid": list(grid), "metric": metric, "points": {}}
    for g in grid:
        at = [r for r in rows if r["knob"] == g]
        out["points"][f"{g:g}"] = {
            "privacy": seed_interval([r["privacy"] for r in at]),
            "utility": seed_interval([r["utility"] for r in at]),
            "run_intervals": [r["privacy_interval"] for r in at],
            "seconds": [r["seconds"] for r in at]}
    a, b = out["points"][f"{lo_g:g}"], out["points"][f"{hi_g:g}"]
    out["privacy_move"] = b["privacy"]["mean"] - a["privacy"]["mean"]
    out["utility_move"] = b["utility"]["mean"] - a["utility"]["mean"]
    out["moves_beyond_intervals"] = _separated(a["privacy"], b["privacy"])  # over seeds
    # per seed: the two ends' 95 % bootstrap intervals (over the scored test rows) apart
    by_seed = {}
    for r in rows:
        by_seed.setdefault(r["seed"], {})[r["knob"]] = r["privacy_interval"]
    pairs = [(v[lo_g], v[hi_g]) for v in by_seed.values() if lo_g in v and hi_g in v]
    out["moves_beyond_run_intervals"] = bool(pairs) and all(
        x[1] < y[0] or y[1] < x[0] for x, y in pairs)
    return out


# -- the attribute page ---------------------------------------------------------------------


def attribute_part(seeds: list[int], only: float | None = None) -> dict[str, Any]:
    """The Attribute page's default config over its teaching grid (endpoints), cold."""
    from core.config.schema import parse_config
    from core.foundation.metric_schema import HEADLINES
    from core.foundation.parts import DEFENSES
    from core.foundation.progress import Progress
    from core.runs.attribute_privacy import run_attribute_privacy
    from dashboard.tappfl_settings import page_default_config, with_knob

    base = page_default_config()
    knob = DEFENSES.get(base["defense"]["kind"]).knob.for_family("attribute_privacy")
    grid = knob.teaching_grid()
    head = HEADLINES["attribute_privacy"]
    rows = []
    for seed in seeds:
        for g in (grid[0], grid[-1]):
            if only is not None and g != only:
                continue
            cfg = parse_config({**with_knob(base, knob.field, g), "seed": seed})
            t0 = time.perf_counter()
            r = run_attribute_privacy(cfg, Progress())
            iv = r.intervals.get(head.attack, {})
            rows.append({"knob": g, "seed": seed, "seconds": time.perf_counter() - t0,
                         "privacy": r.metrics[head.attack],
                         "privacy_interval": [iv.get("lo"), iv.get("hi")],
                         "utility": r.metrics[head.utility],
                         "in_training_bacc": r.metrics["attack_in_training_bacc"]})
            print(json.dumps(rows[-1]), flush=True)
    return attribute_summary(rows)


def attribute_summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The Attribute part from its per-run rows (as printed by :func:`attribute_part`)."""
    from core.foundation.metric_schema import HEADLINES
    from core.foundation.parts import DEFENSES
    from dashboard.tappfl_settings import page_default_config

    base = page_default_config()
    grid = DEFENSES.get(base["defense"]["kind"]).knob.for_family("attribute_privacy").teaching_grid()
    ends = (grid[0], grid[-1])
    out = _endpoint_summary(rows, HEADLINES["attribute_privacy"].attack, ends)
    out["in_training_bacc"] = {f"{g:g}": seed_interval([r["in_training_bacc"] for r in rows
                                                        if r["knob"] == g]) for g in ends}
    out["teaching_grid"] = list(grid)
    out["config"] = base
    out["rows"] = rows
    return out


# -- the property page ----------------------------------------------------------------------


def property_part(seeds: list[int], only: float | None = None) -> dict[str, Any]:
    """The Property page's default config (digits, a fresh clone's data) at the ends of its
    teaching grid, cold; the fresh MLP's accuracy is the number the page's finding reads."""
    from core.config.schema import parse_config
    from core.foundation.metric_schema import HEADLINES
    from core.foundation.parts import DEFENSES
    from core.foundation.progress import Progress
    from core.runs.property import fresh_attacker_finding, run_property
    from dashboard.property_settings import page_default_config

    base = page_default_config()
    knob = DEFENSES.get(base["defense"]["kind"]).knob.for_family("property")
    grid = knob.teaching_grid()
    head = HEADLINES["property"]
    rows, first = [], {}
    for seed in seeds:
        for g in (grid[0], grid[-1]):
            if only is not None and g != only:
                continue
            cfg = {**base, "seed": seed,
                   "defense": {**base["defense"], knob.field: g}}
            t0 = time.perf_counter()
            r = run_property(parse_config(cfg), Progress())
            iv = r.intervals.get(head.attack, {})
            rows.append({"knob": g, "seed": seed, "seconds": time.perf_counter() - t0,
                         "privacy": r.metrics[head.attack],
                         "privacy_interval": [iv.get("lo"), iv.get("hi")],
                         "utility": r.metrics[head.utility],
                         "fresh_mlp_acc": r.metrics.get("property_mlp_acc"),
                         "in_training_acc": r.metrics.get("property_in_training_acc"),
                         "mlp_epochs_run": r.info["attacks"].get("mlp", {}).get("epochs_run")})
            if seed == seeds[0]:
                first[g] = r
            print(json.dumps(rows[-1]), flush=True)
    out = property_summary(rows)
    out["page_finding_seed0"] = fresh_attacker_finding(first, "mlp")
    return out


def property_summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The Property part from its per-run rows (as printed by :func:`property_part`); the
    page's finding is rebuilt from the first seed's rows (without the per-run intervals)."""
    from types import SimpleNamespace

    from core.foundation.metric_schema import HEADLINES
    from core.foundation.parts import DEFENSES
    from core.runs.property import fresh_attacker_finding
    from dashboard.property_settings import page_default_config

    base = page_default_config()
    grid = DEFENSES.get(base["defense"]["kind"]).knob.for_family("property").teaching_grid()
    ends = (grid[0], grid[-1])
    out = _endpoint_summary(rows, HEADLINES["property"].attack, ends)
    for key in ("fresh_mlp_acc", "in_training_acc"):
        out[key] = {f"{g:g}": seed_interval([r[key] for r in rows if r["knob"] == g])
                    for g in ends}
    seed0 = rows[0]["seed"]
    first = {r["knob"]: SimpleNamespace(metrics={"property_mlp_acc": r["fresh_mlp_acc"],
                                                 "utility_acc": r["utility"]},
                                        intervals={}, info={})
             for r in rows if r["seed"] == seed0}
    out["page_finding_seed0"] = fresh_attacker_finding(first, "mlp")
    out["teaching_grid"] = list(grid)
    out["config"] = base
    out["rows"] = rows
    return out


# -- the attackers that under-read (Adult race, λ = 0) ----------------------------------------


def attackers_part(seed: int = 0, max_samples: int = 8000) -> dict[str, Any]:
    """Before/after on Adult race at λ = 0 (quick preset, a seeded row cap for a loaded CPU):
    the in-training adversary's plain argmax vs its class-balanced decision; the MLP attacker
    with the old fixed budgets (20 and 60 epochs, patience 8 on a split drawn by its torch
    generator) vs trained until its validation loss stops falling (the cap of the config)."""
    import torch

    from core.attacks.attribute import _mlp_net, fresh_attacker_proba, prior_shift_weights
    from core.config.schema import AttackSpec, parse_config
    from core.data import load_dataset
    from core.defenses.federated import build_defense
    from core.engine.training import train_classifier
    from core.foundation.device import get_device
    from core.foundation.metrics import attack_scores
    from core.foundation.progress import Progress
    from core.runs import attribute_stages as S
    from dashboard.tappfl_settings import build_config, preset_widgets

    cfg = parse_config(build_config(
        preset="quick", dataset="adult", attribute="race", seed=seed, device="cpu",
        defense="tappfl", lam=0.0, values={**preset_widgets("quick"),
                                           "ap_max_samples": max_samples, "ap_proj_points": 0}))
    ds = load_dataset(cfg.data, cfg.seed)
    trained = S.train(cfg, ds, build_defense(cfg.defense, cfg.fl), Progress())
    rel = S.release(S.load_encoder(cfg, ds, trained, get_device("cpu")), ds)
    u = np.asarray(ds.attribute("race"))
    ua, ut = u[ds.split("aux")], u[ds.split("test")]
    Ra, Rt = rel.arrays["R_aux"].astype(np.float64), rel.arrays["R_test"].astype(np.float64)
    k = len(ds.attribute_values["race"])
    P = trained.arrays["in_training_proba"]
    w = prior_shift_weights(ua, k)
    plain, bal = attack_scores(ut, P), attack_scores(ut, P, decision_weights=w)

    def old_mlp(epochs: int) -> dict[str, Any]:
        gen = torch.Generator().manual_seed(seed)
        mu, sd = Ra.mean(0), Ra.std(0)
        sd = np.where(sd > 1e-12, sd, 1.0)

        def prep(a):
            return torch.as_tensor(((a - mu) / sd).astype(np.float32))

        net = _mlp_net(Ra.shape[1], 64, k, gen, "cpu")
        t0 = time.perf_counter()
        info = train_classifier(net, prep(Ra), torch.as_tensor(ua), class_weight=None,
                                epochs=epochs, batch_size=256, lr=1e-3, generator=gen,
                                val_fraction=0.1, patience=8)
        with torch.no_grad():
            p = torch.softmax(net(prep(Rt)).double(), 1).numpy()
        s = attack_scores(ut, p, decision_weights=w)
        return {"bacc": s["balanced_accuracy"], "auc": s["auc"], "epochs_run": info["epochs_run"],
                "stopped_early": bool(info["log"].stopped_early),
                "seconds": time.perf_counter() - t0}

    cap = AttackSpec().mlp_epochs
    t0 = time.perf_counter()
    fa = fresh_attacker_proba(Ra, ua, Rt, model="mlp", seed=seed, mlp_epochs=cap, n_classes=k)
    s = attack_scores(ut, fa.proba, decision_weights=fa.decision_weights)
    return {
        "setting": {"data": "adult", "attribute": "race", "lambda": 0.0, "preset": "quick",
                    "max_samples": max_samples, "seed": seed, "n_aux": int(ua.size),
                    "n_test": int(ut.size), "k": k,
                    "majority_rate": float(np.bincount(ut, minlength=k).max() / ut.size)},
        "in_training": {"before_argmax_bacc": plain["balanced_accuracy"],
                        "after_balanced_bacc": bal["balanced_accuracy"], "auc": plain["auc"],
                        "chance": 1.0 / k},
        "mlp": {"before_20_epochs": old_mlp(20), "before_60_epochs": old_mlp(60),
                "after_until_plateau": {"bacc": s["balanced_accuracy"], "auc": s["auc"],
                                        "cap": cap, "epochs_run": fa.info["epochs_run"],
                                        "best_epoch": fa.info["best_epoch"],
                                        "stopped_early": bool(fa.info["stopped_early"]),
                                        "seconds": time.perf_counter() - t0}},
    }


def headline(doc: dict[str, Any]) -> dict[str, Any]:
    h: dict[str, Any] = {}
    for page in ("attribute", "property"):
        p = doc.get(page)
        if p:
            lo, hi = (f"{g:g}" for g in (p["grid"][0], p["grid"][-1]))
            h[f"{page}_privacy_metric"] = p["metric"]
            h[f"{page}_knob_endpoints"] = [p["grid"][0], p["grid"][-1]]
            h[f"{page}_privacy_at_ends"] = [p["points"][lo]["privacy"]["mean"],
                                           p["points"][hi]["privacy"]["mean"]]
            h[f"{page}_utility_at_ends"] = [p["points"][lo]["utility"]["mean"],
                                           p["points"][hi]["utility"]["mean"]]
            h[f"{page}_moves_beyond_intervals"] = p["moves_beyond_intervals"]
            h[f"{page}_moves_beyond_run_intervals"] = p.get("moves_beyond_run_intervals")
            h[f"{page}_seeds"] = len(p["points"][lo]["privacy"]["values"])
    for page in ("attribute", "property"):
        rows = doc.get(page, {}).get("rows")
        if rows:  # every sweep run is a cold run of the page's default config but for the knob
            secs = sorted(r["seconds"] for r in rows)
            h[f"{page}_cold_s_max"] = secs[-1]
            h[f"{page}_cold_s_median"] = secs[len(secs) // 2]
    if doc.get("property"):
        f = doc["property"]["fresh_mlp_acc"]
        h["property_fresh_mlp_acc_at_ends"] = [v["mean"] for v in f.values()]
    a = doc.get("attackers")
    if a:
        h["in_training_bacc_before_after"] = [a["in_training"]["before_argmax_bacc"],
                                              a["in_training"]["after_balanced_bacc"]]
        h["in_training_auc"] = a["in_training"]["auc"]
        h["mlp_bacc_20_60_until_plateau"] = [a["mlp"]["before_20_epochs"]["bacc"],
                                             a["mlp"]["before_60_epochs"]["bacc"],
                                             a["mlp"]["after_until_plateau"]["bacc"]]
    h["cpu_count"] = os.cpu_count()
    return h


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("part", choices=("attackers", "attribute", "property", "headline"),
                    help="headline: recompute the headline from the parts already stored")
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--only", type=float, default=None,
                    help="run one end of the teaching grid (print its rows; summarise with "
                         "--rows later)")
    ap.add_argument("--rows", type=Path, default=None,
                    help="attribute/property: summarise the per-run rows a run of this part "
                         "printed (one JSON object a line) instead of running")
    args = ap.parse_args(argv)
    seeds = [int(s) for s in args.seeds.split(",")]
    fn = {"attackers": lambda: attackers_part(seeds[0]),
          "attribute": lambda: attribute_part(seeds, args.only),
          "property": lambda: property_part(seeds, args.only), "headline": lambda: None}[args.part]
    if args.rows is not None and args.part in ("attribute", "property"):
        rows = [json.loads(line) for line in args.rows.read_text().splitlines()
                if line.startswith("{")]
        fn = {"attribute": lambda: attribute_summary(rows),
              "property": lambda: property_summary(rows)}[args.part]
    if args.only is not None:  # one end only: its rows are printed, nothing is stored
        fn()
        return
    part = None if args.part == "headline" else fn()
    doc = json.loads(OUT.read_text()) if OUT.exists() else {}  # read late: parts run in parallel
    if part is not None:
        doc[args.part] = part
        doc[args.part]["measured_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    doc["note"] = ("timings on a shared 2-core machine under load from other jobs: upper "
                   "bounds of a quiet machine's")
    doc["headline"] = headline(doc)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(doc, indent=1, default=float) + "\n")
    print(json.dumps(doc["headline"], indent=1))


if __name__ == "__main__":
    main()
