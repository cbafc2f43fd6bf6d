"""Raw data vs learned representations, side by side, coloured by the private attribute."""

from __future__ import annotations

from typing import Any

import numpy as np
import streamlit as st

from dashboard.components._figures import figure


def projection_pair(result: Any, *, key: str,
                    title: str | None = "Raw data vs learned representations",
                    points: str = "test rows", panels: tuple[str, str] | None = None,
                    caption: str | None = None) -> bool:
    """The 2-D projections ``proj_raw`` and ``proj_repr`` of the same ``points`` (keys
    ``{key}_proj_raw``, ``{key}_proj_repr``), the two panel titles ``panels`` and one
    ``caption`` (defaults: rows, raw x vs learned r); False when the Result has none."""
    arts = result.artifacts
    if "proj_raw" not in arts or "proj_repr" not in arts:
        return False
    if title:
        st.subheader(title)
    attr = result.info.get("private_attribute", "attribute")
    codes = arts.get("proj_attribute")
    if codes is None:
        codes = np.zeros(len(arts["proj_raw"]), dtype=int)
    names = result.info.get("attribute_values") or [str(v) for v in np.unique(codes)]
    if isinstance(names, dict):
        names = names.get(attr, [])
    method = result.info.get("projection_method", "tsne")
    method = {"tsne": "t-SNE", "pca": "PCA", "umap": "UMAP"}.get(method, method)
    p1, p2 = st.columns(2)
    names = list(names)
    left, right = panels or (f"raw x ({points})", f"learned r (same {points})")
    p1.plotly_chart(figure("scatter_figure", arts["proj_raw"], codes, names,
                           title=left, legend_title=attr),
                    width="stretch", key=f"{key}_proj_raw")
    p2.plotly_chart(figure("scatter_figure", arts["proj_repr"], codes, names,
                           title=right, legend_title=attr),
                    width="stretch", key=f"{key}_proj_repr")
    st.caption(f"{method} of {len(codes)} {points}, coloured by {attr}. "
               + (caption or "Well-separated colours on the right mean r still carries it."))
    return True
