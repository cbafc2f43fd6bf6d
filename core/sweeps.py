"""Sweep expansion and rows (DESIGN: Architecture / Sweeps): pure functions, no store.

A ``kind: sweep`` config (:class:`core.config.SweepConfig`) is a ``base`` config of another
kind, a ``grid`` of dotted field paths -> values and ``seeds``. :func:`expand` turns it into one
validated config per point of grid × seeds (seed innermost); each point is an ordinary run with
its own cache key, so a point computed by any sweep, executor or plain run is reused.
:func:`summarise` and :func:`point_row` make a point's row (knob values, seed, key,
``from_cache``, the base kind's headline metrics with their 95 % intervals), :func:`rows_to_csv`
writes rows as CSV. :class:`PointStore` is what the sweep runner needs from a result store.
"""

from __future__ import annotations

import copy
import csv
import io
import itertools
import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from core.config import MAX_SWEEP_POINTS, ConfigError, apply_override, cache_key, parse_config
from core.progress import CancelToken, Progress, ProgressCallback
from core.result import Result

#: row columns after the knob columns and before the metrics
FIXED_COLUMNS = ("seed", "key", "from_cache")
#: paths a grid may not set: the kind is the base's, seeds have their own list
_RESERVED = {"kind": "a sweep's points share the base's kind; sweep one of its fields",
             "seed": "set the sweep's seeds instead"}
#: at most this many problem lines in one error
_MAX_PROBLEMS = 5


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


@dataclass(frozen=True)
class Point:
    """One point of a sweep: its knob ``values`` (grid path -> value), ``seed`` and validated
    ``config``."""

    values: dict[str, Any]
    seed: int
    config: Any

    @property
    def label(self) -> str:
        knobs = ", ".join(f"{p}={_short(v)}" for p, v in self.values.items())
        return f"{knobs}, seed={self.seed}" if knobs else f"seed={self.seed}"

    @property
    def key(self) -> str:
        return cache_key(self.config)


def _short(v: Any) -> str:
    return v if isinstance(v, str) else json.dumps(v, separators=(",", ":"))


def normalise_base(base: Any) -> dict[str, Any]:
    """The base validated (any kind but ``sweep``), as a mapping with defaults filled in.
    Raises :class:`ConfigError` whose lines name ``base.<field>``."""
    if isinstance(base, dict) and base.get("kind") == "sweep":
        raise ConfigError(["base.kind: got 'sweep'; a sweep of a sweep is not allowed "
                           + "(put both grids in one sweep)"])
    try:
        cfg = parse_config(base)
    except ConfigError as exc:
        raise ConfigError([f"base.{p}" for p in exc.problems]) from None
    if cfg.kind == "sweep":
        raise ConfigError(["base.kind: got 'sweep'; a sweep of a sweep is not allowed"])
    return cfg.model_dump(mode="json")


def _check_path(path: str) -> str | None:
    parts = path.split(".")
    if not path or any(not p for p in parts):
        return f"grid.{path}: not a dotted field path (e.g. defense.tradeoff_lambda)"
    if path in _RESERVED:
        return f"grid.{path}: {_RESERVED[path]}"
    return None


def _grid_problem(line: str, paths: list[str], label: str) -> str:
    """A point's validation problem as a grid problem: ``grid.<path>: ...`` when it is about a
    grid path (or an unknown block on the way to one), else naming the point."""
    name, _, rest = line.partition(":")
    for p in paths:
        if name == p or name.startswith(p + "."):
            return f"grid.{line}"
    if rest.strip().startswith("unknown field"):
        for p in paths:
            if p.startswith(name + "."):
                return f"grid.{p}: unknown field"
    return f"grid point {label}: {line}"


def expand(sweep: Any) -> list[Point]:
    """The points of a sweep (a :class:`~core.config.SweepConfig`), grid order, seeds
    innermost. Every point is validated; the problems (at most five) are one ConfigError."""
    paths = list(sweep.grid)
    problems = [p for p in map(_check_path, paths) if p]
    if problems:
        raise ConfigError(problems)
    n = math.prod(len(v) for v in sweep.grid.values()) * len(sweep.seeds)
    if n > MAX_SWEEP_POINTS:
        raise ConfigError([f"grid: got {n} points (grid × seeds); allowed at most {MAX_SWEEP_POINTS}"])
    # a ``.kind`` path starts a fresh block (apply_override): set it before its block's fields
    order = sorted(range(len(paths)), key=lambda i: (not paths[i].endswith(".kind"), i))
    points: list[Point] = []
    seen: set[str] = set()
    for combo in itertools.product(*sweep.grid.values()):
        values = dict(zip(paths, combo, strict=True))
        for seed in sweep.seeds:
            obj = copy.deepcopy(sweep.base)
            for i in order:
                apply_override(obj, paths[i], copy.deepcopy(combo[i]))
            obj["seed"] = seed
            point = Point(values=values, seed=seed, config=None)
            try:
                cfg = parse_config(obj)
            except ConfigError as exc:
                for line in exc.problems:
                    msg = _grid_problem(line, paths, point.label)
                    if msg not in seen:
                        seen.add(msg)
                        problems.append(msg)
                continue
            points.append(Point(values=values, seed=seed, config=cfg))
    if problems:
        more = len(problems) - _MAX_PROBLEMS
        raise ConfigError(problems[:_MAX_PROBLEMS] + ([f"grid: ... and {more} more problems"]
                                                      if more > 0 else []))
    return points


def headline_names(result: Result) -> list[str]:
    """The headline metrics of a point's kind (core.metric_schema.HEADLINES): utility, attack
    success and the budget of its defense."""
    from core.metric_schema import HEADLINES

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
