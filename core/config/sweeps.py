"""Sweep expansion and rows (DESIGN: Architecture / Sweeps): pure functions, no store.

A ``kind: sweep`` config (:class:`core.config.schema.SweepConfig`) is a ``base`` config of another
kind, a ``grid`` of dotted field paths -> values and ``seeds``. :func:`expand` turns it into one
validated config per point of grid × seeds (seed innermost); each point is an ordinary run with
its own cache key, so a point computed by any sweep, executor or plain run is reused.
:func:`summarise` and :func:`point_row` make a point's row (knob values, seed, key,
``from_cache``, the base kind's headline metrics with their 95 % intervals), :func:`rows_to_csv`
writes rows as CSV. :class:`PointStore` is what the sweep runner needs from a result store.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from core.config.schema import Point, expand, normalise_base  # noqa: F401  (the sweep's points)
from core.foundation.progress import CancelToken, Progress, ProgressCallback
from core.foundation.result import Result

#: row columns after the knob columns and before the metrics
FIXED_COLUMNS = ("seed", "key", "from_cache")
class PointStore(Protocol):
    """What the sweep runner needs from a result store (``cache.store.ResultStore`` is one;
    core never imports it). ``point_worker(root, config, cancel_path) -> summary`` is a
    picklable function that runs one point in another process (pool or Ray) through the store
    at ``root``; ``root`` is None for a store other processes cannot open."""

    root: Path | None
    point_worker: Callable[[str, dict[str, Any], str | None], dict[str, Any]] | None

    def peek(self, config: Any) -> Result | None: ...

    def get_or_run(self, config: Any, *, progress: Progress | ProgressCallback | None = None,
                   cancel: CancelToken | None = None) -> Result: ...


def headline_names(result: Result) -> list[str]:
    """The headline metrics of a point's kind (core.foundation.metric_schema.HEADLINES): utility, attack
    success and the budget of its defense."""
    from core.foundation.metric_schema import HEADLINES

    head = HEADLINES.get(result.kind)
    if head is None:
        return []
    defense = (result.config.get("defense") or {}).get("kind") if result.config else None
    names = [head.utility, head.attack, head.budget_for(defense)]
    return list(dict.fromkeys(n for n in names if n))


def _num(v: Any) -> float | None:
    if v is None:
        return None
    v = float(v)
    return v if math.isfinite(v) else None


def summarise(result: Result) -> dict[str, Any]:
    """What a sweep keeps of a point's Result (small and picklable: a pool or Ray worker
    returns it): key, ``from_cache``, the headline metrics and their intervals."""
    metrics = {n: _num(result.metrics.get(n)) for n in headline_names(result)}
    intervals = {n: list(iv) for n in metrics if (iv := result.interval(n)) is not None}
    return {"key": result.key, "from_cache": bool(result.from_cache), "metrics": metrics,
            "intervals": intervals}


def point_row(point: Point, summary: dict[str, Any]) -> dict[str, Any]:
    """A sweep table row: one column per grid path, seed, key, from_cache, then each headline
    metric with ``<name>_lo`` / ``<name>_hi`` (its 95 % interval) when the point has one."""
    row: dict[str, Any] = {**point.values, "seed": point.seed, "key": summary["key"],
                           "from_cache": summary["from_cache"]}
    for name, v in summary["metrics"].items():
        row[name] = v
        iv = summary["intervals"].get(name)
        if iv is not None:
            row[f"{name}_lo"], row[f"{name}_hi"] = _num(iv[0]), _num(iv[1])
    return row


def columns_of(rows: list[dict[str, Any]], grid_paths: list[str] | None = None) -> list[str]:
    """Column order: the grid paths, seed, key, from_cache, then the rest as first seen."""
    first = [*(grid_paths or []), *FIXED_COLUMNS]
    rest = dict.fromkeys(c for r in rows for c in r if c not in first)
    return [c for c in first if any(c in r for r in rows)] + list(rest)


def rows_to_csv(rows: list[dict[str, Any]], columns: list[str] | None = None) -> str:
    """Rows as CSV text (``columns``: their order, default :func:`columns_of`); a missing or
    NaN value is an empty cell, a mapping or list value is JSON."""
    cols = columns or columns_of(rows)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(cols)
    for r in rows:
        w.writerow(["" if (v := r.get(c)) is None or (isinstance(v, float) and math.isnan(v))
                    else json.dumps(v) if isinstance(v, dict | list) else v for c in cols])
    return buf.getvalue()


@dataclass(frozen=True)
class SweepTable:
    """A stored ``kind: sweep`` Result read as its table: one row per point (knob values,
    seed, key, ``from_cache``, the base kind's headline metrics with ``_lo`` / ``_hi``)."""

    result: Result

    @property
    def key(self) -> str | None:
        return self.result.key

    @property
    def grid(self) -> list[str]:
        """The grid's dotted paths (the knob columns)."""
        return list((self.result.config or {}).get("grid", {}))

    @property
    def rows(self) -> list[dict[str, Any]]:
        return list(self.result.info.get("rows", []))

    @property
    def columns(self) -> list[str]:
        return list(self.result.info.get("columns") or columns_of(self.rows, self.grid))

    @property
    def metric_names(self) -> list[str]:
        """The rows' metric columns (no knob, seed, key, flag or interval column)."""
        fixed = {*self.grid, *FIXED_COLUMNS}
        return [c for c in self.columns if c not in fixed and not c.endswith(("_lo", "_hi"))]

    @property
    def points_run(self) -> int:
        """Points this call computed (0: every point came from the store)."""
        return 0 if self.result.from_cache else int(self.result.metrics.get("points_run", 0))

    def to_csv(self) -> str:
        return rows_to_csv(self.rows, self.columns)

    def to_frame(self) -> Any:
        """The rows as a pandas DataFrame, columns in table order."""
        import pandas as pd

        return pd.DataFrame(self.rows, columns=self.columns)
