"""Tradeoff rules shared by every page that draws a utility–privacy curve over a knob (λ, κ,
ε, a pruning rate): which cached grid point stands in for a slider value, and the points of
the curve with their intervals. Pure functions over Results; no plotting here.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from core.foundation.metric_schema import HEADLINES


def nearest_point(available: Iterable[float], value: float) -> float | None:
    """The available grid value closest to ``value`` (ties -> the smaller); None if none."""
    pts = sorted({float(v) for v in available})
    if not pts:
        return None
    return min(pts, key=lambda g: (abs(g - value), g))


@dataclass(frozen=True)
class TradeoffPoint:
    knob: float
    utility: float
    attack: float
    attack_lo: float | None
    attack_hi: float | None
    series: str


def _metric(result, name: str) -> float | None:
    v = result.metrics.get(name)
    return None if v is None or not math.isfinite(v) else float(v)


def tradeoff_points(results: Mapping[float, object], *, kind: str = "attribute_privacy",
                    attack_metrics: Mapping[str, str] | None = None) -> list[TradeoffPoint]:
    """One point per (knob value, attack series) with utility on x and attack success on y.

    ``attack_metrics`` maps a series name to the metric plotted (default: the kind's headline
    attack metric as "strongest attacker")."""
    head = HEADLINES[kind]
    series = dict(attack_metrics or {"strongest attacker": head.attack})
    pts: list[TradeoffPoint] = []
    for knob, r in sorted(results.items()):
        if r is None:
            continue
        util = _metric(r, head.utility)
        if util is None:
            continue
        for label, name in series.items():
            a = _metric(r, name)
            if a is None:
                continue
            iv = r.interval(name) if hasattr(r, "interval") else None
            pts.append(TradeoffPoint(float(knob), util, a, iv[0] if iv else None,
                                     iv[1] if iv else None, label))
    return pts
