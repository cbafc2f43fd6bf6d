"""Figures of the Fisher information page built once per distinct input (the same reasoning as
:mod:`dashboard.components._figures`, over :mod:`dashboard.base.fil_plots`)."""

from __future__ import annotations

from typing import Any

import streamlit as st
from streamlit.runtime.caching.cache_errors import UnhashableParamError

from dashboard.base import fil_plots

MAX_FIGURES = 256


@st.cache_resource(max_entries=MAX_FIGURES, show_spinner=False)
def _cached(name: str, args: tuple, kwargs: tuple) -> Any:
    return getattr(fil_plots, name)(*args, **dict(kwargs))


def fil_figure(name: str, *args: Any, **kwargs: Any) -> Any:
    """``dashboard.base.fil_plots.<name>(*args, **kwargs)``, built once per distinct arguments
    (never modify the returned figure: it is shared)."""
    try:
        return _cached(name, args, tuple(sorted(kwargs.items())))
    except UnhashableParamError:  # pragma: no cover - callers pass arrays, tuples, numbers
        return getattr(fil_plots, name)(*args, **kwargs)
