"""``python -m benchmarks rerun [NAME ...] [--quick] [--write]``: rerun benchmarks' headlines on
the current engine and report every figure that moved beyond its stated noise.

A figure's noise: the interval the committed file stores beside it (``KEY_interval`` or
``KEY_ci``, ``[lo, hi]`` in the headline), else the relative tolerance its benchmark module
declares (``NOISE = {"KEY": 0.25}``), else :data:`DEFAULT_REL` for a real number (timings and
rates) and exact for a count, a flag, a string or a list. The committed files are rewritten only
with ``--write``. ``--quick``: the subset in :data:`QUICK`, which fits CI's budget. Exit code 1
when a figure moved or a benchmark failed, else 0.
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import sys
from pathlib import Path
from typing import Any

from benchmarks import BENCHMARKS
from benchmarks.harness import RESULTS_DIR, machine_info, result_path, run_one, write_result

#: benchmarks cheap enough for CI (seconds each on two loaded cores), rerun at full size
QUICK = ("channel_solve",)
#: relative noise of a real-valued figure whose benchmark declares none (timings vary this much
#: between runs on one machine)
DEFAULT_REL = 0.10


def noise_of(key: str, headline: dict[str, Any], declared: dict[str, float]) -> tuple[str, Any]:
    """("interval", [lo, hi]) from the file, ("relative", tol) declared or default, or
    ("exact", None)."""
    for suffix in ("_interval", "_ci"):
        iv = headline.get(key + suffix)
        if (isinstance(iv, list) and len(iv) == 2
                and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in iv)):
            return "interval", [float(iv[0]), float(iv[1])]
    if key in declared:
        return "relative", float(declared[key])
    old = headline.get(key)
    if isinstance(old, float):  # JSON keeps 1.0 apart from 1: a count is an int
        return "relative", DEFAULT_REL
    return "exact", None


def moved(old: Any, new: Any, noise: tuple[str, Any]) -> bool:
    """Whether ``new`` lies beyond ``old``'s noise."""
    kind, arg = noise
    num = (isinstance(old, (int, float)) and isinstance(new, (int, float))
           and not isinstance(old, bool) and not isinstance(new, bool))
    if kind == "interval" and num:
        return not arg[0] <= float(new) <= arg[1]
    if kind == "relative" and num:
        return not math.isclose(float(new), float(old), rel_tol=arg, abs_tol=1e-12)
    return old != new


def compare(name: str, old: dict[str, Any], new: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per headline figure of the committed file: old, new, noise and whether it
    moved (a figure the rerun no longer reports has moved)."""
    module = BENCHMARKS[name].split(":")[0]
    declared = getattr(importlib.import_module(module), "NOISE", {}) or {}
    rows = []
    for key, value in old.items():
        if key.endswith(("_interval", "_ci")):
            continue
        noise = noise_of(key, old, declared)
        new_value = new.get(key, "(missing)")
        rows.append({"benchmark": name, "figure": key, "committed": value, "now": new_value,
                     "noise": noise[0] if noise[1] is None else f"{noise[0]} {noise[1]}",
                     "moved": key not in new or moved(value, new_value, noise)})
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks rerun", description=__doc__.splitlines()[0])
    p.add_argument("names", nargs="*", metavar="NAME", help=f"any of: {', '.join(BENCHMARKS)}")
    p.add_argument("--quick", action="store_true", help=f"only the CI subset: {', '.join(QUICK)}")
    p.add_argument("--write", action="store_true", help="rewrite the committed result files")
    p.add_argument("--results-dir", default=str(RESULTS_DIR), help="where NAME.json is read")
    args = p.parse_args(argv)
    unknown = [n for n in args.names if n not in BENCHMARKS]
    if unknown:
        print(f"benchmarks rerun: error: unknown benchmark {', '.join(map(repr, unknown))}; "
              f"allowed: {', '.join(BENCHMARKS)}", file=sys.stderr)
        return 2
    names = args.names or list(QUICK if args.quick else BENCHMARKS)
    out_dir = Path(args.results_dir)
    rows: list[dict[str, Any]] = []
    failed = []
    for name in names:
        print(f"rerunning {name} ...", file=sys.stderr, flush=True)
        info = machine_info()
        res, tb, secs = run_one(name, quick=False)
        if res is None:
            failed.append(name)
            print(f"== {name} == FAILED after {secs:.1f} s\n{tb}", flush=True)
            continue
        path = result_path(name, res, False, out_dir)
        try:
            old = json.loads(path.read_text()).get("headline") or {}
        except (OSError, ValueError):
            old = {}
        rows += compare(name, old, res["headline"])
        if args.write:
            write_result(name, res, secs, info, False, out_dir)
    out = [r for r in rows if r["moved"]]
    for r in rows:
        flag = "MOVED" if r["moved"] else "ok   "
        print(f"{flag} {r['benchmark']}.{r['figure']}: committed {r['committed']!r}, "
              f"now {r['now']!r} (noise: {r['noise']})")
    print(f"{len(out)} of {len(rows)} figures moved beyond their noise"
          + (f"; {len(failed)} failed: {', '.join(failed)}" if failed else "")
          + ("" if args.write else "; committed files unchanged (--write rewrites them)"))
    return 1 if out or failed else 0
