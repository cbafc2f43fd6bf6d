"""The utility–privacy tradeoff plot: one point per knob value (with its 95 % interval), the
current setting starred, the undefended run and the chance level always marked.

The plot fills itself (issue #20, item 5): :func:`stored_runs` finds every stored run whose
config matches the page's settings but for the knob (off-grid knob values included), and the
pages hand in the run just computed, so a new point appears at once without a reload. With
fewer than two points the plot is replaced by a sentence and the page's teaching-sweep button:
no empty axes.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping, Sequence
from typing import Any

import streamlit as st
from pydantic import BaseModel

from dashboard.components._figures import figure

#: stored runs of one kind read when looking for matching points (newest first)
MAX_RECORDS = 500
#: stored run key -> its config validated by this engine (a stored config never changes)
_NORMALISED: dict[str, dict[str, Any] | None] = {}
#: config fields that never make two runs different points (where they ran)
_IGNORED = ("device",)


def _normal(config: Any) -> dict[str, Any] | None:
    """``config`` validated, as a mapping with defaults filled in (a page's config model is
    dumped as it is; a mapping goes through :func:`dashboard.base.widgets.typed`)."""
    from dashboard.base.widgets import typed

    try:
        return typed(config if isinstance(config, BaseModel) else dict(config)).model_dump(
            mode="json")
    except ValueError:  # a stored config the current engine refuses: not a point here
        return None


def _fixed(cfg: Mapping[str, Any], field: str) -> dict[str, Any]:
    out = copy.deepcopy(dict(cfg))
    for k in _IGNORED:
        out.pop(k, None)
    out.get("defense", {}).pop(field, None)
    return out


def stored_runs(config: Mapping[str, Any], field: str, *, limit: int = MAX_RECORDS
                ) -> dict[float, Any]:
    """Knob value -> the stored Result of every run of ``config``'s kind whose settings equal
    ``config``'s except ``defense.<field>`` (the same seed, data, defense and attackers):
    every point the page can draw, whichever sweep or run stored it."""
    from dashboard.base.widgets import get_store, peek

    want = _normal(config)
    if want is None:
        return {}
    fixed = _fixed(want, field)
    out: dict[float, Any] = {}
    try:
        records = get_store().list(kind=want["kind"], limit=limit)
    except (OSError, ValueError):  # a damaged index must not take the page down
        return {}
    quick = (want.get("seed"), (want.get("data") or {}).get("name"), want["defense"].get("kind"))
    for rec in records:
        cfg = rec.config if rec.config.get("kind") == want["kind"] else None
        v = (cfg or {}).get("defense", {}).get(field)
        if cfg is None or v is None or float(v) in out:
            continue
        # cheap checks first: most stored runs differ in seed, data set or defense
        if (cfg.get("seed"), (cfg.get("data") or {}).get("name"),
                cfg["defense"].get("kind")) != quick:
            continue
        if rec.key not in _NORMALISED:
            _NORMALISED[rec.key] = _normal(cfg)
        norm = _NORMALISED[rec.key]
        if norm is None or _fixed(norm, field) != fixed:
            continue
        r = peek(norm)
        if r is not None:
            out[float(v)] = r
    return out


def filled(config: Mapping[str, Any], field: str, shown: Mapping[float, Any] | None = None,
           current: Any | None = None) -> dict[float, Any]:
    """``shown`` (the page's grid points), every matching stored run, and ``current`` (the run
    just computed, at its own knob value) in one mapping knob value -> Result."""
    out = {float(k): r for k, r in (shown or {}).items() if r is not None}
    for k, r in stored_runs(config, field).items():
        out.setdefault(k, r)
    if current is not None:
        v = (current.config or {}).get("defense", {}).get(field)
        if v is not None and math.isfinite(float(v)):
            out[float(v)] = current
    return out


def tradeoff_plot(points: Sequence[Any], *, current: float | None,
                  undefended: tuple[float, float] | None, chance: float | None, key: str,
                  symbol: str | Mapping[str, str] = "λ", y_title: str = "attack AUC",
                  x_title: str = "utility (test accuracy)", page: str | None = None,
                  config: Mapping[str, Any] | None = None, where: Any = None,
                  dim: int | None = None, current_series: str | None = None,
                  **figure_kw: Any) -> None:
    """Draw :class:`core.report.tradeoff.TradeoffPoint` s (plot key ``{key}_tradeoff``) into
    ``where`` (default: the page).

    ``undefended`` is ``(utility, attack)`` of the same settings with no defense, or None when
    that run is not stored yet (said under the plot); ``chance`` the attack's chance level.
    With fewer than two knob values a sentence replaces the plot and points to the page's
    teaching-sweep button in its lesson box (one button per page; ``page``, ``config`` and
    ``dim`` are no longer used); ``current_series`` stars the current value on that series only; ``figure_kw`` go to
    the figure as they are (e.g. the caveat-flagged points)."""
    where = st if where is None else where
    knobs = {p.knob for p in points}
    n = len(knobs) + (undefended is not None)
    if len(knobs) < 2:
        have = ("no point" if n == 0 else "one point" if n == 1 else
                "only the undefended run and one knob value")
        said = symbol if isinstance(symbol, str) else " or ".join(dict.fromkeys(symbol.values()))
        # one teaching-sweep button per page: the lesson box's (dashboard/components/lesson.py)
        where.info(f"The tradeoff needs at least two {said} values; {have} stored for these "
                   "settings so far. Run the teaching sweep (its button is in the box “What "
                   "this page teaches”) or runs at other "
                   f"{said} values: each stored run appears here at once.")
        return
    where.plotly_chart(figure("tradeoff_figure", list(points), current=current,
                              undefended=undefended, chance=chance, symbol=symbol,
                              x_title=x_title, y_title=y_title, current_series=current_series,
                              **figure_kw),
                       width="stretch", key=f"{key}_tradeoff")
    notes = []
    if undefended is None:
        notes.append("Undefended point not computed yet (the same settings with defense none).")
    if chance is None:
        notes.append("Chance level unknown for this metric.")
    if notes:
        where.caption(" ".join(notes))
