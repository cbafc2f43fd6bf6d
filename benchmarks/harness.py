"""The benchmark harness's pieces that ``python -m benchmarks`` and its ``rerun`` command both
use: running one benchmark, machine facts, and writing a result file with its provenance."""

from __future__ import annotations

import importlib
import json
import math
import os
import platform
import time
import traceback
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from benchmarks import BENCHMARKS
from core.foundation.provenance import git_commit, stamp

RESULTS_DIR = Path(__file__).resolve().parent / "results"


def _version(pkg: str) -> str | None:
    try:
        return version(pkg)
    except PackageNotFoundError:
        return None


def machine_info() -> dict[str, Any]:
    """Facts that make a timing interpretable (versions read from metadata: no heavy imports)."""
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - non-Linux
        usable = os.cpu_count()
    try:
        load = [round(x, 2) for x in os.getloadavg()]
    except OSError:  # pragma: no cover
        load = None
    return {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "git_commit": git_commit(),
        "cpu_count": os.cpu_count(),
        "cpu_usable": usable,
        "load_average_1_5_15": load,
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "python": platform.python_version(),
        "numpy": _version("numpy"),
        "torch": _version("torch"),
        "scikit-learn": _version("scikit-learn"),
        "umap-learn": _version("umap-learn"),
    }


def _jsonable(o: Any) -> Any:
    """Numpy scalars/arrays, paths, NaN -> plain JSON (NaN/inf become null)."""
    if isinstance(o, dict):
        return {str(k): _jsonable(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [_jsonable(v) for v in o]
    if hasattr(o, "tolist") and not isinstance(o, (str, bytes)):
        return _jsonable(o.tolist())
    if isinstance(o, float):
        return o if math.isfinite(o) else None
    if isinstance(o, (str, int, bool)) or o is None:
        return o
    return str(o)


def format_result(res: dict[str, Any]) -> str:
    """The printed form: a title, the rows as an aligned table, targets and notes."""
    import pandas as pd

    lines = [f"== {res.get('name')} =="]
    rows = res.get("rows") or []
    if rows:
        with pd.option_context("display.max_columns", None, "display.width", 200,
                               "display.max_colwidth", 60):
            lines.append(pd.DataFrame(rows).to_string(index=False))
    else:
        lines.append("(no rows)")
    if res.get("headline"):
        lines.append("headline: " + json.dumps(_jsonable(res["headline"])))
    if res.get("targets"):
        lines.append("targets: " + json.dumps(_jsonable(res["targets"])))
    notes = res.get("notes")
    if notes:
        lines.append("notes: " + (notes if isinstance(notes, str) else " ".join(map(str, notes))))
    return "\n".join(lines)


def run_one(name: str, quick: bool) -> tuple[dict[str, Any] | None, str | None, float]:
    """Import and call one benchmark; returns (result, traceback text or None, seconds)."""
    module, func = BENCHMARKS[name].split(":")
    t0 = time.perf_counter()
    try:
        res = getattr(importlib.import_module(module), func)(quick=quick)
        if not isinstance(res, dict) or not isinstance(res.get("rows"), list):
            raise TypeError(f"{BENCHMARKS[name]} returned {type(res).__name__}; expected a dict with 'rows'")
        if not isinstance(res.get("headline"), dict):
            raise TypeError(f"{BENCHMARKS[name]} returned no 'headline' dict (the figures its issue names)")
        return res, None, time.perf_counter() - t0
    except Exception:  # noqa: BLE001 - a failing benchmark is reported, the others still run
        return None, traceback.format_exc(), time.perf_counter() - t0


def result_path(name: str, res: dict[str, Any], quick: bool, out_dir: Path = RESULTS_DIR) -> Path:
    """Where benchmark ``name``'s result ``res`` is written (``file_stem``, e.g. gpu.cuda: a
    result measured on a GPU)."""
    stem = str(res.get("file_stem", name))
    return out_dir / (f"{stem}.quick.json" if quick else f"{stem}.json")


def write_result(name: str, res: dict[str, Any], secs: float, info: dict[str, Any], quick: bool,
                 out_dir: Path = RESULTS_DIR) -> Path:
    """Write one result file; the one place every file gets its engine, commit and load when
    written (:func:`core.foundation.provenance.stamp`)."""
    path = result_path(name, res, quick, out_dir)
    res = {k: v for k, v in res.items() if k != "file_stem"}
    refresh = f"python -m benchmarks {name}" + (" --quick" if quick else "")
    record = {**_jsonable({**res, "name": res.get("name", name)}), "quick": quick,
              "seconds": round(secs, 3), "machine": info, "provenance": stamp(refresh)}
    path.write_text(json.dumps(record, indent=1) + "\n")
    return path
