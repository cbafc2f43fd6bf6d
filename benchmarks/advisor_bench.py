"""Defense advisor benchmark (:mod:`core.report.advisor`): the synthetic presets with hand-worked
answers (``tests/advisor_cases.py``) checked one by one, and the advisor on the stored teaching
comparison (:func:`core.runs.compare.teaching_spec`, run once serially when the store lacks it):
its answer sentence at the page's default threat and floor, and its latency.

``python -m benchmarks advisor`` writes ``benchmarks/results/advisor.json``. The headline is
``advisor_cases_tested`` (presets whose checks pass); the latency is the median and the worst
of repeated :func:`core.report.advisor.advise` calls on the comparison in memory (what a box moved on
the page costs, the comparison itself being cached there), with the load average beside it.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
#: repeated calls for the latency (each well under a millisecond to a few)
REPEATS = 200


def _cases() -> tuple[int, list[str], list[dict[str, Any]]]:
    sys.path.insert(0, str(ROOT / "tests"))
    from advisor_cases import CASES, run_case

    ok, failed, rows = 0, [], []
    for case in CASES:
        try:
            advice = run_case(case)
        except AssertionError as exc:
            failed.append(f"{case.name}: {exc}")
            continue
        ok += 1
        rows.append({"case": case.name, "status": advice.status,
                     "missing_points": advice.missing_points})
    return ok, failed, rows


def _teaching() -> tuple[Any, float, bool]:
    from cache.store import default_store
    from core.runs import compare as C

    store = default_store()
    spec = C.teaching_spec()
    t0 = time.perf_counter()
    try:
        cmp = C.read_comparison(spec, store)
        ran = False
    except C.MissingPoints:
        cmp = C.run_comparison(spec, store)
        ran = True
    return cmp, time.perf_counter() - t0, ran


def main(quick: bool = False) -> dict[str, Any]:
    from core.report import advisor as A

    n_ok, failed, case_rows = _cases()
    cmp, read_s, ran = _teaching()
    threat = A.default_threat(cmp)
    floor = A.Floor(0.9)  # the page's default: 90 % of the undefended utility
    load_before = os.getloadavg()
    times = []
    for _ in range(20 if quick else REPEATS):
        t0 = time.perf_counter()
        advice = A.advise(cmp, threat=threat, floor=floor)
        times.append((time.perf_counter() - t0) * 1000)
    load_after = os.getloadavg()
    teaching = {"threat": f"{threat.metric} ≤ {threat.level:g}", "floor_share": floor.value,
                "status": advice.status, "sentence": advice.sentence,
                "advise_ms_median": round(statistics.median(times), 3),
                "advise_ms_max": round(max(times), 3), "calls": len(times),
                "comparison_seconds": round(read_s, 2), "comparison_ran_now": ran,
                "load_1min_before_after": [round(load_before[0], 2), round(load_after[0], 2)],
                "advice": advice.to_dict()}
    rows = [*case_rows, {"case": "teaching comparison (stored)", "status": advice.status,
                         "missing_points": advice.missing_points,
                         "advise_ms_median": teaching["advise_ms_median"],
                         "advise_ms_max": teaching["advise_ms_max"],
                         "load_1min": teaching["load_1min_before_after"][1]}]
    return {"name": "advisor", "headline": {"advisor_cases_tested": n_ok}, "rows": rows,
            "teaching": teaching, "failed_cases": failed,
            "notes": f"{n_ok} of the synthetic presets pass their hand-worked checks. On the "
                     f"teaching comparison at the page's defaults: {advice.sentence} "
                     f"advise(): median {teaching['advise_ms_median']} ms, worst "
                     f"{teaching['advise_ms_max']} ms over {len(times)} calls (1-min load "
                     f"{teaching['load_1min_before_after'][1]} on this machine).",
            "targets": {"advisor_cases_tested": ">= 3", "advise_ms_max": "< 100"}}
