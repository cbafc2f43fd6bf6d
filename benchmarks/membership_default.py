"""The Membership page's first run: is there a threat, and how long does it take cold?

``python -m benchmarks.membership_default [--repeats N]`` runs the page's default config
(:func:`core.report.teaching.default_config`, which tests/test_teaching_defaults.py holds equal to
the page's first run) ``N`` times, each in an empty store with the engine imported first (as
the lessons benchmark does: a served page's process has it), and writes
``benchmarks/results/membership_default.json``: each cold time with the load average beside
it, the minimum, and the strongest undefended attack's AUC with its 95 % interval. Then it
merges the proof keys into ``results/trust.json``'s headline (:func:`merge_trust`), keeping
that file's other keys.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"
OUT = RESULTS / "membership_default.json"
TRUST = RESULTS / "trust.json"


def measure(repeats: int = 3) -> dict[str, Any]:
    from benchmarks.lessons_bench import _warm
    from cache.store import ResultStore
    from core.report import teaching

    _warm()
    cfg = teaching.default_config("membership")
    runs = []
    for _ in range(repeats):
        with tempfile.TemporaryDirectory(prefix="privlab_mi_default_") as tmp:
            store = ResultStore(Path(tmp) / "store")
            load = round(os.getloadavg()[0], 2)
            t0 = time.perf_counter()
            r = store.get_or_run(cfg)
            runs.append({"cold_s": round(time.perf_counter() - t0, 2), "load_1min": load,
                         "best_auc": round(float(r.metrics["mia_auc_best"]), 4),
                         "best_auc_interval": [round(float(x), 4)
                                               for x in r.interval("mia_auc_best")],
                         "best_attack": r.info.get("best_attack"),
                         "utility_acc": round(float(r.metrics["utility_acc"]), 4)})
            print(json.dumps(runs[-1]), flush=True)
    best = min(runs, key=lambda x: x["cold_s"])
    return {"name": "membership_default", "config": cfg, "runs": runs,
            "headline": {"membership_default_best_auc": runs[0]["best_auc"],
                         "membership_default_cold_s": best["cold_s"]},
            "notes": "Cold: the page's default config in an empty store, engine imported "
                     "first, data loading included; the minimum of the repeats, each with the "
                     "1-minute load average of the shared 2-core machine at its start. The AUC "
                     "is the page's first run (seed 0): the same at every repeat."}


def merge_trust(mi: dict[str, Any] | None = None) -> dict[str, Any]:
    """Merge the lesson and README proof keys into trust.json's headline (its other keys
    kept): lesson numbers checked / mismatched (lessons.json rows), README tour numbers
    mismatched (benchmarks.readme_tour), the Membership default's AUC and cold seconds."""
    from benchmarks import readme_tour

    mi = mi or json.loads(OUT.read_text())
    lessons = json.loads(readme_tour.RESULTS.read_text())
    rows = [r for r in lessons["rows"] if "lesson_numbers_checked" in r]
    _, readme_bad = readme_tour.mismatched_numbers(readme_tour.README.read_text(), lessons)
    keys = {"lesson_numbers_checked": sum(r["lesson_numbers_checked"] for r in rows),
            "lesson_number_mismatches": sum(r["lesson_number_mismatches"] for r in rows),
            "readme_numbers_mismatched": readme_bad, **mi["headline"]}
    trust = json.loads(TRUST.read_text())
    trust["headline"].update(keys)
    checked_pages = ", ".join(r["page"] for r in rows)
    trust.setdefault("sources", {}).update({
        "lesson_numbers_checked": f"lessons.json rows ({checked_pages}): every number of the "
                                  "page's lesson against its figures table "
                                  "(core.report.teaching.check_numbers)",
        "lesson_number_mismatches": "lessons.json rows (core.report.teaching.check_numbers)",
        "readme_numbers_mismatched": "docs/tour.md tour vs benchmarks.readme_tour from lessons.json",
        "membership_default_best_auc": "membership_default.json (seed 0, the page's first run)",
        "membership_default_cold_s": "membership_default.json (minimum over repeats, loads "
                                     "recorded)"})
    TRUST.write_text(json.dumps(trust, indent=1))
    return keys


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--trust-only", action="store_true",
                    help="only merge the proof keys into trust.json from the stored files")
    args = ap.parse_args()
    res = None
    if not args.trust_only:
        res = measure(args.repeats)
        OUT.write_text(json.dumps(res, indent=1))
    print(json.dumps(merge_trust(res), indent=1))
