"""Import a bundle into a result store, trusting nothing in it: the zip is read in bounded
chunks (:mod:`cache.bundle.limits`: caps on what is actually inflated, never on what it
declares), every file is checked against its sha256 in the manifest and parsed by a bounded
decoder (:mod:`cache.bundle.decode`), every run's metrics pass the metric schema's finite and
range checks and its key is checked against its config; only then is anything written, under
one import lock, and a failed write takes back what this import added. A refused bundle leaves
the store as it was, with one line saying why.

Imported runs go to the store's imported runs (:meth:`cache.store.ResultStore.imports`), never
among the runs this engine computed: a run request never returns one, whatever its key, so a
number from a bundle never passes as measured here. History, bundles, reports and Compare show
them with their origin; ``privlab verify --recompute KEY`` (:mod:`cache.bundle.recompute`)
runs one here and says whether the numbers agree. A bundle of this engine (same source
fingerprint) must hold keys that are its configs' keys; one of another engine is refused
unless ``read_only``, and its runs are then kept as recorded.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from cache.bundle import decode as D
from cache.bundle import limits as L
from cache.bundle import manifest as M
from cache.bundle.errors import BundleError
from core.foundation.fingerprint import engine_fingerprint, engine_id
from core.foundation.result import Result

#: the files parsed (held in memory) rather than only hashed as they stream
PARSED = (M.CONFIG, M.RESULT, M.ARRAYS, M.SPEC, M.COMPARISON, "notebook.ipynb")
#: the companions that are code: never run on import
CODE = ("notebook.ipynb", "notebook.py")
_HEX64 = re.compile(r"[0-9a-f]{64}")
_ENGINE = re.compile(r"[A-Za-z0-9_.:+-]{1,100}")


@dataclass
class ImportReport:
    """What :func:`import_bundle` did: the bundle's ``kind`` and identity ``keys``, the runs
    ``imported`` and those ``already`` stored (kept as they were), whether they came in
    ``read_only`` (another engine), the bundle's ``engine``, its comparison ``spec`` (a
    comparison bundle) and ``notes``."""

    source: str
    kind: str
    keys: list[str]
    imported: list[str]
    already: list[str]
    read_only: bool
    engine: str
    spec: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def sentence(self) -> str:
        how = f" read-only (engine {self.engine}, not this one)" if self.read_only else ""
        kept = f"; {len(self.already)} already stored" if self.already else ""
        n = len(self.imported)
        return (f"{self.source}: imported {n} run{'' if n == 1 else 's'} of a {self.kind} "
                f"bundle{how}{kept}; kept apart from the runs computed here (shown with their "
                "origin, never served as a cached run; `privlab verify --recompute KEY` runs "
                "one here)")


def _parsed(name: str) -> bool:
    return name in PARSED or name.startswith(M.POINTS + "/")


def _manifest(man: Any, source: str) -> dict[str, Any]:
    """The manifest's fields checked for type and size before any is used."""
    if not isinstance(man, dict) or man.get("format") != M.FORMAT:
        raise BundleError(f"bundle: {M.MANIFEST} does not describe a {M.FORMAT}")
    ver = man.get("format_version")
    if not isinstance(ver, int) or isinstance(ver, bool) or not 1 <= ver <= M.FORMAT_VERSION:
        raise BundleError(f"bundle: format_version {str(ver)[:20]!r}; this privlab reads 1 to "
                          f"{M.FORMAT_VERSION} (a newer privlab wrote it)")
    if man.get("kind") not in M.KINDS:
        raise BundleError(f"bundle: kind {str(man.get('kind'))[:40]!r}; allowed: "
                          f"{', '.join(M.KINDS)}")
    files, runs, keys = man.get("files"), man.get("runs"), man.get("keys", [])
    if not isinstance(files, dict) or not isinstance(runs, list) or not isinstance(keys, list):
        raise BundleError(f"bundle: {M.MANIFEST} lacks its files or runs; nothing imported")
    if len(files) > L.MAX_ENTRIES or len(runs) > L.MAX_ENTRIES or len(keys) > L.MAX_ENTRIES:
        raise BundleError(f"bundle: {M.MANIFEST} lists more than {L.MAX_ENTRIES:,} files, runs "
                          "or keys; refused")
    for name, sha in files.items():
        if not isinstance(sha, str) or not _HEX64.fullmatch(sha):
            raise BundleError(f"bundle: {M.MANIFEST}: the checksum of {name[:80]!r} is not a "
                              "sha256; nothing imported")
    for e in runs:
        if not isinstance(e, dict) or not isinstance(e.get("key"), str) \
                or not _HEX64.fullmatch(e["key"]) or e.get("role") not in ("main", "point"):
            raise BundleError(f"bundle: {M.MANIFEST} lists a run that is not a mapping with a "
                              "64-hex key and a role (main or point); nothing imported")
    if sum(e["role"] == "main" for e in runs) > 1 or len({e["key"] for e in runs}) != len(runs):
        raise BundleError(f"bundle: {M.MANIFEST} lists a run twice or two main runs; nothing "
                          "imported")
    if not all(isinstance(k, str) and _HEX64.fullmatch(k) for k in keys):
        raise BundleError(f"bundle: {M.MANIFEST}: keys must be 64-hex run keys; nothing imported")
    engine = man.get("engine", {})
    if not isinstance(engine, dict) or not all(
            isinstance(engine.get(f, ""), str) and len(str(engine.get(f, ""))) <= 100
            for f in ("id", "fingerprint", "version")):
        raise BundleError(f"bundle: {M.MANIFEST}: engine must name its id and fingerprint as "
                          "text; nothing imported")
    return man


def _read_all(path: str | Path | bytes | IO[bytes]) -> tuple[dict[str, Any], dict[str, bytes],
                                                                str]:
    """(manifest, the parsed files' bytes, source): every file streamed once, checked against
    its checksum and by its decoder; figures and other files are hashed, never held."""
    zf, source = L.open_zip(path)
    with zf:
        L.check_entries(zf, source)
        names = set(zf.namelist())
        if M.MANIFEST not in names:
            raise BundleError(f"bundle: {source} has no {M.MANIFEST}; it is not a privlab bundle")
        budget = L.Budget()
        _, raw = L.stream(zf, M.MANIFEST, budget, keep=True, cap=L.MAX_MANIFEST)
        man = _manifest(D.load_json(raw, M.MANIFEST), source)
        budget.held, raw = 0, b""
        listed: dict[str, str] = dict(man["files"])
        present = names - {M.MANIFEST}
        for name in sorted(present - set(listed)):
            raise BundleError(f"bundle: {name} is not listed in {M.MANIFEST}; nothing imported")
        for name in sorted(set(listed) - present):
            raise BundleError(f"bundle: {name[:120]} is listed in {M.MANIFEST} but missing; "
                              "nothing imported")
        files: dict[str, bytes] = {}
        for name in sorted(listed):
            feed, done = (D.text_checker(name) if name.endswith(D.TEXT_SUFFIXES)
                          else (None, None))
            head: list[bytes] = []

            def each(chunk: bytes, feed=feed, head=head) -> None:
                if not head:
                    head.append(chunk[:8])
                if feed is not None:
                    feed(chunk)

            sha, data = L.stream(zf, name, budget, keep=_parsed(name), each=each)
            if sha != listed[name]:
                raise BundleError(f"bundle: {name} does not match its checksum in {M.MANIFEST} "
                                  "(changed or damaged); nothing imported")
            if done is not None:
                done()
            if name.endswith(".png"):
                D.check_png(head[0] if head else b"", name)
            if data is not None:
                files[name] = data
    return man, files, source


def read_manifest(path: str | Path | bytes | IO[bytes]) -> dict[str, Any]:
    """A bundle's manifest, every file verified (BundleError naming the first bad file)."""
    return _read_all(path)[0]


def _run(files: dict[str, bytes], entry: Mapping[str, Any], same_engine: bool,
         notes: list[str]) -> Result:
    """The run ``entry`` names, decoded and checked; its bytes are dropped once decoded."""
    key = str(entry["key"])
    base = "" if entry.get("role") == "main" else M.point_path(key, "")
    meta_name, npz_name = base + M.RESULT, base + M.ARRAYS
    if meta_name not in files or npz_name not in files:
        raise BundleError(f"bundle: run {key[:12]} has no {meta_name} / {npz_name}; nothing imported")
    meta = D.load_json(files.pop(meta_name), meta_name)
    npz = files.pop(npz_name)
    D.check_npz(npz, npz_name)
    if not isinstance(meta, dict):
        raise BundleError(f"bundle: {meta_name} is not a run (a JSON object); nothing imported")
    try:
        result = Result.from_parts(meta, npz)  # np.load(allow_pickle=False)
        del npz  # the arrays are made: their bytes need not be held beside them
        _types(result)
    except Exception as exc:  # noqa: BLE001 -- missing fields, wrong types: one line
        raise BundleError(f"bundle: {meta_name} cannot be read ({type(exc).__name__}: "
                          f"{D._first(exc)}); nothing imported") from None
    if result.key != key:
        raise BundleError(f"bundle: {meta_name} holds key {str(result.key)[:12]}, the manifest "
                          f"{key[:12]}; nothing imported")
    if sorted(result.artifacts) != sorted(meta.get("artifact_names", [])):
        raise BundleError(f"bundle: {npz_name} does not hold the arrays {meta_name} names")
    problem = _metric_problem(result, same_engine, notes)
    if problem is not None:
        raise BundleError(f"bundle: {meta_name}: {problem}; nothing imported")
    return result


def _types(result: Result) -> None:
    """The fields a stored run must have, of the types the store writes."""
    if not isinstance(result.kind, str) or not isinstance(result.config, dict) \
            or not isinstance(result.info, dict) or not isinstance(result.timings, dict):
        raise TypeError("kind, config, info and timings must be text and mappings")
    if not isinstance(result.engine_version, str) or not _ENGINE.fullmatch(result.engine_version):
        raise ValueError("engine_version must be an engine id")
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool)
               for v in result.timings.values()):
        raise ValueError("timings must be numbers")


def _metric_problem(result: Result, same_engine: bool, notes: list[str]) -> str | None:
    """Why the run's figures are impossible (None: they pass): every registered metric finite
    where the schema says a number belongs (:mod:`core.foundation.finite`) and inside its range
    (:func:`core.foundation.metric_schema.out_of_range`), every interval ordered and inside it; a metric
    this engine does not know is refused from this engine, noted from another."""
    from core.foundation import metric_schema as S
    from core.foundation.finite import NonFiniteMetric, check_metrics

    try:
        check_metrics(result.kind, result.metrics)
    except NonFiniteMetric as exc:
        return str(exc).split(";")[0]
    bad = S.out_of_range(result.metrics)
    if bad is not None:
        return bad
    for name, iv in result.intervals.items():
        lo, hi = iv.get("lo", float("nan")), iv.get("hi", float("nan"))
        rng = S.value_range(name)
        if lo > hi or (rng is not None and (lo < rng[0] or hi > rng[1])):
            return (f"interval of {name}: got [{lo:g}, {hi:g}]; allowed: ordered and inside "
                    f"{list(rng) if rng else 'its metric range'}")
    unknown = S.unregistered(result.metrics)
    if unknown:
        if same_engine:
            return f"metric {unknown[0]}: not a metric this engine reports"
        notes.append(f"run {str(result.key)[:12]}: {len(unknown)} metrics this engine does not "
                     f"know ({', '.join(unknown[:3])}): kept as recorded, unchecked")
    return None


def _key_problem(result: Result, same: bool) -> str | None:
    """Why ``result.key`` is not the key of its config under its engine (None: it is)."""
    from core.config.schema import ConfigError, canonical_json, parse_config

    try:
        cfg = parse_config(result.config)
    except ConfigError as exc:
        return f"its config does not validate here ({str(exc).splitlines()[0][:120]})"
    except Exception as exc:  # noqa: BLE001 -- a hostile config: one line
        return f"its config does not validate here ({type(exc).__name__})"
    payload = canonical_json(cfg) + "|engine=" + (engine_id() if same else result.engine_version)
    want = hashlib.sha256(payload.encode()).hexdigest()
    return None if want == result.key else f"its key is not its config's ({want[:12]})"


@dataclass
class _Checked:
    """A bundle read and checked whole, nothing stored yet."""

    source: str
    manifest: dict[str, Any]
    runs: list[Result]
    same: bool
    others: list[str]
    spec: dict[str, Any] | None
    notes: list[str]


def check_bundle(path: str | Path | bytes | IO[bytes], *, read_only: bool = False) -> _Checked:
    """Read and check every file and run of a bundle, storing nothing (BundleError, one line,
    when anything fails)."""
    man, files, source = _read_all(path)
    engine = man.get("engine") or {}
    same_fingerprint = engine.get("fingerprint") == engine_fingerprint()
    notes: list[str] = []
    versions = {str(e.get("engine", "")) for e in man["runs"]}
    same_guess = same_fingerprint and versions <= {engine_id()}
    runs = [_run(files, e, same_guess, notes) for e in man["runs"]]
    others = sorted({r.engine_version for r in runs if r.engine_version != engine_id()})
    if not same_fingerprint:
        others = sorted(set(others) | {str(engine.get("id", "?"))})
    same = not others
    if not same and not read_only:
        raise BundleError(f"bundle: {source} holds runs of engine {', '.join(others)}, this is "
                          f"{engine_id()}; import it with --read-only (read_only=True) to keep "
                          "its runs as read-only history")
    for r in runs:
        problem = _key_problem(r, same)
        if problem is not None:
            where = M.RESULT if r.key in man["keys"] else M.point_path(str(r.key), M.RESULT)
            if same:
                raise BundleError(f"bundle: {where}: {problem}; nothing imported")
            notes.append(f"run {str(r.key)[:12]}: {problem}; kept read-only as recorded")
    main = next((r for r, e in zip(runs, man["runs"], strict=True) if e["role"] == "main"), None)
    if M.CONFIG in files:
        cfg = D.load_yaml(files.pop(M.CONFIG), M.CONFIG)
        if main is not None and cfg != main.config:
            raise BundleError(f"bundle: {M.CONFIG} is not the config of {M.RESULT}; nothing "
                              "imported")
    spec = None
    if M.SPEC in files:
        spec = D.load_yaml(files.pop(M.SPEC), M.SPEC)
        from core.runs.compare import spec_from_dict

        try:
            spec_from_dict(spec)
        except Exception as exc:  # noqa: BLE001 -- a hostile spec: one line
            raise BundleError(f"bundle: {M.SPEC} is not a comparison ({type(exc).__name__}: "
                              f"{D._first(exc)}); nothing imported") from None
    if M.COMPARISON in files:
        D.load_json(files.pop(M.COMPARISON), M.COMPARISON)
    if "notebook.ipynb" in files:
        D.load_json(files.pop("notebook.ipynb"), "notebook.ipynb")
    code = [n for n in CODE if n in man["files"]]
    if code:
        notes.append(f"{' and '.join(code)}: the bundle author's code, never run on import; "
                     "read it before running it")
    return _Checked(source, man, runs, same, others, spec if man["kind"] == "comparison" else None,
                    notes)


def import_bundle(path: str | Path | bytes | IO[bytes], *, store: Any,
                  read_only: bool = False) -> ImportReport:
    """Import the bundle at ``path`` (a file, its bytes or a binary file object) into
    ``store``'s imported runs (see the module docstring). Raises BundleError (one line, naming
    the file, the field or the engine) and imports nothing when any check fails; StoreIOError
    when the store cannot be written (what this call added is taken back)."""
    c = check_bundle(path, read_only=read_only)
    man = c.manifest
    engine = man.get("engine") or {}
    notes = list(c.notes)
    if c.same and read_only:
        notes.append("same engine: the runs were checked against their configs' keys")
    origin_base = {"bundle": c.source[:200],
                   "imported": datetime.now(UTC).isoformat(timespec="seconds"),
                   "bundle_kind": man["kind"], "bundle_engine": engine.get("id"),
                   "bundle_created": str(man.get("created", ""))[:40], "read_only": not c.same}
    # points before the runs that list them
    ordered = sorted(c.runs, key=lambda r: r.kind == "sweep")
    imported: list[str] = []
    already: list[str] = []
    store._check_writable("import a bundle")
    imports = store.imports(create=True)
    with imports.import_lock():
        try:
            for r in ordered:
                origin = {**origin_base, "engine": r.engine_version}
                (imported if store.import_result(r, origin=origin) else already).append(str(r.key))
        except BaseException:
            for key in imported:  # take back what this import added; nothing half-imported
                try:
                    imports.delete(key)
                except Exception:  # noqa: BLE001, S110 -- the original error is the one to show
                    pass
            raise
    return ImportReport(source=c.source, kind=man["kind"], keys=list(man.get("keys", [])),
                        imported=imported, already=already, read_only=not c.same,
                        engine=", ".join(c.others) or str(engine.get("id", "?")), spec=c.spec,
                        notes=notes)
