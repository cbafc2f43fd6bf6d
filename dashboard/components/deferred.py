"""Panels drawn only on request: a collapsed expander whose content runs only once it is
opened (``st.expander(on_change="rerun")``).

Streamlit draws a plain expander's content even while it is collapsed, and the browser then
lays out every chart inside it. Secondary panels (per-round curves, projections, the full
metrics table) cost the browser as much as the headline plots, so on a shared server they
wait behind a click: nothing is computed, sent or drawn until the panel is opened, and it
stays open while the page's settings change.
"""

from __future__ import annotations

import streamlit as st


def deferred(label: str, *, key: str, icon: str | None = None):
    """The expander's container when it is open (draw into it with ``with``), else None.
    ``key`` holds the open state in ``st.session_state`` (True opens it from code)."""
    box = st.expander(label, key=key, on_change="rerun", icon=icon)
    return box if box.open else None
