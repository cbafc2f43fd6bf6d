"""The one knob widget: a defense's privacy knob drawn from its registered part
(:class:`core.foundation.parts.Knob`) alone — symbol and label, range, linear or log scale, which way is
more private, and the part's description as help. Pages never copy a knob's range, positions
or grids; they read them here or from the part (``knob.teaching_grid()``).

A linear knob is a slider over [low, high] with the knob's step; a log knob (or one with
registered positions) a select slider over :meth:`core.foundation.parts.Knob.positions`. The value in
``st.session_state[key]`` is snapped to the nearest position first, so a value set by a preset,
another page or an older session never breaks the widget.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import streamlit as st

from core.foundation.parts import DEFENSES, DefensePart, Knob


def knob_of(part_name: str, family: str | None = None, dim: int | None = None) -> Knob:
    """The part's knob as ``family``'s page shows it, for data of dimension ``dim`` when its
    range is per dimension (:meth:`core.foundation.parts.Knob.for_dim`); ValueError for a part without
    one."""
    knob = DEFENSES.get(part_name).knob
    if knob is None:
        raise ValueError(f"defense: got {part_name!r}, which has no privacy knob")
    knob = knob.for_family(family)
    return knob.for_dim(dim) if dim else knob


def knob_label(knob: Knob) -> str:
    """``"κ · capacity per round (nats) (lower is more private)"``."""
    return f"{knob.symbol} · {knob.label} ({knob.more_private} is more private)"


def knob_help(part: DefensePart, knob: Knob) -> str:
    """The part's description, then the knob's allowed range and scale."""
    return (f"{part.description} Range {knob.low:g} … {knob.high:g} on a {knob.scale} scale; "
            f"{knob.more_private} {knob.symbol} is more private.").strip()


def _nearest(value: float, positions: Sequence[float], log: bool) -> float:
    def dist(p: float) -> float:
        if log and p > 0 and value > 0:
            return abs(math.log(p / value))
        return abs(p - value)

    return min(positions, key=dist)


def knob_ui(part_name: str, *, key: str, family: str | None = None, where: Any = None,
            options: Sequence[float] | None = None, default: float | None = None,
            label: str | None = None, help: str | None = None,
            format_func: Callable[[float], str] | None = None, dim: int | None = None) -> float:
    """Draw the privacy knob of the registered defense ``part_name`` (as ``family``'s page
    shows it) under widget ``key`` into ``where`` (a column; default the page) and return its
    value. ``options`` replaces the knob's positions where they depend on the data (the κ
    channel's κ/d ladder); ``default`` is the value before the user moves it (default: the
    middle of the teaching grid); ``label`` / ``help`` replace the generated ones (the symbol,
    the range and the direction stay in them). ``dim``: the data's dimension, for a knob whose
    range is per dimension (the κ channel on the gradient-leakage page: κ over a κ/d ladder,
    each position shown with its κ/d)."""
    part = DEFENSES.get(part_name)
    per_dim = knob_of(part_name, family).per_dim
    knob = knob_of(part_name, family, dim)
    if per_dim and dim and format_func is None:
        def format_func(v: float) -> str:
            return f"{v:g} ({knob.symbol}/d {v / dim:.3g})"
    where = st if where is None else where
    label = label or knob_label(knob)
    help = help or knob_help(part, knob)
    positions = tuple(float(v) for v in options) if options else knob.positions()
    ss = st.session_state
    if key not in ss or ss[key] is None:
        teach = knob.teaching_grid()
        ss[key] = float(default if default is not None else teach[len(teach) // 2])
    if positions:
        if ss[key] not in positions:
            ss[key] = _nearest(float(ss[key]), positions, knob.scale == "log")
        value = where.select_slider(label, options=list(positions), key=key, help=help,
                                    format_func=format_func or (lambda v: f"{v:g}"))
        return float(value)
    step = knob.slider_step()
    high = round(math.floor(round((knob.high - knob.low) / step, 6)) * step + knob.low, 10)
    ss[key] = float(min(max(float(ss[key]), knob.low), high))
    return float(where.slider(label, float(knob.low), float(high), step=step, key=key, help=help))
