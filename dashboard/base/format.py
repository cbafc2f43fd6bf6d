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
    """``digits`` decimals, through :func:`format_value` (tiny values never read 0.000)."""
    return format_value(v, digits)


def fmt_interval(iv: tuple[float, float] | None, digits: int = 3) -> str:
    return "" if iv is None else f"[{format_value(iv[0], digits)}, {format_value(iv[1], digits)}]"


def fmt_with_interval(result: Any, name: str, digits: int = 3) -> str:
    """``0.840 [0.801, 0.879]`` (value and its 95 % interval), ``0.840`` or ``n/a``."""
    v = metric(result, name)
    if v is None:
        return "n/a"
    iv = interval(result, name)
    return fmt(v, digits) + (f" {fmt_interval(iv, digits)}" if iv else "")


def chance_of(result: Any, name: str) -> float | None:
    """The chance level of metric ``name`` from :mod:`core.foundation.metric_schema` (None if unknown)."""
    from core.foundation import metric_schema

    if not metric_schema.is_registered(name):
        return None
    return metric_schema.chance_value(name, result.metrics)


def near_chance_text(result: Any, name: str) -> str | None:
    """``core.foundation.metrics.within_chance_text`` for ``name`` (only when its interval holds chance)."""
    from core.foundation.metrics import within_chance_text

    v, iv, c = metric(result, name), interval(result, name), chance_of(result, name)
    if v is None or iv is None or c is None:
        return None
    return within_chance_text(v, iv, c)


def describe(name: str) -> str | None:
    """The one-line description of ``name`` in the metric schema, if registered."""
    from core.foundation import metric_schema

    return metric_schema.get(name).description if metric_schema.is_registered(name) else None


#: below this magnitude a value reads "< 1e-9" (never "0.0000" for 7.55e-10)
TINY = 1e-9
#: units written after a display name (a fraction, a flag or a count reads by itself)
_SILENT_UNITS = {"", "fraction", "flag", "count", "ratio"}


def format_value(v: float | None, digits: int = 3, *, unit: str | None = None) -> str:
    """One number for a label or a tile: ``n/a`` for None/NaN, ``∞``, ``< 1e-9`` for a tiny
    non-zero magnitude, scientific notation where fixed ``digits`` would read 0.000, else
    ``digits`` decimals; ``unit`` appended when given."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "n/a"
    v = float(v)
    if math.isinf(v):
        s = "∞" if v > 0 else "−∞"
    elif v != 0 and abs(v) < TINY:
        s = "< 1e-9" if v > 0 else "> −1e-9"
    elif v != 0 and abs(v) < 0.5 * 10 ** -digits:
        s = f"{v:.{max(digits - 1, 1)}e}"
    else:
        s = f"{v:.{digits}f}"
    return f"{s} {unit}" if unit else s


#: a parenthesis right after one of these opens a formula's operand, not an aside
_OPERATORS = ("−", "-", "+", "=", "/", "·", "×", "≤", "≥", "<", ">")


def _headline(description: str) -> str:
    """``description`` up to its first top-level ";" or aside " (…)": separators inside a
    formula's parentheses (``I(u; r)``) or a parenthesis that is an operand
    (``1 − (H − 1)/…``) never cut it."""
    depth = 0
    for i, ch in enumerate(description):
        if ch == "(":
            aside = (depth == 0 and i > 8 and description[i - 1] == " "
                     and not description[:i].rstrip().endswith(_OPERATORS))
            if aside:
                return description[:i - 1]
            depth += 1
        elif ch == ")":
            depth = max(depth - 1, 0)
        elif ch == ";" and depth == 0:
            return description[:i]
    return description


def display_name(name: str) -> str:
    """The name a page shows for metric ``name``: its schema description up to the first ";"
    or parenthesis, with its unit where the unit says something (never the raw key)."""
    from core.foundation import metric_schema

    if not metric_schema.is_registered(name):
        return name.replace("_", " ")
    spec = metric_schema.get(name)
    text = _headline(spec.description)
    if text[:1].isascii():  # "ε lower bound" keeps its ε (its capital is a Greek E)
        text = text[:1].upper() + text[1:]
    unit = spec.unit if spec.unit not in _SILENT_UNITS else ""
    return f"{text} ({unit})" if unit and unit.lower() not in text.lower() else text


def _metric_names() -> list[str]:
    from core.foundation import metric_schema

    names = {s.name for s in metric_schema.all_specs()} | set(metric_schema.attack_specs())
    # a raw key is one a reader cannot take for a word: it has an underscore
    return sorted((n for n in names if "_" in n), key=len, reverse=True)


def raw_metric_keys_visible(text: str) -> list[str]:
    """The registered metric keys (core.foundation.metric_schema, attack metrics included) that occur
    as whole tokens in ``text``: what a browser test applies to a page's visible text."""
    import re

    found = []
    for n in _metric_names():
        if re.search(rf"(?<![\w.]){re.escape(n)}(?![\w])", text):
            found.append(n)
    return sorted(found)


def raw_identifiers_visible(text: str) -> list[str]:
    """Registered identifiers shown where a title exists: the metric keys of
    :func:`raw_metric_keys_visible` and the part names of :func:`core.foundation.part_names.identifiers`
    occurring as whole tokens in ``text`` (a page's visible text, its tables' cells included)."""
    from core.foundation import part_names

    return sorted(set(raw_metric_keys_visible(text)) | set(part_names.visible(text)))


def titled(text: str, family: str | None = None) -> str:
    """``text`` with registered part names replaced by their titles
    (:func:`core.foundation.part_names.titled`). A page shows titles; the CLI keeps the names a user types."""
    from core.foundation import part_names

    return part_names.titled(text, family)
