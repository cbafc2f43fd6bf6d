"""Notebook export benchmark: a tiny run's notebook (:func:`core.report.notebook.notebook_for`)
executed headless in a fresh kernel, once against the store that holds the run (its check: every
headline number equal) and once against an empty store (recomputed; within tolerance).

``python -m benchmarks notebook`` writes ``benchmarks/results/notebook.json``: headline
``notebook_executes`` (both executions ran every cell without an error) and
``notebook_numbers_equal`` (the check cell passed with exact equality from the store); the rows
hold the wall times (kernel start and imports included) beside the same run computed in this
process, and whether the recomputed numbers came out identical.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

#: the cheapest attribute-privacy run (tests/test_public_api.py's TINY)
TINY = {"kind": "attribute_privacy", "data": {"name": "synthetic", "n_samples": 400},
        "fl": {"num_devices": 2, "rounds": 1, "fraction_fit": 1.0, "local_epochs": 1},
        "attack": {"attackers": ["logreg"]}, "projection_points": 0, "pretrain_epochs": 0,
        "representation_dim": 8, "hidden_dim": 16, "critic_hidden": 16}


def _stdout(nb: Any) -> str:
    return "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code"
                   for o in c.outputs if o.get("output_type") == "stream")


def _execute(nb: Any, store: Any) -> tuple[Any | None, float, str | None]:
    from core.report.notebook import execute

    t0 = time.perf_counter()
    try:
        out = execute(nb, store=store, timeout=600)
    except Exception as exc:  # noqa: BLE001 - a failed execution is the measurement
        return None, time.perf_counter() - t0, str(exc).splitlines()[-1][:200]
    return out, time.perf_counter() - t0, None


def main(quick: bool = False) -> dict[str, Any]:
    import os

    import privlab
    from core.report.notebook import notebook_for

    with tempfile.TemporaryDirectory(prefix="privlab-nb-bench-") as tmp:
        full, empty = privlab.store(Path(tmp) / "full"), privlab.store(Path(tmp) / "empty")
        t0 = time.perf_counter()
        result = privlab.run(TINY, store=full)
        compute_s = time.perf_counter() - t0
        nb = notebook_for(result.key, store=full)
        cached, cached_s, cached_err = _execute(nb, full)
        recomputed, recomputed_s, recomputed_err = _execute(nb, empty)
        again = empty.get(result.key)
        identical = again is not None and privlab.headline(again) == privlab.headline(result)
        load = [round(x, 2) for x in os.getloadavg()]
    equal = cached is not None and "headline numbers equal (read from the store)" in _stdout(cached)
    within = recomputed is not None and "within tolerance (recomputed)" in _stdout(recomputed)
    headline = {"notebook_executes": cached is not None and recomputed is not None,
                "notebook_numbers_equal": bool(equal)}
    rows = [{"case": "cached (store holds the run)", "seconds": round(cached_s, 2),
             "check": "equal" if equal else (cached_err or "failed")},
            {"case": "recomputed (empty store)", "seconds": round(recomputed_s, 2),
             "check": ("within tolerance" if within else (recomputed_err or "failed"))
             + ("; numbers identical" if identical else "")},
            {"case": "the run in this process (reference, cold imports)", "seconds": round(compute_s, 2),
             "check": "-"}]
    return {"name": "notebook", "headline": headline, "rows": rows,
            "notes": f"A tiny attribute-privacy run (synthetic, 400 rows, 2 devices, 1 round); "
                     f"each execution starts a fresh kernel of this interpreter (kernel start and "
                     f"imports included). Load average after: {load}.",
            "targets": {"notebook_executes": True, "notebook_numbers_equal": True}}
