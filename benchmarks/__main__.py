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
import sys
from pathlib import Path

from benchmarks import BENCHMARKS
from benchmarks.harness import RESULTS_DIR, format_result, machine_info, run_one, write_result


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
