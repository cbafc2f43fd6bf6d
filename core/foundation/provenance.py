"""Where a figure read from a committed benchmark file was measured (DESIGN: "every figure
shown carries the engine that made it").

Every result file the harness writes carries a ``provenance`` block: the engine id
(:func:`core.foundation.fingerprint.engine_id`), the git commit, the machine's load average when it was
written and the command that refreshes it (:func:`stamp`). Files committed before this was
recorded carry a block back-filled from ``git log`` whose engine id is None with
:data:`UNKNOWN_ENGINE` beside it: an engine id is never invented.

A figure whose file was made by another engine than the running one is shown with
:func:`stale_mark` ("made by an older engine on COMMIT; refresh with: …"). :func:`scan` counts,
over every figure the paper check and the pages show from a file, those whose file lacks its
provenance and those stale but shown unmarked; the test and the benchmark share it.

Torch-free (the dashboard imports it on page load).
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path
from typing import Any

from core.foundation.fingerprint import engine_id

ROOT = Path(__file__).resolve().parents[2]
RESULTS = "benchmarks/results"
UNKNOWN_ENGINE = "unknown: made before provenance was recorded"
STALE = "made by an older engine"


def git_commit(root: Path = ROOT) -> str | None:
    """HEAD's sha, with ``-dirty`` when tracked files differ from it; None without git."""
    try:
        sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True,
                             text=True, timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               cwd=root, capture_output=True, text=True, timeout=10,
                               check=False).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return sha + ("-dirty" if dirty else "")


def stamp(refresh: str, root: Path = ROOT) -> dict[str, Any]:
    """The provenance block of a result file written now by the command ``refresh``."""
    try:
        load = [round(x, 2) for x in os.getloadavg()]
    except OSError:  # pragma: no cover - no load average on this platform
        load = None
    return {"engine_id": engine_id(), "commit": git_commit(root),
            "load_average_1_5_15": load,
            "written": datetime.now(UTC).isoformat(timespec="seconds"), "refresh": refresh}


@dataclass(frozen=True)
class Origin:
    """What a result file says of where it was made."""

    file: str  # relative to benchmarks/results
    recorded: bool  # the file has a provenance block with a commit
    engine: str | None
    commit: str | None
    refresh: str

    @property
    def current(self) -> bool:
        """Made by the running engine (an unknown engine is never current)."""
        return self.recorded and self.engine is not None and self.engine == engine_id()

    def mark(self) -> str:
        """"" for a file of the running engine, else the sentence a shown figure carries."""
        if self.current:
            return ""
        if not self.recorded:
            return f"no record of the engine that made it; refresh with: `{self.refresh}`"
        return f"{STALE} on {str(self.commit)[:10]}; refresh with: `{self.refresh}`"


def _refresh_default(file: str, doc: Any) -> str:
    name = doc.get("name") if isinstance(doc, dict) else None
    return f"python -m benchmarks {name or Path(file).name.split('.')[0]}"


def origin_of(doc: Any, file: str) -> Origin:
    """The :class:`Origin` recorded in a parsed result file ``doc``."""
    p = doc.get("provenance") if isinstance(doc, dict) else None
    if not isinstance(p, dict) or not p.get("commit"):
        return Origin(file, False, None, None, _refresh_default(file, doc))
    return Origin(file, True, p.get("engine_id") or None, str(p["commit"]),
                  str(p.get("refresh") or _refresh_default(file, doc)))


@lru_cache(maxsize=128)
def _origin_cached(path: str, mtime: float, file: str) -> Origin:
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        doc = None
    return origin_of(doc, file)


def origin(file: str, root: Path = ROOT) -> Origin:
    """The :class:`Origin` of ``benchmarks/results/<file>`` (read once per file version)."""
    path = root / RESULTS / file
    try:
        mtime = path.stat().st_mtime
    except OSError:
        mtime = -1.0
    return _origin_cached(str(path), mtime, file)


def stale_mark(files: list[str] | tuple[str, ...], root: Path = ROOT) -> str:
    """The marks of ``files`` that are not the running engine's, joined ("" when all are)."""
    marks = []
    for f in dict.fromkeys(files):
        m = origin(f, root).mark()
        if m:
            marks.append(f"{Path(f).name.split('.')[0]}: {m}" if len(files) > 1 else m)
    return "; ".join(marks)


def source_files(sources: list[str] | tuple[str, ...]) -> list[str]:
    """The result files named by a reading's sources (``file:where``; store keys excluded)."""
    return list(dict.fromkeys(s.split(":", 1)[0] for s in sources
                              if ":" in s and s.split(":", 1)[0].endswith(".json")))
