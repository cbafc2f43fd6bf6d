"""``python -m benchmarks hardening``: the fault and fuzz run of issue 21, repeatable by anyone.

1. **Fuzz**: configs of every kind generated from the pydantic schema
   (:mod:`benchmarks.config_fuzz`; hypothesis, fixed seed), each validated under a wall-clock
   limit: it validates, or is refused with one line per problem naming a field; anything else
   is an unhandled exception, a bad message or a hang.
2. **Runs**: a sample of the valid generated configs, their costly sizes shrunk (epochs,
   rounds, samples) but every knob as generated (δ, ε, κ, z, η at the ends of their ranges
   included), plus hand-picked edge configs, each through ``privlab run`` in its own process
   with a time limit; then every stored metric is checked (:mod:`core.foundation.finite`: NaN / inf only
   where the metric schema says a value can be undefined).
3. **Hostile inputs** (:mod:`benchmarks.hardening_inputs`): config files, ``--set`` values,
   CSVs and image folders built to hang, exhaust memory or crash, through the CLI in their own
   processes, with the peak memory of each.
4. **Store faults** (:mod:`benchmarks.hardening_faults`): a full disk (a 3 MB tmpfs filled up,
   when the machine lets root mount one; injected ENOSPC otherwise), a read-only store, SIGKILL
   at each write step, bit flips in every file of an entry and a stage, flipped and truncated
   indexes, concurrent writers.

Headline (issue 21): ``fuzz_cases_min_per_kind``, ``unhandled_exceptions``, ``hangs``,
``faults_injected``, ``entries_lost``, ``corrupt_served``, ``peak_rss_mb_hostile_input``,
``nonfinite_metrics_stored``.
"""

from __future__ import annotations

import copy
import json
import math
import os
import subprocess
import sys
import tempfile
import time
import warnings
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
FUZZ_PER_KIND, FUZZ_PER_KIND_QUICK = 300, 200
RUNS_PER_KIND, RUNS_PER_KIND_QUICK = 2, 1
CASE_LIMIT_S = 10.0
RUN_LIMIT_S = 300.0

#: the costly sizes of each kind, shrunk for the run sample (knobs are left as generated)
TINY: dict[str, dict[str, Any]] = {
    "projection": {"max_points": 150, "perplexity": 5.0, "n_neighbors": 5,
                   "data": {"max_samples": 300, "n_samples": 300}},
    "attribute_privacy": {"data": {"max_samples": 300, "n_samples": 300},
                          "fl": {"num_devices": 3, "rounds": 1, "local_epochs": 1,
                                 "fraction_fit": 1.0, "batch_size": 32},
                          "pretrain_epochs": 0, "representation_dim": 8, "hidden_dim": 8,
                          "critic_hidden": 8, "projection_points": 0,
                          "attack": {"mlp_epochs": 2, "max_train": 200, "mlp_hidden": 8}},
    "gradient_leakage": {"data": {"max_samples": 200},
                         "train": {"epochs": 1, "model": "mlp", "batch_size": 32,
                                   "fl": {"num_devices": 2, "rounds": 1, "local_epochs": 1,
                                          "fraction_fit": 1.0}},
                         "attack": {"targets": 1, "batch_size": 1, "iterations": 10,
                                    "local_steps": 1, "model_inversion": False}},
    "membership": {"data": {"max_samples": 400},
                   "train": {"members": 40, "epochs": 2, "batch_size": 32},
                   "attack": {"shadows": 2, "rmia_references": 1, "targets": 1},
                   "projection_points": 0},
    "fisher_information": {"data": {"n_samples": 200, "n_features": 4, "max_samples": 300,
                                    "pca_dim": 4},
                           "irfil": {"iterations": 1},
                           "attack": {"noise_trials": 2, "crb_trials": 10, "sigma_grid": 2,
                                      "max_targets": 20}},
    "property": {"data": {"max_samples": 600},
                 "subsets": {"train_per_bin": 5, "aux_per_bin": 5, "test_per_bin": 5,
                             "size_min": 4, "size_max": 16},
                 "train": {"epochs": 1, "pretrain_epochs": 0, "representation_dim": 8,
                           "hidden_dim": 8},
                 "attack": {"mlp_epochs": 2, "mlp_hidden": 8}, "projection_points": 0},
    "repr_reconstruction": {"train": {"epochs": 1, "max_train": 100, "hidden_dim": 16,
                                      "representation_dim": 8, "decoder_hidden": 16},
                            "attack": {"targets": 2, "fresh_epochs": 1, "fresh_hidden": 16,
                                       "inversion_iterations": 5},
                            "defense": {"mc_samples": 1}},
}

#: hand-picked configs at the ends of the ranges that used to hang or turn NaN
EDGES: list[tuple[str, dict[str, Any]]] = [
    ("dp_gaussian δ = 1e-12, ε = 1e-3", {"kind": "attribute_privacy", "data": {"name": "synthetic"},
                                        "defense": {"kind": "dp_gaussian", "delta": 1e-12,
                                                    "epsilon": 1e-3}}),
    ("channel κ = 1e-3", {"kind": "gradient_leakage", "data": {"name": "digits"},
                          "defense": {"kind": "channel", "kappa": 1e-3}}),
    ("DP-SGD target ε = 0.01", {"kind": "membership", "data": {"name": "digits"},
                                "defense": {"kind": "dp_sgd", "target_epsilon": 0.01}}),
    ("DP-SGD z = 0.05", {"kind": "gradient_leakage", "data": {"name": "digits"},
                         "defense": {"kind": "dp_sgd", "noise_multiplier": 0.05}}),
    ("FIL η = 1e-4", {"kind": "fisher_information", "data": {"name": "synthetic"},
                      "defense": {"eta_target": 1e-4}}),
    ("FIL classic ε = 0.999", {"kind": "fisher_information", "data": {"name": "synthetic"},
                               "model": {"model": "logistic"},
                               "defense": {"epsilon": 0.999, "dp_method": "classic",
                                           "delta": 1e-12}}),
    ("repr η = 1e-3, dp channel ε = 0", {"kind": "repr_reconstruction",
                                         "defense": {"channel": "dp", "epsilon": 0.0},
                                         "bound": {"eta_rmse": 1e-3, "eta_linf": 1e-3}}),
]


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = _merge(out[k], v)
        else:
            out[k] = copy.deepcopy(v)
    return out


def _tiny(obj: dict[str, Any]) -> dict[str, Any] | None:
    """The generated config with its sizes shrunk (None if that no longer validates)."""
    from core.config.schema import CONFIG_MODELS, ConfigError, parse_config

    kind = obj.get("kind")
    if kind == "sweep":  # its base shrunk, at most 2 values per knob and 2 seeds
        base = _tiny(obj.get("base", {})) if isinstance(obj.get("base"), dict) else None
        if base is None:
            return None
        cand = {**obj, "base": base,
                "grid": {k: v[:2] for k, v in obj.get("grid", {}).items()},
                "seeds": list(obj.get("seeds", [0]))[:2], "executor": "serial"}
        cand.pop("workers", None)
        try:
            parse_config(cand)
        except Exception:  # noqa: BLE001 - the next generated sweep is tried
            return None
        return cand
    over = TINY.get(kind)
    if over is None:
        return None
    if "data" in over and not isinstance(obj.get("data"), dict):  # keep the kind's data set
        obj = {**obj, "data": {"name": CONFIG_MODELS[kind].model_fields["data"].default.name}}
    elif "data" in over and "name" not in obj["data"]:
        obj = {**obj, "data": {**obj["data"],
                               "name": CONFIG_MODELS[kind].model_fields["data"].default.name}}
    cand = _merge(obj, over)
    if cand.get("device") == "cuda":  # where it runs, not what: no CUDA on a CPU machine
        cand["device"] = "auto"
    try:
        parse_config(cand)
    except ConfigError:  # the shrink broke a combination: the next generated config is tried
        return None
    except Exception:  # noqa: BLE001 - the fuzz already counts these
        return None
    return cand


# -- 1. fuzz ----------------------------------------------------------------------------------

def fuzz(per_kind: int) -> tuple[list[dict[str, Any]], dict[str, list[dict[str, Any]]], list[str]]:
    """Validate ``per_kind`` generated configs of every kind; rows per kind, the valid ones
    (for the run sample), notes on every failure."""
    from hypothesis import HealthCheck, given, settings

    from benchmarks.config_fuzz import check_case, config_strategy, field_names
    from core.config.schema import CONFIG_MODELS

    names = field_names()
    rows, valid, notes = [], {}, []

    def search(kind: str, seen: Counter[str], times: list[float], good: list[dict[str, Any]]):
        @settings(max_examples=per_kind, derandomize=True, database=None, deadline=None,
                  suppress_health_check=list(HealthCheck))
        @given(config_strategy(kind))
        def case(obj):
            out = check_case(obj, limit_s=CASE_LIMIT_S, names=names)
            seen[out.status] += 1
            times.append(out.seconds)
            if out.status == "valid":
                good.append(obj)
            elif out.status != "rejected":
                notes.append(f"fuzz {kind}: {out.status}: {out.detail}")

        return case

    for kind in CONFIG_MODELS:
        seen: Counter[str] = Counter()
        times: list[float] = []
        good: list[dict[str, Any]] = []
        search(kind, seen, times, good)()
        valid[kind] = good
        rows.append({"case": f"fuzz {kind}", "cases": sum(seen.values()), **dict(seen),
                     "max_case_s": round(max(times), 3) if times else None})
    return rows, valid, notes


# -- 2. runs ------------------------------------------------------------------------------------

def runs(valid: dict[str, list[dict[str, Any]]], per_kind: int, store_dir: Path
         ) -> tuple[list[dict[str, Any]], list[str]]:
    """A sample of the valid configs (sizes shrunk) and the edge configs through `privlab run`."""
    chosen: list[tuple[str, dict[str, Any]]] = []
    for kind, objs in valid.items():
        n = 0
        for obj in objs:
            t = _tiny(obj)
            if t is not None:
                chosen.append((f"generated {kind} #{n + 1}", t))
                n += 1
            if n >= per_kind:
                break
    for name, obj in EDGES:
        t = _tiny(obj) if obj["kind"] in TINY else obj
        chosen.append((f"edge: {name}", t if t is not None else obj))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PRIVLAB_THREADS": "1"}
    rows, notes = [], []
    with tempfile.TemporaryDirectory(prefix="privlab-runs-") as d:
        for i, (name, obj) in enumerate(chosen):
            path = Path(d) / f"c{i}.json"
            path.write_text(json.dumps(obj))
            t0 = time.perf_counter()
            try:
                p = subprocess.run([sys.executable, "-m", "cli.main", "run", str(path), "--json",
                                    "--cache-dir", str(store_dir), "--progress", "off"],
                                   cwd=ROOT, env=env, capture_output=True, text=True,
                                   timeout=RUN_LIMIT_S, check=False)
            except subprocess.TimeoutExpired:
                rows.append({"case": name, "outcome": "hang", "seconds": RUN_LIMIT_S,
                             "config": json.dumps(obj, sort_keys=True)})
                continue
            secs = round(time.perf_counter() - t0, 1)
            err = [ln for ln in p.stderr.splitlines() if ln.strip() and not ln.startswith(
                "privlab: note:")]
            if p.returncode == 0:
                outcome = "ran"
            elif p.returncode in (1, 2) and len(err) == 1 and err[0].startswith("privlab: error: "):
                outcome = "refused"
            else:
                outcome = "unhandled"
                notes.append(f"run {name}: exit {p.returncode}: {' | '.join(err)[-500:]}")
            rows.append({"case": name, "outcome": outcome, "seconds": secs,
                         "message": err[0][16:200] if err else "",
                         "config": json.dumps(obj, sort_keys=True)})
    return rows, notes


def nonfinite_stored(store_dir: Path) -> tuple[int, int]:
    """(metrics stored that are NaN / inf where the schema wants a number, runs checked)."""
    from cache.store import ResultStore
    from core.foundation.finite import _allowed

    if not (store_dir / "index.sqlite").exists():
        return 0, 0
    store = ResultStore(store_dir)
    bad = 0
    recs = store.list()
    for rec in recs:
        r = store.get(rec.key)
        for name, v in (r.metrics if r is not None else {}).items():
            v = float(v)
            if not math.isfinite(v) and not _allowed(name, v):
                bad += 1
    return bad, len(recs)


# -- the benchmark ------------------------------------------------------------------------------

def main(quick: bool = False) -> dict[str, Any]:
    from benchmarks.hardening_faults import run_all
    from benchmarks.hardening_inputs import run_cases

    warnings.filterwarnings("ignore", message="result store:", category=RuntimeWarning)
    t_start = time.perf_counter()
    fuzz_rows, valid, notes = fuzz(FUZZ_PER_KIND_QUICK if quick else FUZZ_PER_KIND)
    with tempfile.TemporaryDirectory(prefix="privlab-bench-store-") as d:
        store_dir = Path(d) / "s"
        run_rows, run_notes = runs(valid, RUNS_PER_KIND_QUICK if quick else RUNS_PER_KIND,
                                   store_dir)
        bad_metrics, runs_stored = nonfinite_stored(store_dir)
    hostile_rows, hostile_notes = run_cases(quick=quick)
    fault_rows, fault_notes = run_all(quick=quick)
    notes += run_notes + hostile_notes + fault_notes

    fuzz_unhandled = sum(r.get("unhandled", 0) + r.get("bad_message", 0) for r in fuzz_rows)
    headline = {
        "fuzz_cases_min_per_kind": min(r["cases"] for r in fuzz_rows),
        "unhandled_exceptions": (fuzz_unhandled
                                 + sum(r["outcome"] == "unhandled" for r in run_rows)
                                 + sum(r["outcome"] == "unhandled" for r in hostile_rows)
                                 + sum(r["unhandled"] for r in fault_rows)),
        "hangs": (sum(r.get("hang", 0) for r in fuzz_rows)
                  + sum(r["outcome"] == "hang" for r in run_rows)
                  + sum(r["outcome"] == "hang" for r in hostile_rows)
                  + sum(r["hangs"] for r in fault_rows)),
        "faults_injected": sum(r["faults"] for r in fault_rows),
        "entries_lost": sum(r["lost"] for r in fault_rows),
        "corrupt_served": sum(r["corrupt_served"] for r in fault_rows),
        "peak_rss_mb_hostile_input": max(r.get("peak_rss_mb") or 0 for r in hostile_rows),
        "nonfinite_metrics_stored": bad_metrics,
    }
    ran = Counter(r["outcome"] for r in run_rows)
    summary = (f"{sum(r['cases'] for r in fuzz_rows)} generated configs "
               f"({sum(r.get('valid', 0) for r in fuzz_rows)} valid); {len(run_rows)} run through "
               f"`privlab run` ({ran['ran']} ran, {ran['refused']} refused in one line, "
               f"{runs_stored} stored and checked for non-finite metrics); {len(hostile_rows)} "
               f"hostile inputs; {headline['faults_injected']} store faults; "
               f"{time.perf_counter() - t_start:.0f} s in all")
    return {
        "name": "hardening",
        "headline": headline,
        "targets": {"fuzz_cases_min_per_kind": ">= 200", "unhandled_exceptions": 0, "hangs": 0,
                    "entries_lost": 0, "corrupt_served": 0, "nonfinite_metrics_stored": 0,
                    "peak_rss_mb_hostile_input": "<= 1024"},
        "rows": fuzz_rows + [{"case": f"run: {r['case']}", **{k: v for k, v in r.items()
                                                              if k != "case"}} for r in run_rows]
        + [{"case": f"hostile {r['case']}", **{k: v for k, v in r.items() if k != "case"}}
           for r in hostile_rows]
        + [{"case": f"store: {r['case']}", **{k: v for k, v in r.items() if k != "case"}}
           for r in fault_rows],
        "notes": summary + (". Problems: " + " || ".join(notes) if notes else ". No problems."),
    }
