"""``privlab verify [--repair]``: check every part of the result store and, with ``repair``,
remove or rebuild only what fails (issue 21).

What is checked, and what ``repair`` does with a failure:

- the index: ``PRAGMA quick_check`` (SQLite's proof of damage) -> set aside as
  ``index.sqlite.corrupt-<time>`` and rebuilt from the entries on disk;
- every run with a row: both files against the row's checksums, the stored key, the arrays.
  Files that match their own ``sha256.json`` while the row disagrees (or the row's kind,
  config or metrics differ from ``result.json``) mean a damaged *row*: it is rewritten from the
  entry (its label kept). Files that do not match are a corrupt entry: row and files removed;
- every entry directory without a row: adopted into the index if it proves itself, else
  removed;
- every stage entry against its ``sha256.json``: a failing one is removed (recomputed by the
  next run that needs it).

A file system error (permission, I/O) is reported as *unreadable* and never repaired: it
proves nothing about the data. Entries whose key lock another process holds are skipped.
Temporary leftovers of killed writers are counted here and collected by ``privlab gc``.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

from cache.entry import CorruptEntry, read_self_verified
from cache.errors import IndexCorrupt, StoreError, StoreIOError
from cache.lock import key_lock
from cache.recover import adopt, entry_dirs
from core.foundation.wording import counted


@dataclass
class VerifyReport:
    """What :func:`verify_store` found (and, with ``repair``, what it did)."""

    repair: bool
    index: str = "ok"
    index_rebuilt: bool = False
    entries_ok: int = 0
    entries_corrupt: list[str] = field(default_factory=list)
    rows_damaged: list[str] = field(default_factory=list)
    orphans_sound: list[str] = field(default_factory=list)
    orphans_corrupt: list[str] = field(default_factory=list)
    stages_ok: int = 0
    stages_corrupt: list[str] = field(default_factory=list)
    unreadable: list[str] = field(default_factory=list)
    skipped_locked: list[str] = field(default_factory=list)
    repaired: list[str] = field(default_factory=list)
    leftovers: int = 0

    @property
    def problems(self) -> int:
        """Failures found (before any repair)."""
        return ((self.index != "ok") + len(self.entries_corrupt) + len(self.rows_damaged)
                + len(self.orphans_sound) + len(self.orphans_corrupt) + len(self.stages_corrupt)
                + len(self.unreadable))

    @property
    def clean(self) -> bool:
        """Nothing left to repair: no failures, or all of them repaired (unreadable files and
        skipped entries never count as repaired)."""
        if self.unreadable or self.skipped_locked:
            return False
        return self.problems == 0 or (self.repair and len(self.repaired) >= self.problems)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "problems": self.problems, "clean": self.clean}

    def add(self, other: VerifyReport, label: str) -> None:
        """Count ``other`` (the imported runs' store) in this report, its lists' items marked
        with ``label``."""
        if other.index != "ok" and self.index == "ok":
            self.index = f"{label}: {other.index}"
        self.index_rebuilt |= other.index_rebuilt
        self.entries_ok += other.entries_ok
        self.stages_ok += other.stages_ok
        self.leftovers += other.leftovers
        for name in ("entries_corrupt", "rows_damaged", "orphans_sound", "orphans_corrupt",
                     "stages_corrupt", "unreadable", "skipped_locked", "repaired"):
            getattr(self, name).extend(f"{label}: {x}" for x in getattr(other, name))

    def summary(self) -> str:
        parts = [f"index {'ok' if self.index == 'ok' else 'damaged'}"
                 + (" (rebuilt)" if self.index_rebuilt else ""),
                 f"{counted(self.entries_ok, 'run')} ok",
                 f"{len(self.entries_corrupt)} corrupt",
                 f"{len(self.rows_damaged)} damaged index rows",
                 f"{len(self.orphans_sound) + len(self.orphans_corrupt)} without a row",
                 f"{self.stages_ok} stage entries ok",
                 f"{len(self.stages_corrupt)} corrupt stage entries"]
        if self.unreadable:
            parts.append(f"{len(self.unreadable)} unreadable (file system errors; not touched)")
        if self.skipped_locked:
            parts.append(f"{len(self.skipped_locked)} skipped (in use)")
        if self.leftovers:
            parts.append(f"{self.leftovers} temporary leftovers (privlab gc collects them)")
        verb = (f"; repaired {len(self.repaired)}" if self.repair
                else ("; run `privlab verify --repair` to fix" if self.problems else ""))
        return "store check: " + ", ".join(parts) + verb


def _norm(v: Any) -> Any:
    if isinstance(v, float) and math.isnan(v):
        return None
    return v


def _row_matches(rec, result) -> bool:
    """The index row's copy of kind, config and metrics equals the entry's."""
    metrics = {k: _norm(float(v)) for k, v in result.metrics.items()}
    return (rec.kind == result.kind and rec.config == result.config
            and {k: _norm(v) for k, v in rec.metrics.items()} == metrics)


def _rebuild_index(store, report: VerifyReport) -> None:
    from cache.index import RunIndex

    store.index.close()
    with key_lock(store.locks_dir / "index.lock"):
        store._set_aside(store.index_path)
        store.index = RunIndex(store.index_path)
        store._rebuild_into(store.index, f"failed its check ({report.index})")
    report.index_rebuilt = True
    report.repaired.append("index")


def _readopt(store, key: str, label: str, report: VerifyReport) -> None:
    adopt(store.index, store.entry_dir(key))
    if label:
        store.index.set_label(key, label)
    report.repaired.append(key)


def verify_store(store, *, repair: bool = False) -> VerifyReport:
    """Check ``store`` (a :class:`cache.store.ResultStore`); see the module docstring."""
    report = VerifyReport(repair=repair)
    if repair:
        store._check_writable("repair the store")
    try:
        report.index = store.index.quick_check()
    except IndexCorrupt as exc:
        report.index = str(exc)
    if report.index != "ok":
        if not repair:
            return _finish_without_index(store, report)
        _rebuild_index(store, report)

    records = {r.key: r for r in store.index.records()}
    for key, rec in records.items():
        d = store.entry_dir(key)
        try:
            result = store._read(key)
            if result is not None and _row_matches(rec, result):
                _check_manifest(store, key, report, repair)
                report.entries_ok += 1
                continue
            why = "row differs from result.json"
        except CorruptEntry as exc:
            why = str(exc)
        except StoreIOError as exc:
            report.unreadable.append(str(exc))
            continue
        try:  # the entry against its own manifest: a sound entry means the row is damaged
            if not (d / "sha256.json").exists():
                raise CorruptEntry(f"{key[:12]}: {why}; no sha256.json to tell which is right")
            read_self_verified(d, key)
        except CorruptEntry as exc:
            report.entries_corrupt.append(str(exc))
            if repair:
                _remove(store, key, report)
            continue
        except StoreIOError as exc:
            report.unreadable.append(str(exc))
            continue
        report.rows_damaged.append(f"{key[:12]}: {why}")
        if repair:
            _under_lock(store, key, report, lambda k=key, lab=rec.label: _readopt(store, k, lab, report))

    for d in entry_dirs(store.runs_dir):
        key = d.name
        if key in records:
            continue
        try:
            read_self_verified(d, key)
            if d.parent.name != key[:2]:
                raise CorruptEntry(f"{key[:12]}: stored under {d.parent.name}/")
        except CorruptEntry as exc:
            report.orphans_corrupt.append(str(exc))
            if repair:
                _remove(store, key, report, path=d)
            continue
        except StoreIOError as exc:
            report.unreadable.append(str(exc))
            continue
        report.orphans_sound.append(key[:12])
        if repair:
            _under_lock(store, key, report, lambda k=key: _readopt(store, k, "", report))

    _check_stages(store, report, repair)
    report.leftovers = _count_leftovers(store)
    return report


def _check_manifest(store, key: str, report: VerifyReport, repair: bool) -> None:
    """A run that verifies against its row: its ``sha256.json`` must agree (it is what a
    rebuilt index trusts); a missing or damaged one is rewritten from the verified row."""
    from cache.entry import MANIFEST_FILE, parse_manifest, rewrite_manifest

    shas = store.index.checksums(key)
    d = store.entry_dir(key)
    try:
        have = parse_manifest((d / MANIFEST_FILE).read_bytes())
    except FileNotFoundError:
        have = None
    except OSError as exc:
        report.unreadable.append(f"{key[:12]}: {MANIFEST_FILE} ({exc.strerror})")
        return
    if shas is None or have == shas:
        return
    report.rows_damaged.append(f"{key[:12]}: {MANIFEST_FILE} missing or damaged")
    if repair:
        _under_lock(store, key, report, lambda: (rewrite_manifest(d, *shas),
                                                 report.repaired.append(f"{key[:12]} manifest")))


def _finish_without_index(store, report: VerifyReport) -> VerifyReport:
    """A damaged index and no repair: check what can be checked without it."""
    for d in entry_dirs(store.runs_dir):
        try:
            read_self_verified(d, d.name)
            report.entries_ok += 1
        except CorruptEntry as exc:
            report.entries_corrupt.append(str(exc))
        except StoreIOError as exc:
            report.unreadable.append(str(exc))
    _check_stages(store, report, False)
    report.leftovers = _count_leftovers(store)
    return report


def _check_stages(store, report: VerifyReport, repair: bool) -> None:
    for stage, key in store.stages.entries():
        why = store.stages.check(stage, key)
        if why is None:
            report.stages_ok += 1
        elif why.startswith("unreadable"):
            report.unreadable.append(f"stage {stage} {key[:12]}: {why}")
        else:
            report.stages_corrupt.append(f"stage {stage} {key[:12]}: {why}")
            if repair:
                store.stages.discard(store.stages._dir(stage, key))
                report.repaired.append(f"stage {stage} {key[:12]}")


def _count_leftovers(store) -> int:
    from cache.gc import leftovers

    return len(leftovers(store, grace_s=0.0))


def _under_lock(store, key: str, report: VerifyReport, fn) -> None:
    with key_lock(store._lock_path(key), blocking=False) as locked:
        if not locked:
            report.skipped_locked.append(key[:12])
            return
        try:
            fn()
        except (CorruptEntry, StoreError) as exc:
            report.unreadable.append(str(exc))


def _remove(store, key: str, report: VerifyReport, path=None) -> None:
    from cache.entry import remove_dir

    def go() -> None:
        store._check_writable(f"remove run {key[:12]}")
        store.index.delete(key)
        remove_dir(path or store.entry_dir(key), store.tmp_dir)
        report.repaired.append(key)

    _under_lock(store, key, report, go)
