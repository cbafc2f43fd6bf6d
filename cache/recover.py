"""Rebuild a lost or unreadable ``index.sqlite`` from the entries on disk.

Each ``runs/<key[:2]>/<key>/`` whose ``result.json`` parses, whose npz loads without pickle
and whose stored key matches its directory is indexed again (checksums recomputed, ``created``
from the file's mtime, labels lost); anything else is removed.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from cache.entry import ARTIFACTS_FILE, RESULT_FILE, remove_dir, sha256
from cache.index import IndexRow, RunIndex
from core.result import Result


def reindex(index: RunIndex, runs_dir: Path, tmp_dir: Path) -> int:
    """Insert a row for every valid entry dir under ``runs_dir``; return how many."""
    n = 0
    for d in sorted(runs_dir.glob("??/*")):
        try:
            meta_b = (d / RESULT_FILE).read_bytes()
            npz_b = (d / ARTIFACTS_FILE).read_bytes()
            meta = json.loads(meta_b)
            res = Result.from_parts(meta, npz_b)
            if meta.get("key") != d.name or d.parent.name != d.name[:2]:
                raise ValueError("key does not match its directory")
        except Exception:  # noqa: BLE001 -- any unreadable entry is dropped, never served
            remove_dir(d, tmp_dir)
            continue
        mtime = datetime.fromtimestamp((d / RESULT_FILE).stat().st_mtime, UTC)
        index.put(
            IndexRow(
                key=d.name, kind=res.kind, created=mtime.isoformat(timespec="milliseconds"),
                seconds=res.timings.get("total_s"), engine_version=res.engine_version,
                config=res.config, metrics=meta.get("metrics", {}),
                sha_result=sha256(meta_b), sha_artifacts=sha256(npz_b),
            )
        )
        n += 1
    return n
