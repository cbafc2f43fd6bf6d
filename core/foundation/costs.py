"""Estimated run time of a config, from measured costs (the pre-run box of a page, issue #20).

A run's time is modelled as a fixed part plus seconds per unit of work, with the work read from
the config (:func:`work`): for membership, every model the run trains (the target and its
shadow / reference models) passes ``epochs`` times over about ``members`` rows, so
``work = (1 + shadows) · epochs · members`` (DP-SGD's own epochs where it sets them); loading
the data, the attacks and the t-SNE are the fixed part.

The coefficients are fitted (non-negative least squares) on the stored timings of runs of the
same kind on this machine when there are enough of them (:func:`fit`); otherwise
:data:`MEASURED` is used: constants measured by timing cold runs on the 2-core development
machine (shared, so loaded), said to be an estimate from another machine. Either way
:class:`CostModel.based_on` says which.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from core.foundation.wording import counted

__all__ = ["MEASURED", "CostModel", "config_value", "estimate", "fit", "format_seconds", "work"]

#: fewest stored runs (with distinct work) a fit needs; fewer: :data:`MEASURED`
MIN_RUNS = 4


def config_value(cfg: Mapping[str, Any], path: str, default: Any = None) -> Any:
    """The value at dotted ``path`` of a config mapping (``default`` where absent or None)."""
    node: Any = cfg
    for part in path.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return default
        node = node[part]
    return default if node is None else node


def work(kind: str, cfg: Mapping[str, Any]) -> float | None:
    """The config's units of work (None for a kind without a cost model)."""
    if kind == "membership":
        shadows = float(config_value(cfg, "attack.shadows", 16))
        epochs = float(config_value(cfg, "defense.epochs", None) or config_value(cfg, "train.epochs", 60))
        members = float(config_value(cfg, "train.members", 500))
        return (1.0 + shadows) * epochs * members
    return None


@dataclass(frozen=True)
class CostModel:
    """``seconds ≈ fixed_s + per_unit_s · work(kind, cfg)``; ``based_on`` says from what."""

    kind: str
    fixed_s: float
    per_unit_s: float
    based_on: str

    def seconds(self, cfg: Mapping[str, Any]) -> float | None:
        w = work(self.kind, cfg)
        return None if w is None else self.fixed_s + self.per_unit_s * w


#: Measured 2026-11-26 on the shared 2-core development machine: cold membership runs with
#: all four attacks and 1000 t-SNE points, after a warm-up run, at (members 200, epochs 60,
#: shadows 8) and (500, 60, 16): mnist5k 8.0 s and 26.7 s (load average ≈ 5), digits 10.6 s
#: and 31.9 s (load average ≈ 12); each pair gives the line (fixed part, seconds per
#: model·epoch·row). By data set; another data set gets mnist5k's line, and says so.
MEASURED: dict[tuple[str, str], CostModel] = {
    ("membership", "mnist5k"): CostModel(
        "membership", fixed_s=3.0, per_unit_s=4.65e-5,
        based_on="an estimate from another machine: two cold mnist5k runs timed on its "
                 "loaded 2-core CPU"),
    ("membership", "digits"): CostModel(
        "membership", fixed_s=4.9, per_unit_s=5.28e-5,
        based_on="an estimate from another machine: two cold digits runs timed on its "
                 "loaded 2-core CPU"),
}
#: the data set whose line stands in for one not measured
REFERENCE_DATA = "mnist5k"


def fit(kind: str, runs: Iterable[tuple[Mapping[str, Any], float]],
        data: str | None = None) -> CostModel | None:
    """Fit :class:`CostModel` to stored ``(config, seconds)`` of ``kind`` (on data set
    ``data`` when given; non-negative least squares on [1, work]); None when fewer than
    :data:`MIN_RUNS` runs with at least two distinct amounts of work."""
    from scipy.optimize import nnls

    rows = [(w, float(s)) for cfg, s in runs
            if s is not None and s > 0 and (w := work(kind, cfg)) is not None
            and (data is None or config_value(cfg, "data.name") == data)]
    if len(rows) < MIN_RUNS or len({w for w, _ in rows}) < 2:
        return None
    a = np.array([[1.0, w] for w, _ in rows])
    b = np.array([s for _, s in rows])
    scale = a.max(axis=0)  # columns of very different size: solve on unit scale
    coef, _ = nnls(a / scale, b)
    coef = coef / scale
    on = f" on {data}" if data else ""
    return CostModel(kind, float(coef[0]), float(coef[1]),
                     based_on=f"fitted on {counted(len(rows), f'stored {kind} run')}{on} "
                                      "of this machine")


def estimate(kind: str, cfg: Mapping[str, Any],
             runs: Iterable[tuple[Mapping[str, Any], float]] = ()) -> tuple[float, str] | None:
    """``(seconds, based on what)`` for ``cfg``: fitted on ``runs`` of the same data set where
    they suffice, else the constants measured on it (or on :data:`REFERENCE_DATA`, said so);
    None for a kind without a cost model."""
    data = config_value(cfg, "data.name")
    model = fit(kind, runs, data) or MEASURED.get((kind, data))
    if model is None:
        model = MEASURED.get((kind, REFERENCE_DATA))
        if model is None:
            return None
        model = CostModel(kind, model.fixed_s, model.per_unit_s,
                          f"{model.based_on}; not measured on {data}")
    s = model.seconds(cfg)
    return None if s is None else (s, model.based_on)


def format_seconds(s: float) -> str:
    """``about 20 s`` / ``about 3 min`` (two significant figures at most: it is an estimate)."""
    if s < 60:
        return f"about {max(1, round(s))} s"
    return f"about {s / 60:.2g} min"
