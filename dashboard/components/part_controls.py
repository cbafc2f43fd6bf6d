"""The one control builder: a defense's controls drawn from its declaration alone
(:class:`core.parts.DefensePart`), so a defense registered in :mod:`core.catalog` gets its
controls on its family's page with no page edit.

- the knob: :func:`dashboard.components.knob.knob_ui` from ``part.knob`` (a slider, or a
  select slider over :meth:`core.parts.Knob.positions`);
- each declared :class:`core.parts.Control` for the family, from the block's field: a
  ``Literal`` a select box (a segmented control when the control says so), a ``bool`` a
  checkbox, a bounded number a number box with the field's own range
  (:func:`dashboard.components.inputs.number_ui`).

Pages choose where the widgets go and their widget keys (``key(field)``); the values come back
as the block's fields.
"""

from __future__ import annotations

import typing
from collections.abc import Callable, Sequence
from typing import Any

import streamlit as st

from core.parts import DEFENSES, Control, DefensePart
from dashboard.components.inputs import number_ui
from dashboard.components.knob import knob_ui


def _literal_options(annotation: Any) -> tuple[Any, ...]:
    """The values of a ``Literal`` annotation (inside ``Optional`` too); empty otherwise."""
    if typing.get_origin(annotation) is typing.Literal:
        return typing.get_args(annotation)
    for arg in typing.get_args(annotation):
        if typing.get_origin(arg) is typing.Literal:
            return typing.get_args(arg)
    return ()


def control_ui(part: DefensePart, control: Control, *, key: str, where: Any = None) -> Any:
    """Draw one declared control of ``part`` under widget ``key`` into ``where``; its value."""
    where = st if where is None else where
    info = part.config.model_fields[control.field]
    label = control.label or control.field.replace("_", " ")
    help_ = control.help or info.description
    options = _literal_options(info.annotation)
    if options:
        st.session_state.setdefault(key, info.default)
        if control.segmented:
            return where.segmented_control(label, list(options), key=key, required=True,
                                           help=help_)
        return where.selectbox(label, list(options), key=key, help=help_)
    if info.annotation is bool:
        st.session_state.setdefault(key, bool(info.default))
        return bool(where.checkbox(label, key=key, help=help_))
    # the range is the block's own (delta, clip norm, ...)
    return number_ui(label, key=key, default=info.default, where=where,
                     field=(part.config, control.field), help=help_)


def controls_ui(family: str, defense: str, *, key: Callable[[str], str],
                where: Sequence[Any] | None = None) -> dict[str, Any]:
    """The defense's declared controls for ``family``: ``{field: value}``. ``where``: the
    containers, one per control (default: a row of columns)."""
    part = DEFENSES.get(defense)
    controls = part.controls_for(family)
    if not controls:
        return {}
    spots = list(where) if where is not None else list(st.columns(len(controls)))
    spots += list(st.columns(len(controls) - len(spots))) if len(spots) < len(controls) else []
    return {c.field: control_ui(part, c, key=key(c.field), where=w)
            for c, w in zip(controls, spots)}


def knob_control(family: str, defense: str, *, key: Callable[[str], str], where: Any = None,
                 dim: int | None = None, default: float | None = None) -> dict[str, Any]:
    """The defense's knob on ``family``'s page: ``{field: value}``, empty without a knob."""
    part = DEFENSES.get(defense)
    if part.knob is None:
        return {}
    field = part.knob.field
    return {field: float(knob_ui(defense, key=key(field), family=family, where=where, dim=dim,
                                 default=default))}


def defense_block_ui(family: str, defense: str, *, key: Callable[[str], str],
                     knob_where: Any = None, controls_where: Sequence[Any] | None = None,
                     dim: int | None = None) -> dict[str, Any]:
    """The defense block a page's controls give: ``{"kind": defense, knob field: value,
    control field: value, ...}`` (fields not drawn keep the block's defaults)."""
    return {"kind": defense,
            **knob_control(family, defense, key=key, where=knob_where, dim=dim),
            **controls_ui(family, defense, key=key, where=controls_where)}
