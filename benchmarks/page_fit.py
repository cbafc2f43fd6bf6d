"""Every page at 1280 px in headless Chromium after its default run
(:func:`dashboard.browser_check.fit_pass`, the pass the widget sweep ends with, alone):
the texts cut by their box, the registered names shown where a title exists, the glyphs that
need an emoji font. ``python -m benchmarks page_fit``.

Headline (merged into ``results/trust.json`` by :func:`merge_trust`): ``cut_texts_1280``,
``registered_names_visible`` and ``undrawable_glyphs``, summed over the pages.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"
TRUST = RESULTS / "trust.json"


def headline(rows: list[dict[str, Any]]) -> dict[str, int]:
    """The three counts over the pages' rows of :func:`dashboard.browser_check.fit_pass`."""
    return {"cut_texts_1280": sum(len(r["overflowing"]) for r in rows),
            "registered_names_visible": sum(len(r["raw_identifiers"]) for r in rows),
            "undrawable_glyphs": sum(len(r["undrawable"]) for r in rows)}


def merge_trust(res: dict[str, Any]) -> None:
    """Write the pass's two trust keys into trust.json's headline (its other keys kept)."""
    trust = json.loads(TRUST.read_text())
    h = res["headline"]
    trust["headline"].update({k: h[k] for k in ("cut_texts_1280", "registered_names_visible")})
    where = (f"page_fit.json: dashboard.browser_check.fit_pass over the {len(res['rows'])} pages "
             f"after their default runs, headless Chromium at 1280 px (load {res['load']})")
    trust.setdefault("sources", {}).update({"cut_texts_1280": where,
                                            "registered_names_visible": where})
    TRUST.write_text(json.dumps(trust, indent=1))


def main(quick: bool = False) -> dict[str, Any]:
    from benchmarks.widget_sweep_bench import browser_part

    start = [round(x, 2) for x in os.getloadavg()]
    rows = browser_part(run=not quick)
    end = [round(x, 2) for x in os.getloadavg()]
    res = {"name": "page_fit", "headline": headline(rows), "rows": rows,
           "load": f"{start[0]}-{end[0]}",
           "notes": f"{'Quick: pages as opened, no runs. ' if quick else ''}Load average "
                    f"{start} at the start, {end} at the end (2 cores).",
           "targets": {"cut_texts_1280": 0, "registered_names_visible": 0,
                       "undrawable_glyphs": 0}}
    if not quick:
        merge_trust(res)
    return res
