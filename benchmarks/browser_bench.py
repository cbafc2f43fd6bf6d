"""Browser benchmark (issue #20, Tests and items 6, 8, 9): every page in Chromium after its
default run, and the README tour's screenshots.

``python -m benchmarks browser`` writes ``benchmarks/results/browser.json`` and
``docs/tour/<page>.png``. It starts the dashboard server as ``tests/test_browser.py`` does
(:mod:`dashboard.browser_check`) on a private, empty result store. Before a page with a knob is
checked, its own default config is read in the browser (its "Copy this run as YAML" block) and
its teaching sweep over that config is stored through the Python API
(:func:`core.report.teaching.teaching_sweep` → ``job_configs`` → ``store.get_or_run``; one seed and
both ends of the grid, as ``benchmarks/lessons_bench.py --quick`` does), so that the page shows
its measured lesson; the fields where the page's default differs from
:func:`core.report.teaching.default_config` are recorded.
Then, page by page (Home, Data & projections, the six pages with a knob, Compare, History):
open it, press its Run button with the defaults untouched (Compare runs its teaching preset by
itself), wait for the result, and record the seconds to the result, any exception box, the
lesson panel's measured sentence, the registered metric keys in the visible text
(:func:`dashboard.base.format.raw_metric_keys_visible` over the body text and the plots'
SVG text), requests leaving the machine, failed responses and console errors; then save a
full-page screenshot (capped height, palette PNG).

Headline: ``browser_console_errors`` (console errors + uncaught page errors),
``browser_external_requests``, ``raw_metric_keys_visible`` (keys found, summed over pages).
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
TOUR = ROOT / "docs" / "tour"
RESULT_TIMEOUT_MS = 900_000  # a loaded 2-core machine: Compare's preset runs cold in the page


def default_differences(page: str, shown: dict[str, Any]) -> dict[str, list[Any]]:
    """Fields where the page's own default config (read in the browser) differs from
    :func:`core.report.teaching.default_config` (what benchmarks/lessons_bench.py times):
    ``field: [page, teaching]`` (the device left out)."""
    from core.report import teaching

    return teaching.default_differences(page, shown, ignore=("device",))


def prefill(store_dir: Path, page: str, base: dict[str, Any]) -> dict[str, Any]:
    """``page``'s teaching sweep over ``base`` (the page's own default config), quick (one
    seed, both ends of the grid), stored through the Python API."""
    from benchmarks.lessons_bench import _quick_spec
    from cache.store import ResultStore
    from core.report import teaching

    store = ResultStore(store_dir)
    spec = _quick_spec(teaching.teaching_sweep(page, base))
    dim = teaching.data_dim(spec.base) if spec.dim_scaled else None
    t0 = time.perf_counter()
    for c in spec.job_configs(dim):
        store.get_or_run(c)
    les = teaching.lesson(spec, store.peek, dim)
    out = {"seconds": round(time.perf_counter() - t0, 2), "grid": list(spec.values(dim)),
           "seeds": list(spec.seeds), "lesson_ready": les.ready,
           "default_stored": store.peek(base) is not None}
    print(f"  prefill {page}: {out['seconds']} s, grid {out['grid']}", flush=True)
    return out


def expected_missing(store_dir: Path, bases: dict[str, dict[str, Any]]) -> dict[str, list[int]]:
    """[missing, total] of each page's full teaching sweep over its own default config, read
    from the store after the pass: the page's lesson panel should say the same."""
    from cache.store import ResultStore
    from core.report import teaching

    store = ResultStore(store_dir)
    out = {}
    for p, base in bases.items():
        spec = teaching.teaching_sweep(p, base)
        dim = teaching.data_dim(spec.base) if spec.dim_scaled else None
        les = teaching.lesson(spec, store.peek, dim)
        out[p] = [les.missing, les.total]
    return out


def check_page(browser, server: str, check, shots: Path, store_dir: Path,
               bases: dict[str, dict[str, Any]]) -> dict[str, Any]:
    from core.report import teaching
    from dashboard import browser_check as B

    page = browser.new_page(viewport={"width": 1280, "height": 1000})
    row: dict[str, Any] = {"page": check.name}
    if check.name in teaching.PAGES:
        # the page's own default config, as its "Copy this run" block shows it, then its
        # teaching sweep over that config (so the lesson panel reads the runs it shows)
        B.open_page(page, server, check)
        base = B.page_config(page)
        bases[check.name] = base
        row["default_differs_from_teaching_default"] = default_differences(check.name, base)
        row["prefill"] = prefill(store_dir, check.name, base)
        row["default_stored_before_run"] = row["prefill"]["default_stored"]
        page.close()
        page = browser.new_page(viewport={"width": 1280, "height": 1000})
    watch = B.Watch(page, server)
    try:
        ran = B.open_and_run(page, server, check, timeout_ms=RESULT_TIMEOUT_MS)
        row["seconds_to_result"] = round(ran["seconds"], 2)
        row["run_clicked"] = ran["clicked"]
    except Exception as exc:  # noqa: BLE001 - recorded in its row, the other pages go on
        row["error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0]}"
    row["exception"] = B.exception_text(page)
    if check.knob:
        text = B.lesson_text(page)
        row["lesson_panel"] = text is not None
        row["lesson_sentence"] = B.measured_sentence(text)
        m = re.search(r"(\d+) of (\d+) points", text or "")
        row["lesson_points_missing"] = [int(m.group(1)), int(m.group(2))] if m else None
    keys = B.raw_keys(page)
    row["raw_keys"] = keys
    row["raw_keys_n"] = len(keys)
    row["console_errors"] = watch.console_errors()
    row["console_warnings"] = [c for c in watch.console if c.startswith("warning:")]
    row["external_requests"] = list(watch.external)
    row["failed_responses"] = list(watch.failed)
    row["screenshot"] = f"docs/tour/{check.shot}.png"
    row["screenshot_info"] = B.screenshot(page, shots / f"{check.shot}.png")
    page.close()
    print(f"  {check.name}: {row.get('seconds_to_result')} s, raw keys {keys}, "
          f"errors {len(row['console_errors'])}, external {len(row['external_requests'])}, "
          f"lesson {row.get('lesson_sentence')!r}", flush=True)
    return row


def main(quick: bool = False, pages: tuple[str, ...] | None = None,
         shots: Path = TOUR) -> dict[str, Any]:
    from playwright.sync_api import sync_playwright

    from benchmarks.lessons_bench import _warm
    from dashboard import browser_check as B

    exe = shutil.which("chromium")
    if exe is None:
        raise RuntimeError("Debian's chromium is not installed (apt-get install -y chromium)")
    load_start = [round(x, 2) for x in os.getloadavg()]
    checks = [B.PAGE[p] for p in pages] if pages else list(B.PAGES)
    rows: list[dict[str, Any]] = []
    bases: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="privlab_browser_") as tmp:
        store_dir = Path(tmp) / "store"
        _warm()
        with B.serve(store_dir, Path(tmp) / "server.log") as url, sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=exe, args=B.CHROMIUM_ARGS)
            try:
                for check in checks:
                    rows.append(check_page(browser, url, check, shots, store_dir, bases))
            finally:
                browser.close()
        log = (Path(tmp) / "server.log").read_text(errors="replace")
        expected = expected_missing(store_dir, bases)
        for row in rows:
            if row["page"] in expected:
                row["lesson_points_missing_expected"] = expected[row["page"]]
    headline = {
        "browser_console_errors": sum(len(r["console_errors"]) for r in rows),
        "browser_external_requests": sum(len(r["external_requests"]) for r in rows),
        "raw_metric_keys_visible": sum(r["raw_keys_n"] for r in rows),
    }
    load_end = [round(x, 2) for x in os.getloadavg()]
    knob_rows = [r for r in rows if "lesson_sentence" in r]
    notes = (
        f"Chromium (Debian, headless, SwiftShader) against `streamlit run dashboard/server.py` on "
        f"a 2-core machine shared with other work (load average {load_start} at the start, "
        f"{load_end} at the end): seconds are a loaded machine's. Before each page with a "
        "knob is checked, its own default config is read in the browser (its 'Copy this run as "
        "YAML' block; default_differs_from_teaching_default lists the fields where it is not "
        "core.report.teaching.default_config, which the lessons benchmark times) and its teaching sweep "
        "over that config is stored through the Python API, QUICK (one seed, both ends of each "
        "grid; prefill), so each lesson reads 'one seed and no interval' and says how many "
        "points are missing; a page whose default is a grid end then shows it from the store "
        "(default_stored_before_run). seconds_to_result: from the Run click, or from opening "
        "the page where it runs its default by itself (Fisher information, Compare: its "
        "teaching preset, cold). raw_keys: registered metric keys (core.foundation.metric_schema, attack metrics "
        "included) found as whole tokens in the body's innerText plus the plots' SVG text; "
        "console_errors: console messages of type error plus uncaught page errors; "
        f"{len([r for r in knob_rows if r.get('lesson_sentence')])} of {len(knob_rows)} pages "
        "with a knob showed a measured lesson sentence. Screenshots: 1280 px wide, height "
        "capped at 5000 px, 256-colour PNG.")
    warnings = [ln for ln in log.splitlines() if "warn" in ln.lower()]
    return {"name": "browser", "headline": headline, "rows": rows, "server_log_warnings": warnings[:20],
            "failed_responses_total": sum(len(r["failed_responses"]) for r in rows),
            "exceptions": [r["page"] for r in rows if r.get("exception")],
            "errors": [r["page"] for r in rows if r.get("error")], "notes": notes,
            "targets": {"browser_console_errors": "0", "browser_external_requests": "0",
                        "raw_metric_keys_visible": "0"}}


if __name__ == "__main__":
    import argparse
    import json

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pages", nargs="*", default=None)
    ap.add_argument("--shots", default=str(TOUR))
    args = ap.parse_args()
    res = main(pages=tuple(args.pages) if args.pages else None, shots=Path(args.shots))
    print(json.dumps(res["headline"], indent=1))
