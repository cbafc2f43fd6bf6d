"""The result store: content-addressed runs, SQLite index + artifact files (DESIGN: Cache key).

Layout under ``root`` (argument, else ``$PRIVLAB_CACHE_DIR``, else the user cache dir)::

    index.sqlite                         one row per run (WAL), written last
    runs/<key[:2]>/<key>/result.json     Result.to_json()
    runs/<key[:2]>/<key>/artifacts.npz   Result.artifacts (np.load(..., allow_pickle=False))
    tmp/                                 entries being written, then renamed into runs/
    locks/<key>.lock                     fcntl.flock: one computing process per key
    stages/<stage>/<key[:2]>/<key>/      cached stages of runs (cache.stages.DirStageStore):
                                         trained weights, releases, attack outputs
    imported/                            runs imported from bundles (cache.bundle), a store
                                         of the same layout with its own index: History,
                                         bundles, reports and Compare read them with their
                                         origin; a run request (get_or_run, peek) never does
    calibration/<machine>/<engine>.json  this machine's timed training steps, kept per engine
                                         (core.engine.calibration): the cost captions

An entry is served only if its row and files exist, both sha256 checksums match the row and
the stored key matches. A checksum mismatch is resolved by the entry's own ``sha256.json``:
files that match it are sound (the index row was damaged; it is rewritten from the entry),
files that do not are corrupt (removed under the key's lock and recomputed; ``get``/``show``
report them and leave them for ``privlab verify --repair``).

Failures are told apart (:mod:`cache.errors`): a full disk, a read-only mount or a permission
problem is a :class:`StoreIOError` (with the bytes needed, where known) and changes nothing
already stored: a failed write removes only what it was writing. Only SQLite's proof
(``SQLITE_CORRUPT``, ``SQLITE_NOTADB``, ``PRAGMA quick_check``) makes the index corrupt; a
damaged, lost or emptied index is rebuilt from the entries on disk, so history survives it.
"""

from __future__ import annotations

import errno
import json
import math
import os
import shutil
import threading
import time
import warnings
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import numpy as np

from cache.cancel_file import cancel_token_for
from cache.entry import CorruptEntry, encode, read_verified, remove_dir, write_atomic
from cache.errors import IndexCorrupt, StoreError, io_error, writable
from cache.export import write_table
from cache.index import IndexRow, RunIndex, RunRecord, check_key_or_prefix
from cache.lock import key_lock
from cache.recover import adopt, entry_dirs, reindex
from cache.stages import DirStageStore
from core.config.schema import cache_key, parse_config
from core.foundation.cache_root import resolve_root
from core.foundation.progress import CancelToken, Progress, ProgressCallback
from core.foundation.result import Result

#: the folder under a store's root that holds the imported runs (:class:`ImportedRuns`)
IMPORTED_DIR = "imported"
Runner = Callable[..., Result]


def _now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


class ResultStore:
    """Get-or-run cache of experiment Results; safe across threads and processes."""

    #: a hit rewrites the run's ``last_used`` only if the recorded one is older than this
    #: (seconds): a dashboard rerun hitting the same run many times a second writes once
    touch_every_s: float = 1.0

    def __init__(self, root: str | Path | None = None) -> None:
        self.root = resolve_root(root)
        self.runs_dir = self.root / "runs"
        self.tmp_dir = self.root / "tmp"
        self.locks_dir = self.root / "locks"
        for d in (self.root, self.runs_dir, self.tmp_dir, self.locks_dir):
            try:
                d.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                if not d.is_dir():
                    raise io_error(exc, "create the result store", d) from None
        #: a read-only store (a read-only mount) serves what it holds and stores nothing
        self.read_only = not writable(self.root)
        #: what opening the store found and did (an index rebuilt from the entries, ...)
        self.notes: list[str] = []
        self.index = self._open_index()
        self.stages = DirStageStore(self.root / "stages")
        self._imports: ImportedRuns | None = None

    # -- the index ---------------------------------------------------------------------------

    @property
    def index_path(self) -> Path:
        return self.root / "index.sqlite"

    def _open_index(self) -> RunIndex:
        """Open the index; rebuild it from the entries on disk when it is missing, empty while
        entries exist, or proven damaged by SQLite (``quick_check``; the damaged file is kept
        as ``index.sqlite.corrupt-<time>``). An I/O error opening it (full disk, read-only,
        permission) is raised as StoreIOError and changes nothing."""
        path = self.index_path
        if self.read_only:
            if not path.exists():
                raise io_error(OSError(errno.EROFS, "read-only file system"),
                               "create the index of a read-only store", path)
            index = RunIndex(path, read_only=True)
            problem = index.quick_check()
            if problem != "ok":
                raise IndexCorrupt(f"result store: index {path} is damaged ({problem}) and the "
                                   "store is read-only, so it cannot be rebuilt")
            return index
        lock = self.locks_dir / "index.lock"
        problem = None
        if path.exists() or not entry_dirs(self.runs_dir):
            try:
                index = RunIndex(path, init_lock=lock)
                problem = index.quick_check()
                if problem == "ok":
                    if index.count() == 0 and entry_dirs(self.runs_dir):
                        with self._lock(lock, "rebuild the index"):
                            if index.count() == 0:
                                self._rebuild_into(index, "was empty")
                    return index
                index.close()
            except IndexCorrupt as exc:
                problem = exc.reason
        with self._lock(lock, "rebuild the index"):
            if path.exists():
                try:  # another process may have rebuilt it meanwhile
                    index = RunIndex(path)
                    if index.quick_check() == "ok":
                        return index
                    index.close()
                except IndexCorrupt:
                    pass
                self._set_aside(path)
            index = RunIndex(path)
            self._rebuild_into(index, "was missing" if problem is None else
                               f"was damaged ({problem})")
            return index

    def _set_aside(self, path: Path) -> None:
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
        for suffix in ("", "-wal", "-shm"):
            old = Path(f"{path}{suffix}")
            if old.exists():
                try:
                    os.replace(old, path.with_name(f"index.sqlite.corrupt-{stamp}{suffix}"))
                except OSError as exc:
                    raise io_error(exc, "set the damaged index aside", old) from None

    def _rebuild_into(self, index: RunIndex, why: str) -> None:
        problems: list[str] = []
        n = reindex(index, self.runs_dir, self.tmp_dir, problems)
        note = (f"result store: {index.path} {why}; rebuilt it from {n} stored runs"
                + (f" ({len(problems)} entries failed their checks and were left for "
                   "`privlab verify --repair`)" if problems else ""))
        self.notes.append(note)
        warnings.warn(note, RuntimeWarning, stacklevel=4)

    def __repr__(self) -> str:
        return f"ResultStore({str(self.root)!r})"

    # -- paths and locks ---------------------------------------------------------------------

    def entry_dir(self, key: str) -> Path:
        return self.runs_dir / key[:2] / key

    def _lock_path(self, key: str) -> Path:
        return self.locks_dir / f"{key}.lock"

    def _lock(self, path: Path, action: str, **kw):
        """:func:`cache.lock.key_lock` (``action`` kept for the reader: what the lock guards)."""
        return key_lock(path, **kw)

    def _check_writable(self, action: str) -> None:
        if self.read_only:
            raise io_error(OSError(errno.EROFS, "read-only file system"), action, self.root)

    # -- reading ----------------------------------------------------------------------------

    def _read(self, key: str, *, touch: bool = False) -> Result | None:
        """The verified entry, None if there is none; CorruptEntry if one is there but fails
        (or has no index row: :meth:`_repair_locked` decides which); StoreIOError if the file
        system refused the read. ``touch``: a hit records its time as the run's ``last_used``
        (LRU for cache.gc), at most once per :attr:`touch_every_s` per run."""
        row = self.index.lookup(key)
        if row is None:
            if self.entry_dir(key).exists():
                raise CorruptEntry(f"{key[:12]}: files without an index row")
            return None
        result = read_verified(self.entry_dir(key), key=key, sha_result=row[0], sha_artifacts=row[1])
        if touch:
            now = time.time()
            if row[2] is None or now - row[2] >= self.touch_every_s:
                self.index.touch(key, now)
        return result

    def _discard(self, key: str) -> None:
        """Delete row, then files (caller holds the key lock); a crash in between leaves an
        orphan dir that the next read adopts or, if it fails its checks, removes."""
        self._check_writable(f"remove run {key[:12]}")
        self.index.delete(key)
        remove_dir(self.entry_dir(key), self.tmp_dir)

    def _repair_locked(self, key: str, *, touch: bool = False) -> Result | None:
        """Under the key's lock: the entry if it verifies; else, if its files prove themselves
        against their own ``sha256.json`` (a row lost, or a damaged row), the row is rewritten
        from them and the entry served; else it is corrupt and removed -> None."""
        try:
            return self._read(key, touch=touch)
        except CorruptEntry:
            pass
        if self.read_only:
            return None
        d = self.entry_dir(key)
        if d.is_dir():
            has_row = self.index.lookup(key) is not None
            try:  # an entry without a manifest is adopted only when no row contradicts it
                if has_row and not (d / "sha256.json").exists():
                    raise CorruptEntry(f"{key[:12]}: checksum mismatch and no sha256.json")
                adopt(self.index, d)
                return self._read(key, touch=touch)
            except CorruptEntry:
                pass
        self._discard(key)
        return None

    def _read_or_repair(self, key: str, *, wait: bool, touch: bool = False) -> Result | None:
        """Read ``key``; a failing entry is repaired or removed under the lock (waiting for it
        only if ``wait``; otherwise a busy lock means someone is writing it right now) -> None."""
        try:
            return self._read(key, touch=touch)
        except CorruptEntry:
            pass
        if self.read_only:
            return None
        with self._lock(self._lock_path(key), f"lock run {key[:12]}", blocking=wait) as locked:
            if not locked:
                return None
            return self._repair_locked(key, touch=touch)

    def peek(self, config: Any, *, imported: bool = False) -> Result | None:
        """The cached Result for ``config`` without running anything: a config model as it is,
        a mapping validated first (ConfigError if invalid). ``imported``: when this engine has
        not computed it, an imported run of the same key is read instead (for showing it with
        its origin, never as a run of this engine)."""
        key = cache_key(parse_config(config))
        hit = self._read_or_repair(key, wait=False, touch=True)
        if hit is not None and self._points_stored(hit) and self._computed_here(key):
            return hit
        imports = self.imports(create=False)
        if imported and imports is not None:
            return imports._read_or_repair(key, wait=False)
        return None

    def _computed_here(self, key: str) -> bool:
        """Whether ``key``'s row is a run this engine computed (an index written before imports
        had their own store holds them beside computed runs, marked by their origin)."""
        return self.index.origin_text(key) is None

    # -- imported runs -------------------------------------------------------------------------

    def imports(self, *, create: bool = False) -> ImportedRuns | None:
        """The store of runs imported from bundles (``root/imported``); None when there is
        none yet and ``create`` is False (or this is that store)."""
        if self._imports is None:
            path = self.root / IMPORTED_DIR
            if not create and not path.is_dir():
                return None
            self._imports = ImportedRuns(path)
        return self._imports

    def get(self, key: str, *, strict: bool = False, imported: bool | None = None
            ) -> Result | None:
        """The stored Result for a key or a unique key prefix (>= 6 hex chars); None if absent.

        An entry that fails its checks is left in place for ``privlab verify --repair``:
        ``strict`` raises CorruptEntry naming what failed, else None. A row damaged while
        its files are sound is rewritten from them. Raises ValueError for a malformed or
        ambiguous prefix, StoreIOError when the file system refuses the read.

        ``imported``: None reads a run computed here and else an imported one of that key,
        True only imported runs, False only runs computed here."""
        imports = self.imports(create=False)
        full = self.index.resolve(key) if imported is not True else None
        if full is None:
            if imported is False or imports is None:
                return None
            return imports.get(key, strict=strict)
        try:
            return self._read(full, touch=True)
        except CorruptEntry as exc:
            d = self.entry_dir(full)
            if not self.read_only and (d / "sha256.json").exists():
                try:
                    with self._lock(self._lock_path(full), f"lock run {full[:12]}",
                                    blocking=False) as locked:
                        if locked:
                            adopt(self.index, d)  # proves itself, or raises CorruptEntry
                            return self._read(full, touch=True)
                except CorruptEntry:
                    pass
            if strict:
                raise exc from None
            return None

    # -- get or run -------------------------------------------------------------------------

    def get_or_run(
        self,
        config: Any,
        *,
        runner: Runner | None = None,
        progress: Progress | ProgressCallback | None = None,
        cancel: CancelToken | None = None,
    ) -> Result:
        """Return the cached Result for ``config`` (``from_cache=True``) or run and store it.

        ``config`` is a config model, used as it is (validated once, where it was made), or a
        mapping, validated here (ConfigError if invalid; nothing touched).
        ``runner(cfg, progress=..., cancel=...)`` defaults to :func:`core.runs.experiments.run` with
        this store's stage cache (:attr:`stages`), so runs that share a trained model train once.
        A run that raises (including ``Cancelled``) stores nothing. If another process or
        thread is computing the same key, this waits for it and returns its entry. A store
        that cannot be written (full disk, read-only) raises StoreIOError and loses nothing.
        """
        cfg = parse_config(config)
        key = cache_key(cfg)
        try:
            hit = self._read(key, touch=True)  # lock-free fast path: atomic writes, checksums guard
        except CorruptEntry:
            hit = None
        if hit is not None and self._points_stored(hit) and self._computed_here(key):
            return hit
        self._check_writable(f"store run {key[:12]} (run with --no-cache to compute it "
                             "without storing)")

        if cancel is None and isinstance(progress, Progress):
            cancel = progress.cancel
        with self._lock(self._lock_path(key), f"lock run {key[:12]}", cancel=cancel):
            hit = self._repair_locked(key, touch=True)
            if hit is not None and self._points_stored(hit) and self._computed_here(key):
                return hit
            self._clear_tmp(key)
            t0 = time.perf_counter()
            if runner is None:
                from core.runs.experiments import run

                result = run(cfg, progress=progress, cancel=cancel, stages=self.stages, points=self)
            else:
                result = runner(cfg, progress=progress, cancel=cancel)
            seconds = time.perf_counter() - t0
            self._store(key, cfg, result, seconds)
        result.from_cache = False
        return result

    def _store(self, key: str, cfg: Any, result: Result, seconds: float) -> None:
        if not isinstance(result, Result):
            raise TypeError(f"runner: returned {type(result).__name__}; expected core.foundation.result.Result")
        if result.kind != cfg.kind:
            raise ValueError(f"runner: returned a {result.kind!r} Result for a {cfg.kind!r} config")
        result.key = key
        result.config = cfg.model_dump(mode="json")
        result.seed = cfg.seed
        result.metrics = {k: float(v) for k, v in result.metrics.items()}
        result.artifacts = {k: np.asarray(v) for k, v in result.artifacts.items()}
        self._write_entry(key, result, float(result.timings.get("total_s", seconds)))

    def _write_entry(self, key: str, result: Result, seconds: float | None,
                     origin: dict[str, Any] | None = None) -> None:
        """Write ``result``'s files, then its index row (caller holds the key's lock)."""
        enc = encode(result)
        free = _free(self.root)
        if free is not None and free < enc.size:  # refuse before writing a byte
            raise io_error(OSError(errno.ENOSPC, "no space left on device"),
                           f"write run {key[:12]}", self.entry_dir(key), needed=enc.size,
                           root=self.root, free=free)
        origin_bytes = None if origin is None else json.dumps(origin, sort_keys=True).encode()
        write_atomic(enc, self.entry_dir(key), self.tmp_dir, key, origin_bytes)
        meta_metrics = {k: (None if math.isnan(float(v)) else float(v)) for k, v in result.metrics.items()}
        try:
            self.index.put(
                IndexRow(
                    key=key, kind=result.kind, created=_now_iso(), seconds=seconds,
                    engine_version=result.engine_version, config=result.config,
                    metrics=meta_metrics, sha_result=enc.sha_result, sha_artifacts=enc.sha_artifacts,
                    origin=origin,
                )
            )
        except StoreError:
            # the row did not commit: take the new entry back out, so that a failed store
            # leaves the store as it was (if even that fails, the orphan is adopted later)
            try:
                remove_dir(self.entry_dir(key), self.tmp_dir)
            except StoreError:
                pass
            raise

    def import_result(self, result: Result, *, origin: dict[str, Any]) -> bool:
        """Store a Result made elsewhere (a bundle, :mod:`cache.bundle`) under its own key in
        the imported runs' store (:meth:`imports`), exactly as recorded there (config, engine,
        metrics, arrays), with ``origin`` in its index row and beside its files; False when
        that key was imported already (kept as it is). No run request is ever served from it.
        The caller has checked the run; StoreIOError as :meth:`get_or_run`."""
        self._check_writable(f"import run {str(result.key)[:12]}")
        imports = self.imports(create=True)
        assert imports is not None
        return imports.add(result, origin=origin)

    def _points_stored(self, result: Result) -> bool:
        """A stored sweep is served only while every point it lists is stored: one whose points
        were deleted (or collected) since runs again, and only those points run."""
        if result.kind != "sweep":
            return True
        return all(self.index.checksums(r["key"]) is not None for r in result.info.get("rows", []))

    @property
    def point_worker(self):
        """The function pool and Ray workers run for one sweep point (core.runs.sweep)."""
        return run_point

    def _clear_tmp(self, key: str) -> None:
        """Remove temp dirs a crashed writer of ``key`` left (caller holds the key lock)."""
        for p in self.tmp_dir.glob(f"{key}.*"):
            shutil.rmtree(p, ignore_errors=True)

    # -- history ----------------------------------------------------------------------------

    def list(self, kind: str | None = None, limit: int | None = None) -> list[RunRecord]:
        """Index rows, newest first, optionally of one ``kind`` and at most ``limit``: the runs
        computed here and the imported ones (each with its ``origin``)."""
        rows = self.index.records(kind, limit)
        imports = self.imports(create=False)
        if imports is None:
            return rows
        rows = sorted(rows + imports.list(kind, limit), key=lambda r: r.created, reverse=True)
        return rows if limit is None else rows[:limit]

    def delete(self, key: str, *, imported: bool | None = None) -> bool:
        """Delete a run by key or unique prefix; False if there is none. ``imported``: None
        deletes a run computed here, else an imported one of that key; True an imported one
        (or a run an older store kept among its own with an origin); False only a run
        computed here."""
        imports = self.imports(create=False)
        if imported is not False and imports is not None \
                and imports.index.resolve(key) is not None \
                and (imported is True or self.index.resolve(key) is None):
            return imports.delete(key)
        full = self.index.resolve(key)
        if full is None:
            full = check_key_or_prefix(key)
            if len(full) < 64 or not self.entry_dir(full).exists():
                return False
        self._check_writable(f"delete run {full[:12]}")
        with self._lock(self._lock_path(full), f"lock run {full[:12]}"):
            existed = self.index.checksums(full) is not None or self.entry_dir(full).exists()
            self._discard(full)
        return existed

    def set_label(self, key: str, label: str) -> bool:
        """Attach a free-text label to a run (key or unique prefix); False if there is none."""
        if not isinstance(label, str) or len(label) > 500:
            raise ValueError(f"label: got {label!r:.60}; allowed: text of at most 500 characters")
        full = self.index.resolve(key)
        if full is None:
            imports = self.imports(create=False)
            return imports is not None and imports.set_label(key, label)
        return self.index.set_label(full, label)

    def export(
        self, path: str | Path, *, fmt: Literal["csv", "json"], kind: str | None = None,
        force: bool = False,
    ) -> Path:
        """Write one flat row per run (config.* and metrics.* columns) to ``path``
        (:func:`cache.export.write_table`: atomic, never over a file without ``force``)."""
        return write_table(self.list(kind), path, fmt, force=force)

    def verify(self, *, repair: bool = False):
        """Check the index, every entry and every stage entry; with ``repair`` remove or
        rebuild only what fails. Returns a :class:`cache.verify.VerifyReport`."""
        from cache.verify import verify_store

        report = verify_store(self, repair=repair)
        imports = self.imports(create=False)
        if imports is not None:
            report.add(verify_store(imports, repair=repair), "imported")
        return report


class ImportedRuns(ResultStore):
    """The runs imported from bundles: a store of the same layout and checks, whose entries
    carry their origin and are never served to a run request (it has no :meth:`get_or_run`
    or :meth:`peek`), so a bundle's numbers never pass as computed by this engine."""

    def imports(self, *, create: bool = False) -> None:
        return None

    def get_or_run(self, config: Any, **kw: Any) -> Result:
        raise TypeError("imported runs are never served to a run request")

    def peek(self, config: Any, *, imported: bool = False) -> Result | None:
        raise TypeError("imported runs are never served to a run request")

    def add(self, result: Result, *, origin: dict[str, Any]) -> bool:
        """Store ``result`` under its own key with ``origin``; False when it is stored."""
        key = check_key_or_prefix(result.key or "")
        if len(key) != 64:
            raise ValueError(f"key: got {key!r}; an imported run needs its full 64-hex key")
        self._check_writable(f"import run {key[:12]}")
        with self._lock(self._lock_path(key), f"lock run {key[:12]}"):
            if self._repair_locked(key) is not None:
                return False
            self._clear_tmp(key)
            seconds = result.timings.get("total_s")
            self._write_entry(key, result, None if seconds is None else float(seconds),
                              dict(origin))
        return True

    def import_lock(self):
        """Held for a whole import: two imports of one bundle never interleave, so a failed
        one takes back only what it added and the other finds the store whole."""
        return self._lock(self.locks_dir / "import.lock", "import a bundle")


def _free(root: Path) -> int | None:
    try:
        return shutil.disk_usage(root).free
    except OSError:
        return None


_STORES: dict[Path, ResultStore] = {}
_STORES_LOCK = threading.Lock()


def default_store(root: str | Path | None = None) -> ResultStore:
    """One shared :class:`ResultStore` per root path per process (dashboard and CLI share it)."""
    path = resolve_root(root)
    with _STORES_LOCK:
        store = _STORES.get(path)
        if store is None:
            store = _STORES[path] = ResultStore(path)
        return store


def run_point(root: str, config: dict[str, Any], cancel_path: str | None = None) -> dict[str, Any]:
    """One sweep point in a pool or Ray worker: get or run ``config`` in the store at ``root``
    (stored under its own key, exactly as a serial sweep or a plain run stores it) and return
    only its small summary (:func:`core.config.sweeps.summarise`). When ``cancel_path`` appears the
    point is cancelled and stores nothing (:func:`cache.cancel_file.cancel_token_for`)."""
    from core.config.sweeps import summarise

    with cancel_token_for(cancel_path) as token:
        result = default_store(root).get_or_run(config, cancel=token)
    return summarise(result)
