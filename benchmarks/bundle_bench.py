"""Bundles (cache.bundle): how long a run's bundle takes with its figures (HTML with plotly.js
inline + PNG through kaleido's Chromium), how large the bundles of a run, a sweep and a
comparison are, and whether each comes back equal after an import into an empty store.

The runs are the tests' tiny ones (membership on digits: 60 members, 3 epochs, the loss
attacker; a 2-point TAPPFL sweep on synthetic data), computed once in a temporary store.
``bundle_seconds`` is the median of three builds of the run's bundle, each starting Chromium
afresh (as each click in the dashboard or each ``privlab bundle`` does); the load average is
recorded beside it (the machine is shared).
"""

from __future__ import annotations

import io
import math
import os
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from cache.bundle import import_bundle, spec_from_dict, write_bundle
from cache.store import ResultStore
from core.runs import compare as C

SPEC = C.ComparisonSpec(
    family="membership", data="digits", utility="utility_acc", privacy="mia_loss_auc",
    defenses=(C.DefenseSpec.of("channel", (1.0, 30.0)),), seeds=(0,),
    base={"train": {"members": 60, "epochs": 3},
          "attack": {"attackers": ["loss"], "shadows": 2, "rmia_references": 1}})
TINY = {"kind": "attribute_privacy", "data": {"name": "synthetic", "n_samples": 400},
        "fl": {"num_devices": 2, "rounds": 2, "fraction_fit": 1.0, "local_epochs": 1},
        "attack": {"attackers": ["logreg"]}, "projection_points": 0, "pretrain_epochs": 0,
        "representation_dim": 8, "hidden_dim": 16, "critic_hidden": 16}
SWEEP = {"kind": "sweep", "base": TINY, "grid": {"defense.tradeoff_lambda": [0.0, 1.0]},
         "seeds": [0]}
REPEATS = 3


def _same_numbers(a: dict, b: dict) -> bool:
    """Equal keys and equal values, NaN equal to NaN."""
    if a.keys() != b.keys():
        return False
    return all((isinstance(a[k], float) and isinstance(b[k], float) and math.isnan(a[k])
                and math.isnan(b[k])) or a[k] == b[k] for k in a)


def results_equal(a: Any, b: Any) -> bool:
    """Every metric, interval, curve, array and info of two Results equal."""
    if b is None or (a.key, a.kind, a.config, a.seed, a.engine_version) != \
            (b.key, b.kind, b.config, b.seed, b.engine_version):
        return False
    if not _same_numbers(a.metrics, b.metrics) or a.intervals.keys() != b.intervals.keys():
        return False
    if not all(_same_numbers(a.intervals[k], b.intervals[k]) for k in a.intervals):
        return False
    if a.curves.keys() != b.curves.keys() or not all(
            np.array_equal(a.curves[k], b.curves[k], equal_nan=True) for k in a.curves):
        return False
    if sorted(a.artifacts) != sorted(b.artifacts):
        return False
    # NaN marks a record no target model trained on (the per-record scores): equal to NaN
    return all(a.artifacts[k].dtype == b.artifacts[k].dtype
               and np.array_equal(a.artifacts[k], b.artifacts[k],
                                  equal_nan=a.artifacts[k].dtype.kind in "fc")
               for k in a.artifacts) \
        and a.info == b.info


def _roundtrip(path: Path, store: ResultStore, keys: list[str], root: Path) -> bool:
    empty = ResultStore(root)
    report = import_bundle(path, store=empty)
    return sorted(report.imported) == sorted(keys) and \
        all(results_equal(store.get(k), empty.get(k)) for k in keys)


def _parts(path: Path) -> dict[str, int]:
    """Compressed bytes by part of the bundle: figures HTML, figures PNG, everything else."""
    out = {"html_bytes": 0, "png_bytes": 0, "data_bytes": 0}
    with zipfile.ZipFile(path) as zf:
        for i in zf.infolist():
            part = "html_bytes" if i.filename.endswith(".html") else \
                "png_bytes" if i.filename.endswith(".png") else "data_bytes"
            out[part] += i.compress_size
    return out


def main(quick: bool = False) -> dict[str, Any]:
    import dashboard.components.bundle_figures  # noqa: F401 -- registers the figures

    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        store = ResultStore(d / "store")
        cmp = C.run_comparison(SPEC, store)
        sweep = store.get_or_run(SWEEP)
        run_key = cmp.curves[0].keys[0][0]
        load_before = [round(x, 2) for x in os.getloadavg()]
        times = []
        for i in range(1 if quick else REPEATS):
            t0 = time.perf_counter()
            info = write_bundle(run_key, d / f"run{i}.zip", store=store)
            times.append(time.perf_counter() - t0)
        load_after = [round(x, 2) for x in os.getloadavg()]
        t0 = time.perf_counter()
        bare = write_bundle(run_key, io.BytesIO(), store=store, figures=False)
        bare_s = time.perf_counter() - t0
        targets = [("run", run_key, [run_key], info, d / "run0.zip"),
                   ("sweep", sweep.key, [sweep.key, *(r["key"] for r in sweep.info["rows"])],
                    None, d / "sweep.zip"),
                   ("comparison", SPEC, None, None, d / "cmp.zip")]
        equal_all = True
        for kind, target, keys, made, path in targets:
            if made is None:
                t0 = time.perf_counter()
                made = write_bundle(target, path, store=store)
                seconds = time.perf_counter() - t0
            else:
                seconds = float(np.median(times))
            keys = keys or made.points
            ok = _roundtrip(path, store, keys, d / f"empty_{kind}")
            if kind == "comparison":  # and the curves read back from the imported points
                empty = ResultStore(d / "empty_comparison")
                back = C.read_comparison(spec_from_dict(import_bundle(path, store=empty).spec),
                                         empty, imported=True)
                ok = ok and all(np.array_equal(a.leakage, b.leakage, equal_nan=True)
                                and np.array_equal(a.utility, b.utility, equal_nan=True)
                                for a, b in zip(cmp.curves, back.curves, strict=True))
            equal_all = equal_all and ok
            rows.append({"kind": kind, "runs": len(keys), "files": len(made.files),
                         "figures": len(made.figures), "bytes": path.stat().st_size,
                         **_parts(path), "seconds": round(seconds, 2), "roundtrip_equal": ok})
        rows.append({"kind": "run, no figures", "runs": 1, "files": len(bare.files),
                     "figures": 0, "bytes": bare.size, "seconds": round(bare_s, 3),
                     "roundtrip_equal": None})
    bundle_seconds = round(float(np.median(times)), 2)
    return {
        "name": "bundle",
        "headline": {"bundle_roundtrip_equal": equal_all, "bundle_kinds": 3,
                     "bundle_seconds": bundle_seconds},
        "rows": rows,
        "run_bundle_seconds_each": [round(t, 2) for t in times],
        "load_average_before_after": [load_before, load_after],
        "notes": (f"bundle_seconds: median of {len(times)} builds of the run's bundle with its "
                  f"figures (HTML + PNG, Chromium started per build); load average (1, 5, 15 min) "
                  f"{load_before} before, {load_after} after, on a shared 2-core machine. Each "
                  "figure's HTML carries plotly.js (~4.8 MB, ~1.4 MB deflated) so that it opens "
                  "offline; html_bytes/png_bytes/data_bytes are compressed sizes in the zip."),
    }


if __name__ == "__main__":
    import json

    print(json.dumps(main(), indent=1, default=str))
