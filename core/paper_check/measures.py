"""Where a claim's compared difference is read in the stored benchmark files, and how its 95 %
interval is obtained (:mod:`core.paper_check.verdicts`). Nothing measured is typed here: every number is
read from ``benchmarks/results/*.json`` under the repository root.

A measure's :meth:`read` gives a :class:`Reading`: the two ends (for display), the interval of
test − base (None where the file holds only points, with ``why``), and the sources.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.paper_check.verdicts import Interval, from_ends, paired

RESULTS = "benchmarks/results"

Filter = tuple[tuple[str, Any], ...]


@dataclass
class Reading:
    base: float | None
    test: float | None
    interval: Interval | None
    sources: list[str]
    why: str = ""  # why there is no interval (or no value)

    @property
    def measured(self) -> bool:
        return self.base is not None and self.test is not None


def load(file: str, root: Path) -> Any:
    try:
        return json.loads((root / file).read_text())
    except (OSError, ValueError):
        return None


def dig(obj: Any, path: tuple[Any, ...]) -> Any:
    """``obj`` at ``path`` (dict keys, list indices); None where a step is missing."""
    for p in path:
        if isinstance(p, int) and isinstance(obj, list) and -len(obj) <= p < len(obj) or isinstance(obj, dict) and p in obj:
            obj = obj[p]
        else:
            return None
    return obj


def num(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        return None
    return float(v)


def _match(row: Any, flt: Filter) -> bool:
    return isinstance(row, dict) and all(k in row and _eq(row[k], v) for k, v in flt)


def _eq(a: Any, b: Any) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-12)
    return a == b


def _mean(vals: list[float]) -> float | None:
    return sum(vals) / len(vals) if vals else None


def _src(file: str, path: tuple[Any, ...], flt: Filter = (), key: str = "") -> str:
    where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path).lstrip(".")
    if flt:
        where += "[" + ", ".join(f"{k}={v}" for k, v in flt) + "]"
    return f"{file}:{where}" + (f".{key}" if key else "")


@dataclass(frozen=True)
class SeedRows:
    """Rows of a list (at ``path`` in ``file``), one per seed: ``key`` at the rows matching
    ``base`` and at those matching ``test``, paired by ``seed``; the t-interval over seeds."""

    file: str
    path: tuple[Any, ...]
    base: Filter
    test: Filter
    key: str
    seed: str = "seed"

    def _by_seed(self, rows: list, flt: Filter) -> dict[Any, float]:
        out: dict[Any, float] = {}
        for r in rows:
            if _match(r, flt) and num(r.get(self.key)) is not None:
                out[r.get(self.seed)] = float(r[self.key])
        return out

    def read(self, root: Path) -> Reading:
        rows = dig(load(f"{RESULTS}/{self.file}", root), self.path)
        srcs = [_src(self.file, self.path, f, self.key) for f in (self.base, self.test)]
        if not isinstance(rows, list):
            return Reading(None, None, None, srcs, "file or rows missing")
        b, t = self._by_seed(rows, self.base), self._by_seed(rows, self.test)
        seeds = sorted(set(b) & set(t), key=str)
        iv = paired([b[s] for s in seeds], [t[s] for s in seeds])
        why = "" if iv else f"{len(seeds)} seed(s) at both ends: no interval over seeds"
        return Reading(_mean(list(b.values())), _mean(list(t.values())), iv, srcs, why)


@dataclass(frozen=True)
class SeedLists:
    """Per-seed value lists stored at two paths (same seed order), paired by position."""

    file: str
    base: tuple[Any, ...]
    test: tuple[Any, ...]

    def read(self, root: Path) -> Reading:
        doc = load(f"{RESULTS}/{self.file}", root)
        srcs = [_src(self.file, p) for p in (self.base, self.test)]
        b, t = dig(doc, self.base), dig(doc, self.test)
        if not isinstance(b, list) or not isinstance(t, list):
            return Reading(None, None, None, srcs, "file or per-seed values missing")
        bv, tv = [num(x) for x in b], [num(x) for x in t]
        iv = paired(bv, tv)
        return Reading(_mean([x for x in bv if x is not None]),
                       _mean([x for x in tv if x is not None]), iv, srcs,
                       "" if iv else "fewer than two seeds at both ends")


@dataclass(frozen=True)
class End:
    """One end of a comparison read from one run: its value and its stored 95 % interval."""

    path: tuple[Any, ...]
    lo: tuple[Any, ...] | None = None
    hi: tuple[Any, ...] | None = None
    rows: Filter = ()  # when set, the paths are read in the first row of ``rows`` matching


@dataclass(frozen=True)
class Ends:
    """Two ends in one file, each with its own stored interval (:func:`core.paper_check.verdicts.from_ends`);
    an end without an interval makes the reading a point."""

    file: str
    base: End
    test: End
    note: str = ""

    def read(self, root: Path) -> Reading:
        top = load(f"{RESULTS}/{self.file}", root)
        docs = [next((r for r in (dig(top, ("rows",)) or []) if _match(r, e.rows)), None)
                if e.rows else top for e in (self.base, self.test)]
        srcs = [_src(self.file, ("rows",) if e.rows else e.path, e.rows,
                     ".".join(map(str, e.path)) if e.rows else "") for e in (self.base, self.test)]
        vals = [num(dig(d, e.path)) for d, e in zip(docs, (self.base, self.test), strict=True)]
        ivs = [(num(dig(d, e.lo)), num(dig(d, e.hi))) if e.lo and e.hi else (None, None)
               for d, e in zip(docs, (self.base, self.test), strict=True)]
        b, t = vals
        if b is None or t is None:
            return Reading(b, t, None, srcs, "value missing")
        if None in ivs[0] or None in ivs[1]:
            return Reading(b, t, None, srcs, self.note or "one run, no interval stored")
        iv = from_ends(b, *ivs[0], t, *ivs[1],
                       method=("one run per end, its stored 95 % intervals in quadrature"
                               + (f" ({self.note})" if self.note else "")))
        return Reading(b, t, iv, srcs)


@dataclass(frozen=True)
class Stored:
    """The compared quantity with a stored 95 % interval of its own (e.g. a bootstrap of ρ),
    against a constant: difference = value − constant."""

    file: str
    value: tuple[Any, ...]
    lo: tuple[Any, ...] | None
    hi: tuple[Any, ...] | None
    constant: float
    method: str
    rows: Filter = ()  # when set, ``value``/``lo``/``hi`` are read in the first row matching
    why: str = "no interval stored"  # said when ``lo``/``hi`` are None or missing

    def read(self, root: Path) -> Reading:
        doc = load(f"{RESULTS}/{self.file}", root)
        src = [_src(self.file, self.value, self.rows)]
        if self.rows:
            doc = next((r for r in (doc.get("rows") if isinstance(doc, dict) else None) or []
                        if _match(r, self.rows)), None)
        v, lo, hi = (num(dig(doc, p)) if p else None for p in (self.value, self.lo, self.hi))
        if v is None:
            return Reading(None, None, None, src, "value missing")
        if lo is None or hi is None:
            return Reading(self.constant, v, None, src, self.why)
        c = self.constant
        return Reading(c, v, Interval(v - c, lo - c, hi - c, self.method), src)


@dataclass(frozen=True)
class Points:
    """Two stored points with no interval: never a verdict; ``why`` says what is missing."""

    file: str
    base: tuple[Any, ...]
    test: tuple[Any, ...]
    why: str
    base_rows: Filter = ()
    test_rows: Filter = ()

    def _get(self, doc: Any, path: tuple[Any, ...], flt: Filter) -> float | None:
        if not flt:
            return num(dig(doc, path))
        head, key = path[:-1], path[-1]
        rows = dig(doc, head)
        vals = [num(r.get(key)) for r in rows or [] if _match(r, flt)] if isinstance(rows, list) \
            else []
        return _mean([v for v in vals if v is not None])

    def read(self, root: Path) -> Reading:
        doc = load(f"{RESULTS}/{self.file}", root)
        b = self._get(doc, self.base, self.base_rows)
        t = self._get(doc, self.test, self.test_rows)
        srcs = [_src(self.file, self.base[:-1] if self.base_rows else self.base, self.base_rows,
                     self.base[-1] if self.base_rows else ""),
                _src(self.file, self.test[:-1] if self.test_rows else self.test, self.test_rows,
                     self.test[-1] if self.test_rows else "")]
        return Reading(b, t, None, srcs, self.why if b is not None and t is not None
                       else "value missing")


@dataclass(frozen=True)
class FirstMeasured:
    """The first of ``measures`` whose reading is measured (a per-seed file before the one-run
    file it supersedes); the last one's reading when none is."""

    measures: tuple[Any, ...]

    def read(self, root: Path) -> Reading:
        r = None
        for m in self.measures:
            r = m.read(root)
            if r.measured:
                return r
        assert r is not None, "FirstMeasured needs at least one measure"
        return r


@dataclass(frozen=True)
class NotMeasured:
    """A result the engine can measure but no stored benchmark holds yet."""

    why: str

    def read(self, root: Path) -> Reading:
        return Reading(None, None, None, [], self.why)


@dataclass(frozen=True)
class Custom:
    """A reading computed by ``fn(root)`` (a ratio over κ per seed, per-seed intervals combined);
    ``files`` name what it reads."""

    fn: Callable[[Path], Reading]
    files: tuple[str, ...] = field(default=())

    def read(self, root: Path) -> Reading:
        return self.fn(root)


# ---------------------------------------------------------------------------------------------
# readings that need a step more than a lookup


def _rows(file: str, root: Path, path: tuple[Any, ...] = ("rows",)) -> list:
    rows = dig(load(f"{RESULTS}/{file}", root), path)
    return rows if isinstance(rows, list) else []


def row_lists(file: str, path: tuple[Any, ...], base: Filter, test: Filter, key: str) -> Custom:
    """Per-seed lists stored inside rows (``key`` of the first row matching each filter),
    paired by position: e.g. ``equal_privacy.json`` points' ``utility_per_seed``."""

    def fn(root: Path) -> Reading:
        rows = _rows(file, root, path)
        srcs = [_src(file, path, f, key) for f in (base, test)]
        found = [next((r.get(key) for r in rows if _match(r, f)), None) for f in (base, test)]
        if not all(isinstance(v, list) for v in found):
            return Reading(None, None, None, srcs, "file or per-seed values missing")
        bv, tv = ([num(x) for x in v] for v in found)
        iv = paired(bv, tv)
        return Reading(_mean([x for x in bv if x is not None]),
                       _mean([x for x in tv if x is not None]), iv, srcs,
                       "" if iv else "fewer than two seeds at both ends")

    return Custom(fn, (file,))


def channel_ratio(file: str, channel: str, key: str = "mse", reference: str = "natural") -> Custom:
    """Fig. 14's ordering at equal κ: ``key``(channel) / ``key``(reference) in every (seed, κ/d)
    cell both channels ran; the t-interval over those cells of the log ratio, mapped back (the
    reading's base is 1, its test the geometric-mean ratio). Every cell is one paired
    comparison at equal κ, so the spread across κ counts: averaging κ within a seed first
    leaves three numbers whose spread can be small by chance."""

    def fn(root: Path) -> Reading:
        rows = [r for r in _rows(file, root) if r.get("part") == "defended"]
        srcs = [_src(file, ("rows",), (("defense", ch),), key) for ch in (reference, channel)]
        by: dict[tuple[Any, str], dict[float, float]] = {}
        for r in rows:
            v = num(r.get(key))
            if r.get("defense") in (channel, reference) and v is not None and v > 0:
                by.setdefault((r.get("seed"), r["defense"]), {})[r.get("kappa_per_dim")] = v
        logs = []
        for run in sorted({s for s, _ in by}, key=str):  # a run: one seed's rows
            a, b = by.get((run, channel), {}), by.get((run, reference), {})
            logs += [math.log(a[k] / b[k]) for k in sorted(set(a) & set(b))]
        if not logs:
            return Reading(None, None, None, srcs, "no (seed, κ) cell with both channels")
        from core.paper_check.verdicts import t_interval

        iv = t_interval(logs, f"Student-t over {len(logs)} (seed, κ/d) cells of the log ratio, "
                              "mapped back (ratio − 1)")
        ratio = math.exp(sum(logs) / len(logs))
        if iv is None:
            return Reading(1.0, ratio, None, srcs, "fewer than two cells")
        return Reading(1.0, ratio, Interval(ratio - 1, math.exp(iv.lo) - 1, math.exp(iv.hi) - 1,
                                            iv.method, iv.n), srcs)

    return Custom(fn, (file,))


def per_seed_intervals(file: str, base: Filter, test: Filter, key: str, intervals: str) -> Custom:
    """Rows that store a seed mean ``key`` and one 95 % interval per seed (``intervals``):
    each end's interval of the mean combines the seeds' half-widths (independent seeds, equal
    weight); then :func:`core.paper_check.verdicts.from_ends`. Seed-to-seed spread beyond the intervals is
    not captured."""

    def end(rows: list, flt: Filter) -> tuple[float, float, float] | None:
        r = next((x for x in rows if _match(x, flt)), None)
        v, ivs = num((r or {}).get(key)), (r or {}).get(intervals)
        if v is None or not isinstance(ivs, list) or not ivs:
            return None
        halves = [(num(i[1]) - num(i[0])) / 2 for i in ivs
                  if isinstance(i, list) and len(i) == 2 and None not in (num(i[0]), num(i[1]))]
        if len(halves) != len(ivs):
            return None
        h = math.sqrt(sum(x * x for x in halves)) / len(halves)
        return v, v - h, v + h

    def fn(root: Path) -> Reading:
        rows = _rows(file, root)
        srcs = [_src(file, ("rows",), f, key) for f in (base, test)]
        b, t = end(rows, base), end(rows, test)
        if b is None or t is None:
            return Reading(b[0] if b else None, t[0] if t else None, None, srcs,
                           "value or per-seed intervals missing")
        return Reading(b[0], t[0], from_ends(*b, *t, method=(
            "seed means, each end's per-seed 95 % intervals combined, ends in quadrature")), srcs)

    return Custom(fn, (file,))


def trials_mean(file: str, base: Filter, test: Filter, key: str, std: str, trials: str) -> Custom:
    """Rows holding a mean over trials with its standard deviation: each end's t-interval of the
    mean (std / √trials), then :func:`core.paper_check.verdicts.from_ends`."""
    from scipy import stats

    def end(rows: list, flt: Filter) -> tuple[float, float, float] | None:
        r = next((x for x in rows if _match(x, flt)), None) or {}
        v, s, n = num(r.get(key)), num(r.get(std)), num(r.get(trials))
        if v is None or s is None or n is None or n < 2:
            return None
        h = float(stats.t.ppf(0.975, n - 1)) * s / math.sqrt(n)
        return v, v - h, v + h

    def fn(root: Path) -> Reading:
        rows = _rows(file, root)
        srcs = [_src(file, ("rows",), f, key) for f in (base, test)]
        b, t = end(rows, base), end(rows, test)
        if b is None or t is None:
            return Reading(None, None, None, srcs, "value, std or trial count missing")
        return Reading(b[0], t[0], from_ends(*b, *t, method=(
            "each end's t-interval over its trials, ends in quadrature")), srcs)

    return Custom(fn, (file,))


def bound_margin(file: str) -> Custom:
    """Theorem 1 against every channel: MSE − bound with each channel's stored 95 % interval of
    its mean MSE; the channel nearest to (or below) the bound is the one reported."""

    def fn(root: Path) -> Reading:
        chans = dig(load(f"{RESULTS}/{file}", root), ("channels",))
        src = [f"{file}:channels.*.mean, interval, bound"]
        if not isinstance(chans, dict) or not chans:
            return Reading(None, None, None, src, "file missing")
        ivs = []
        for name, c in chans.items():
            m, b, i = num(c.get("mean")), num(c.get("bound")), c.get("interval")
            if m is None or b is None or not isinstance(i, list) or len(i) != 2:
                return Reading(None, None, None, src, f"channel {name}: mean, bound or interval "
                                                      "missing")
            ivs.append((name, b, m, Interval(m - b, num(i[0]) - b, num(i[1]) - b,
                                             f"{name} channel: its stored 95 % interval of the "
                                             "mean MSE over seeds, minus the bound")))
        below = [x for x in ivs if x[3].hi < 0]
        name, b, m, iv = min(below or ivs, key=lambda x: x[3].hi if below else x[3].lo)
        return Reading(b, m, iv, src)

    return Custom(fn, (file,))


def equal_level_utility(file: str, base: str, test: str, key: str = "utility_per_seed") -> Custom:
    """``equal_privacy.json``: the two defenses' points the benchmark chose at the equal-LiRA
    level (``at_equal_lira_auc.<name>.knob``), their per-seed ``key`` paired by seed."""
    labels = {"inf2guard": "Inf2Guard (λ)", "dpsgd": "DP-SGD (Opacus)"}

    def fn(root: Path) -> Reading:
        doc = load(f"{RESULTS}/{file}", root)
        knobs = [num(dig(doc, ("at_equal_lira_auc", n, "knob"))) for n in (base, test)]
        flts = [(("defense", labels[n]), ("knob", k)) for n, k in zip((base, test), knobs,
                                                                        strict=True)]
        srcs = [_src(file, ("points",), f, key) for f in flts]
        if None in knobs:
            return Reading(None, None, None, srcs, "no equal-LiRA point stored")
        return row_lists(file, ("points",), flts[0], flts[1], key).read(root)

    return Custom(fn, (file,))


def seed_values(file: str, path: tuple[Any, ...], constant: float, what: str) -> Custom:
    """A per-seed list of the compared quantity itself (e.g. one ratio per seed) stored at
    ``path``, against a constant: the t-interval over seeds of value − constant."""

    def fn(root: Path) -> Reading:
        from core.paper_check.verdicts import t_interval

        src = [_src(file, path)]
        vals = dig(load(f"{RESULTS}/{file}", root), path)
        if not isinstance(vals, list):
            return Reading(None, None, None, src, "file or per-seed values missing")
        v = [x for x in (num(y) for y in vals) if x is not None]
        if not v:
            return Reading(None, None, None, src, "no finite per-seed value")
        iv = t_interval([x - constant for x in v],
                        f"Student-t over {len(v)} seeds of {what} − {constant:g}")
        return Reading(constant, _mean(v), iv, src, "" if iv else "fewer than two seeds")

    return Custom(fn, (file,))
