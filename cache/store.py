"""The result store: content-addressed runs, SQLite index + artifact files (DESIGN: Cache key).

Layout under ``root`` (argument, else ``$PRIVLAB_CACHE_DIR``, else the user cache dir)::

    index.sqlite                         one row per run (WAL), written last
    runs/<key[:2]>/<key>/result.json     Result.to_json()
    runs/<key[:2]>/<key>/artifacts.npz   Result.artifacts (np.load(..., allow_pickle=False))
    tmp/                                 entries being written, then renamed into runs/
    locks/<key>.lock                     fcntl.flock: one computing process per key
    stages/<stage>/<key[:2]>/<key>/      cached stages of runs (cache.stages.DirStageStore):
                                         trained weights, releases, attack outputs

An entry is served only if its row and both files exist, both sha256 checksums match the row
and the stored key matches; anything else is deleted (under the key's lock) and recomputed.
"""

from __future__ import annotations

import math
import os
import shutil
import sqlite3
import threading
import time
import warnings
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import numpy as np

from cache.entry import CorruptEntry, encode, read_verified, remove_dir, write_atomic
from cache.export import write_table
from cache.index import IndexRow, RunIndex, RunRecord, check_key_or_prefix
from cache.lock import key_lock
from cache.recover import reindex
from cache.stages import DirStageStore
from core.config import cache_key, parse_config
from core.progress import CancelToken, Progress, ProgressCallback
from core.result import Result

ENV_VAR = "PRIVLAB_CACHE_DIR"
Runner = Callable[..., Result]


def resolve_root(root: str | Path | None = None) -> Path:
    """``root``, else ``$PRIVLAB_CACHE_DIR``, else ``platformdirs.user_cache_dir('privlab')``."""
    if root is None:
        root = os.environ.get(ENV_VAR) or None
    if root is None:
        import platformdirs

        root = platformdirs.user_cache_dir("privlab")
    return Path(root).expanduser().resolve()


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
            d.mkdir(parents=True, exist_ok=True)
        self.index = self._open_index()
        self.stages = DirStageStore(self.root / "stages")

    def _open_index(self) -> RunIndex:
        """Open the index. If it is not a readable SQLite file it is set aside as
        ``index.sqlite.corrupt-<time>``; if it is unreadable or missing while entries exist, it
        is rebuilt from them (under a global lock), so history survives a lost index."""
        path, lock = self.root / "index.sqlite", self.locks_dir / "index.lock"
        if path.exists():
            try:
                return RunIndex(path, init_lock=lock)
            except sqlite3.DatabaseError:
                pass
        elif not any(self.runs_dir.glob("??/*")):
            return RunIndex(path, init_lock=lock)
        with key_lock(lock):
            if path.exists():
                try:
                    return RunIndex(path)  # fine, or another process rebuilt it meanwhile
                except sqlite3.DatabaseError:
                    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
                    for suffix in ("", "-wal", "-shm"):
                        old = Path(f"{path}{suffix}")
                        if old.exists():
                            os.replace(old, path.with_name(f"index.sqlite.corrupt-{stamp}{suffix}"))
            index = RunIndex(path)
            n = reindex(index, self.runs_dir, self.tmp_dir)
            warnings.warn(
                f"result store: {path} was missing or unreadable; rebuilt it from {n} stored runs",
                RuntimeWarning, stacklevel=3,
            )
            return index

    def __repr__(self) -> str:
        return f"ResultStore({str(self.root)!r})"

    # -- paths ------------------------------------------------------------------------------

    def entry_dir(self, key: str) -> Path:
        return self.runs_dir / key[:2] / key

    def _lock_path(self, key: str) -> Path:
        return self.locks_dir / f"{key}.lock"

    # -- reading ----------------------------------------------------------------------------

    def _read(self, key: str, *, touch: bool = False) -> Result | None:
        """The verified entry, None if there is none; CorruptEntry if one is there but bad.
        ``touch``: a hit records its time as the run's ``last_used`` (LRU for cache.gc), at most
        once per :attr:`touch_every_s` per run."""
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
        orphan dir that the next read detects as corrupt."""
        self.index.delete(key)
        remove_dir(self.entry_dir(key), self.tmp_dir)

    def _read_or_repair(self, key: str, *, wait: bool, touch: bool = False) -> Result | None:
        """Read ``key``; a corrupt entry is removed under the lock (waiting for it only if
        ``wait``; otherwise a busy lock means someone is writing it right now) -> None."""
        try:
            return self._read(key, touch=touch)
        except CorruptEntry:
            pass
        with key_lock(self._lock_path(key), blocking=wait) as locked:
            if not locked:
                return None
            try:
                return self._read(key, touch=touch)
            except CorruptEntry:
                self._discard(key)
                return None

    def peek(self, config: Any) -> Result | None:
        """The cached Result for ``config`` without running anything (ConfigError if invalid)."""
        hit = self._read_or_repair(cache_key(parse_config(config)), wait=False, touch=True)
        return hit if hit is None or self._points_stored(hit) else None

    def get(self, key: str) -> Result | None:
        """The stored Result for a key or a unique key prefix (>= 6 hex chars); None if absent.

        Raises ValueError for a malformed or ambiguous prefix.
        """
        full = self.index.resolve(key)
        if full is None:
            return None
        return self._read_or_repair(full, wait=False, touch=True)

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

        ``config`` is a config model or a mapping (ConfigError if invalid; nothing touched).
        ``runner(cfg, progress=..., cancel=...)`` defaults to :func:`core.experiments.run` with
        this store's stage cache (:attr:`stages`), so runs that share a trained model train once.
        A run that raises (including ``Cancelled``) stores nothing. If another process or
        thread is computing the same key, this waits for it and returns its entry.
        """
        cfg = parse_config(config)
        key = cache_key(cfg)
        try:
            hit = self._read(key, touch=True)  # lock-free fast path: atomic writes, checksums guard
        except CorruptEntry:
            hit = None
        if hit is not None and self._points_stored(hit):
            return hit

        if cancel is None and isinstance(progress, Progress):
            cancel = progress.cancel
        with key_lock(self._lock_path(key), cancel=cancel):
            try:
                hit = self._read(key, touch=True)
            except CorruptEntry:
                self._discard(key)
                hit = None
            if hit is not None and self._points_stored(hit):
                return hit
            self._clear_tmp(key)
            t0 = time.perf_counter()
            if runner is None:
                from core.experiments import run

                result = run(cfg, progress=progress, cancel=cancel, stages=self.stages, points=self)
            else:
                result = runner(cfg, progress=progress, cancel=cancel)
            seconds = time.perf_counter() - t0
            self._store(key, cfg, result, seconds)
        result.from_cache = False
        return result

    def _store(self, key: str, cfg: Any, result: Result, seconds: float) -> None:
        if not isinstance(result, Result):
            raise TypeError(f"runner: returned {type(result).__name__}; expected core.result.Result")
        if result.kind != cfg.kind:
            raise ValueError(f"runner: returned a {result.kind!r} Result for a {cfg.kind!r} config")
        result.key = key
        result.config = cfg.model_dump(mode="json")
        result.seed = cfg.seed
        result.metrics = {k: float(v) for k, v in result.metrics.items()}
        result.artifacts = {k: np.asarray(v) for k, v in result.artifacts.items()}
        enc = encode(result)
        write_atomic(enc, self.entry_dir(key), self.tmp_dir, key)
        meta_metrics = {k: (None if math.isnan(float(v)) else float(v)) for k, v in result.metrics.items()}
        self.index.put(
            IndexRow(
                key=key, kind=cfg.kind, created=_now_iso(),
                seconds=float(result.timings.get("total_s", seconds)),
                engine_version=result.engine_version, config=result.config,
                metrics=meta_metrics, sha_result=enc.sha_result, sha_artifacts=enc.sha_artifacts,
            )
        )

    def _points_stored(self, result: Result) -> bool:
        """A stored sweep is served only while every point it lists is stored: one whose points
        were deleted (or collected) since runs again, and only those points run."""
        if result.kind != "sweep":
            return True
        return all(self.index.checksums(r["key"]) is not None for r in result.info.get("rows", []))

    @property
    def point_worker(self):
        """The function pool and Ray workers run for one sweep point (core.runs.sweep)."""
        from cache.sweep_worker import run_point

        return run_point

    def _clear_tmp(self, key: str) -> None:
        """Remove temp dirs a crashed writer of ``key`` left (caller holds the key lock)."""
        for p in self.tmp_dir.glob(f"{key}.*"):
            shutil.rmtree(p, ignore_errors=True)

    # -- history ----------------------------------------------------------------------------

    def list(self, kind: str | None = None, limit: int | None = None) -> list[RunRecord]:
        """Index rows, newest first, optionally of one ``kind`` and at most ``limit``."""
        return self.index.records(kind, limit)

    def delete(self, key: str) -> bool:
        """Delete a run by key or unique prefix; False if there is none."""
        full = self.index.resolve(key)
        if full is None:
            full = check_key_or_prefix(key)
            if len(full) < 64 or not self.entry_dir(full).exists():
                return False
        with key_lock(self._lock_path(full)):
            existed = self.index.checksums(full) is not None or self.entry_dir(full).exists()
            self._discard(full)
        return existed

    def set_label(self, key: str, label: str) -> bool:
        """Attach a free-text label to a run (key or unique prefix); False if there is none."""
        if not isinstance(label, str) or len(label) > 500:
            raise ValueError(f"label: got {label!r:.60}; allowed: text of at most 500 characters")
        full = self.index.resolve(key)
        return full is not None and self.index.set_label(full, label)

    def export(
        self, path: str | Path, *, fmt: Literal["csv", "json"], kind: str | None = None
    ) -> Path:
        """Write one flat row per run (config.* and metrics.* columns) to ``path``."""
        return write_table(self.list(kind), path, fmt)

    def verify(self, *, repair: bool = True) -> dict[str, int]:
        """Check every entry (rows, files, checksums) and orphan dirs; with ``repair`` delete
        the bad ones. Returns counts ``{"ok", "corrupt", "orphans"}``."""
        counts = {"ok": 0, "corrupt": 0, "orphans": 0}
        keys = set(self.index.all_keys())
        for key in keys:
            try:
                self._read(key)
                counts["ok"] += 1
            except CorruptEntry:
                counts["corrupt"] += 1
                if repair:
                    self._read_or_repair(key, wait=True)
        for d in self.runs_dir.glob("??/*"):
            if d.name not in keys and d.is_dir():
                counts["orphans"] += 1
                if repair:
                    self._read_or_repair(d.name, wait=True)
        return counts


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
