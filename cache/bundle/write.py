"""Write a bundle (:mod:`cache.bundle.manifest` has the layout): a stored run, a stored sweep
with its points, or a comparison with every point of every defense's sweep."""

from __future__ import annotations

import io
import json
import os
import tempfile
import time
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

import numpy as np
import yaml

from cache.bundle import manifest as M
from cache.bundle.errors import BundleError
from cache.bundle.figures import FigureBuilder, build_figures, render
from core import ENGINE_VERSION
from core.foundation.fingerprint import engine_fingerprint, engine_id
from core.foundation.result import Result
from core.runs.compare import Comparison, ComparisonSpec, MissingPoints, read_comparison


@dataclass
class BundleInfo:
    """What :func:`write_bundle` wrote: ``path`` (None for a file object), ``kind``, the
    identity ``keys``, the ``points`` bundled with them, every file's size, the figure names,
    the total ``size`` in bytes, ``seconds`` taken and ``notes``."""

    path: Path | None
    kind: str
    keys: list[str]
    points: list[str]
    files: dict[str, int]
    figures: list[str]
    size: int
    seconds: float
    notes: list[str] = field(default_factory=list)

    @property
    def sentence(self) -> str:
        where = self.path.name if self.path is not None else "the bundle"
        runs = f" with {len(self.points)} points" if self.points else ""
        figs = f", {len(self.figures)} figures" if self.figures else ""
        return (f"{where}: a {self.kind} bundle ({self.keys[0][:12] if self.keys else '-'}"
                f"{runs}{figs}), {len(self.files)} files, {self.size / 1e6:.2f} MB")


@dataclass
class _Contents:
    """The runs of a bundle before they are files."""

    kind: str
    keys: list[str]
    main: Result | None
    points: dict[str, Result]
    comparison: Comparison | None = None


def _result_files(result: Result) -> tuple[bytes, bytes]:
    """(strict JSON, npz) of a Result; arrays that would need pickle are refused."""
    for name, arr in result.artifacts.items():
        if np.asarray(arr).dtype.hasobject:
            raise BundleError(f"artifacts[{name!r}] of run {str(result.key)[:12]}: dtype object "
                              "would need pickle; a bundle holds numeric, bool or string arrays")
    meta = json.dumps(result.to_json_dict(), sort_keys=True, allow_nan=False).encode()
    buf = io.BytesIO()
    np.savez(buf, **{k: np.asarray(v) for k, v in result.artifacts.items()})
    return meta, buf.getvalue()


def _get(store: Any, key: str, what: str) -> Result:
    try:
        result = store.get(key, strict=True)
    except ValueError as exc:  # a malformed or ambiguous prefix; CorruptEntry names the entry
        raise BundleError(str(exc)) from None
    except Exception as exc:  # noqa: BLE001 -- CorruptEntry, StoreIOError: one line
        raise BundleError(f"{what} {key[:12]}: cannot be read ({exc})") from None
    if result is None:
        raise BundleError(f"{what}: no stored run matches {key!r}; `privlab list` shows the keys")
    return result


def _contents(target: Any, store: Any) -> _Contents:
    if isinstance(target, ComparisonSpec):
        try:
            cmp = read_comparison(target, store, imported=True)
        except MissingPoints as exc:
            raise BundleError(f"comparison: {exc}; run the comparison first") from None
        points: dict[str, Result] = {}
        for curve in cmp.curves:
            for row in curve.keys:
                for key in row:
                    if key and key not in points:
                        points[key] = _get(store, key, "point")
        return _Contents("comparison", list(cmp.sweep_keys), None, points, cmp)
    if isinstance(target, Result):
        target = target.key or ""
    if not isinstance(target, str):
        raise BundleError(f"target: got {type(target).__name__}; allowed: a run or sweep key "
                          "(or a unique prefix) or a core.runs.compare.ComparisonSpec")
    main = _get(store, target, "key")
    if main.kind != "sweep":
        return _Contents("run", [str(main.key)], main, {})
    points = {}
    for row in main.info.get("rows", []):
        key = str(row.get("key", ""))
        if key and key not in points:
            points[key] = _get(store, key, f"point of sweep {str(main.key)[:12]}")
    return _Contents("sweep", [str(main.key)], main, points)


def _config_yaml(config: Mapping[str, Any]) -> bytes:
    mapping = {"kind": config["kind"], **config} if "kind" in config else dict(config)
    return yaml.safe_dump(mapping, sort_keys=False, allow_unicode=True, width=100).encode()


def _manifest(c: _Contents, files: Mapping[str, bytes], figures: list[str],
              extras: list[str], created: str, notes: list[str]) -> dict[str, Any]:
    runs = []
    for role, result in ([("main", c.main)] if c.main is not None else []) + \
            [("point", r) for r in c.points.values()]:
        runs.append({"key": result.key, "kind": result.kind, "role": role,
                     "seed": int(result.seed), "engine": result.engine_version,
                     "path": "" if role == "main" else f"{M.POINTS}/{result.key}/"})
    seeds = sorted({r["seed"] for r in runs} | (set(c.comparison.spec.seeds) if c.comparison
                                                 else set()))
    return {
        "format": M.FORMAT, "format_version": M.FORMAT_VERSION, "kind": c.kind,
        "created": created, "keys": c.keys, "runs": runs, "seeds": seeds,
        "engine": {"version": ENGINE_VERSION, "id": engine_id(),
                   "fingerprint": engine_fingerprint()},
        "packages": M.package_versions(), "figures": figures, "extras": extras,
        "notes": notes, "files": {name: M.sha256(data) for name, data in sorted(files.items())},
    }


def bundle_files(target: Any, *, store: Any, figures: bool | FigureBuilder | Mapping[str, Any]
                 = True, extras: Mapping[str, bytes] | None = None, png: bool = True
                 ) -> tuple[_Contents, dict[str, bytes], list[str], list[str]]:
    """Every file of the bundle but the manifest: (contents, files, figure names, notes)."""
    c = _contents(target, store)
    files: dict[str, bytes] = {}
    if c.main is not None:
        files[M.CONFIG] = _config_yaml(c.main.config)
        files[M.RESULT], files[M.ARRAYS] = _result_files(c.main)
    if c.comparison is not None:
        files[M.SPEC] = yaml.safe_dump(_spec_data(c.comparison.spec), sort_keys=False,
                                       allow_unicode=True, width=100).encode()
        files[M.COMPARISON] = json.dumps(c.comparison.to_dict(), sort_keys=True,
                                         allow_nan=False, indent=1).encode()
    for key, result in c.points.items():
        files[M.point_path(key, M.RESULT)], files[M.point_path(key, M.ARRAYS)] = \
            _result_files(result)
    figs = build_figures(figures, c.comparison if c.comparison is not None else c.main)
    rendered, notes = render(figs, png=png)
    files.update(rendered)
    for name, data in (extras or {}).items():
        M.check_extra_name(name)
        if not isinstance(data, (bytes, bytearray)):
            raise BundleError(f"extras[{name!r}]: got {type(data).__name__}; expected bytes")
        files[name] = bytes(data)
    return c, files, list(figs), notes


def write_bundle(target: Any, path: str | Path | IO[bytes], *, store: Any,
                 figures: bool | FigureBuilder | Mapping[str, Any] = True,
                 extras: Mapping[str, bytes] | None = None,
                 companions: bool = True) -> BundleInfo:
    """Write ``target`` (a run or sweep key or unique prefix, or a ComparisonSpec whose points
    are stored) from ``store`` as a bundle to ``path`` (a file, replaced atomically, or a
    binary file object). ``figures``: True = the registered builder's
    (:func:`cache.bundle.set_figure_builder`), False = none, a builder or a mapping;
    ``extras``: more files by name, checksummed like every file; ``companions``: add the
    notebook, its script and the privacy report (:mod:`cache.bundle.companions`; the report's
    PDF only where figures are drawn: both need Chromium). Raises BundleError (one line) when
    the target is not stored or an input is refused."""
    t0 = time.perf_counter()
    created = datetime.now(UTC).isoformat(timespec="seconds")
    c, files, fig_names, notes = bundle_files(target, store=store, figures=figures,
                                              extras=extras)
    given = set(extras or {})
    if companions:  # after the target was found and checked: its errors come first
        from cache.bundle.companions import companions as make_companions

        # the runs this bundle read already: the notebook and the report do not read them again
        held = c.comparison if c.comparison is not None else c.main
        more, notes_c = make_companions(held, store=store, pdf=bool(figures))
        files.update({n: b for n, b in more.items() if n not in given})  # a given extra wins
        given |= set(more)
        notes.extend(notes_c)
    extra_names = sorted(given)
    runs = ([c.main] if c.main is not None else []) + list(c.points.values())
    old = sorted({r.engine_version for r in runs if r.engine_version != engine_id()})
    if old:
        notes.append(f"{sum(r.engine_version in old for r in runs)} of {len(runs)} runs were "
                     f"computed by another engine ({', '.join(old)}); importing the bundle "
                     "will need --read-only")
    man = _manifest(c, files, fig_names, extra_names, created, notes)
    stamp = datetime.fromisoformat(created).timetuple()[:6]
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, data in [(M.MANIFEST, json.dumps(man, indent=1).encode())] + \
                sorted(files.items()):
            info = zipfile.ZipInfo(name, date_time=stamp)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            zf.writestr(info, data)
    data = buf.getvalue()
    out: Path | None = None
    if hasattr(path, "write"):
        path.write(data)  # type: ignore[union-attr]
    else:
        out = Path(path).expanduser()
        _write_atomic(out, data)
    sizes = {M.MANIFEST: len(json.dumps(man, indent=1).encode()),
             **{n: len(b) for n, b in files.items()}}
    return BundleInfo(path=out, kind=c.kind, keys=c.keys, points=list(c.points), files=sizes,
                      figures=fig_names, size=len(data), seconds=time.perf_counter() - t0,
                      notes=notes)


def _write_atomic(path: Path, data: bytes) -> None:
    if path.is_dir():
        raise BundleError(f"path: {path} is a folder; give a file name such as run.zip")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".part")
    except OSError as exc:
        raise BundleError(f"path: cannot write {path} ({exc.strerror})") from None
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        raise BundleError(f"path: cannot write {path} ({exc.strerror})") from None
    finally:
        if os.path.lexists(tmp):
            os.unlink(tmp)


def _spec_data(spec: Any) -> dict[str, Any]:
    """The spec as written in a bundle: where its points ran (executor, workers) is part of no
    key, so it is left for the importing machine to choose."""
    from core.runs.compare import spec_to_dict

    data = spec_to_dict(spec)
    data.pop("executor", None)
    data.pop("workers", None)
    return data
