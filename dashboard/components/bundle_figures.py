"""The figures a bundle carries (:mod:`cache.bundle`), drawn by the dashboard's own figure
functions (:mod:`dashboard.base.plots`, :func:`dashboard.components.compare_plot.comparison_figure`)
without Streamlit: the CLI builds bundles too.

For a run: its per-round/epoch curves (one figure per series length) and its membership ROC
curves (linear and log-log) where it recorded them; for a sweep: each headline metric over the
first grid field (seed means); for a comparison: the Compare page's tradeoff figure. Importing
this module registers :func:`figures_for` as the bundles' figure builder.
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any

from dashboard.base import plots


def _attack_title(name: str) -> str:
    from core.foundation.parts import ATTACKS

    return ATTACKS.get(name).title if name in ATTACKS else name


def run_figures(result: Any) -> dict[str, Any]:
    """A run's curves and ROC curves as figures (none when it recorded neither)."""
    out: dict[str, Any] = {}
    by_len: dict[int, dict[str, list[float]]] = defaultdict(dict)
    for name, ys in result.curves.items():
        if len(ys) > 1:
            by_len[len(ys)][name] = list(ys)
    for n, series in sorted(by_len.items()):
        name = "curves" if len(by_len) == 1 else f"curves_{n}"
        out[name] = plots.lines_figure(list(range(1, n + 1)), series, title="curves",
                                       x_title="step")
    arts = result.artifacts
    rocs = [(_attack_title(k[4:-4]), tuple(arts[k]), tuple(arts[f"{k[:-4]}_tpr"]))
            for k in sorted(arts) if k.startswith("roc_") and k.endswith("_fpr")
            and f"{k[:-4]}_tpr" in arts]
    if rocs:
        out["roc"] = plots.membership_roc_figure(rocs, log=False)
        out["roc_log"] = plots.membership_roc_figure(rocs, log=True)
    return out


def _number(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) \
        and math.isfinite(float(v)) else None


def sweep_figures(result: Any) -> dict[str, Any]:
    """Each numeric metric of a sweep's rows over its first grid field, seed means."""
    from core.foundation import metric_schema as S

    rows = result.info.get("rows", [])
    grid = list(result.config.get("grid", {}))
    if not rows or not grid or any(_number(r.get(grid[0])) is None for r in rows):
        return {}
    field = grid[0]
    metrics = [c for c in result.info.get("columns", []) if S.is_registered(c)]
    xs = sorted({float(r[field]) for r in rows})
    series: dict[str, list[float]] = {}
    for m in metrics:
        ys = []
        for x in xs:
            vals = [v for r in rows if float(r[field]) == x
                    and (v := _number(r.get(m))) is not None]
            ys.append(sum(vals) / len(vals) if vals else float("nan"))
        if any(math.isfinite(y) for y in ys):
            series[m] = ys
    if not series:
        return {}
    return {"sweep": plots.lines_figure(xs, series, title=f"over {field}", x_title=field,
                                        height=420)}


def figures_for(target: Any) -> dict[str, Any]:
    """``{name: figure}`` of a Result (a run or a sweep) or a :class:`core.runs.compare.Comparison`."""
    from core.runs.compare import Comparison

    if isinstance(target, Comparison):
        from dashboard.components.compare_plot import comparison_figure

        return {"comparison": comparison_figure(target)}
    if target is None:
        return {}
    if target.kind == "sweep":
        return sweep_figures(target)
    return run_figures(target)


def _register() -> None:
    from cache.bundle import set_figure_builder

    set_figure_builder(figures_for)


_register()
