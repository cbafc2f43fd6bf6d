"""The one closing section of every page that runs something: what a page shows after its own
panels, the same way everywhere.

- the run's caveats in full (each also flagged beside its number,
  :mod:`dashboard.components.caveats`) and its notes, as the run reported them;
- the config and every metric with its interval (drawn only when opened);
- the run to take away: the Result as JSON, the bundle (.zip), and (``config`` given) the config as YAML / a CLI
  command (:func:`dashboard.components.copy_run.copy_run`);
- the latest stored runs of this kind, the shown one marked, with a link to History (drawn
  only when opened: it reads the store's index).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import streamlit as st

from dashboard.components.bundle_button import bundle_button
from dashboard.components.caveats import caveat_list
from dashboard.components.copy_run import copy_run
from dashboard.components.deferred import deferred
from dashboard.components.report_button import report_button
from dashboard.components.result_info import config_and_metrics
from dashboard.components.run_history import records_of, run_row

#: runs listed in the history box
HISTORY_ROWS = 8


def notes(result: Any) -> None:
    """The run's notes, one caption each."""
    from dashboard.base.format import titled

    for note in result.info.get("notes", []):  # parts by title: the CLI keeps the names
        st.caption(f"note: {titled(str(note), getattr(result, 'kind', None))}")


def kind_title(kind: str) -> str:
    """An experiment kind in words: its attack family's title where one is registered."""
    from core.foundation.parts import FAMILIES

    return FAMILIES.get(kind).title if kind in FAMILIES else kind.replace("_", " ")


def history_box(kind: str, *, key: str, current: str | None = None,
                limit: int = HISTORY_ROWS) -> None:
    """The latest ``limit`` stored runs of ``kind`` (``current``: the key of the run shown,
    marked), in a box opened on request, and a link to the History page."""
    if not (box := deferred(f"Earlier runs of this kind ({kind_title(kind)})",
                            key=f"{key}_show_history",
                            icon=":material/history:")):
        return
    from dashboard.base.widgets import get_store

    with box:
        try:
            records = records_of(get_store(), kind, limit)
        except (OSError, ValueError) as exc:  # a damaged index must not take the page down
            st.caption(f"The store's index cannot be read: {exc}")
            return
        if not records:
            st.caption("No stored run of this kind yet.")
        else:
            rows = [{"shown": "▶" if current and r.key == current else "", **run_row(r)}
                    for r in records]
            st.dataframe(rows, hide_index=True, width="stretch",
                         column_order=["shown", "created (UTC)", "key", "data set", "settings",
                                       "main metrics", "engine", "seconds"])
        st.page_link("views/history.py", label="Every stored run: History",
                     icon=":material/history:")


def page_tail(result: Any | None, kind: str, *, key: str,
              config: Mapping[str, Any] | None = None) -> None:
    """The closing section (see the module docstring) under widget-key prefix ``key``; with
    ``result`` None only the history box (and the copy box when ``config`` is given)."""
    if result is not None:
        caveat_list(result)
        notes(result)
        config_and_metrics(result, key=f"{key}_show_metrics")
        st.download_button("Download this run (JSON)", lambda: result.to_json(),
                           file_name=f"privlab_{kind}_{(result.key or 'run')[:12]}.json",
                           mime="application/json", key=f"{key}_download_json",
                           icon=":material/download:")
        bundle_button(result.key, key=key)
        report_button(result, key=key)
    if config is not None:
        copy_run(config)
    history_box(kind, key=key, current=None if result is None else result.key)
