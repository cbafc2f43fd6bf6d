"""Keep the result store tidy: what it holds (:func:`store_usage`) and garbage collection
(:func:`collect`). CLI: ``privlab du`` and ``privlab gc``; dashboard: History → Store.

What can go:

- **runs of an older engine**: a run's ``engine_version`` (``<version>+<12 hex of the engine
  source fingerprint>``) differs from the running engine's, so it will never be served again
  (every cache key holds the engine id); likewise stage entries whose ``meta.json`` names
  another engine, or none (written before entries were tagged: unprovable, so treated as old);
- **the least recently used** runs and stage entries beyond a size limit. A run's last use is
  its index row's ``last_used`` (set when stored, updated by hits; ``created`` for rows from
  before the column existed); a stage entry's is its ``meta.json`` mtime (touched on a hit; not
  atime, which ``noatime`` mounts never move and reading the file here would).

- **temporary leftovers** of writers that were killed (``tmp/<key>.<pid>.<rand>`` and
  ``tmp/trash.*`` of the result store, ``stages/.tmp/*`` of the stage cache) once they are older
  than a grace period (:data:`LEFTOVER_GRACE_S`, so a write in progress is never touched; a
  ``tmp/<key>.*`` whose key lock is held is skipped whatever its age). Every ``gc`` collects them.

A run is removed only under its key's flock, taken without waiting: a key another process is
computing or repairing right now is skipped and reported, never touched. Removal is the
store's own (index row first, then the directory renamed out of ``runs/`` and deleted), so a
concurrent reader sees a miss, never a partial entry. Lock files (empty) are never deleted
(see :mod:`cache.lock`).
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import time
import uuid
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from cache.lock import key_lock
from cache.stages import ENGINE_KEY, META
from core.foundation.checks import check_range, range_error
from core.foundation.fingerprint import engine_id
from core.foundation.wording import counted

UNKNOWN_ENGINE = "unknown"
OLDER, BEYOND, LEFTOVER = "older engine", "beyond size", "temporary leftover"
#: temporary files and directories younger than this (seconds) are never collected
LEFTOVER_GRACE_S = 3600.0
_UNITS = {"": 1, "K": 10**3, "M": 10**6, "G": 10**9, "T": 10**12,
          "KI": 2**10, "MI": 2**20, "GI": 2**30, "TI": 2**40}


def parse_size(text: str | int) -> int:
    """``"2GB"`` → 2·10⁹ bytes; ``500MB``, ``1.5G``, ``2GiB`` (binary), ``1024`` (bytes)."""
    if isinstance(text, int) and not isinstance(text, bool) and text >= 0:
        return text
    m = re.fullmatch(r"\s*(\d+(?:\.\d*)?)\s*([kKmMgGtT][iI]?)?[bB]?\s*", str(text))
    if not m:
        raise ValueError(f"max size: got {text!r}; expected a size like 500MB, 2GB, 1.5GiB or a byte count")
    return int(float(m.group(1)) * _UNITS[(m.group(2) or "").upper()])


def format_bytes(n: float) -> str:
    """1234567 → ``1.2 MB`` (decimal units, as ``--max-size`` reads them)."""
    n = float(n)
    for unit in ("B", "kB", "MB", "GB"):
        if abs(n) < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} GB"  # pragma: no cover


def _dir_bytes(path: Path) -> int:
    total = 0
    try:
        with os.scandir(path) as it:
            for e in it:
                try:
                    if e.is_dir(follow_symlinks=False):
                        total += _dir_bytes(Path(e.path))
                    else:
                        total += e.stat(follow_symlinks=False).st_size
                except FileNotFoundError:
                    continue
    except (FileNotFoundError, NotADirectoryError):
        pass
    return total


def _epoch(iso: str) -> float:
    try:
        return datetime.fromisoformat(iso).timestamp()
    except (TypeError, ValueError):
        return 0.0


@dataclass
class Item:
    """One removable entry: a run (``what="run"``, ``kind`` = its kind) or a stage entry
    (``what="stage"``, ``kind`` = the stage)."""

    what: str
    key: str
    kind: str
    engine: str
    bytes: int
    last_used: float
    path: Path

    def row(self, reason: str) -> dict[str, Any]:
        return {"what": self.what, "key": self.key, "kind": self.kind, "engine": self.engine,
                "bytes": self.bytes, "reason": reason}


def _runs(store) -> list[Item]:
    out = []
    for key, kind, engine, last_used, created in store.index.usage_rows():
        d = store.entry_dir(key)
        out.append(Item("run", key, kind, engine or UNKNOWN_ENGINE, _dir_bytes(d),
                        float(last_used) if last_used is not None else _epoch(created), d))
    return out


def _stage_engine(meta: Path) -> str:
    try:
        return str(json.loads(meta.read_text()).get(ENGINE_KEY) or UNKNOWN_ENGINE)
    except (OSError, ValueError, AttributeError):
        return UNKNOWN_ENGINE


def _stage_entries(store) -> list[Item]:
    root = store.stages.root
    out = []
    if not root.is_dir():
        return out
    for stage in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")):
        for d in sorted(stage.glob("??/*")):
            if not d.is_dir():
                continue
            try:  # mtime, not atime: gc itself reads meta.json (relatime would bump atime)
                used = (d / META).stat().st_mtime
            except FileNotFoundError:  # half-removed or unreadable: last use = the directory's
                used = d.stat().st_mtime if d.exists() else 0.0
            out.append(Item("stage", d.name, stage.name, _stage_engine(d / META), _dir_bytes(d), used, d))
    return out


def _group(items: list[Item], label: str, count: str, current: str) -> list[dict[str, Any]]:
    acc: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    for it in items:
        a = acc[(it.kind, it.engine)]
        a[0] += 1
        a[1] += it.bytes
    return [{label: k, "engine": e, "current": e == current, count: n, "bytes": b}
            for (k, e), (n, b) in sorted(acc.items(), key=lambda kv: (kv[0][0], kv[0][1] != current, kv[0][1]))]


def store_usage(store) -> dict[str, Any]:
    """What the store holds: ``runs`` (rows by kind and engine id: runs, bytes, current),
    ``stages`` (rows by stage and engine id: entries, bytes, current), ``by_engine`` (runs and
    stage entries per engine id), and byte totals: ``runs_bytes`` + ``stages_bytes`` +
    ``index_bytes`` (SQLite and its WAL) + ``other_bytes`` (tmp, locks, orphans) =
    ``total_bytes`` (every file under the root)."""
    current = engine_id()
    runs, stages = _runs(store), _stage_entries(store)
    by_engine: dict[str, dict[str, Any]] = {}
    for it in runs + stages:
        e = by_engine.setdefault(it.engine, {"engine": it.engine, "current": it.engine == current,
                                             "runs": 0, "stage_entries": 0, "bytes": 0})
        e["runs" if it.what == "run" else "stage_entries"] += 1
        e["bytes"] += it.bytes
    index_bytes = sum(p.stat().st_size for p in store.root.glob("index.sqlite*") if p.is_file())
    total = _dir_bytes(store.root)
    runs_b, stages_b = sum(i.bytes for i in runs), sum(i.bytes for i in stages)
    return {
        "root": str(store.root), "engine": current,
        "runs": _group(runs, "kind", "runs", current),
        "stages": _group(stages, "stage", "entries", current),
        "by_engine": sorted(by_engine.values(), key=lambda r: (not r["current"], r["engine"])),
        "runs_count": len(runs), "stage_entries": len(stages),
        "runs_bytes": runs_b, "stages_bytes": stages_b, "index_bytes": index_bytes,
        "other_bytes": total - runs_b - stages_b - index_bytes, "total_bytes": total,
    }


@dataclass
class GcReport:
    """What :func:`collect` removed (or, with ``dry_run``, would remove)."""

    dry_run: bool
    older_engines: bool
    max_bytes: int | None
    before_bytes: int
    after_bytes: int = 0
    removed: list[dict[str, Any]] = field(default_factory=list)
    skipped_locked: list[str] = field(default_factory=list)

    @property
    def freed_bytes(self) -> int:
        return sum(r["bytes"] for r in self.removed)

    @property
    def over_limit(self) -> bool:
        return self.max_bytes is not None and self.after_bytes > self.max_bytes

    def count(self, what: str) -> int:
        return sum(r["what"] == what for r in self.removed)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "freed_bytes": self.freed_bytes, "over_limit": self.over_limit,
                "removed_runs": self.count("run"), "removed_stage_entries": self.count("stage"),
                "removed_leftovers": self.count("tmp")}

    def summary(self) -> str:
        verb = "would remove" if self.dry_run else "removed"
        text = (f"{verb} {counted(self.count('run'), 'run')}, "
                f"{counted(self.count('stage'), 'stage entry', 'stage entries')} and "
                f"{self.count('tmp')} temporary leftovers ({format_bytes(self.freed_bytes)}); "
                f"store {format_bytes(self.before_bytes)} -> {format_bytes(self.after_bytes)}")
        if self.skipped_locked:
            text += (f"; skipped {counted(len(self.skipped_locked), 'run')} in use by another "
                     "process")
        if self.over_limit:
            text += f"; still over the limit of {format_bytes(self.max_bytes)}"
        return text


def _remove_run(store, it: Item, dry_run: bool) -> bool:
    """Remove a run under its key lock taken without waiting; False if another holds it."""
    with key_lock(store._lock_path(it.key), blocking=False) as locked:
        if not locked:
            return False
        if not dry_run:
            store._discard(it.key)
    return True


def _remove_stage(store, it: Item) -> None:
    trash = store.stages.root / ".tmp" / f"trash.{uuid.uuid4().hex}"
    trash.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.rename(it.path, trash)  # atomic for readers: the entry is there or not
    except FileNotFoundError:
        return
    shutil.rmtree(trash, ignore_errors=True)


def leftovers(store, *, grace_s: float = LEFTOVER_GRACE_S) -> list[Path]:
    """Temporary files and directories of writers that did not finish, older than
    ``grace_s``: ``tmp/<key>.<pid>.<rand>``, ``tmp/trash.*``, ``stages/.tmp/*``. A
    ``tmp/<key>.*`` whose key lock is held (its writer is alive) is left whatever its age."""
    now = time.time()
    out = []
    for parent in (store.tmp_dir, store.stages.root / ".tmp"):
        try:
            children = sorted(parent.iterdir())
        except (FileNotFoundError, NotADirectoryError):
            continue
        for p in children:
            try:
                age = now - p.lstat().st_mtime
            except FileNotFoundError:
                continue
            if age < grace_s:
                continue
            key = p.name.split(".", 1)[0]
            if parent == store.tmp_dir and len(key) == 64 and not _lock_free(store, key):
                continue
            out.append(p)
    return out


def _lock_free(store, key: str) -> bool:
    lock = store._lock_path(key)
    if not lock.exists():
        return True
    with key_lock(lock, blocking=False) as locked:
        return bool(locked)


def _remove_path(p: Path) -> None:
    if p.is_dir() and not p.is_symlink():
        shutil.rmtree(p, ignore_errors=True)
    else:
        try:
            p.unlink()
        except FileNotFoundError:
            pass


def collect(store, *, older_engines: bool = False, max_bytes: int | None = None,
            dry_run: bool = False, grace_s: float = LEFTOVER_GRACE_S) -> GcReport:
    """Remove temporary leftovers older than ``grace_s``, runs and stage entries of older
    engines (``older_engines``), then the least recently used ones until the store's total size
    is at most ``max_bytes`` (runs and stage entries in one LRU order). ``dry_run`` removes
    nothing and reports what would go. Runs whose key lock another process holds are skipped
    (``skipped_locked``). Returns a :class:`GcReport`."""
    if max_bytes is not None and (isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 0):
        raise ValueError(f"max_bytes: got {max_bytes!r}; allowed: a byte count >= 0 or None")
    usage = store_usage(store)
    report = GcReport(dry_run=dry_run, older_engines=older_engines, max_bytes=max_bytes,
                      before_bytes=usage["total_bytes"])
    if isinstance(grace_s, bool):
        raise range_error("grace_s", grace_s, 0.0, note="seconds")
    check_range("grace_s", grace_s, 0.0, math.inf, hi_open=True, note="seconds")
    if not dry_run:
        store._check_writable("collect garbage")
    for p in leftovers(store, grace_s=grace_s):
        report.removed.append({"what": "tmp", "key": p.name, "kind": p.parent.name,
                               "engine": "", "bytes": _dir_bytes(p) if p.is_dir() else
                               p.lstat().st_size, "reason": LEFTOVER})
        if not dry_run:
            _remove_path(p)
    current = engine_id()
    items = _runs(store) + _stage_entries(store)
    kept: list[Item] = []

    def remove(it: Item, reason: str) -> bool:
        if it.what == "run":
            if not _remove_run(store, it, dry_run):
                report.skipped_locked.append(it.key)
                return False
        elif not dry_run:
            _remove_stage(store, it)
        report.removed.append(it.row(reason))
        return True

    for it in items:
        if older_engines and it.engine != current:
            if not remove(it, OLDER) and it.what == "run":
                continue  # locked: neither removed nor a candidate for the size pass
        else:
            kept.append(it)
    total = report.before_bytes - report.freed_bytes
    if max_bytes is not None and total > max_bytes:
        for it in sorted(kept, key=lambda i: (i.last_used, i.key)):
            if total <= max_bytes:
                break
            if remove(it, BEYOND):
                total -= it.bytes
    if not dry_run:
        if report.count("run"):
            store.index.checkpoint()
        report.after_bytes = _dir_bytes(store.root)
    else:
        report.after_bytes = report.before_bytes - report.freed_bytes
    return report
