"""Two stored runs side by side (History page): their configs diffed field by field, their
headline metrics with 95 % intervals, and a figure of those metrics exportable as standalone
HTML. Pure functions over configs and Results (plus one plotly figure).
"""

from __future__ import annotations

import math
from typing import Any

import plotly.graph_objects as go

from cache.export import flatten
from core.foundation import metric_schema as S
from dashboard.base.format import display_name

_MISSING = "—"


def config_diff(a: dict[str, Any], b: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per flattened config field whose value differs (``field``, ``A``, ``B``); a
    field only one config has shows ``—`` on the other side. Sorted by field."""
    fa, fb = flatten(a, "config"), flatten(b, "config")
    rows = []
    for k in sorted(set(fa) | set(fb)):
        va, vb = fa.get(k, _MISSING), fb.get(k, _MISSING)
        if va != vb:
            rows.append({"field": k.removeprefix("config."), "A": _cell(va), "B": _cell(vb)})
    return rows


def _cell(v: Any) -> str:
    return v if isinstance(v, str) else str(v)


def headline_metric_names(kind: str, config: dict[str, Any], metrics: dict[str, Any]) -> list[str]:
    """The kind's headline utility, attack and budget (its defense's) present in ``metrics``;
    a kind without headlines (a sweep) gives its own registered metrics (at most eight)."""
    head = S.HEADLINES.get(kind)
    if head is None or (head.utility is None and head.attack is None and head.budget is None):
        return [n for n in metrics if S.is_registered(n)][:8]
    defense = (config.get("defense") or {}).get("kind") if isinstance(config.get("defense"), dict) \
        else None
    names = [head.utility, head.attack, head.budget_for(defense)]
    return [n for n in dict.fromkeys(n for n in names if n) if n in metrics]


def _num(v: Any) -> float | None:
    if v is None:
        return None
    v = float(v)
    return v if math.isfinite(v) else None


def metric_rows(names: list[str], a, b) -> list[dict[str, Any]]:
    """Per metric: its unit and direction, each run's value with its 95 % interval (``lo …
    hi``, when the run recorded one) and B − A. ``a`` / ``b``: Results (or None: n/a)."""
    rows = []
    for n in names:
        spec = S.get(n) if S.is_registered(n) else None
        row: dict[str, Any] = {"metric": display_name(n), "unit": spec.unit if spec else "",
                               "direction": spec.direction if spec else ""}
        vals = []
        for side, r in (("A", a), ("B", b)):
            v = None if r is None else _num(r.metrics.get(n))
            iv = None if r is None else r.interval(n)
            vals.append(v)
            row[side] = "n/a" if v is None else f"{v:.4g}"
            row[f"{side} 95 % interval"] = "" if iv is None else f"{iv[0]:.3g} … {iv[1]:.3g}"
        row["B − A"] = "" if None in vals else f"{vals[1] - vals[0]:+.4g}"
        rows.append(row)
    return rows


def knob_names(names: list[str]) -> list[str]:
    """The names among ``names`` that are a defense's knob or budget (λ, κ, ε, σ, ...: the
    headline budgets of :data:`core.foundation.metric_schema.HEADLINES`), not a result to compare."""
    budgets = set()
    for head in S.HEADLINES.values():
        b = head.budget
        budgets |= set(b.values()) if isinstance(b, dict) else {b}
    return [n for n in names if n in budgets]


def pair_figure(names: list[str], a, b, labels: tuple[str, str]) -> go.Figure:
    """The two runs' metrics, 95 % intervals as error bars where the run recorded them: with
    a knob (a budget, :func:`knob_names`) both runs have, each metric is a line over the knob
    on a numeric x axis; otherwise grouped bars, one group per metric. A knob is never a bar."""
    knobs = knob_names(names)
    names = [n for n in names if n not in knobs]
    knob = next((k for k in knobs if a is not None and b is not None
                 and _num(a.metrics.get(k)) is not None and _num(b.metrics.get(k)) is not None),
                None)
    if knob is not None:
        return _over_knob(names, knob, a, b, labels)
    fig = go.Figure()
    for r, label, color in ((a, labels[0], "#636EFA"), (b, labels[1], "#EF553B")):
        ys, lo, hi = [], [], []
        for n in names:
            v = None if r is None else _num(r.metrics.get(n))
            iv = None if r is None else r.interval(n)
            ys.append(v)
            lo.append(0.0 if v is None or iv is None else max(v - iv[0], 0.0))
            hi.append(0.0 if v is None or iv is None else max(iv[1] - v, 0.0))
        fig.add_trace(go.Bar(x=[display_name(n) for n in names], y=ys, name=label,
                             marker_color=color,
                             error_y={"type": "data", "symmetric": False, "array": hi,
                                      "arrayminus": lo}))
    fig.update_layout(barmode="group", height=380, title="Headline metrics (95 % intervals)",
                      margin={"l": 10, "r": 10, "t": 50, "b": 10})
    return fig


def _over_knob(names: list[str], knob: str, a, b, labels: tuple[str, str]) -> go.Figure:
    """Each metric against the knob (numeric x): A and B as two marked points on one line."""
    runs = sorted(((float(a.metrics[knob]), a, labels[0]), (float(b.metrics[knob]), b, labels[1])),
                  key=lambda t: t[0])
    fig = go.Figure()
    for i, n in enumerate(names):
        xs, ys, lo, hi, text = [], [], [], [], []
        for x, r, lab in runs:
            v, iv = _num(r.metrics.get(n)), r.interval(n)
            xs.append(x)
            ys.append(v)
            lo.append(0.0 if v is None or iv is None else max(v - iv[0], 0.0))
            hi.append(0.0 if v is None or iv is None else max(iv[1] - v, 0.0))
            text.append(lab)
        fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines+markers+text", text=text,
                                 textposition="top center", name=display_name(n),
                                 error_y={"type": "data", "symmetric": False, "array": hi,
                                          "arrayminus": lo}))
    fig.update_xaxes(title=display_name(knob), exponentformat="power")
    fig.update_yaxes(exponentformat="power")
    fig.update_layout(height=380, title="Headline metrics over the knob (95 % intervals)",
                      margin={"l": 10, "r": 10, "t": 50, "b": 10},
                      legend={"orientation": "h", "y": -0.25, "x": 0})
    return fig
