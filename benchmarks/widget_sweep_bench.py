"""Every widget, every position; text that fits (``python -m benchmarks widget_sweep``).

Part 1, AppTest (:mod:`dashboard.widget_sweep`): every page of ``dashboard/views/`` with each
widget at its declared ends, a middle value and every option (the widgets a choice reveals,
such as a defense's knob, driven under that choice), Run clicked with tiny settings on every
``RUN_EVERY``-th case of a page that has one; counts cases, exceptions, cases with a
non-finite number on screen, sections a number inside its range removed, and cases showing a
registered identifier where a title exists.

Part 2, the browser (:func:`dashboard.browser_check.fit_pass`): every page in headless
chromium at 1280 px after its default run: texts cut by their box and registered identifiers
in the visible text (tables included).

Headline (merged into ``benchmarks/results/trust.json`` by ``--trust``): ``widget_cases``,
``widget_exceptions``, ``nonfinite_on_screen``, ``overflowing_labels_1280``,
``raw_identifiers_visible`` (identifiers found by the browser pass plus AppTest cases showing
one: tables and states the browser does not reach included).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RUN_EVERY = 7
HEADLINE = ("widget_cases", "widget_exceptions", "nonfinite_on_screen",
            "overflowing_labels_1280", "raw_identifiers_visible")


def apptest_part(quick: bool) -> tuple[dict[str, Any], list[dict[str, Any]], list[str]]:
    from dashboard import widget_sweep as W

    with tempfile.TemporaryDirectory(prefix="privlab_widgets_") as tmp:
        os.environ["PRIVLAB_CACHE_DIR"] = str(Path(tmp) / "store")
        t0 = time.perf_counter()
        cases = W.sweep(W.PAGES, ends=quick, depth=1, run_every=0 if quick else RUN_EVERY,
                        timeout=300)
        seconds = time.perf_counter() - t0
    summary = dict(W.summary(cases), seconds=round(seconds, 1))
    tiny = getattr(W.sweep, "last_tiny", None)
    return summary, W.as_rows(cases), list(tiny.errors) if tiny else []


def browser_part(run: bool) -> list[dict[str, Any]]:
    from playwright.sync_api import sync_playwright

    from dashboard import browser_check as B

    exe = shutil.which("chromium")
    if exe is None:
        raise RuntimeError("Debian's chromium is not installed (apt-get install -y chromium)")
    with tempfile.TemporaryDirectory(prefix="privlab_fit_") as tmp, \
            B.serve(Path(tmp) / "store", Path(tmp) / "server.log") as url, \
            sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=exe, args=B.CHROMIUM_ARGS)
        try:
            return B.fit_pass(browser, url, run=run)
        finally:
            browser.close()


def per_page(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per page: cases, widgets driven, Run clicks, seconds, flagged cases."""
    out: dict[str, dict[str, Any]] = {}
    for r in rows:
        p = out.setdefault(r["page"], {"page": r["page"], "cases": 0, "widgets": set(),
                                       "runs_clicked": 0, "seconds": 0.0, "exceptions": 0,
                                       "nonfinite": 0, "raw_identifiers": 0})
        p["cases"] += 1
        p["widgets"].add(r["widget"])
        p["runs_clicked"] += bool(r["ran"])
        p["seconds"] += r["seconds"]
        p["exceptions"] += bool(r["exception"])
        p["nonfinite"] += bool(r["nonfinite"])
        p["raw_identifiers"] += bool(r["raw_ids"])
    return [dict(p, widgets=len(p["widgets"]), seconds=round(p["seconds"], 1))
            for p in out.values()]


def main(quick: bool = False) -> dict[str, Any]:
    load_start = [round(x, 2) for x in os.getloadavg()]
    summary, rows, run_errors = apptest_part(quick)
    fit = browser_part(run=not quick)
    load_end = [round(x, 2) for x in os.getloadavg()]
    browser_ids = sorted({i for r in fit for i in r["raw_identifiers"]})
    headline = {
        "widget_cases": summary["widget_cases"],
        "widget_exceptions": summary["widget_exceptions"],
        "nonfinite_on_screen": summary["nonfinite_on_screen"],
        "overflowing_labels_1280": sum(len(r["overflowing"]) for r in fit),
        "raw_identifiers_visible": sum(len(r["raw_identifiers"]) for r in fit)
        + summary["raw_identifiers_cases"],
    }
    flagged = [r for r in rows if r["exception"] or r["nonfinite"] or r["raw_ids"]
               or (r["missing"] and r["kind"] in ("slider", "select_slider", "number")
                   and r["value"] not in ("empty", "not a number"))]
    notes = (f"{'Quick: ends only, no runs. ' if quick else ''}AppTest part: "
             f"{summary['widget_cases']} cases over {len({r['page'] for r in rows})} pages in "
             f"{summary['seconds']} s, {summary['runs_clicked']} Run clicks with tiny settings "
             "(dashboard.components.caveat_check.TINY); rules in dashboard/widget_sweep.py. "
             "Browser part: chromium at 1280 px after each page's default run. "
             f"Load average {load_start} at the start, {load_end} at the end (2 cores shared).")
    return {"name": "widget_sweep", "headline": headline,
            "apptest": summary, "tiny_run_errors": run_errors,
            "browser": fit, "browser_raw_identifiers": browser_ids,
            "flagged_cases": flagged, "rows": per_page(rows), "notes": notes,
            "targets": {"widget_cases": ">= 500", "widget_exceptions": "0",
                        "nonfinite_on_screen": "0", "overflowing_labels_1280": "0",
                        "raw_identifiers_visible": "0"}}


def merge_into_trust(result: dict[str, Any], path: Path | None = None) -> None:
    """Write the headline's figures into ``trust.json``'s headline, keeping its other keys."""
    path = path or ROOT / "benchmarks" / "results" / "trust.json"
    trust = json.loads(path.read_text()) if path.exists() else {"name": "trust", "headline": {}}
    trust.setdefault("headline", {}).update({k: result["headline"][k] for k in HEADLINE})
    trust.setdefault("sources", {}).update(
        {k: "widget_sweep.json (benchmarks/widget_sweep_bench.py)" for k in HEADLINE})
    path.write_text(json.dumps(trust, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--trust", action="store_true", help="merge the headline into trust.json")
    args = ap.parse_args()
    res = main(quick=args.quick)
    out = ROOT / "benchmarks" / "results" / "widget_sweep.json"
    out.write_text(json.dumps(res, indent=1, ensure_ascii=False, default=str) + "\n")
    if args.trust:
        merge_into_trust(res)
    print(json.dumps(res["headline"], indent=1))
