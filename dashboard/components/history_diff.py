"""Two stored runs side by side (History page): their configs diffed field by field, their
headline metrics with 95 % intervals, and a figure of those metrics exportable as standalone
HTML. Pure functions over configs and Results (plus one plotly figure).
"""

from __future__ import annotations

import math
from typing import Any

import plotly.graph_objects as go

from cache.export import flatten
from core import metric_schema as S

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
        row: dict[str, Any] = {"metric": n, "unit": spec.unit if spec else "",
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


def pair_figure(names: list[str], a, b, labels: tuple[str, str]) -> go.Figure:
    """Grouped bars of the two runs' metrics (one group per metric), 95 % intervals as error
    bars where the run recorded them."""
    fig = go.Figure()
    for r, label, color in ((a, labels[0], "#636EFA"), (b, labels[1], "#EF553B")):
        ys, lo, hi = [], [], []
        for n in names:
            v = None if r is None else _num(r.metrics.get(n))
            iv = None if r is None else r.interval(n)
            ys.append(v)
            lo.append(0.0 if v is None or iv is None else max(v - iv[0], 0.0))
            hi.append(0.0 if v is None or iv is None else max(iv[1] - v, 0.0))
        fig.add_trace(go.Bar(x=names, y=ys, name=label, marker_color=color,
                             error_y={"type": "data", "symmetric": False, "array": hi,
                                      "arrayminus": lo}))
    fig.update_layout(barmode="group", height=380, title="Headline metrics (95 % intervals)",
                      margin={"l": 10, "r": 10, "t": 50, "b": 10})
    return fig
