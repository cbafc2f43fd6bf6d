"""Flat tables of stored runs for CSV/JSON export (History page, ``privlab export``).

One row per run: ``key, kind, created, seconds, label, engine_version``, then the config
flattened to ``config.<a>.<b>`` columns and the metrics as ``metrics.<name>`` columns.

Writing is safe for a file a person will open (issue 21): the table goes to a temporary file
in the target's folder and is renamed into place (a reader never sees half a table); an
existing target (a file, or a symbolic link, which is never followed) is replaced only with
``force``; without it the rename is a hard link that fails if the name appeared meanwhile. CSV
cells that start with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return get a leading
``'`` (OWASP's CSV-injection advice), so a spreadsheet shows them as text and never runs them
as formulas; numbers stay numbers.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any, Literal

from cache.index import RunRecord

BASE_COLUMNS = ["key", "kind", "created", "seconds", "label", "engine_version"]
#: a CSV cell starting with one of these is a formula to a spreadsheet
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


class ExportError(ValueError):
    """The export target is refused (exists without ``force``, or is a folder)."""


def neutralise(cell: Any) -> Any:
    """``'=1+1`` for a text cell a spreadsheet would evaluate; anything else unchanged."""
    if isinstance(cell, str) and cell.startswith(FORMULA_START):
        return "'" + cell
    return cell


def flatten(obj: dict[str, Any], prefix: str) -> dict[str, Any]:
    """``{'data': {'name': 'digits'}}`` -> ``{'<prefix>.data.name': 'digits'}``; lists stay values."""
    out: dict[str, Any] = {}
    for k, v in obj.items():
        name = f"{prefix}.{k}"
        if isinstance(v, dict) and v:
            out.update(flatten(v, name))
        else:
            out[name] = v
    return out


def record_row(rec: RunRecord) -> dict[str, Any]:
    row: dict[str, Any] = {c: getattr(rec, c) for c in BASE_COLUMNS}
    cfg = {k: v for k, v in rec.config.items() if k != "kind"}  # same as the kind column
    row.update(flatten(cfg, "config"))
    row.update({f"metrics.{k}": v for k, v in rec.metrics.items()})
    return row


def _columns(rows: list[dict[str, Any]]) -> list[str]:
    seen = {c for r in rows for c in r}
    cfg = sorted(c for c in seen if c.startswith("config."))
    met = sorted(c for c in seen if c.startswith("metrics."))
    return BASE_COLUMNS + cfg + met


def _json_safe(v: Any) -> Any:
    return None if isinstance(v, float) and math.isnan(v) else v


def write_table(records: list[RunRecord], path: str | Path, fmt: Literal["csv", "json"], *,
                force: bool = False) -> Path:
    """Write ``records`` to ``path`` as CSV (pandas) or a JSON list of flat objects, atomically;
    an existing ``path`` (file or symbolic link, never followed) is replaced only with
    ``force``. Raises ExportError for a refused target."""
    if fmt not in ("csv", "json"):
        raise ValueError(f"fmt: got {fmt!r}; allowed: 'csv', 'json'")
    p = Path(path).expanduser()
    _check_target(p, force)
    rows = [record_row(r) for r in records]
    cols = _columns(rows)
    if fmt == "json":
        objs = [{c: _json_safe(r[c]) for c in cols if c in r} for r in rows]
        data = json.dumps(objs, indent=1, sort_keys=False).encode()
    else:
        import pandas as pd

        cells = [
            {c: neutralise(json.dumps(v) if isinstance(v, (list, tuple, dict)) else v)
             for c, v in r.items()}
            for r in rows
        ]
        frame = pd.DataFrame(cells, columns=cols)
        frame.columns = [neutralise(c) for c in cols]
        data = frame.to_csv(index=False).encode()
    _write_atomic(p, data, force)
    return p


def _check_target(p: Path, force: bool) -> None:
    if p.is_symlink():
        if not force:
            raise ExportError(f"export: {p} is a symbolic link; refusing to write through it "
                              "(--force replaces the link itself, never its target)")
    elif p.is_dir():
        raise ExportError(f"export: {p} is a folder; give a file name")
    elif p.exists() and not force:
        raise ExportError(f"export: {p} exists; give --force to overwrite it")


def _write_atomic(p: Path, data: bytes, force: bool) -> None:
    p.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=p.parent, prefix=f".{p.name}.", suffix=".part")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if force:
            os.replace(tmp, p)  # replaces a symbolic link itself, never its target
        else:
            try:
                os.link(tmp, p)  # fails if the name exists (appeared since the check)
            except FileExistsError:
                raise ExportError(f"export: {p} exists; give --force to overwrite it") from None
    finally:
        if os.path.lexists(tmp):
            os.unlink(tmp)
