"""Caveat rendering benchmark (issue #20, item 3): how many of the caveat keys a run can emit
(:mod:`core.foundation.caveats`) each page draws, and how many beside the number they qualify.

``python -m benchmarks caveats`` writes ``benchmarks/results/caveats.json``; the figures come
from :func:`dashboard.components.caveat_check.caveat_keys_rendered` (every kind's page drawn in
Streamlit's AppTest with Results that raise its caveats). The lessons benchmark merges
``caveat_keys_rendered`` and ``caveat_keys_total`` from this file.
"""

from __future__ import annotations

import time
from typing import Any


def main(quick: bool = False) -> dict[str, Any]:
    from dashboard.components.caveat_check import caveat_keys_rendered

    t0 = time.perf_counter()
    got = caveat_keys_rendered()
    seconds = time.perf_counter() - t0
    headline = {"caveat_keys_rendered": got["caveat_keys_rendered"],
                "caveat_keys_total": got["caveat_keys_total"]}
    rows = [{"caveat_keys_beside": got["caveat_keys_beside"],
             "missing": ", ".join(got["missing"]) or "-",
             "not_beside": ", ".join(got["not_beside"]) or "-",
             "errors": len(got["errors"]),
             "raw_metric_keys_visible_apptest": len(got["raw_metric_keys_visible"]),
             "raw_keys_seen": ", ".join(got["raw_metric_keys_visible"]) or "-",
             "seconds": round(seconds, 1)}]
    return {"name": "caveats", "headline": headline, "rows": rows,
            "notes": "Each page drawn in AppTest with Results moved so that every registered "
                     "detector fires; a key is rendered when its sentence is on the page and "
                     "beside when its flag sits on the tile, cell, plot or caption it qualifies. "
                     "raw_metric_keys_visible_apptest counts raw metric keys in that AppTest "
                     "text (the browser's count is browser.json's).",
            "targets": {"caveat_keys_rendered": "= caveat_keys_total"}}
