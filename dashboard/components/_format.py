"""Reading numbers out of a Result for display: finite values, intervals, short formats."""

from __future__ import annotations

import math
from typing import Any


def metric(result: Any, name: str) -> float | None:
    """``result.metrics[name]`` as a float, None when absent, NaN or infinite."""
    v = result.metrics.get(name)
    if v is None:
        return None
    v = float(v)
    return v if math.isfinite(v) else None


def interval(result: Any, name: str) -> tuple[float, float] | None:
    """The 95 % interval of ``name`` (None when the Result has none or it is not finite)."""
    getter = getattr(result, "interval", None)
    iv = getter(name) if getter is not None else None
    if iv is None or not all(math.isfinite(float(x)) for x in iv):
        return None
    return float(iv[0]), float(iv[1])


def n_scored(result: Any, name: str) -> int | None:
    """How many samples the interval of ``name`` is over (None if unknown)."""
    iv = getattr(result, "intervals", {}).get(name) or {}
    n = iv.get("n")
    return None if n is None or not math.isfinite(float(n)) else int(n)


def fmt(v: float | None, digits: int = 3) -> str:
    return "n/a" if v is None else f"{v:.{digits}f}"


def fmt_interval(iv: tuple[float, float] | None, digits: int = 3) -> str:
    return "" if iv is None else f"[{iv[0]:.{digits}f}, {iv[1]:.{digits}f}]"


def fmt_with_interval(result: Any, name: str, digits: int = 3) -> str:
    """``0.840 [0.801, 0.879]`` (value and its 95 % interval), ``0.840`` or ``n/a``."""
    v = metric(result, name)
    if v is None:
        return "n/a"
    iv = interval(result, name)
    return fmt(v, digits) + (f" {fmt_interval(iv, digits)}" if iv else "")


def chance_of(result: Any, name: str) -> float | None:
    """The chance level of metric ``name`` from :mod:`core.metric_schema` (None if unknown)."""
    from core import metric_schema

    if not metric_schema.is_registered(name):
        return None
    return metric_schema.chance_value(name, result.metrics)


def near_chance_text(result: Any, name: str) -> str | None:
    """``core.metrics.within_chance_text`` for ``name`` (only when its interval holds chance)."""
    from core.metrics import within_chance_text

    v, iv, c = metric(result, name), interval(result, name), chance_of(result, name)
    if v is None or iv is None or c is None:
        return None
    return within_chance_text(v, iv, c)


def describe(name: str) -> str | None:
    """The one-line description of ``name`` in the metric schema, if registered."""
    from core import metric_schema

    return metric_schema.get(name).description if metric_schema.is_registered(name) else None
