"""Configs generated from the pydantic schema (issue 21), shared by the CI fuzz test
(``tests/test_hardening_config.py``) and the hardening benchmark.

:func:`config_strategy` walks a kind's model (:data:`core.config.schema.CONFIG_MODELS`) field by
field: numbers inside their declared range (its ends, just inside, uniform and log-uniform),
literals, registered names, nested blocks and tagged unions; with a small probability a field
gets a hostile value instead (just outside its range, NaN, ±inf, 1e-300, 1e-320, a wrong type,
a huge or nested value) or an unknown key is added. A sweep's base is another kind's generated
config and its grid varies that kind's leaf fields. :func:`check_case` validates one case under
a wall-clock limit and classifies it: ``valid``, ``rejected`` (a ConfigError whose every line
is one line naming a field), ``bad_message``, ``unhandled`` (any other exception) or ``hang``.
"""

from __future__ import annotations

import math
import re
import signal
import time
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from annotated_types import Ge, Gt, Le, Len, Lt
from hypothesis import strategies as st
from pydantic import BaseModel

#: per-field probabilities (percent): left out (its default), a hostile value
P_OMIT, P_BAD, P_EXTRA = 40, 2, 2
#: names a string field draws from besides random text (registries, data sets, attributes)
VOCAB = ("digits", "mnist5k", "faces", "synthetic", "adult", "mnist", "fashion_mnist",
         "cifar10", "celeba", "parity", "large", "bold", "bright", "u", "sex", "race",
         "marital_status", "label", "logreg", "mlp", "prior", "in_training", "idlg", "dlg",
         "ig", "loss", "confidence", "entropy", "lira_offline", "lira_online", "rmia",
         "representation", "fil_white_box", "fil_black_box", "fil_prior", "decoder_in_training",
         "decoder_fresh", "inversion", "Female", "1", "", "none", "../../etc/passwd", "/tmp")
HOSTILE = (math.nan, math.inf, -math.inf, 1e-300, 1e-320, -1e-300, 1e308, -1, 0, "1e-3", "",
           "nan", True, None, [], {}, [1, 2], {"kind": [1]}, "x" * 10_000, 2**80, -(2**63))


def _bounds(meta: list[Any]) -> tuple[float | None, float | None, bool, bool]:
    lo = hi = None
    lo_open = hi_open = False
    for m in meta:
        if isinstance(m, Ge):
            lo = m.ge
        elif isinstance(m, Gt):
            lo, lo_open = m.gt, True
        elif isinstance(m, Le):
            hi = m.le
        elif isinstance(m, Lt):
            hi, hi_open = m.lt, True
    return lo, hi, lo_open, hi_open


def _floats(meta: list[Any]) -> st.SearchStrategy[float]:
    lo, hi, lo_open, hi_open = _bounds(meta)
    a = -1e6 if lo is None else float(lo)
    b = 1e6 if hi is None else float(hi)
    parts = [st.floats(a, b, exclude_min=lo_open, exclude_max=hi_open, allow_nan=False)]
    ends = [v for v, open_ in ((a, lo_open), (b, hi_open)) if not open_]
    if ends:
        parts.append(st.sampled_from(ends))
    if a > 0:  # log-uniform: a knob spanning decades is used at every scale
        la, lb = math.log10(a), math.log10(b)
        parts.append(st.floats(la, lb).map(lambda e: min(max(10.0 ** e, a), b))
                     .filter(lambda v: (v > a or not lo_open) and (v < b or not hi_open)))
    return st.one_of(parts)


def _ints(meta: list[Any]) -> st.SearchStrategy[int]:
    lo, hi, _, _ = _bounds(meta)
    a = -10**6 if lo is None else int(lo)
    b = 10**6 if hi is None else int(hi)
    small_hi = min(b, a + 64)  # small values are the common case (sizes, counts)
    return st.one_of(st.integers(a, small_hi), st.integers(a, b), st.sampled_from([a, b]))


def _outside(meta: list[Any], integer: bool) -> st.SearchStrategy[Any]:
    lo, hi, lo_open, hi_open = _bounds(meta)
    vals: list[Any] = []
    if lo is not None:
        vals += [lo - 1 if integer else (lo if lo_open else lo - abs(lo) * 1e-9 - 1e-12)]
    if hi is not None:
        vals += [hi + 1 if integer else (hi if hi_open else hi * (1 + 1e-9) + 1e-12)]
    return st.sampled_from(vals or [-(10**9)])


def _hostile(t: Any, meta: list[Any]) -> st.SearchStrategy[Any]:
    base = _strip(t)
    parts: list[st.SearchStrategy[Any]] = [st.sampled_from(HOSTILE)]
    if base in (int, float):
        parts.append(_outside(meta, base is int))
    parts.append(st.recursive(st.none() | st.integers() | st.text(max_size=4),
                              lambda c: st.lists(c, max_size=3)
                              | st.dictionaries(st.text(max_size=4), c, max_size=3),
                              max_leaves=20))
    return st.one_of(parts)


def _strip(t: Any) -> Any:
    while get_origin(t) is Annotated:
        t = get_args(t)[0]
    return t


def _is_union(t: Any) -> bool:
    return get_origin(t) in (Union, types.UnionType)


def type_strategy(t: Any, meta: list[Any], name: str, depth: int) -> st.SearchStrategy[Any]:
    """A plausible value of type ``t`` with constraints ``meta`` (field ``name``)."""
    origin = get_origin(t)
    if origin is Annotated:
        base, *extra = get_args(t)
        return type_strategy(base, list(meta) + list(extra), name, depth)
    if _is_union(t):
        members = [m for m in get_args(t)]
        return st.one_of([type_strategy(m, meta, name, depth) for m in members])
    if t is type(None):
        return st.none()
    if origin is Literal:
        return st.sampled_from(get_args(t))
    if t is bool:
        return st.booleans()
    if t is int:
        return _ints(meta)
    if t is float:
        return _floats(meta)
    if t is str:
        if name == "data_dir":
            return st.sampled_from(["/tmp", "/nonexistent/privlab", ""])
        return st.integers(0, 9).flatmap(
            lambda r: st.text(max_size=12) if r == 0 else st.sampled_from(VOCAB))
    if origin is tuple:
        args = get_args(t)
        if len(args) == 2 and args[1] is Ellipsis:
            return st.lists(type_strategy(args[0], [], name, depth), max_size=4).map(tuple)
        return st.tuples(*(type_strategy(a, [], name, depth) for a in args))
    if origin is list:
        (arg,) = get_args(t) or (Any,)
        lo, hi = 0, 4
        for m in meta:
            if isinstance(m, Len):
                lo, hi = m.min_length, min(m.max_length or 4, max(m.min_length, 4))
        return st.lists(type_strategy(arg, [], name, depth), min_size=lo, max_size=hi)
    if origin is dict:
        return st.dictionaries(st.sampled_from(VOCAB), st.integers(0, 3), max_size=2)
    if isinstance(t, type) and issubclass(t, BaseModel):
        return model_strategy(t, depth + 1)
    if t is Any or t is typing.Any:
        return st.one_of(st.integers(0, 3), st.floats(0, 1), st.sampled_from(VOCAB))
    return st.none()  # pragma: no cover - a type this walker does not know


def model_strategy(model: type[BaseModel], depth: int = 0,
                   fixed: dict[str, Any] | None = None) -> st.SearchStrategy[dict[str, Any]]:
    """A mapping for ``model``: every field left out, given a plausible value or a hostile one;
    sometimes an unknown key. ``fixed`` entries are always set (a kind's tag)."""

    @st.composite
    def build(draw: Callable) -> dict[str, Any]:
        out: dict[str, Any] = dict(fixed or {})
        for name, info in model.model_fields.items():
            if name in out:
                continue
            if name == "kind" and get_origin(_strip(info.annotation)) is Literal:
                out[name] = get_args(_strip(info.annotation))[0]  # a block's tag
                continue
            r = draw(st.integers(0, 99))
            if r < P_OMIT:
                continue
            meta = list(info.metadata)
            if r < P_OMIT + P_BAD:
                out[name] = draw(_hostile(info.annotation, meta))
            else:
                out[name] = draw(type_strategy(info.annotation, meta, name, depth))
        if draw(st.integers(0, 99)) < P_EXTRA:
            out[draw(st.sampled_from(["extra", "Kind", "seed ", "data.name"]))] = 1
        return out

    return build()


def leaf_paths(model: type[BaseModel], prefix: str = "", depth: int = 0) -> list[tuple[str, Any, list[Any]]]:
    """(dotted path, annotation, constraints) of the numeric and literal leaves of ``model``
    (nested blocks followed, tagged unions not): what a sweep grid varies."""
    out = []
    for name, info in model.model_fields.items():
        t = _strip(info.annotation)
        if name in ("kind", "seed"):
            continue
        if isinstance(t, type) and issubclass(t, BaseModel) and depth < 3:
            out += leaf_paths(t, f"{prefix}{name}.", depth + 1)
        elif t in (int, float, bool) or get_origin(t) is Literal:
            out.append((f"{prefix}{name}", info.annotation, list(info.metadata)))
    return out


def sweep_strategy() -> st.SearchStrategy[dict[str, Any]]:
    from core.config.schema import CONFIG_MODELS

    kinds = [k for k in CONFIG_MODELS if k != "sweep"]

    @st.composite
    def build(draw: Callable) -> dict[str, Any]:
        kind = draw(st.sampled_from(kinds))
        model = CONFIG_MODELS[kind]
        base = draw(model_strategy(model, fixed={"kind": kind}))
        leaves = leaf_paths(model)
        grid: dict[str, Any] = {}
        for _ in range(draw(st.integers(0, 2))):
            path, ann, meta = draw(st.sampled_from(leaves))
            grid[path] = draw(st.lists(type_strategy(ann, meta, path, 1), min_size=1, max_size=4))
        out: dict[str, Any] = {"kind": "sweep", "base": base, "grid": grid}
        r = draw(st.integers(0, 99))
        if r < 70:
            out["seeds"] = draw(st.lists(st.integers(0, 5), min_size=1, max_size=3))
        elif r < 75:
            out["seeds"] = draw(_hostile(list[int], []))
        if draw(st.integers(0, 99)) < 10:
            out["executor"] = draw(st.sampled_from(["serial", "local", "ray", "gpu"]))
        if draw(st.integers(0, 99)) < P_BAD:
            out["grid"] = draw(_hostile(dict, []))
        return out

    return build()


def config_strategy(kind: str) -> st.SearchStrategy[dict[str, Any]]:
    """Generated mappings of config ``kind`` (see the module docstring)."""
    from core.config.schema import CONFIG_MODELS

    if kind == "sweep":
        return sweep_strategy()
    return model_strategy(CONFIG_MODELS[kind], fixed={"kind": kind})


# ---------------------------------------------------------------------------------------------
# one case


def field_names() -> frozenset[str]:
    """Every field name of every config model (what a message must name)."""
    from core.config.schema import CONFIG_MODELS

    names: set[str] = {"kind", "config", "grid", "seeds", "base"}
    seen: set[type] = set()

    def walk(m: type[BaseModel]) -> None:
        if m in seen:
            return
        seen.add(m)
        for n, info in m.model_fields.items():
            names.add(n)
            for sub in _models_in(info.annotation):
                walk(sub)

    for m in CONFIG_MODELS.values():
        walk(m)
    return frozenset(names)


def _models_in(t: Any) -> list[type[BaseModel]]:
    t = _strip(t)
    if isinstance(t, type) and issubclass(t, BaseModel):
        return [t]
    out: list[type[BaseModel]] = []
    for a in get_args(t):
        out += _models_in(a)
    return out


_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def message_ok(line: str, names: frozenset[str]) -> bool:
    """One line whose text before the first ``:`` names a config field."""
    if "\n" in line or not line.strip() or len(line) > 2000:
        return False
    head = line.split(": ", 1)[0]
    if line.split(": ", 1)[-1].startswith("unknown field"):
        return True  # names the unknown key itself
    if head.startswith("grid point "):  # "grid point λ=0.5, seed 1: data.name: got ..."
        rest = line.split(": ", 1)[1] if ": " in line else ""
        head = rest.split(": ", 1)[0]
    return any(w in names for w in _WORD.findall(head))


class CaseTimeout(BaseException):
    """A case ran past its wall-clock limit (a BaseException: no handler swallows it)."""


@dataclass
class Outcome:
    status: str  # valid | rejected | bad_message | unhandled | hang
    seconds: float
    detail: str = ""


def _alarm(signum, frame):
    raise CaseTimeout()


def check_case(obj: Any, *, limit_s: float = 5.0, names: frozenset[str] | None = None) -> Outcome:
    """Validate ``obj`` with :func:`core.config.schema.parse_config` under a ``limit_s`` wall-clock
    limit (SIGALRM; main thread only) and classify the outcome."""
    from core.config.schema import ConfigError, cache_key, parse_config

    names = names or field_names()
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, limit_s)
    t0 = time.perf_counter()
    try:
        cfg = parse_config(obj)
        cache_key(cfg)
        status, detail = "valid", ""
    except CaseTimeout:
        status, detail = "hang", f"over {limit_s:g} s"
    except ConfigError as exc:
        bad = [p for p in exc.problems if not message_ok(p, names)]
        status, detail = ("bad_message", bad[0][:300]) if bad else ("rejected", exc.problems[0][:200])
    except Exception as exc:  # noqa: BLE001 - exactly what the fuzz looks for
        status, detail = "unhandled", f"{type(exc).__name__}: {str(exc)[:300]}"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    return Outcome(status, time.perf_counter() - t0, detail)
