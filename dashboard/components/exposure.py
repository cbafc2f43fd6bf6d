"""Per-record exposure on the pages (:mod:`core.report.exposure`): a run's most exposed records as
pictures (image data) or table rows (tabular), with the sentence the engine writes from the
numbers (:func:`exposure_ui`); on Compare, the overlap of the defenses' most exposed records
at one grid position and seed, a Jaccard heatmap and the records every defense leaves exposed
(:func:`overlap_ui`). Neither runs anything: both read stored Results.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import streamlit as st

from core.report.exposure import (
    ExposureOverlap,
    RecordExposure,
    comparison_points,
    exposure_overlap,
    record_exposure,
)
from dashboard.components._figures import figure

#: records shown per run, and the top-k compared across defenses
TOP_N = 10
TOP_K = 20


def _records(ex: RecordExposure, index: np.ndarray, values: np.ndarray | None, *,
             key: str) -> None:
    """``index``'s records: a picture grid titled rank · label · score, else table rows."""
    try:
        rec = ex.records(index)
    except (OSError, ValueError) as exc:  # the data set is not on this machine
        st.caption(f"The records cannot be shown here: {exc}")
        return
    if rec.images is not None:
        titles = tuple(f"#{r + 1} · {lab}" + ("" if values is None else f" · {values[r]:.3g}")
                       for r, lab in enumerate(rec.labels))
        st.plotly_chart(figure("image_grid_figure", rec.images, titles,
                               cols=min(TOP_N, len(index)), tile_px=70),
                        width="stretch", key=key, config={"displayModeBar": False})
        return
    rows = []
    for r, row in enumerate(rec.rows):
        head: dict[str, Any] = {"rank": r + 1}
        if values is not None:
            head["score"] = round(float(values[r]), 4)
        rows.append({**head, **row})
    st.dataframe(rows, hide_index=True, width="stretch", key=key)


def exposure_ui(result, *, key: str = "exposure", top_n: int = TOP_N) -> None:
    """The run's ``top_n`` most exposed records and the engine's sentence about them; one
    caption where the run keeps no per-record scores (a run stored before they existed)."""
    st.subheader("Most exposed records")
    try:
        ex = record_exposure(result, top_n=top_n)
    except ValueError as exc:
        st.caption(f"Per-record exposure: {exc}.")
        return
    st.markdown(ex.sentence)
    _records(ex, ex.top, ex.top_values, key=f"{key}_records")
    st.caption(f"Scored: {ex.scored}, each named by {ex.named}; "
               f"{ex.direction}. The same records under another defense (same data and seed) "
               "are compared on the Compare page.")


@st.cache_resource(max_entries=32, show_spinner=False)
def _overlap(points: tuple[tuple[str, str], ...], k: int) -> ExposureOverlap | str:
    """The overlap of the stored runs ``points`` ((name, key), ...), once per set of points
    (stored runs never change under their key); a string says why there is none. LookupError
    (not cached) while fewer than two are stored."""
    from dashboard.base.widgets import get_store

    store = get_store()
    results = {name: r for name, key in points if (r := store.get(key)) is not None}
    if len(results) < 2:
        raise LookupError("Fewer than two of the comparison's points are stored at this "
                          "position.")
    try:
        return exposure_overlap(results, k=k)
    except ValueError as exc:
        return f"Per-record exposure: {exc}."


def overlap_ui(comparison, position: int | None = None, *, key: str = "cmp_exposure",
               k: int = TOP_K) -> None:
    """Which records each defense protects: the top-``k`` exposed sets of the comparison's
    points at grid ``position`` (the Compare page's scrub slider) and one seed, their Jaccard
    heatmap and the records exposed under every defense. Nothing for a family that keeps no
    per-record scores."""
    from core.foundation.parts import FAMILIES

    family = comparison.spec.family
    if family not in FAMILIES or FAMILIES.get(family).exposure is None:
        return
    st.subheader("Records exposed under every defense")
    seeds = list(comparison.spec.seeds)
    si = 0
    if len(seeds) > 1:
        si = seeds.index(st.selectbox("Seed of the points compared", seeds, key=f"{key}_seed"))
    points = comparison_points(comparison, position=position, seed_index=si)
    try:
        ov = _overlap(tuple(points.items()), k)
    except LookupError as exc:
        ov = str(exc)
    if isinstance(ov, str):
        st.caption(ov)
        return
    st.markdown(ov.sentence)
    st.plotly_chart(ov.report_section()["figure"], width="stretch", key=f"{key}_heatmap")
    where = "each defense's first setting" if position is None else \
        f"grid position {position + 1} of each defense (the scrub slider above)"
    st.caption(f"The top {ov.k} records of {where}, seed {seeds[si]}, ranked by "
               f"{ov.title} ({ov.exposures[0].direction}); cell = Jaccard overlap of two "
               f"defenses' top-{ov.k} sets (1 = the same records, ≈ {ov.chance:.2f} for random "
               "sets).")
    if len(ov.always):
        first = ov.exposures[0]
        _records(first, ov.always, None, key=f"{key}_always")
        st.caption("Exposed under every defense, in the order of " + ov.names[0] + ".")
