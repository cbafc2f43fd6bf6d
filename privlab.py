"""privlab's public Python API: run, sweep, compare and load experiments through the result
store, and take them with you (notebooks, bundles, reports).

::

    import privlab

    result = privlab.run("examples/tappfl_synthetic_quick.yaml")   # cached, else computed
    result.metrics["attack_auc_best"], result.interval("attack_auc_best")
    sweep = privlab.sweep("examples/sweep_tappfl_lambda.yaml", executor="local")
    sweep.to_frame()                                                # one row per point
    again = privlab.load(result.key[:12])
    privlab.notebook(result, "run.ipynb")                           # recreates and checks it

A config is a mapping, a YAML/JSON file path, YAML text, or a validated config model. Every
call goes through the result store (``store=``: a store or its directory; None:
:func:`cache.store.default_store`, i.e. ``$PRIVLAB_CACHE_DIR`` else the user cache dir): a
stored result comes back at once, a missing one is computed and stored. This module only
delegates: the engine is :mod:`core`, the store :mod:`cache`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

from core.config.schema import ConfigError
from core.config.sweeps import SweepTable
from core.foundation.result import Result
from core.report.notebook import Number, headline, target_of
from core.runs.compare import Comparison, ComparisonSpec, DefenseSpec, MissingPoints

__all__ = [
    "Comparison", "ComparisonSpec", "ConfigError", "DefenseSpec", "MissingPoints", "Number",
    "Result", "SweepTable", "bundle", "compare", "headline", "import_bundle", "load",
    "notebook", "parts", "presets", "report", "run", "runs", "script", "store", "sweep",
    "validate",
]

if TYPE_CHECKING:
    from cache.index import RunRecord
    from cache.store import ResultStore

Progress = Callable[[float, str], None]
#: where results are read and stored: a store, its directory, or None for the default store
Store: TypeAlias = "ResultStore | str | Path | None"


def store(root: str | Path | None = None) -> ResultStore:
    """The result store at ``root`` (default ``$PRIVLAB_CACHE_DIR``, else the user cache dir),
    one per path per process: a :class:`cache.store.ResultStore`."""
    from cache.store import default_store

    return default_store(root)


def _store(s: Store) -> ResultStore:
    return store() if s is None else s if not isinstance(s, str | Path) else store(s)


def _parsed(obj: Any, what: str) -> Any:
    """A ``.yaml`` / ``.yml`` / ``.json`` path's or YAML text's data; anything else as it is."""
    from core.config.files import ConfigFileError, decode_utf8, parse_text, read_bytes

    try:
        if isinstance(obj, Path) or (isinstance(obj, str) and "\n" not in obj and
                                     obj.strip().lower().endswith((".yaml", ".yml", ".json"))):
            p = Path(obj)
            return parse_text(decode_utf8(read_bytes(p), p.name), p.name,
                              json_=p.suffix.lower() == ".json")
        if isinstance(obj, str):
            return parse_text(obj, what)
    except ConfigFileError as exc:
        raise ConfigError([str(exc)]) from None
    return obj


def validate(config: Any) -> Any:
    """A validated config model from a mapping, a config model, a ``.yaml`` / ``.yml`` /
    ``.json`` path or YAML text; one-line :class:`ConfigError` otherwise."""
    from core.config.schema import parse_config

    return parse_config(_parsed(config, "config"))


def run(config: Any, *, store: Store = None, progress: Progress | None = None) -> Result:
    """One experiment through the store: the stored Result (``from_cache=True``) or a new one,
    computed and stored. ``progress(fraction, message)`` is called while it runs."""
    return _store(store).get_or_run(validate(config), progress=progress)


def sweep(config: Any, *, store: Store = None, executor: str | None = None,
          workers: int | None = None, progress: Progress | None = None) -> SweepTable:
    """A ``kind: sweep`` config's points through the store (only missing points run), as its
    table. ``executor`` ``serial`` | ``local`` (a process pool) | ``ray`` and ``workers``
    choose where points run and change no number."""
    cfg = validate(config)
    if cfg.kind != "sweep":
        raise ConfigError([(f"kind: got {cfg.kind!r}; privlab.sweep takes kind: sweep "
                           "(base, grid, seeds); privlab.run takes one run")])
    where = {k: v for k, v in (("executor", executor), ("workers", workers)) if v is not None}
    if where:
        cfg = validate({**cfg.model_dump(mode="json"), **where})
    return SweepTable(_store(store).get_or_run(cfg, progress=progress))


def compare(spec: ComparisonSpec | Mapping[str, Any] | str | Path, *, store: Store = None,
            executor: str | None = None, workers: int | None = None,
            progress: Progress | None = None, compute: bool = True) -> Comparison:
    """Defenses side by side on one utility-privacy plane (:func:`core.runs.compare.run_comparison`):
    ``spec`` a :class:`ComparisonSpec`, its mapping (family, data, utility, privacy,
    defenses, seeds, base) or that mapping as YAML text or a file; only points missing from
    the store run. ``compute=False`` runs nothing (:func:`core.runs.compare.read_comparison`;
    :class:`MissingPoints` when a point is not stored)."""
    from core.runs.compare import read_comparison, run_comparison, spec_from_dict

    if not isinstance(spec, ComparisonSpec):
        spec = spec_from_dict(_parsed(spec, "comparison"))
    where = {k: v for k, v in (("executor", executor), ("workers", workers)) if v is not None}
    if where:
        spec = dataclasses.replace(spec, **where)
    if not compute:
        return read_comparison(spec, _store(store))
    return run_comparison(spec, _store(store), progress=progress)


def load(key: str, *, store: Store = None) -> Result:
    """The stored Result of a key or a unique key prefix (at least 6 hex characters);
    LookupError when none is stored."""
    result = _store(store).get(key)
    if result is None:
        raise LookupError(f"key: no stored run matches {key!r} (privlab.runs() lists them)")
    return result


def runs(kind: str | None = None, *, limit: int | None = None,
         store: Store = None) -> list[RunRecord]:
    """The stored runs' index rows (key, kind, created, metrics, ...), newest first."""
    return _store(store).list(kind=kind, limit=limit)


def notebook(target: Any, path: str | Path | None = None, *, store: Store = None,
             execute: bool = False) -> Any:
    """A notebook recreating ``target`` (a Result, a sweep, a Comparison, a key or a
    ComparisonSpec; :func:`core.report.notebook.notebook_for`), executed headless when ``execute``,
    written to ``path`` when given."""
    import nbformat

    from core.report.notebook import execute as run_cells
    from core.report.notebook import notebook_for

    s = _store(store)
    nb = notebook_for(target_of(target), store=s)
    if execute:
        nb = run_cells(nb, store=s)
    if path is not None:
        nbformat.write(nb, str(path))
    return nb


def script(target: Any, *, store: Store = None) -> str:
    """The notebook of :func:`notebook` as a ``# %%`` Python script."""
    from core.report.notebook import script_for

    return script_for(target_of(target), store=_store(store))


def _optional(modules: tuple[str, ...], name: str, what: str) -> Callable[..., Any]:
    """``name`` from the first of ``modules`` that provides it (imported only when used)."""
    import importlib

    for module in modules:
        try:
            return getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError):
            continue
    raise RuntimeError(f"{what} are not available in this privlab")


#: where bundles are written and read (the result store's package)
_BUNDLES = ("cache.bundle",)
#: the one seam to the figures a bundle carries: the dashboard draws them (plotly, without
#: streamlit), a layer above the store, so the store cannot load them itself; resolved on the
#: first bundle, not at ``import privlab``
_FIGURE_BUILDER = ("dashboard.components.bundle_figures", "figures_for")


def _figure_builder() -> Callable[[Any], Any]:
    """The dashboard's figure builder (``_FIGURE_BUILDER``): a Result or a Comparison ->
    ``{name: plotly Figure}``, imported when first asked for."""
    module, name = _FIGURE_BUILDER
    return _optional((module,), name, "bundle figures")


def bundle(target: Any, path: str | Path, *, store: Store = None, **kw: Any) -> Any:
    """Write ``target`` (a Result, a sweep, a Comparison, a key or a ComparisonSpec) as a
    self-checking bundle at ``path`` (``write_bundle``: manifest, checksums, runs, figures, the
    notebook and its script, the privacy report); ``kw``: ``write_bundle``'s options
    (``figures``: True (default) draws the dashboard's figures, False none, or a builder or a
    mapping; ``extras``, ``companions``)."""
    write_bundle = _optional(_BUNDLES, "write_bundle", "bundles")
    if kw.get("figures", True) is True:
        kw["figures"] = _figure_builder()
    return write_bundle(target_of(target), path, store=_store(store), **kw)


def import_bundle(path: str | Path | bytes, *, store: Store = None, **kw: Any) -> Any:
    """Import a bundle into the store's imported runs after checking every file, number,
    the engine and each key (``import_bundle``; ``read_only=True`` to read one written by
    another engine); an imported run is never served as a run computed here."""
    read = _optional(_BUNDLES, "import_bundle", "bundles")
    return read(path, store=_store(store), **kw)


def report(target: Any, *, store: Store = None, **kw: Any) -> Any:
    """The privacy report of ``target`` (``core.report.build_report``): ``.html``,
    ``.recommendation``, ``.numbers``, ``.to_pdf(path)``; ``kw``: ``level``, ``sections``."""
    build_report = _optional(("core.report",), "build_report", "reports")
    return build_report(target_of(target), store=_store(store), **kw)


def parts() -> dict[str, list[dict[str, Any]]]:
    """Every registered defense, attack and model (what ``privlab parts --json`` prints)."""
    from core.foundation.parts import describe

    return describe()


def presets() -> dict[str, Any]:
    """The papers' presets by id: each one's validated config (``privlab papers --preset``)."""
    from core.paper_check.papers import PRESETS, preset_config

    return {pid: preset_config(pid) for pid in PRESETS}
