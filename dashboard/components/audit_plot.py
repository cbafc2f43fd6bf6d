"""Claimed against audited ε (Steinke, Nasr & Jagielski 2023, one-run audit): the accountant's ε
of each DP-SGD setting on x, the audited ε lower bound on y, the diagonal (an audit above it
would prove the claim false), the largest ε the audit's canaries can prove, and the ε = ∞ point
(clipping, no noise) at the right edge. Pure presentation: every number is read from a stored
Result (``epsilon_accountant``, ``audit_*``, :mod:`core.runs.audit_stage`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import plotly.graph_objects as go

__all__ = ["AUDIT_ATTACK", "AUDIT_CONFIDENCE", "AuditPoint", "audit_caption", "audit_configs",
           "audit_figure", "audit_points"]

#: the audit grid's joint confidence, and the cheap attack set its runs use (the plot reads the
#: audit and the accountant; the loss attack needs no shadow model)
AUDIT_CONFIDENCE = 0.95
AUDIT_ATTACK = {"attackers": ["loss"], "shadows": 2, "rmia_references": 1, "targets": 1}


def audit_configs(config: Mapping[str, Any], canaries: int) -> dict[float, dict[str, Any]]:
    """One membership config per target ε of DP-SGD's registered grid and one at ε = ∞ (noise
    multiplier 0: clipping only), each audited in one run (white box), the joint confidence
    Bonferroni-corrected over the grid's points; data and training from ``config``."""
    from core.foundation.parts import DEFENSES

    grid = DEFENSES.get("dp_sgd").knob.comparison_grid()
    audit = {"kind": "white_box", "canaries": int(canaries), "confidence": AUDIT_CONFIDENCE,
             "tests": len(grid) + 1}
    base = {**config, "attack": AUDIT_ATTACK, "audit": audit, "projection_points": 0}
    out = {float(g): {**base, "defense": {"kind": "dp_sgd", "target_epsilon": float(g)}}
           for g in grid}
    out[math.inf] = {**base, "defense": {"kind": "dp_sgd", "noise_multiplier": 0.0,
                                         "target_epsilon": None}}
    return out


@dataclass(frozen=True)
class AuditPoint:
    """One audited run: the knob value it was asked for, the accountant's ``claimed`` ε (∞ for
    clipping only), the ``audited`` lower bound, what its guesses could prove at most, its
    correct / total guesses and the per-run confidence (after Bonferroni)."""

    target: float
    claimed: float
    audited: float
    max_provable: float
    correct: int
    guesses: int
    confidence: float
    exceeds: bool


def _m(result: Any, name: str) -> float | None:
    v = result.metrics.get(name) if result is not None else None
    return None if v is None else float(v)


def audit_points(results: Mapping[float, Any]) -> list[AuditPoint]:
    """The audited points among ``results`` (target ε -> Result or None; ∞ for clipping only),
    in target order; runs without an audit or a claim are skipped."""
    out = []
    for target, r in sorted(results.items()):
        claimed, audited = _m(r, "epsilon_accountant"), _m(r, "audit_epsilon_lower")
        if claimed is None or audited is None:
            continue
        out.append(AuditPoint(
            float(target), claimed, audited, _m(r, "audit_max_provable") or math.nan,
            int(_m(r, "audit_correct") or 0), int(_m(r, "audit_guesses") or 0),
            _m(r, "audit_confidence") or math.nan, bool(_m(r, "audit_exceeds_claim"))))
    return out


def audit_figure(points: Sequence[AuditPoint], *, confidence: float, tests: int,
                 canaries: int, height: int = 440) -> go.Figure:
    """Claimed ε (x) against audited ε (y) with the diagonal and the largest provable ε; the
    ε = ∞ point drawn at the right edge of the axis (tick "∞")."""
    finite = [p.claimed for p in points if math.isfinite(p.claimed)]
    provable = max((p.max_provable for p in points if math.isfinite(p.max_provable)),
                   default=math.nan)
    top = max([*finite, *(p.audited for p in points), provable if math.isfinite(provable)
               else 0.0, 1.0])
    inf_x = top * 1.25  # where ε = ∞ is drawn
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=[0.0, inf_x], y=[0.0, inf_x], mode="lines",
                             line={"dash": "dot", "color": "grey"},
                             name="audited = claimed (above: the claim is false)"))
    if math.isfinite(provable):
        fig.add_trace(go.Scatter(
            x=[0.0, inf_x], y=[provable, provable], mode="lines",
            line={"dash": "dash", "color": "firebrick"},
            name=f"largest provable with {canaries} canaries ({provable:.2f})"))
    xs = [p.claimed if math.isfinite(p.claimed) else inf_x for p in points]
    fig.add_trace(go.Scatter(
        x=xs, y=[p.audited for p in points], mode="markers+lines",
        marker={"size": 11, "color": ["crimson" if p.exceeds else "royalblue" for p in points],
                "symbol": ["star" if not math.isfinite(p.claimed) else "circle"
                           for p in points]},
        line={"color": "royalblue"}, name="DP-SGD: audited ε lower bound",
        text=[f"target ε {'∞' if not math.isfinite(p.target) else f'{p.target:g}'}<br>"
              f"claimed {'∞' if not math.isfinite(p.claimed) else f'{p.claimed:.3g}'}<br>"
              f"audited ≥ {p.audited:.3g} ({p.correct}/{p.guesses} correct)" for p in points],
        hoverinfo="text"))
    ticks = sorted({0.0, *finite})
    fig.update_layout(
        height=height, margin={"l": 50, "r": 20, "t": 60, "b": 50},
        title=f"Claimed vs audited ε · {confidence:.0%} jointly over {tests} run(s) "
              f"(Bonferroni: {1 - (1 - confidence) / max(tests, 1):.4g} each)",
        xaxis={"title": "claimed ε (accountant)", "range": [0, inf_x * 1.05],
               "tickvals": [*ticks, inf_x],
               "ticktext": [f"{t:g}" for t in ticks] + ["∞ (no noise)"]},
        yaxis={"title": "audited ε (lower bound)", "range": [0, inf_x * 1.05]},
        legend={"orientation": "h", "y": -0.2})
    return fig


def audit_caption(points: Sequence[AuditPoint], *, confidence: float, tests: int) -> str:
    """One paragraph: how many points, which exceed their claim, the ε = ∞ point's reading."""
    if not points:
        return "No audited DP-SGD run yet."
    bad = [p for p in points if p.exceeds]
    inf = [p for p in points if not math.isfinite(p.claimed)]
    finite = [p for p in points if math.isfinite(p.claimed)]
    worst = max((p.audited / p.claimed for p in finite if p.claimed > 0), default=math.nan)
    parts = [(f"{len(points)} audited run(s) at {confidence:.0%} jointly (Bonferroni over "
             f"{tests}). An audit proves ε from below: a point above the diagonal would show the "
             "accountant wrong; below it, the gap is what DP promises beyond what one run of "
             "canaries shows. The dashed line is the most the canaries could prove (all guesses "
             "right): claims above it cannot be tested with this many canaries.")]
    if math.isfinite(worst):
        parts.append(f"Largest audited / claimed ratio over the finite grid: {worst:.2f}.")
    parts.append("No claim is exceeded." if not bad else
                 f"{len(bad)} claim(s) exceeded: " + ", ".join(
                     f"target ε {p.target:g} (audited {p.audited:.2f} > {p.claimed:.2f})"
                     for p in bad) + ".")
    if inf:
        parts.append(f"Clipping without noise (ε = ∞): audited ≥ {inf[0].audited:.2f}; the "
                     "distance between it and the noisy points is what the noise, not the "
                     "clipping, buys.")
    return " ".join(parts)
