"""Rebuild a lost or damaged ``index.sqlite`` from the entries on disk (history survives the
index), and adopt single entries whose row is missing.

An entry ``runs/<key[:2]>/<key>/`` is indexed again when it matches its own ``sha256.json``
(entries written before the manifest existed: when it decodes completely; the npz's zip CRCs
still check the arrays), its ``result.json`` parses and its stored key matches its directory.
Checksums are recomputed, ``created`` comes from the file's mtime, labels are lost (an imported
run's origin is kept: it has its own file). An entry
that fails is left where it is, unindexed: ``privlab verify --repair`` removes it, and a run of
its config recomputes it. Nothing is deleted here, so an I/O error during a rebuild loses
nothing.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from cache.entry import RESULT_FILE, CorruptEntry, read_origin, read_self_verified
from cache.errors import StoreIOError
from cache.index import IndexRow, RunIndex


def entry_dirs(runs_dir: Path) -> list[Path]:
    """Every ``runs/<xx>/<key>`` directory (sorted)."""
    return sorted(d for d in runs_dir.glob("??/*") if d.is_dir())


def adopt(index: RunIndex, entry_dir: Path) -> None:
    """Index one entry that has no row (CorruptEntry / StoreIOError if it cannot be)."""
    key = entry_dir.name
    if entry_dir.parent.name != key[:2]:
        raise CorruptEntry(f"{key[:12]}: stored under {entry_dir.parent.name}/, not {key[:2]}/")
    res, sha_r, sha_a, meta = read_self_verified(entry_dir, key)
    try:
        mtime = datetime.fromtimestamp((entry_dir / RESULT_FILE).stat().st_mtime, UTC)
    except OSError:
        mtime = datetime.now(UTC)
    index.put(
        IndexRow(
            key=key, kind=res.kind, created=mtime.isoformat(timespec="milliseconds"),
            seconds=res.timings.get("total_s"), engine_version=res.engine_version,
            config=res.config, metrics=meta.get("metrics", {}),
            sha_result=sha_r, sha_artifacts=sha_a, origin=read_origin(entry_dir),
        )
    )


def reindex(index: RunIndex, runs_dir: Path, tmp_dir: Path | None = None,
            problems: list[str] | None = None) -> int:
    """Insert a row for every valid entry dir under ``runs_dir``; return how many. Entries
    that fail are left in place and described in ``problems`` (when a list is given)."""
    n = 0
    for d in entry_dirs(runs_dir):
        try:
            adopt(index, d)
        except (CorruptEntry, StoreIOError) as exc:
            if problems is not None:
                problems.append(str(exc))
            continue
        n += 1
    return n
