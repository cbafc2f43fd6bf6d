"""Numbers must not move: the tiny config of every runner under every defense it offers, run
once, its metrics, intervals, curves and notes written to a JSON file; ``--against`` compares a
fresh run with a file written before a change and lists every figure that differs.

    python -m benchmarks.golden --out /tmp/before.json
    python -m benchmarks.golden --out /tmp/after.json --against /tmp/before.json

A figure equal bit for bit is "same"; anything else is listed with both values. The configs are
the test suite's tiny ones, so the whole set runs in a few minutes on two cores.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from typing import Any

MEMBERSHIP = {"kind": "membership", "data": {"name": "digits"}, "projection_points": 0,
              "train": {"members": 80, "epochs": 4, "batch_size": 32},
              "attack": {"shadows": 4, "rmia_references": 1}}
GRADIENT = {"kind": "gradient_leakage", "data": {"name": "digits"},
            "train": {"model": "mlp", "epochs": 1, "batch_size": 64},
            "attack": {"attackers": ["idlg"], "targets": 2, "iterations": 20,
                       "model_inversion": False}}
ATTRIBUTE = {"kind": "attribute_privacy",
             "data": {"name": "synthetic", "n_samples": 600, "dependence": 0.6},
             "fl": {"num_devices": 3, "fraction_fit": 1.0, "rounds": 2, "batch_size": 32},
             "pretrain_epochs": 1, "projection_points": 0, "attack": {"mlp_epochs": 10}}
PROPERTY = {"kind": "property", "data": {"name": "digits", "private_attribute": "parity"},
            "subsets": {"size_min": 8, "size_max": 40, "train_per_bin": 40, "aux_per_bin": 40,
                        "test_per_bin": 20},
            "train": {"epochs": 3, "pretrain_epochs": 1}, "attack": {"mlp_epochs": 20},
            "projection_points": 0}
FIL = {"kind": "fisher_information", "data": {"name": "digits"}, "irfil": {"iterations": 3},
       "attack": {"noise_trials": 4, "crb_trials": 200, "sigma_grid": 3}}

REPR = {"kind": "repr_reconstruction", "data": {"name": "digits"},
        "defense": {"channel": "learned", "epsilon": 1.0},
        "train": {"epochs": 2, "max_train": 400, "representation_dim": 16},
        "attack": {"targets": 6, "fresh_epochs": 2, "inversion_iterations": 10,
                   "attackers": ["decoder_in_training", "inversion"]}}
PROPERTY_DEFENDED = {**PROPERTY, "defense": {"tradeoff_lambda": 0.5}}
MEMBERSHIP_LENET = {**MEMBERSHIP, "model": {"arch": "lenet5"},
                    "train": {**MEMBERSHIP["train"], "epochs": 2}}

BASES = {"membership": MEMBERSHIP, "gradient_leakage": GRADIENT,
         "attribute_privacy": ATTRIBUTE, "property": PROPERTY, "fisher_information": FIL}


def cases() -> dict[str, dict[str, Any]]:
    """name -> config: each base alone, and each family's defenses at their default block."""
    from core.foundation.parts import DEFENSES

    out: dict[str, dict[str, Any]] = {}
    for fam, base in BASES.items():
        out[f"{fam}/default"] = base
    out["repr_reconstruction/default"] = REPR
    out["property/defended"] = PROPERTY_DEFENDED
    out["membership/lenet5"] = MEMBERSHIP_LENET
    out["membership/relaxloss_lenet5"] = {**MEMBERSHIP_LENET, "defense": {"kind": "relaxloss"}}
    # α that binds: ascent and flattening both taken (Algorithm 1's parity, which the engine
    # before the reference options used)
    bound: dict[str, Any] = {"kind": "relaxloss", "alpha": 1.0}
    from core.catalog.relaxloss import RelaxLossDefense

    if "parity" in RelaxLossDefense.model_fields:
        bound["parity"] = "paper"
    out["membership/relaxloss_bound"] = {**MEMBERSHIP, "defense": bound,
                                         "train": {**MEMBERSHIP["train"], "epochs": 30, "lr": 0.01}}
    for fam in ("membership", "gradient_leakage", "attribute_privacy"):
        for part in DEFENSES.values():
            if fam not in part.families or part.baseline:
                continue
            block: dict[str, Any] = {"kind": part.name}
            if part.name == "dp_sgd":  # a tiny DP-SGD: a few full-batch steps
                block.update(epochs=3)
            out[f"{fam}/{part.name}"] = {**BASES[fam], "defense": block}
    return out


def _clean(v: Any) -> Any:
    if isinstance(v, float):
        return repr(v) if (math.isnan(v) or math.isinf(v)) else v
    if isinstance(v, dict):
        return {k: _clean(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_clean(x) for x in v]
    return v


def measure(names: list[str] | None = None) -> dict[str, Any]:
    from core.runs.experiments import run

    out: dict[str, Any] = {}
    for name, cfg in cases().items():
        if names and not any(name.startswith(n) for n in names):
            continue
        t0 = time.perf_counter()
        try:
            r = run(cfg)
        except Exception as e:  # noqa: BLE001  (a case that fails is a figure too)
            out[name] = {"error": f"{type(e).__name__}: {e}"}
            print(f"{name}: ERROR {e}", file=sys.stderr)
            continue
        metrics = {k: v for k, v in r.metrics.items() if "seconds" not in k}
        out[name] = _clean({"metrics": metrics, "intervals": r.intervals, "curves": {
            k: v for k, v in r.curves.items() if "seconds" not in k},
            "notes": r.info.get("notes", [])})
        print(f"{name}: {len(r.metrics)} metrics in {time.perf_counter() - t0:.1f} s",
              file=sys.stderr)
    return out


def diff(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    lines: list[str] = []

    def walk(path: str, a: Any, b: Any) -> None:
        if isinstance(a, dict) and isinstance(b, dict):
            for k in sorted(set(a) | set(b)):
                if k not in a or k not in b:
                    lines.append(f"{path}/{k}: only {'after' if k not in a else 'before'}")
                else:
                    walk(f"{path}/{k}", a[k], b[k])
        elif a != b:
            lines.append(f"{path}: {a!r} -> {b!r}")

    for name in sorted(set(before) & set(after)):
        walk(name, before[name], after[name])
    return lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True)
    p.add_argument("--against")
    p.add_argument("--only", nargs="*", help="case name prefixes")
    a = p.parse_args(argv)
    res = measure(a.only)
    with open(a.out, "w", encoding="utf-8") as f:
        json.dump(res, f, indent=1, sort_keys=True)
    if a.against:
        with open(a.against, encoding="utf-8") as f:
            before = json.load(f)
        lines = diff(before, res)
        print("\n".join(lines) if lines else "every figure equal")
        return 1 if lines else 0
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
