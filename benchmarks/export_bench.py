"""Take it with you, end to end: bundles of a run, a sweep and a comparison written the way the
CLI and the pages write them (figures as HTML + PNG, the notebook, its script and the privacy
report as HTML + PDF inside), imported into an empty store, and the run bundle's own notebook
executed headless from the imported store (cached: every headline number exactly equal) and
from an empty one (recomputed: within the seed spread its check cell states).

``python -m benchmarks export`` writes ``benchmarks/results/export.json``. The headline holds
the figures the issue names; ``advisor_cases_tested`` and ``per_record_families`` are counted
here by the advisor's and the exposure benchmarks' own functions (their presets and families).
The runs are the bundle benchmark's tiny ones (:mod:`benchmarks.bundle_bench`).
"""

from __future__ import annotations

import json
import os
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.bundle_bench import SPEC, SWEEP, results_equal


def _uptime() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def _notebook(zip_path: Path) -> Any:
    import nbformat

    with zipfile.ZipFile(zip_path) as zf:
        return nbformat.reads(zf.read("notebook.ipynb").decode(), as_version=4)


def _run_notebook(nb: Any, store: Any) -> tuple[bool, bool, float, str]:
    """(executed, its check cell passed, seconds, the check cell's last line)."""
    from nbclient.exceptions import CellExecutionError

    from core.report.notebook import execute

    t0 = time.perf_counter()
    try:
        out = execute(nb, store=store)
    except CellExecutionError as exc:
        return True, False, time.perf_counter() - t0, str(exc).strip().splitlines()[-1][:200]
    text = "".join(o.get("text", "") for c in out.cells if c.cell_type == "code"
                   for o in c.get("outputs", []))
    last = [ln for ln in text.splitlines() if "headline numbers" in ln]
    return True, True, time.perf_counter() - t0, (last[-1] if last else "")


def main(quick: bool = False) -> dict[str, Any]:
    import dashboard.bundle_figures  # noqa: F401 -- registers the dashboard's figures
    from benchmarks.advisor_bench import _cases
    from benchmarks.exposure_bench import families
    from benchmarks.report_bench import mismatched
    from cache.bundle import import_bundle, write_bundle
    from cache.store import ResultStore
    from core.report import build_report
    from core.report.pdf import count_pages, external_requests
    from core.runs import compare as C

    load_start = _uptime()
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="privlab-export-bench-") as tmp:
        d = Path(tmp)
        store = ResultStore(d / "store")
        t0 = time.perf_counter()
        cmp = C.run_comparison(SPEC, store)
        sweep = store.get_or_run(SWEEP)
        runs_s = time.perf_counter() - t0
        run_key = cmp.curves[0].keys[0][0]
        targets = [("run", run_key, [run_key]),
                   ("sweep", sweep.key, [sweep.key, *(r["key"] for r in sweep.info["rows"])]),
                   ("comparison", SPEC, None)]
        equal_all, kinds, run_seconds, pdf_pages, external, mism = True, 0, None, 0, 0, 0
        for kind, target, keys in targets:
            path = d / f"{kind}.zip"
            t = time.perf_counter()
            info = write_bundle(target, path, store=store)
            seconds = time.perf_counter() - t
            keys = keys or info.points
            empty = ResultStore(d / f"empty_{kind}")
            imported = import_bundle(path, store=empty)
            ok = sorted(imported.imported) == sorted(keys) and all(
                results_equal(store.get(k), empty.get(k)) for k in keys)
            with zipfile.ZipFile(path) as zf:
                names = set(zf.namelist())
                pdf = zf.read("report.pdf") if "report.pdf" in names else b""
                html = zf.read("report.html").decode() if "report.html" in names else ""
            # the report in the bundle is the one built from the store: its numbers checked
            rep = build_report(target, store=store)
            bad = mismatched(rep, store, 0.05)
            ext = external_requests(html) if html else ["no report.html"]
            pages = count_pages(pdf) if pdf else 0
            companions = {"notebook.ipynb", "notebook.py", "report.html", "report.pdf"} <= names
            kinds += int(ok and companions)
            equal_all = equal_all and ok
            external += len(ext)
            mism += len(bad)
            if kind == "run":
                run_seconds, pdf_pages = seconds, pages
            rows.append({"kind": kind, "runs": len(keys), "files": len(names),
                         "companions": companions, "bytes": path.stat().st_size,
                         "seconds": round(seconds, 2), "roundtrip_equal": ok,
                         "report_pdf_pages": pages, "report_numbers": len(rep.numbers),
                         "report_mismatched": len(bad), "report_external_requests": len(ext)})
        nb = _notebook(d / "run.zip")
        cached = _run_notebook(nb, ResultStore(d / "empty_run"))  # the imported store
        fresh = _run_notebook(nb, ResultStore(d / "fresh"))
        rows.append({"notebook": "from the imported store", "executed": cached[0],
                     "check_passed": cached[1], "seconds": round(cached[2], 2),
                     "check": cached[3]})
        rows.append({"notebook": "from an empty store (recomputed)", "executed": fresh[0],
                     "check_passed": fresh[1], "seconds": round(fresh[2], 2),
                     "check": fresh[3]})
    n_cases, failed, _ = _cases()
    fam_rows, fam_ok = families()
    load_end = _uptime()
    return {
        "name": "export",
        "headline": {
            "bundle_roundtrip_equal": equal_all,
            "notebook_executes": cached[0] and fresh[0],
            "notebook_numbers_equal": cached[1] and fresh[1],
            "bundle_kinds": kinds,
            "report_pdf_pages": pdf_pages,
            "report_external_requests": external,
            "report_numbers_mismatched": mism,
            "advisor_cases_tested": n_cases,
            "per_record_families": len(fam_ok),
            "bundle_seconds": round(float(run_seconds), 2),
        },
        "rows": rows,
        "advisor_cases_failed": failed,
        "per_record_family_rows": fam_rows,
        "timing": {"runs_s": round(runs_s, 2), "load_start": load_start, "load_end": load_end},
        "notes": ("bundle_seconds: one build of the run's bundle as the CLI and the pages write "
                  "it (figures HTML + PNG, notebook + script, report HTML + PDF: Chromium "
                  "started for the PNGs and again for the PDF) on a shared 2-core machine, "
                  f"load average {load_start} at the start and {load_end} at the end. "
                  "bundle_kinds counts the kinds (run, sweep, comparison) whose bundle came "
                  "back equal and carried the notebook, script and report. report_* are read "
                  "from the bundles' own report.html / report.pdf; the mismatch check compares "
                  "every tagged number of the report with the store (sections' numbers, the "
                  "per-record exposure, are computed from stored arrays and not tagged)."),
    }


if __name__ == "__main__":  # pragma: no cover
    print(json.dumps(main(), indent=1, default=lambda o: np.asarray(o).tolist()))
