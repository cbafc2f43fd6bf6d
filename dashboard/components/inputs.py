"""Number inputs that run exactly what they show (issue #20 item 4).

``st.number_input`` silently turns a cleared box into its minimum and keeps the last valid value
behind an out-of-range entry, so Run ran something the page no longer showed. Here a number is a
text box whose text is parsed as typed:

- a valid entry is the value (``st.session_state[key]``, an int for an integer field);
- an empty, non-numeric, non-finite or out-of-range entry shows the one-line range message of
  :mod:`core.foundation.checks` under the box, sets ``st.session_state[key]`` to None and is collected for
  :func:`inputs_ok`: a page draws Run disabled and starts nothing (:func:`stop_if_invalid`).

Ranges come from the config's own pydantic constraints (:func:`core.foundation.checks.field_range`), so a
form never copies a range. ``st.session_state[key]`` stays the number other code reads and
writes (presets, "copy settings from a run"): a value written there from outside replaces the
text on the next rerun.
"""

from __future__ import annotations

import math
from typing import Any

import streamlit as st

from core.foundation.checks import field_range, range_error, range_text

__all__ = ["RANGES", "blocked_reason", "input_errors", "inputs_ok", "number_ui", "parse_number",
           "report_problem", "stop_if_invalid", "text_key"]

_ERRORS = "_privlab_input_errors"  # key -> (what, message, blocks the config) of a problem
_LAST = "__last"  # st.session_state[key + _LAST] = (text shown, value parsed from it)
_TEXT = "__text"  # the text box's widget key
#: st.session_state[RANGES][key] = the range a number box accepts (dashboard.widget_sweep reads
#: it to type the declared ends)
RANGES = "_privlab_number_ranges"


def text_key(key: str) -> str:
    """The widget key of the text box behind ``number_ui(key=key)`` (tests type into it)."""
    return key + _TEXT


def _fmt(value: float, integer: bool) -> str:
    if integer or (isinstance(value, int) and not isinstance(value, bool)):
        return str(int(value))
    return format(float(value), ".10g")


def parse_number(text: str, name: str, *, lo: float | None = None, hi: float | None = None,
                 lo_open: bool = False, hi_open: bool = False, integer: bool = False,
                 zero: str | None = None) -> tuple[float | int | None, str | None]:
    """``(value, None)`` for a valid entry, ``(None, message)`` otherwise. ``zero``: 0 is also
    allowed and means this (``"all rows"``), outside the range."""
    note = f"or 0 = {zero}" if zero else ""
    rng = {"lo": lo, "hi": hi, "lo_open": lo_open, "hi_open": hi_open, "integer": integer,
           "note": note}
    raw = text.strip()
    if not raw:
        return None, f"{name}: empty; " + range_text(**rng)
    try:
        v = float(raw.replace("_", ""))
    except ValueError:
        return None, f"{name}: {raw!r} is not a number; " + range_text(**rng)
    if not math.isfinite(v):
        return None, str(range_error(name, raw, **rng))
    if zero and v == 0:
        return 0, None
    if integer:
        if not v.is_integer():
            return None, str(range_error(name, raw, **rng))
        v = int(v)
    below = lo is not None and (v <= lo if lo_open else v < lo)
    above = hi is not None and (v >= hi if hi_open else v > hi)
    if below or above:
        return None, str(range_error(name, raw, **rng))
    return v, None


def _same(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return a is None and b is None
    try:
        return float(a) == float(b)
    except (TypeError, ValueError):
        return False


def _errors() -> dict[str, tuple[str, str, bool]]:
    ss = st.session_state
    if _ERRORS not in ss:
        ss[_ERRORS] = {}
    return ss[_ERRORS]


def _drawn_this_run(widget_key: str) -> bool:
    """Whether the widget ``widget_key`` was drawn in this script run: an input hidden by a
    choice (DP-SGD's clip norm after switching to no defense) must not keep Run disabled."""
    try:
        from streamlit.runtime.scriptrunner import get_script_run_ctx

        ctx = get_script_run_ctx()
    except ImportError:  # pragma: no cover - Streamlit always has it
        return True
    if ctx is None:
        return True
    keys = getattr(getattr(ctx, "shared", ctx), "widget_user_keys_this_run", None)
    return True if keys is None else widget_key in keys


def report_problem(key: str, message: str | None, what: str | None = None, *,
                   blocks: bool = False) -> None:
    """Record (message) or clear (None) a problem that keeps this run from starting, besides
    the number boxes' own (a data set whose files are missing); ``key`` names a widget drawn
    in this run that the problem belongs to, ``what`` the thing in a few words (default: the
    message up to its first colon). ``blocks``: no config can be built (an empty box), so
    :func:`stop_if_invalid` stops the page; otherwise only Run is off and stored results of
    the settings still show."""
    if message is None:
        _errors().pop(key, None)
    else:
        _errors()[key] = (what or message.split(":")[0], message, blocks)


def input_errors() -> dict[str, str]:
    """The messages of this run's invalid inputs, by key (inputs not drawn in this run left
    out)."""
    return {k: e[1] for k, e in _errors().items()
            if _drawn_this_run(text_key(k)) or _drawn_this_run(k)}


def inputs_ok() -> bool:
    """True when every input drawn so far in this run holds a valid value."""
    return not input_errors()


def blocked_reason() -> str | None:
    """Why no job may start now: the messages of this run's problems so far (a missing data
    set's says how to get it), None when there are none. Every button that starts a job (Run,
    a sweep, the teaching sweep) is drawn ``disabled=blocked_reason() is not None`` with it as
    its help, so no button runs what Run may not."""
    errs = input_errors()
    return "\n\n".join(dict.fromkeys(errs.values())) if errs else None


def number_ui(label: str, *, key: str, default: float,
              field: tuple[Any, str] | None = None, lo: float | None = None,
              hi: float | None = None, lo_open: bool | None = None,
              hi_open: bool | None = None, integer: bool | None = None,
              zero: str | None = None, where: Any = None, help: str | None = None,
              name: str | None = None, disabled: bool = False) -> float | int | None:
    """A number box under ``key``; the value, or None (and an inline error) for an empty,
    non-numeric or out-of-range entry.

    ``field = (Model, "name")`` takes the range and integer-ness from the config model
    (:func:`core.foundation.checks.field_range`); ``lo`` / ``hi`` / ``lo_open`` / ``hi_open`` /
    ``integer`` given explicitly replace them (for a page-only number with no config field).
    ``zero`` also allows 0 with that meaning (``"all rows"``). ``name`` is the field's name in
    the message (default: the label)."""
    rng = field_range(*field) if field is not None else {
        "lo": None, "hi": None, "lo_open": False, "hi_open": False, "integer": False}
    for k, v in (("lo", lo), ("hi", hi), ("lo_open", lo_open), ("hi_open", hi_open),
                 ("integer", integer)):
        if v is not None:
            rng[k] = v
    where = st if where is None else where
    name = name or label
    ss = st.session_state
    tkey, lkey = text_key(key), key + _LAST
    if key not in ss:
        ss[key] = default
    value, last = ss[key], ss.get(lkey)
    # the text box shows the session value unless it is this box's own last parse (then the
    # typed text stays as typed, invalid or not): a preset or a copied run writes the number
    if last is None or not _same(value, last[1]):
        if value is None:
            value = ss[key] = default
        ss[tkey] = _fmt(value, rng["integer"])
    elif tkey not in ss:  # the page was left and opened again: the widget's state was dropped
        ss[tkey] = last[0]
    text_help = range_text(**rng, note=f"or 0 = {zero}" if zero else "")
    text_help = text_help[0].upper() + text_help[1:]
    help = f"{help} {text_help}." if help else f"{text_help}."
    ss.setdefault(RANGES, {})[key] = dict(rng, zero=zero)
    text = where.text_input(label, key=tkey, help=help, disabled=disabled)
    parsed, message = parse_number(str(text), name, zero=zero, **rng)
    ss[key], ss[lkey] = parsed, (str(text), parsed)
    if message is not None and not disabled:
        where.error(message, icon=":material/error:")
    report_problem(key, None if disabled else message, name, blocks=True)
    return parsed


def stop_if_invalid(run_label: str = "Run", *, key: str) -> None:
    """When a number box drawn so far is invalid (no config can be built): a disabled Run
    button (widget ``key``, so a page keeps its layout), one line saying what blocks it, and
    ``st.stop()``: nothing is validated, queued or stored. Other problems (missing data) leave
    the page going: its Run button is drawn with ``disabled=not inputs_ok()``."""
    errors = input_errors()
    if not any(_errors()[k][2] for k in errors):
        return
    st.button(run_label, type="primary", key=key, disabled=True)
    what = [_errors()[k][0] for k in errors]
    st.caption(("Run is off until this is fixed (marked above): " if len(what) == 1 else
                f"Run is off until these {len(what)} are fixed (marked above): ")
               + "; ".join(what) + ".")
    st.stop()
