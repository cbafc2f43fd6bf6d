"""The "Bundle (.zip)" download on every result, on Compare and on History, and the "imported
from …" marker of runs that came from a bundle (:mod:`cache.bundle`).

A bundle with its figures as PNG takes seconds to build, so it is built only when the button is
clicked (``st.download_button`` with a callable: Streamlit calls it on the click, never on a
rerun) and kept for the next click: a stored run never changes under its key.
"""

from __future__ import annotations

import io
import threading
from collections import OrderedDict
from typing import Any

import streamlit as st

from cache.bundle.origin import origin_text

#: bundles kept for a repeated click (a few MB each)
KEEP = 4
_BUILT: OrderedDict[tuple, bytes] = OrderedDict()
_BUILDING: dict[tuple, threading.Lock] = {}
_LOCK = threading.Lock()


def _identity(target: Any) -> tuple:
    """What decides a bundle's bytes (a key, or a comparison's spec as plain data)."""
    if isinstance(target, str):
        return ("run", target)
    from cache.bundle import spec_to_dict

    return ("comparison", repr(spec_to_dict(target)))


def bundle_bytes(target: Any) -> bytes:
    """The bundle of ``target`` (a run or sweep key, or a ComparisonSpec) from the dashboard's
    store, with the dashboard's figures; built once per target and kept."""
    import dashboard.components.bundle_figures  # noqa: F401 -- registers its figures
    from cache.bundle import write_bundle
    from dashboard.base.widgets import get_store

    ident = _identity(target)
    with _LOCK:
        building = _BUILDING.setdefault(ident, threading.Lock())
    with building:  # two clicks on one target (two sessions): one build, both get it
        with _LOCK:
            if ident in _BUILT:
                _BUILT.move_to_end(ident)
                return _BUILT[ident]
        buf = io.BytesIO()
        write_bundle(target, buf, store=get_store())
        data = buf.getvalue()
        with _LOCK:
            _BUILT[ident] = data
            while len(_BUILT) > KEEP:
                _BUILDING.pop(_BUILT.popitem(last=False)[0], None)
    return data


def bundle_button(target: Any, *, key: str, where: Any = None) -> None:
    """A "Bundle (.zip)" download of ``target`` (a stored run or sweep key, or a comparison's
    spec): config, results, arrays, figures (HTML + PNG) and checksums in one zip, built on
    the click. ``where``: a column or container (default: the page)."""
    if not target:
        return
    if isinstance(target, str):
        name = f"privlab_{target[:12]}.zip"
    else:
        name = f"privlab_compare_{target.family}_{target.data}.zip"
    (where or st).download_button(
        "Bundle (.zip)", lambda: bundle_bytes(target), file_name=name, mime="application/zip",
        key=f"{key}_bundle", icon=":material/folder_zip:", on_click="ignore",
        help="The run with everything to check and re-import it: config, result, arrays, "
             "figures (HTML and PNG) and a manifest with the engine's fingerprint and a "
             "checksum of every file (`privlab import NAME.zip`). Built when clicked: a few "
             "seconds.")


def add_origin_column(table: Any, records: list) -> Any:
    """The History table with an "origin" column when any of its runs was imported."""
    texts = [origin_text(getattr(r, "origin", None)) for r in records]
    if any(texts):
        table["origin"] = texts
    return table


def origin_caption(rec: Any) -> None:
    """A caption naming where an imported run came from (nothing for a run computed here)."""
    text = origin_text(getattr(rec, "origin", None))
    if text:
        extra = (" It was computed by another engine: shown for reading and comparing, never "
                 "served in place of a run of this engine." if rec.origin.get("read_only") else "")
        st.caption(f"Run {rec.key[:12]} was {text}.{extra}")
