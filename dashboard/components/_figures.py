"""Figures built once per distinct input, for every session of the process.

Building a plotly figure costs tens of milliseconds of Python (validation of every property),
and Streamlit reruns a page's script on every visit and every widget change. A figure depends
only on its inputs (arrays and numbers read from a stored Result, which never changes under its
key), so :func:`figure` keeps the built figures in ``st.cache_resource``, keyed by the figure
function's name and a hash of its arguments: the second visitor of a page, in any session, gets
the figure without rebuilding it. Cached figures are shared: never modify one after
:func:`figure` returns it (``st.plotly_chart`` only reads it).
"""

from __future__ import annotations

from typing import Any

import streamlit as st
from streamlit.runtime.caching.cache_errors import UnhashableParamError

from dashboard.base import plots

MAX_FIGURES = 512


@st.cache_resource(max_entries=MAX_FIGURES, show_spinner=False)
def _cached(name: str, args: tuple, kwargs: tuple) -> Any:
    return getattr(plots, name)(*args, **dict(kwargs))


def figure(name: str, *args: Any, **kwargs: Any) -> Any:
    """``dashboard.base.plots.<name>(*args, **kwargs)``, built once per distinct arguments."""
    try:
        return _cached(name, args, tuple(sorted(kwargs.items())))
    except UnhashableParamError:  # pragma: no cover - every caller passes plain data
        return getattr(plots, name)(*args, **kwargs)
