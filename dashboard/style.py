"""One style sheet for the whole app: text wraps instead of being cut.

Streamlit cuts a widget label, a metric label, a navigation entry and a page link with an
ellipsis, and keeps a multiselect's chips on one scrolled line (at 1280 px the Membership page
showed one and a half of its four attacks). These rules let them wrap onto more lines. A
static table's cell passes its wrapping to the paragraph inside it, so a table may let its
free-text columns break inside a long token (``overflow-wrap: anywhere`` on those cells, as
History's run list does) without breaking keys and numbers elsewhere; the
browser pass counts what still overflows its box (:func:`dashboard.browser_check.overflowing`).
"""

from __future__ import annotations

import streamlit as st

_WRAP = "white-space: normal !important; overflow: visible !important; " \
        "text-overflow: clip !important;"

CSS = f"""
<style>
[data-testid="stWidgetLabel"], [data-testid="stWidgetLabel"] *,
[data-testid="stMetricLabel"], [data-testid="stMetricLabel"] *,
[data-testid="stSidebarNav"] a, [data-testid="stSidebarNav"] a *,
[data-testid="stPageLink"] a, [data-testid="stPageLink"] a *,
[data-baseweb="tab"], [data-baseweb="tab"] * {{ {_WRAP} }}
[data-testid="stSidebarNav"] a, [data-testid="stPageLink"] a {{ height: auto !important; }}
[data-testid="stMultiSelect"] .react-aria-ComboBox > div {{
  max-height: none !important; height: auto !important; }}
[data-testid="stMultiSelect"] .react-aria-ComboBox > div > div:first-child {{
  flex-wrap: wrap !important; overflow: visible !important; mask-image: none !important; }}
[data-testid="stMultiSelect"] .react-aria-ComboBox > div > div:first-child > span {{
  display: flex !important; flex-wrap: wrap !important; gap: 2px; }}
[data-testid="stMultiSelect"] [data-baseweb="tag"], [data-testid="stMultiSelect"] span span {{
  max-width: 100% !important; {_WRAP} height: auto !important; }}
[data-testid="stTable"] th, [data-testid="stTable"] td {{
  white-space: normal !important; overflow-wrap: break-word; }}
[data-testid="stTable"] th *, [data-testid="stTable"] td * {{ overflow-wrap: inherit !important; }}
</style>
"""


def apply_style() -> None:
    """Add :data:`CSS` to the page (a style-only ``st.html`` takes no space)."""
    st.html(CSS)
