"""Flat tables of stored runs for CSV/JSON export (History page, ``privlab export``).

One row per run: ``key, kind, created, seconds, label, engine_version``, then the config
flattened to ``config.<a>.<b>`` columns and the metrics as ``metrics.<name>`` columns.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Literal

from cache.index import RunRecord

BASE_COLUMNS = ["key", "kind", "created", "seconds", "label", "engine_version"]


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


def write_table(records: list[RunRecord], path: str | Path, fmt: Literal["csv", "json"]) -> Path:
    """Write ``records`` to ``path`` as CSV (pandas) or a JSON list of flat objects."""
    if fmt not in ("csv", "json"):
        raise ValueError(f"fmt: got {fmt!r}; allowed: 'csv', 'json'")
    p = Path(path).expanduser()
    p.parent.mkdir(parents=True, exist_ok=True)
    rows = [record_row(r) for r in records]
    cols = _columns(rows)
    if fmt == "json":
        objs = [{c: _json_safe(r[c]) for c in cols if c in r} for r in rows]
        p.write_text(json.dumps(objs, indent=1, sort_keys=False))
        return p
    import pandas as pd

    cells = [
        {c: (json.dumps(v) if isinstance(v, (list, tuple, dict)) else v) for c, v in r.items()}
        for r in rows
    ]
    pd.DataFrame(cells, columns=cols).to_csv(p, index=False)
    return p
