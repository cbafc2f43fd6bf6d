"""A run's metrics must be numbers (issue 21): a NaN or an infinity where a number belongs is a
numeric failure (an overflow, a diverged training), and :func:`core.runs.experiments.run` refuses
the run, naming the metric, so nothing is stored.

Where the metric schema (:mod:`core.foundation.metric_schema`) says a value can be undefined by design,
it is allowed and stored as such (``null`` in JSON, ``-`` in tables):

- group ``bound`` and ``timing``: NaN = not computed or not applicable (Theorem 1 needs a
  binary task; a stage served from the cache has no training time), ±inf = unbounded (an
  infinite mutual information makes Theorem 3 vacuous);
- group ``training`` with a loss unit (``nats``, ``MSE``): NaN or ±inf = the training diverged;
  the run reports it as a finding (``representation_nonfinite_frac``, a note) and its attack
  and utility metrics, which must stay numbers, show what the diverged model leaks;
- unit ``ε``: +inf = no finite guarantee (a noise scale of 0 gives ε = ∞);
- unit ``dB``: +inf = an exact reconstruction (PSNR of a zero error);
- :data:`UNDEFINED_OK`: further metrics that are NaN when what they measure is absent.

Every other metric, and every unregistered one, must be finite.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

#: metrics outside the groups above that are NaN by design when what they measure is absent
UNDEFINED_OK: dict[str, str] = {
    "noise_entropy_nats": "no noise (ε = 0): the entropy of a point mass is undefined",
    "fil_irfil_std_ratio": "the plain model's η spread is 0: the ratio is undefined",
    "utility_acc": "no test rows to score",
}
NAN_GROUPS = frozenset({"bound", "timing"})
INF_UNITS = frozenset({"ε", "dB"})
#: a training loss may be NaN / inf: the training diverged (reported, not hidden)
LOSS_UNITS = frozenset({"nats", "MSE"})


class NonFiniteMetric(ValueError):
    """A run produced a NaN or infinite metric where a number belongs (one line)."""


def _allowed(name: str, value: float) -> bool:
    from core.foundation import metric_schema

    spec = metric_schema.get(name) if metric_schema.is_registered(name) else None
    diverged = spec is not None and spec.group == "training" and spec.unit in LOSS_UNITS
    if math.isnan(value):
        return name in UNDEFINED_OK or diverged or (spec is not None and spec.group in NAN_GROUPS)
    if spec is None:
        return False
    if spec.group == "bound" or diverged:
        return True
    return value > 0 and spec.unit in INF_UNITS


def check_metrics(kind: str, metrics: Mapping[str, float]) -> None:
    """Raise :class:`NonFiniteMetric` naming the first metric of a ``kind`` run that is NaN or
    infinite where the schema says a number belongs."""
    for name, raw in metrics.items():
        try:
            value = float(raw)
        except (TypeError, ValueError):
            raise NonFiniteMetric(f"metric {name}: got {raw!r:.40}; a {kind} run must report "
                                  "numbers; nothing stored") from None
        if math.isfinite(value) or _allowed(name, value):
            continue
        raise NonFiniteMetric(
            f"metric {name}: got {value}; a {kind} run must yield a finite value here (a "
            "numeric overflow or a diverged training: move the defense's knob or the learning "
            "rate back into the usual range); nothing stored")
