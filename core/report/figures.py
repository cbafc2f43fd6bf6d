"""The report's plotly figures, drawn from stored arrays only: each attack's ROC (log-log, as
Carlini et al. 2022 read membership at low FPR) and a comparison's utility–leakage plane with
each point marked by its release verdict. Fixed size, so that they print on A4 as on screen."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

#: the size of every figure (A4 portrait at 96 dpi is 794 px wide; 14 mm margins leave ~690)
WIDTH, HEIGHT = 680, 360


def _layout(fig: Any, title: str, x: str, y: str, *, log: bool = False) -> Any:
    fig.update_layout(title={"text": title, "font": {"size": 14}}, width=WIDTH, height=HEIGHT,
                      margin={"l": 60, "r": 20, "t": 40, "b": 50}, template="plotly_white",
                      legend={"font": {"size": 11}}, font={"family": "sans-serif"})
    # a log axis labels its decades only (plotly's minor labels crowd a small figure)
    ticks = {"type": "log", "dtick": 1} if log else {"type": "linear"}
    fig.update_xaxes(title_text=x, **ticks)
    fig.update_yaxes(title_text=y, **ticks)
    return fig


def roc_figure(curves: Sequence[tuple[str, np.ndarray, np.ndarray]], *,
               min_fpr: float) -> Any:
    """ROC curves (title, fpr, tpr) on log-log axes from ``min_fpr``, the diagonal (chance)
    and the 1 % FPR line of the release rule."""
    import plotly.graph_objects as go

    fig = go.Figure()
    for title, fpr, tpr in curves:
        fpr, tpr = np.asarray(fpr, float), np.asarray(tpr, float)
        keep = (fpr > 0) & (tpr > 0)
        fig.add_trace(go.Scatter(x=fpr[keep], y=tpr[keep], mode="lines", name=title,
                                 line={"shape": "hv"}))
    grid = np.array([min_fpr, 1.0])
    fig.add_trace(go.Scatter(x=grid, y=grid, mode="lines", name="chance",
                             line={"dash": "dot", "color": "#888"}))
    # a trace, not add_vline: plotly places a vline's annotation wrongly on a log axis
    fig.add_trace(go.Scatter(x=[0.01, 0.01], y=[min_fpr, 1.0], mode="lines",
                             name="1 % FPR (the release rule)",
                             line={"dash": "dash", "color": "#b44"}))
    return _layout(fig, "ROC of each attack (log-log)", "false-positive rate",
                   "true-positive rate", log=True)


def plane_figure(points: Sequence[dict[str, Any]], *, utility: str, privacy: str) -> Any:
    """A comparison's points: ``{"curve", "utility", "leakage", "release"}`` each, one trace per
    curve; released points filled, the others open."""
    import plotly.graph_objects as go

    fig = go.Figure()
    curves = list(dict.fromkeys(p["curve"] for p in points))
    for name in curves:
        pts = [p for p in points if p["curve"] == name]
        fig.add_trace(go.Scatter(
            x=[p["utility"] for p in pts], y=[p["leakage"] for p in pts], mode="lines+markers",
            name=name, text=[p["label"] for p in pts], hoverinfo="text+x+y",
            marker={"size": 11, "symbol": ["circle" if p["release"] else "circle-open"
                                           for p in pts], "line": {"width": 2}}))
    return _layout(fig, "Utility against leakage (filled: meets the release rule)", utility,
                   privacy)
