"""Import a bundle into a result store: every checksum first, then the engine, then each run's
key against its config; only then is anything written (and a failed write takes back what this
import added), so a refused bundle leaves the store as it was.

The engine decides what an import may be. A bundle of this engine (same source fingerprint)
adds its runs as normal entries under their own keys: the same config here is served from them.
A bundle of another engine is refused unless ``read_only``: its runs are then stored under their
original keys, which this engine never computes, so they are history to read and compare, never
served in place of a run; each is marked read-only with its origin, and History says so.
"""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from cache.bundle import manifest as M
from cache.bundle.errors import BundleError
from core.fingerprint import engine_fingerprint, engine_id
from core.result import Result

#: the most a bundle may unpack to (bytes): a zip bomb is refused before it is read
MAX_UNPACKED = 4 << 30


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
        how = (f" read-only (engine {self.engine}, not this one: shown in History, never "
               "served as a cached run)" if self.read_only else "")
        kept = f"; {len(self.already)} already stored" if self.already else ""
        return (f"{self.source}: imported {len(self.imported)} runs of a {self.kind} bundle"
                f"{how}{kept}")


def _open(path: str | Path | bytes | IO[bytes]) -> tuple[zipfile.ZipFile, str]:
    if isinstance(path, (bytes, bytearray)):
        src: Any = io.BytesIO(path)
        name = "bundle"
    elif hasattr(path, "read"):
        src, name = path, Path(str(getattr(path, "name", "bundle"))).name
    else:
        p = Path(path).expanduser()
        if not p.is_file():
            raise BundleError(f"bundle: {p} is not a file")
        src, name = p, p.name
    try:
        return zipfile.ZipFile(src), name
    except zipfile.BadZipFile:
        raise BundleError(f"bundle: {name} is not a zip file") from None
    except OSError as exc:
        raise BundleError(f"bundle: cannot read {name} ({exc.strerror})") from None


def _read(zf: zipfile.ZipFile, name: str) -> bytes:
    try:
        return zf.read(name)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError) as exc:
        raise BundleError(f"bundle: {name} is damaged ({exc}); nothing imported") from None


def _manifest(zf: zipfile.ZipFile, source: str) -> dict[str, Any]:
    names = zf.namelist()
    if len(set(names)) != len(names):
        raise BundleError(f"bundle: {source} holds a file name twice; nothing imported")
    for n in names:
        if n.startswith(("/", "\\")) or ".." in n.split("/") or "\\" in n:
            raise BundleError(f"bundle: {n!r} is not a plain path inside the bundle; nothing imported")
    if sum(i.file_size for i in zf.infolist()) > MAX_UNPACKED:
        raise BundleError(f"bundle: {source} unpacks to more than {MAX_UNPACKED >> 30} GiB; refused")
    if M.MANIFEST not in names:
        raise BundleError(f"bundle: {source} has no {M.MANIFEST}; it is not a privlab bundle")
    try:
        man = json.loads(_read(zf, M.MANIFEST))
    except ValueError:
        raise BundleError(f"bundle: {M.MANIFEST} is not JSON; nothing imported") from None
    if not isinstance(man, dict) or man.get("format") != M.FORMAT:
        raise BundleError(f"bundle: {M.MANIFEST} does not describe a {M.FORMAT}")
    ver = man.get("format_version")
    if not isinstance(ver, int) or not 1 <= ver <= M.FORMAT_VERSION:
        raise BundleError(f"bundle: format_version {ver!r}; this privlab reads 1 to "
                          f"{M.FORMAT_VERSION} (a newer privlab wrote it)")
    if man.get("kind") not in M.KINDS:
        raise BundleError(f"bundle: kind {man.get('kind')!r}; allowed: {', '.join(M.KINDS)}")
    if not isinstance(man.get("files"), dict) or not isinstance(man.get("runs"), list):
        raise BundleError(f"bundle: {M.MANIFEST} lacks its files or runs; nothing imported")
    return man


def read_manifest(path: str | Path | bytes | IO[bytes]) -> dict[str, Any]:
    """A bundle's manifest, its checksums verified (BundleError naming the first bad file)."""
    zf, source = _open(path)
    with zf:
        man = _manifest(zf, source)
        _verified(zf, man)
    return man


def _verified(zf: zipfile.ZipFile, man: Mapping[str, Any]) -> dict[str, bytes]:
    """Every file but the manifest, each checked against its sha256 in the manifest."""
    listed = dict(man["files"])
    present = set(zf.namelist()) - {M.MANIFEST}
    for name in sorted(present - set(listed)):
        raise BundleError(f"bundle: {name} is not listed in {M.MANIFEST}; nothing imported")
    for name in sorted(set(listed) - present):
        raise BundleError(f"bundle: {name} is listed in {M.MANIFEST} but missing; nothing imported")
    files: dict[str, bytes] = {}
    for name in sorted(listed):
        data = _read(zf, name)
        if hashlib.sha256(data).hexdigest() != listed[name]:
            raise BundleError(f"bundle: {name} does not match its checksum in {M.MANIFEST} "
                              "(changed or damaged); nothing imported")
        files[name] = data
    return files


def _run(files: Mapping[str, bytes], entry: Mapping[str, Any]) -> Result:
    key = str(entry.get("key", ""))
    base = "" if entry.get("role") == "main" else M.point_path(key, "")
    meta_name, npz_name = base + M.RESULT, base + M.ARRAYS
    if meta_name not in files or npz_name not in files:
        raise BundleError(f"bundle: run {key[:12]} has no {meta_name} / {npz_name}; nothing imported")
    try:
        meta = json.loads(files[meta_name])
        result = Result.from_parts(meta, files[npz_name])  # np.load(allow_pickle=False)
    except Exception as exc:  # noqa: BLE001 -- bad JSON, missing fields, a pickled array
        raise BundleError(f"bundle: {meta_name} cannot be read ({type(exc).__name__}: "
                          f"{str(exc)[:120]}); nothing imported") from None
    if result.key != key or len(key) != 64:
        raise BundleError(f"bundle: {meta_name} holds key {str(result.key)[:12]}, the manifest "
                          f"{key[:12]}; nothing imported")
    if sorted(result.artifacts) != sorted(meta.get("artifact_names", [])):
        raise BundleError(f"bundle: {npz_name} does not hold the arrays {meta_name} names")
    return result


def _key_problem(result: Result, same: bool) -> str | None:
    """Why ``result.key`` is not the key of its config under its engine (None: it is)."""
    from core.config import ConfigError, canonical_json, parse_config

    try:
        cfg = parse_config(result.config)
    except ConfigError as exc:
        return f"its config does not validate here ({str(exc).splitlines()[0][:120]})"
    payload = canonical_json(cfg) + "|engine=" + (engine_id() if same else result.engine_version)
    want = hashlib.sha256(payload.encode()).hexdigest()
    return None if want == result.key else f"its key is not its config's ({want[:12]})"


def import_bundle(path: str | Path | bytes | IO[bytes], *, store: Any,
                  read_only: bool = False) -> ImportReport:
    """Import the bundle at ``path`` (a file, its bytes or a binary file object) into
    ``store`` (see the module docstring). Raises BundleError (one line, naming the file or
    the engine) and imports nothing when a checksum, the engine (without ``read_only``) or a
    key does not hold; StoreIOError when the store cannot be written (what this call added is
    taken back)."""
    zf, source = _open(path)
    with zf:
        man = _manifest(zf, source)
        files = _verified(zf, man)
    engine = man.get("engine") or {}
    runs = [_run(files, e) for e in man["runs"] if isinstance(e, Mapping)]
    if len(runs) != len(man["runs"]):
        raise BundleError(f"bundle: {M.MANIFEST} lists a run that is not a mapping")
    others = sorted({r.engine_version for r in runs if r.engine_version != engine_id()})
    if engine.get("fingerprint") != engine_fingerprint():
        others = sorted(set(others) | {str(engine.get("id", "?"))})
    same = not others
    notes: list[str] = []
    if not same and not read_only:
        raise BundleError(f"bundle: {source} holds runs of engine {', '.join(others)}, this is "
                          f"{engine_id()}; import it with --read-only (read_only=True) to keep "
                          "its runs as read-only history")
    if same and read_only:
        notes.append("same engine: the runs were imported as normal runs")
    for r in runs:
        problem = _key_problem(r, same)
        if problem is not None:
            where = M.RESULT if r.key in man["keys"] else M.point_path(str(r.key), M.RESULT)
            if same:
                raise BundleError(f"bundle: {where}: {problem}; nothing imported")
            notes.append(f"run {str(r.key)[:12]}: {problem}; kept read-only as recorded")
    origin_base = {"bundle": source, "imported": datetime.now(UTC).isoformat(timespec="seconds"),
                   "bundle_kind": man["kind"], "bundle_engine": engine.get("id"),
                   "bundle_created": man.get("created"), "read_only": not same}
    # points before the runs that list them: a stored sweep is served only with its points
    ordered = sorted(runs, key=lambda r: r.kind == "sweep")
    imported: list[str] = []
    already: list[str] = []
    try:
        for r in ordered:
            origin = {**origin_base, "engine": r.engine_version}
            (imported if store.import_result(r, origin=origin) else already).append(str(r.key))
    except BaseException:
        for key in imported:  # take back what this import added; nothing half-imported
            try:
                store.delete(key)
            except Exception:  # noqa: BLE001, S110 -- the original error is the one to show
                pass
        raise
    spec = None
    if man["kind"] == "comparison" and M.SPEC in files:
        import yaml

        spec = yaml.safe_load(files[M.SPEC])
    return ImportReport(source=source, kind=man["kind"], keys=list(man.get("keys", [])),
                        imported=imported, already=already, read_only=not same,
                        engine=", ".join(others) or str(engine.get("id", "?")), spec=spec,
                        notes=notes)
