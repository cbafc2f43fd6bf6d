"""``python -m benchmarks [NAME ...] [--quick]``: run benchmarks, print tables, write JSON.

No names = every benchmark in :data:`benchmarks.BENCHMARKS`. Each result is printed as an
aligned table (pandas) with its notes and targets, and written to
``benchmarks/results/NAME.json`` (``NAME.quick.json`` for ``--quick``) together with machine
facts (cores, load average, library versions, date, git commit) so that numbers from different
machines can be told apart, and a ``provenance`` block (:func:`core.foundation.provenance.stamp`: engine id,
commit, load when written, the refreshing command) that pages show beside every figure read. Exit code 1 if any benchmark raised, 2 for an unknown name, else 0.
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import os
import platform
import sys
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


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["rerun"]:
        from benchmarks.rerun import main as rerun

        return rerun(argv[1:])
    p = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.splitlines()[0])
    p.add_argument("names", nargs="*", metavar="NAME", help=f"any of: {', '.join(BENCHMARKS)}")
    p.add_argument("--quick", action="store_true", help="smaller problem sizes (smoke run)")
    p.add_argument("--results-dir", default=str(RESULTS_DIR), help="where NAME.json goes")
    args = p.parse_args(argv)
    unknown = [n for n in args.names if n not in BENCHMARKS]
    if unknown:
        print(f"benchmarks: error: unknown benchmark {', '.join(map(repr, unknown))}; "
              f"allowed: {', '.join(BENCHMARKS)}", file=sys.stderr)
        return 2
    names = args.names or list(BENCHMARKS)
    out_dir = Path(args.results_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    failed = []
    for name in names:
        print(f"running {name}{' (quick)' if args.quick else ''} ...", file=sys.stderr, flush=True)
        info = machine_info()
        res, tb, secs = run_one(name, args.quick)
        if res is None:
            failed.append(name)
            print(f"== {name} == FAILED after {secs:.1f} s\n{tb}", flush=True)
            continue
        print(format_result({**res, "name": res.get("name", name)}) + f"\n({secs:.1f} s)\n",
              flush=True)
        write_result(name, res, secs, info, args.quick, out_dir)
    if failed:
        print(f"benchmarks: {len(failed)} failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
