"""An imported run computed here and compared with the bundle's numbers (``privlab verify
--recompute KEY``, History's "Recompute here" button).

The run's config is validated here and run through the store (a run computed here is stored
as one, beside the imported run it checks). Each metric both runs report is compared:

- where both runs carry an interval (attack metrics: a bootstrap or Clopper–Pearson 95 %
  interval), the numbers agree when each run's value lies inside the other's interval (a value
  edited without its interval does not), and with one interval when the other value lies
  inside it: a seed-for-seed rerun on another machine or library build moves a figure within
  its sampling noise, not beyond it;
- elsewhere they agree when equal to within 1e-6 relative (1e-9 absolute): a deterministic
  figure of the same config and seed does not move.

Timings are not compared (they measure the machine). A metric only one run reports disagrees.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from cache.bundle.errors import BundleError
from cache.bundle.origin import origin_text
from core.foundation.result import Result

REL_TOL, ABS_TOL = 1e-6, 1e-9


@dataclass(frozen=True)
class MetricCheck:
    """One metric: the bundle's value, this engine's, the interval read and the verdict."""

    name: str
    imported: float | None
    here: float | None
    interval: tuple[float, float] | None
    agrees: bool
    how: str


@dataclass
class Recomputed:
    """What :func:`recompute` found: the imported run's ``key``, the key this engine gives its
    config (``here_key``), whether the run here came from the store, and each metric."""

    key: str
    here_key: str
    origin: str
    from_cache: bool
    checks: list[MetricCheck] = field(default_factory=list)

    @property
    def agree(self) -> bool:
        return bool(self.checks) and all(c.agrees for c in self.checks)

    @property
    def sentence(self) -> str:
        bad = [c.name for c in self.checks if not c.agrees]
        how = "read from this store" if self.from_cache else "computed now"
        if not bad:
            return (f"run {self.key[:12]} ({self.origin or 'imported'}): all {len(self.checks)} "
                    f"metrics agree with this engine's run {self.here_key[:12]} ({how}) within "
                    "their intervals")
        return (f"run {self.key[:12]} ({self.origin or 'imported'}): {len(bad)} of "
                f"{len(self.checks)} metrics do not agree with this engine's run "
                f"{self.here_key[:12]} ({how}): {', '.join(bad[:6])}"
                + (", ..." if len(bad) > 6 else ""))

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "here_key": self.here_key, "origin": self.origin,
                "from_cache": self.from_cache, "agree": self.agree,
                "metrics": [c.__dict__ for c in self.checks]}


def _value(x: Any) -> float | None:
    v = float(x)
    return None if math.isnan(v) else v


def compare(imported: Result, here: Result) -> list[MetricCheck]:
    """Each metric of either run (timings left out), judged as the module docstring says."""
    from core.foundation import metric_schema as S

    out: list[MetricCheck] = []
    for name in sorted(set(imported.metrics) | set(here.metrics)):
        if S.is_registered(name) and S.get(name).group == "timing":
            continue
        a = _value(imported.metrics[name]) if name in imported.metrics else None
        b = _value(here.metrics[name]) if name in here.metrics else None
        ia, ib = imported.interval(name), here.interval(name)
        if (name in imported.metrics) != (name in here.metrics):
            where = "the bundle" if name in imported.metrics else "this engine's run"
            out.append(MetricCheck(name, a, b, ia or ib, False, f"only in {where}"))
            continue
        if a is None or b is None:
            out.append(MetricCheck(name, a, b, ia or ib, a is None and b is None,
                                   "both undefined" if a is None and b is None
                                   else "undefined in one run"))
            continue
        if ia is not None and ib is not None:
            ok = ib[0] <= a <= ib[1] and ia[0] <= b <= ia[1]
            out.append(MetricCheck(name, a, b, ib, ok, "each inside the other's interval" if ok
                                   else "outside the other's interval"))
        elif ia is not None or ib is not None:
            lo, hi = ib if ib is not None else ia  # type: ignore[misc]
            other = a if ib is not None else b
            ok = lo <= other <= hi
            out.append(MetricCheck(name, a, b, (lo, hi), ok, "inside the interval" if ok
                                   else "outside the interval"))
        else:
            ok = math.isclose(a, b, rel_tol=REL_TOL, abs_tol=ABS_TOL)
            out.append(MetricCheck(name, a, b, None, ok, "equal" if ok else "differ"))
    return out


def recompute(store: Any, key: str, *, runner: Any = None, progress: Any = None,
              cancel: Any = None) -> Recomputed:
    """Run imported run ``key`` (or a unique prefix) here through ``store`` and compare (see
    the module docstring). BundleError (one line) when no imported run matches; ConfigError
    when its config does not validate here."""
    from core.config.schema import cache_key, parse_config

    imported = store.get(key, imported=True)
    if imported is None:
        raise BundleError(f"key: no imported run matches {key!r}; `privlab list` marks the runs "
                          "imported from bundles")
    origin = next((origin_text(r.origin) for r in store.list(kind=imported.kind)
                   if r.key == imported.key and r.origin), "")
    cfg = parse_config(imported.config)
    here = store.get_or_run(cfg, runner=runner, progress=progress, cancel=cancel)
    return Recomputed(key=str(imported.key), here_key=cache_key(cfg), origin=origin,
                      from_cache=bool(here.from_cache), checks=compare(imported, here))
