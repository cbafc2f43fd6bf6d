"""The one range checker: every one-line "field: got X; allowed range ..." message in privlab
is written here (scikit-learn's habit: constraints declared once, validated at the boundary).

Config fields declare their ranges with pydantic's ``Ge`` / ``Gt`` / ``Le`` / ``Lt`` and
:func:`core.config.schema.format_validation_error` renders them with :func:`range_text`; functions that
take numbers directly (bounds, accountants, attacks) call :func:`check_range`
(:func:`check_positive` for a finite value > 0), :func:`check_int`, :func:`check_choice` or
:func:`check_array`.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable
from typing import Any

import numpy as np

__all__ = ["check_array", "check_choice", "check_int", "check_positive", "check_range",
           "field_range",
           "range_error", "range_text"]


def _num(v: float) -> str:
    if isinstance(v, numbers.Integral):
        return str(int(v))
    return f"{float(v):g}"


def range_text(lo: float | None = None, hi: float | None = None, *, lo_open: bool = False,
               hi_open: bool = False, integer: bool = False, note: str = "") -> str:
    """``"allowed range 0 < value <= 1"``; ``None`` or an infinite closed end leaves that side
    out (the infinity is allowed), an infinite open end is written (``0 < value < inf``: finite
    values only); ``integer`` adds "(integer)"; ``note`` is appended in parentheses (why the
    range)."""
    left = ("" if lo is None or (math.isinf(lo) and not lo_open)
            else f"{_num(lo)} {'<' if lo_open else '<='} ")
    right = ("" if hi is None or (math.isinf(hi) and not hi_open)
             else f" {'<' if hi_open else '<='} {_num(hi)}")
    text = f"allowed range {left}value{right}"
    if integer:
        text += " (integer)"
    if note:
        text += f" ({note})"
    return text


def _given(value: Any) -> str:
    if isinstance(value, np.generic):  # numpy scalars read as Python's (5, not np.int64(5))
        value = value.item()
    s = repr(value)
    return s if len(s) <= 60 else s[:57] + "..."


def range_error(field: str, value: Any, lo: float | None = None, hi: float | None = None, *,
                lo_open: bool = False, hi_open: bool = False, integer: bool = False,
                note: str = "") -> ValueError:
    """The one-line ``ValueError`` for ``field`` outside its range (raise it yourself)."""
    return ValueError(f"{field}: got {_given(value)}; "
                      + range_text(lo, hi, lo_open=lo_open, hi_open=hi_open, integer=integer,
                                   note=note))


def check_range(field: str, value: Any, lo: float = -math.inf, hi: float = math.inf, *,
                lo_open: bool = False, hi_open: bool = False, note: str = "") -> float:
    """``float(value)`` if it is a finite-or-allowed number inside the range, else the one-line
    ``ValueError`` naming ``field``. NaN is never inside; ±inf only where the range's open end
    allows it (``hi=math.inf`` with ``hi_open=False`` admits inf)."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise range_error(field, value, lo, hi, lo_open=lo_open, hi_open=hi_open,
                          note=note) from None
    below = v <= lo if lo_open else v < lo
    above = v >= hi if hi_open else v > hi
    if math.isnan(v) or below or above:
        raise range_error(field, value, lo, hi, lo_open=lo_open, hi_open=hi_open, note=note)
    return v


def check_positive(field: str, value: Any, *, zero: bool = False, note: str = "") -> float:
    """The commonest range (κ, σ, ε, learning rates, ...): a finite value > 0, or >= 0 with
    ``zero`` (:func:`check_range` with ``0 < value < inf``)."""
    return check_range(field, value, 0, math.inf, lo_open=not zero, hi_open=True, note=note)


def check_int(field: str, value: Any, lo: int | None = None, hi: int | None = None, *,
              note: str = "") -> int:
    """``int(value)`` if it is an integer (not a bool) in [lo, hi], else the one-line error."""
    ok = isinstance(value, numbers.Integral) and not isinstance(value, bool)
    if ok and ((lo is not None and value < lo) or (hi is not None and value > hi)):
        ok = False
    if not ok:
        raise range_error(field, value, lo, hi, integer=True, note=note)
    return int(value)


def check_choice(field: str, value: Any, allowed: Iterable[str]) -> str:
    """``value`` if it is one of ``allowed``, else ``field: got 'x'; allowed: a, b``."""
    allowed = tuple(allowed)
    if value not in allowed:
        raise ValueError(f"{field}: got {_given(value)}; allowed: {', '.join(allowed)}")
    return value


def check_array(field: str, values: Any, lo: float = -math.inf, hi: float = math.inf, *,
                lo_open: bool = False, hi_open: bool = False, note: str = "") -> np.ndarray:
    """A float64 array every element of which is inside the range (NaN never is); the error
    names the first offending value."""
    a = np.asarray(values, dtype=np.float64)
    below = a <= lo if lo_open else a < lo
    above = a >= hi if hi_open else a > hi
    bad = np.isnan(a) | below | above
    if bad.any():
        raise range_error(field, float(a[bad].flat[0]), lo, hi, lo_open=lo_open,
                          hi_open=hi_open, note=note)
    return a


def field_range(model: Any, field: str) -> dict[str, Any]:
    """The range a pydantic ``model`` declares for ``field`` (``Ge`` / ``Gt`` / ``Le`` / ``Lt``
    in its ``Annotated`` type, also inside ``X | None``), as keyword arguments of
    :func:`range_text` / :func:`range_error`: ``lo``, ``hi``, ``lo_open``, ``hi_open`` and
    ``integer``. Forms read their allowed ranges here, so a range is declared once, in the
    config. A field without bounds gets ``lo = hi = None``."""
    import typing

    info = model.model_fields[field]
    found: list[Any] = list(info.metadata)
    integer = False

    def walk(tp: Any) -> None:
        nonlocal integer
        if tp is int:
            integer = True
        if typing.get_origin(tp) is typing.Annotated:
            base, *meta = typing.get_args(tp)
            found.extend(meta)
            walk(base)
            return
        for arg in typing.get_args(tp):
            walk(arg)

    walk(info.annotation)
    out: dict[str, Any] = {"lo": None, "hi": None, "lo_open": False, "hi_open": False,
                           "integer": integer}
    for m in found:
        for attr, side, is_open in (("ge", "lo", False), ("gt", "lo", True),
                                    ("le", "hi", False), ("lt", "hi", True)):
            v = getattr(m, attr, None)
            if v is not None:
                out[side], out[f"{side}_open"] = v, is_open
    return out


def check_field(block: Any, field: str, value: Any, *, note: str = "") -> float:
    """``float(value)`` if it lies in the range the config ``block`` declares for ``field``
    (:func:`field_range`), else the one-line ``ValueError``: a function a block's value reaches
    checks it against the block's declaration instead of writing the range again."""
    r = field_range(block, field)
    lo = -math.inf if r["lo"] is None else r["lo"]
    hi = math.inf if r["hi"] is None else r["hi"]
    return check_range(field, value, lo, hi, lo_open=r["lo_open"], hi_open=r["hi_open"],
                       note=note)


def check_block(block: Any, *, names: dict[str, str] | None = None, **values: Any) -> Any:
    """``block(**values)`` validated, or a one-line ``ValueError`` naming the first field at
    fault with its allowed range: a function taking a block's fields loose applies the block's
    own rules (ranges and validators such as "exactly one of"), written once on the block.
    ``names`` maps a block field to the caller's argument name the message should use."""
    from pydantic import ValidationError

    try:
        return block(**values)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err.get("loc", ()) if not isinstance(p, int))
        msg = str(err.get("msg", "invalid")).removeprefix("Value error, ")
        if loc in block.model_fields and err.get("type") in (
                "greater_than", "greater_than_equal", "less_than", "less_than_equal"):
            try:
                check_field(block, loc, values.get(loc))
            except ValueError as bad:
                msg = str(bad)
        elif loc:
            msg = f"{loc}: got {_given(values.get(loc))}; {msg}"
        for field, name in (names or {}).items():
            if msg.startswith(field + ":"):
                msg = name + msg[len(field):]
        raise ValueError(msg) from None
