"""Drawing a :class:`core.runs.compare.Comparison`: the utility–privacy plane (one curve per defense,
seeds as error bars, the Pareto front, chance and the no-defense point), the equal-privacy table
as a frame, and standalone exports (HTML figure, CSV table). Pure presentation: every number
comes from the Comparison.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.colors import qualitative

from core.foundation.parts import is_baseline
from dashboard.base.format import display_name

PALETTE = qualitative.Plotly + qualitative.D3


def axis_title(name: str) -> str:
    return display_name(name)


def _fmt(v: Any, digits: int = 3) -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "n/a"
    return f"{v:.{digits}g}" if isinstance(v, float) else str(v)


@dataclass(frozen=True)
class Highlight:
    """A point to ring on the plane (the advisor's picks): ``role`` (the legend's word),
    ``label`` (the hover), its utility ``x`` and privacy ``y``; ``interpolated``: read on a
    segment between measured points (drawn open: not measured)."""

    role: str
    label: str
    x: float
    y: float
    interpolated: bool = False


#: marker per highlight role (a role not listed: a diamond)
HIGHLIGHT_STYLE = {"chosen": ("diamond", "#2ca02c"), "runner-up": ("diamond", "#ff7f0e"),
                   "closest": ("x", "crimson"), "to run": ("diamond-open", "#2ca02c")}


def _add_curves(fig: go.Figure, cmp) -> None:
    """One line per defense through its seed-mean points (± one seed standard deviation on
    both axes when there are several seeds); the no-defense point as a star."""
    privacy = display_name(cmp.spec.privacy)
    # the undefended star last: on top of the curves that start at the same point
    order = [c for c in cmp.curves if not is_baseline(c.defense)] + \
        [c for c in cmp.curves if is_baseline(c.defense)]
    for i, c in enumerate(order):
        base = is_baseline(c.defense)
        color = "black" if base else PALETTE[i % len(PALETTE)]
        u, a = c.utility_mean, c.leakage_mean
        su, sa = c.utility_std, c.leakage_std
        if c.knob_field is None:
            text = ["no defense"] * len(u)
        else:
            text = [f"{c.symbol} = {k:g}" for k in c.knob]
        many = len(c.seeds) > 1
        # the knob values are in the hover, not printed beside the points: with four curves
        # starting near the no-defense point the printed labels overlapped into a smear
        fig.add_trace(go.Scatter(
            x=u, y=a, mode="markers" if base else "lines+markers",
            name=c.name + (f" ({len(c.seeds)} seeds)" if many else ""), text=text,
            marker={"size": 16 if base else 8, "color": color,
                    "symbol": "star" if base else "circle"},
            line={"color": color, "width": 2},
            error_x={"type": "data", "array": su, "visible": many, "thickness": 1},
            error_y={"type": "data", "array": sa, "visible": many, "thickness": 1},
            hovertemplate="%{text}<br>utility %{x:.3f}<br>" + privacy
                          + " %{y:.3f}<extra>" + c.name + "</extra>"))


def _add_pareto_front(fig: go.Figure, cmp) -> None:
    """The Pareto front over every point as a dashed step line with ringed markers."""
    pts = cmp.points()
    front = cmp.pareto()
    fp = sorted((p[2], p[3]) for p, on in zip(pts, front, strict=True) if on)
    if fp:
        fig.add_trace(go.Scatter(
            x=[p[0] for p in fp], y=[p[1] for p in fp], mode="lines+markers",
            name=f"Pareto front ({len(fp)} points)",
            line={"color": "rgba(0,0,0,0.55)", "dash": "dash", "width": 1.5, "shape": "hv"},
            marker={"size": 15, "symbol": "circle-open", "color": "black",
                    "line": {"width": 2}}, hoverinfo="skip"))


def _add_highlights(fig: go.Figure, highlights: Sequence[Highlight], privacy: str) -> None:
    """Each highlighted point ringed, one legend entry per point."""
    for h in highlights:
        symbol, color = HIGHLIGHT_STYLE.get(h.role, ("diamond", "black"))
        fig.add_trace(go.Scatter(
            x=[h.x], y=[h.y], mode="markers", name=f"advisor: {h.role}", text=[h.label],
            hovertemplate="%{text}<br>utility %{x:.3f}<br>" + privacy
                          + " %{y:.3f}<extra>advisor</extra>",
            marker={"size": 20, "symbol": "diamond-open" if h.interpolated else symbol,
                    "color": color, "line": {"width": 3, "color": color}}))


def _add_position(fig: go.Figure, cmp, position: int) -> None:
    """The scrub slider's grid position marked on every defended curve (a defense with fewer
    values marks its last)."""
    xs, ys, labels = [], [], []
    for c in cmp.defended:
        j = min(position, len(c.knob) - 1)
        xs.append(c.utility_mean[j])
        ys.append(c.leakage_mean[j])
        labels.append(f"{c.name}: {c.symbol} = {c.knob[j]:g}")
    fig.add_trace(go.Scatter(x=xs, y=ys, mode="markers", name=f"grid position {position + 1}",
                             text=labels, hovertemplate="%{text}<extra></extra>",
                             marker={"size": 22, "symbol": "square-open", "color": "crimson",
                                     "line": {"width": 3}}))


def comparison_figure(cmp, position: int | None = None, *, height: int = 520,
                      highlights: Sequence[Highlight] = (),
                      level: float | None = None) -> go.Figure:
    """Utility on x, the privacy metric on y (lower = more private), one line per defense
    through its seed-mean points in knob order with ± one seed standard deviation on both axes;
    the Pareto front over every point as a dashed line with ringed markers; the no-defense
    point as a star; chance as a dotted line; ``position``: the grid index the scrub slider
    marks on every curve (a defense with fewer values marks its last); ``highlights``: points
    ringed on top, one legend entry each (the advisor's chosen and runner-up settings);
    ``level``: the advisor's threat level as a dashed line. Curves
    are told apart by the legend, knob values by the hover (no printed point labels to
    overlap)."""
    spec = cmp.spec
    fig = go.Figure()
    _add_curves(fig, cmp)
    _add_pareto_front(fig, cmp)
    # the advisor's picks under the scrub marker (the marker stays the last trace)
    _add_highlights(fig, highlights, display_name(spec.privacy))
    if position is not None:
        _add_position(fig, cmp, position)
    if level is not None:
        fig.add_hline(y=level, line={"dash": "dash", "color": "#2ca02c"},
                      annotation_text=f"threat level ({level:g})",
                      annotation_position="top left")
    if cmp.chance_leakage is not None:
        fig.add_hline(y=cmp.chance_leakage, line={"dash": "dot", "color": "gray"},
                      annotation_text=f"chance ({cmp.chance_leakage:g})",
                      annotation_position="bottom right")
    fig.update_layout(
        # the axes name the metrics (display names are long: a title naming them was cut)
        title=f"{spec.family.replace('_', ' ')} on {spec.data} · lower is more private, right "
              "keeps more utility", height=height,
        margin={"l": 10, "r": 10, "t": 50, "b": 10},
        legend={"orientation": "h", "yanchor": "top", "y": -0.18, "x": 0})
    fig.update_xaxes(title=f"{display_name(spec.utility)} (more is better) →")
    # the direction is in the title: a longer y title ran past the plot into it
    fig.update_yaxes(title={"text": display_name(spec.privacy), "font": {"size": 11}})
    return fig


def short_name(name: str) -> str:
    """A defense's name without its parenthesised detail (``κ channel (data-space noise) ·
    white`` -> ``κ channel · white``), for table columns."""
    return re.sub(r"\s*\([^)]*\)", "", name).strip() or name


def table_frame(rows: Sequence[dict[str, Any]], names: Sequence[str]) -> pd.DataFrame:
    """The equal-privacy rows as a frame: the level, each defense's utility (marked ``*``
    when interpolated between grid points, ``—`` when unreachable), the best one, the
    dominance verdict (defense names shortened: :func:`short_name`)."""
    out = []
    for r in rows:
        row = {"attack level ≤": round(float(r["level"]), 4)}
        for n in names:
            v = r.get(n)
            how = r.get(f"{n} ·how")
            row[short_name(n)] = "—" if v is None else \
                f"{v:.3f}" + ("*" if how == "interpolated" else "")
        row["best"] = short_name(r.get("best") or "—")
        verdict = r.get("dominance", "")
        for n in sorted(names, key=len, reverse=True):
            verdict = verdict.replace(n, short_name(n))
        row["dominance test"] = verdict
        out.append(row)
    # the columns are named even without a row (no defense picked): the page indexes by level
    columns = ["attack level ≤", *dict.fromkeys(short_name(n) for n in names), "best",
               "dominance test"]
    return pd.DataFrame(out, columns=columns)


def points_frame(cmp) -> pd.DataFrame:
    """Every point: defense, knob, seed count, utility and privacy means ± seed std, the
    knob's budget metric (mean), on the Pareto front or not."""
    front = cmp.pareto()
    rows, i = [], 0
    for c in cmp.curves:
        for j, k in enumerate(c.knob):
            b = c.budget[j]
            rows.append({
                "defense": c.name,
                "knob": "—" if c.knob_field is None else f"{c.symbol} = {k:g}",
                "seeds": len(c.seeds),
                display_name(cmp.spec.utility): f"{c.utility_mean[j]:.3f} ± {c.utility_std[j]:.3f}",
                display_name(cmp.spec.privacy): f"{c.leakage_mean[j]:.3f} ± {c.leakage_std[j]:.3f}",
                "budget": "—" if c.budget_metric is None or np.isnan(b).all()
                else f"{display_name(c.budget_metric)} = " + ("∞" if np.nanmean(b) == np.inf
                                                else f"{np.nanmean(b):.3g}"),
                "Pareto": "yes" if front[i] else "",
            })
            i += 1
    return pd.DataFrame(rows)


def figure_html(fig: go.Figure) -> str:
    """The figure as a standalone HTML page (plotly.js embedded: opens offline)."""
    return fig.to_html(include_plotlyjs=True, full_html=True)
