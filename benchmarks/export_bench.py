"""Take it with you, end to end: bundles of a run, a sweep and a comparison written the way the
CLI and the pages write them (figures as HTML + PNG, the notebook, its script and the privacy
report as HTML + PDF inside), imported into an empty store, and the run bundle's own notebook
executed headless three times: against the store the bundle was imported into (an imported run
is never served as computed here, so the notebook recomputes it: every headline number within
the tolerance its check cell states), against the store that computed the run (read from the
store: every headline number exactly equal) and against an empty store (recomputed, within
tolerance). Each row records what the notebook's run cell printed (read from the store or
recomputed), so a row's name is what happened, not what was expected.

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


def _run_notebook(nb: Any, store: Any) -> dict[str, Any]:
    """Execute ``nb`` against ``store``: executed (every cell ran; the check cell may have
    failed), its check cell passed, seconds, how its run was had (``read from the store`` /
    ``recomputed``, from the run cell's own line) and the check cell's last line."""
    from nbclient.exceptions import CellExecutionError

    from core.report.notebook import execute

    t0 = time.perf_counter()
    try:
        out = execute(nb, store=store)
    except CellExecutionError as exc:
        # every cell ran when it is the check cell's own assertion that failed
        return {"executed": "numbers differ from the export" in str(exc), "check_passed": False,
                "seconds": round(time.perf_counter() - t0, 2), "served": None,
                "check": str(exc).strip().splitlines()[-1][:200]}
    seconds = time.perf_counter() - t0
    text = "".join(o.get("text", "") for c in out.cells if c.cell_type == "code"
                   for o in c.get("outputs", []))
    last = [ln for ln in text.splitlines() if "headline numbers" in ln]
    served = ("read from the store" if "read from the result store" in text
              else "recomputed" if "recomputed and stored" in text else None)
    return {"executed": True, "check_passed": True, "seconds": round(seconds, 2),
            "served": served, "check": last[-1] if last else ""}


#: the stores the run bundle's notebook is executed against: (row name, what its run cell
#: should print, the store's folder under the bench's temporary directory)
NOTEBOOK_STORES = (
    ("the store the bundle was imported into (imported runs are never served: recomputed)",
     "recomputed", "empty_run"),
    ("the store that computed the run (read from the store)", "read from the store", "store"),
    ("an empty store (recomputed)", "recomputed", "fresh"),
)


def main(quick: bool = False) -> dict[str, Any]:
    import dashboard.components.bundle_figures  # noqa: F401 -- registers the figures
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
        runs = [{"notebook": f"against {name}", "expected": want,
                 **_run_notebook(nb, ResultStore(d / folder))}
                for name, want, folder in NOTEBOOK_STORES]
        rows += runs
    n_cases, failed, _ = _cases()
    fam_rows, fam_ok = families()
    load_end = _uptime()
    return {
        "name": "export",
        "headline": {
            "bundle_roundtrip_equal": equal_all,
            "notebook_executes": all(r["executed"] for r in runs),
            # every check cell passed (exact from the store, within tolerance recomputed) and
            # each run was had the way its row is named
            "notebook_numbers_equal": all(r["check_passed"] and r["served"] == r["expected"]
                                          for r in runs),
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
                  "per-record exposure, are computed from stored arrays and not tagged). "
                  "notebook_executes: the run bundle's notebook ran every cell against each "
                  "of the three stores of the rows; notebook_numbers_equal: each one's check "
                  "cell passed (exactly equal where read from the store, within the stated "
                  "tolerance where recomputed) and its run was read or recomputed as the "
                  "row's name says (an imported run is never served: against the store it "
                  "was imported into the notebook recomputes it)."),
    }


if __name__ == "__main__":  # pragma: no cover
    print(json.dumps(main(), indent=1, default=lambda o: np.asarray(o).tolist()))
