"""The ``privlab`` command line (console script ``privlab = core.cli:main``).

::

    privlab run CONFIG [--set key=value ...] [--json] [--no-cache] [--cache-dir DIR]
                       [--progress auto|bar|lines|off]
    privlab list [--kind K] [--limit N] [--json]
    privlab show KEY [--json]
    privlab delete KEY
    privlab export PATH [--format csv|json] [--kind K]
    privlab datasets [--json]

Data flows as everywhere else: config file -> ``core.config`` (validate) ->
``cache.store.ResultStore.get_or_run`` -> ``core.experiments.run``. Bad input of any kind
(missing file, invalid YAML, unknown key, out-of-range value, bad ``--set``, missing data)
prints one line ``privlab: error: ...`` on stderr and exits 2 with nothing stored; Ctrl-C exits
130 with nothing stored. Results live in ``--cache-dir``, else ``$PRIVLAB_CACHE_DIR``, else the
user cache dir. Heavy modules are imported only by the commands that need them.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

PROG = "privlab"
EXIT_OK, EXIT_USAGE, EXIT_INTERRUPTED = 0, 2, 130


class UsageError(Exception):
    """Bad command-line input; becomes ``privlab: error: <message>`` and exit code 2."""


class _Parser(argparse.ArgumentParser):
    """argparse that raises instead of printing usage and exiting (one-line errors)."""

    def error(self, message: str):  # type: ignore[override]
        raise UsageError(message)


# -------------------------------------------------------------------------------------------
# output helpers


def _one_line(text: str) -> str:
    return "; ".join(part.strip() for part in str(text).splitlines() if part.strip())


def _err(message: str) -> None:
    print(f"{PROG}: error: {_one_line(message)}", file=sys.stderr, flush=True)


def _fmt_num(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if v == int(v) and abs(v) < 1e15:
            return str(int(v))
        return f"{v:.4g}"
    return str(v)


def _table(rows: list[dict[str, Any]], cols: list[str]) -> str:
    """Left-aligned text table with a header row."""
    cells = [[_fmt_num(r.get(c)) for c in cols] for r in rows]
    widths = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(cols)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(cols, widths)).rstrip()]
    lines += ["  ".join(x.ljust(w) for x, w in zip(row, widths)).rstrip() for row in cells]
    return "\n".join(lines)


def _json_out(obj: Any) -> None:
    print(json.dumps(obj, indent=2, sort_keys=False, allow_nan=False, default=_json_default))


def _json_default(o: Any) -> Any:
    import numpy as np

    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, Path):
        return str(o)
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def _clean(v: Any) -> Any:
    """NaN/inf -> None so the JSON output is strict."""
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


class ProgressBar:
    """Progress callback ``(fraction, message)`` drawn on stderr.

    ``mode``: ``bar`` (tqdm, or a plain ``\\r`` bar without tqdm), ``lines`` (one line per new
    message, for logs and CI), ``off``, or ``auto`` = ``bar`` on a terminal, else ``off`` (so
    scripted use sees only results and one-line errors, as tqdm does by default).
    """

    def __init__(self, mode: str = "auto", stream=None) -> None:
        self.stream = stream or sys.stderr
        if mode == "auto":
            mode = "bar" if bool(getattr(self.stream, "isatty", lambda: False)()) else "off"
        self.mode = mode
        self._bar = None
        self._last_msg: str | None = None
        self._drawn = False

    def __call__(self, fraction: float, message: str = "") -> None:
        if self.mode == "off":
            return
        pct = 100.0 * min(max(float(fraction), 0.0), 1.0)
        if self.mode == "lines":
            if message and message != self._last_msg:
                print(f"{PROG}: [{pct:3.0f}%] {message}", file=self.stream, flush=True)
            self._last_msg = message
            return
        try:
            from tqdm import tqdm
        except ImportError:  # pragma: no cover - tqdm ships with the venv
            tqdm = None
        if tqdm is not None:
            if self._bar is None:
                self._bar = tqdm(total=100, file=self.stream, leave=False, dynamic_ncols=True,
                                 bar_format="{percentage:3.0f}%|{bar}| {elapsed} {desc}")
            self._bar.n = pct
            if message:
                self._bar.set_description_str(message[:60], refresh=False)
            self._bar.refresh()
        else:
            filled = int(pct // 5)
            line = f"\r[{'#' * filled}{'.' * (20 - filled)}] {pct:3.0f}% {message[:60]}"
            self.stream.write(line.ljust(90))
            self.stream.flush()
            self._drawn = True

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
        if self._drawn:
            self.stream.write("\r" + " " * 90 + "\r")
            self.stream.flush()
            self._drawn = False


# -------------------------------------------------------------------------------------------
# commands


def _store(args: argparse.Namespace):
    from cache.store import default_store

    return default_store(getattr(args, "cache_dir", None))


def _check_overrides(items: list[str]) -> None:
    """Reject malformed ``--set`` items before anything else runs (names the item)."""
    import yaml

    from core.config import ConfigError

    for item in items:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError([f"--set: got {item!r}; expected key=value, e.g. method=tsne"])
        try:
            yaml.safe_load(raw)
        except yaml.YAMLError:
            raise ConfigError([f"--set: got {item!r}; the value {raw!r} is not valid YAML"]) from None


def cmd_run(args: argparse.Namespace) -> int:
    from core.config import cache_key, load_config

    _check_overrides(args.set)
    cfg = load_config(args.config, args.set)
    bar = ProgressBar(args.progress)
    try:
        if args.no_cache:
            from core.experiments import run

            result = run(cfg, progress=bar)
        else:
            result = _store(args).get_or_run(cfg, progress=bar)
    finally:
        bar.close()
    key = result.key or cache_key(cfg)
    metrics = {k: _clean(float(v)) for k, v in result.metrics.items()}
    if args.json:
        _json_out({"key": key, "kind": result.kind, "from_cache": bool(result.from_cache),
                   "metrics": metrics})
        return EXIT_OK
    if result.from_cache:
        how = "from cache"
    else:
        secs = result.timings.get("total_s")
        how = f"computed in {secs:.1f} s" if secs is not None else "computed"
        if args.no_cache:
            how += ", not stored"
    print(f"{result.kind} run {key[:12]} ({how})")
    width = max((len(k) for k in metrics), default=0)
    for k, v in metrics.items():
        print(f"  {k.ljust(width)}  {_fmt_num(v)}")
    for note in result.info.get("notes", []) if isinstance(result.info, dict) else []:
        print(f"  note: {note}")
    print(f"key: {key}")
    return EXIT_OK


def _record_dict(rec: Any) -> dict[str, Any]:
    from dataclasses import asdict, is_dataclass

    d = asdict(rec) if is_dataclass(rec) else dict(vars(rec))
    d["metrics"] = {k: _clean(v) for k, v in (d.get("metrics") or {}).items()}
    return d


def cmd_list(args: argparse.Namespace) -> int:
    records = _store(args).list(kind=args.kind, limit=args.limit)
    rows = [_record_dict(r) for r in records]
    if args.json:
        _json_out(rows)
        return EXIT_OK
    if not rows:
        print("no stored runs" + (f" of kind {args.kind!r}" if args.kind else ""))
        return EXIT_OK
    table = []
    for r in rows:
        shown = list(r["metrics"].items())[:4]
        table.append({
            "key": r["key"][:12], "kind": r["kind"], "created": str(r.get("created", ""))[:19],
            "seconds": r.get("seconds"), "label": r.get("label") or "",
            "metrics": ", ".join(f"{k}={_fmt_num(v)}" for k, v in shown),
        })
    print(_table(table, ["key", "kind", "created", "seconds", "label", "metrics"]))
    return EXIT_OK


def cmd_show(args: argparse.Namespace) -> int:
    import yaml

    result = _store(args).get(args.key)
    if result is None:
        raise UsageError(f"key: no stored run matches {args.key!r} (see `privlab list`)")
    arts = {k: {"shape": list(v.shape), "dtype": str(v.dtype)} for k, v in sorted(result.artifacts.items())}
    if args.json:
        d = result.to_json_dict()
        d["artifacts"] = arts
        d.pop("artifact_names", None)
        _json_out(d)
        return EXIT_OK
    print(f"key      {result.key}")
    print(f"kind     {result.kind}")
    print(f"seed     {result.seed}")
    print(f"engine   {result.engine_version}")
    if result.timings:
        print("timings  " + ", ".join(f"{k}={v:.3g}s" for k, v in result.timings.items()))
    print("metrics:")
    width = max((len(k) for k in result.metrics), default=0)
    for k, v in result.metrics.items():
        print(f"  {k.ljust(width)}  {_fmt_num(float(v))}")
    if result.curves:
        print("curves:")
        for k, vs in result.curves.items():
            print(f"  {k} ({len(vs)} points)")
    if arts:
        print("artifacts:")
        width = max(len(k) for k in arts)
        for k, a in arts.items():
            print(f"  {k.ljust(width)}  {a['dtype']} {tuple(a['shape'])}")
    notes = result.info.get("notes") if isinstance(result.info, dict) else None
    if notes:
        print("notes:")
        for n in notes:
            print(f"  {n}")
    print("config:")
    for line in yaml.safe_dump(result.config, sort_keys=True).rstrip().splitlines():
        print(f"  {line}")
    return EXIT_OK


def cmd_delete(args: argparse.Namespace) -> int:
    if not _store(args).delete(args.key):
        raise UsageError(f"key: no stored run matches {args.key!r} (see `privlab list`)")
    print(f"deleted {args.key}")
    return EXIT_OK


def cmd_export(args: argparse.Namespace) -> int:
    fmt = args.format or ("json" if Path(args.path).suffix.lower() == ".json" else "csv")
    store = _store(args)
    n = len(store.list(kind=args.kind))
    out = store.export(args.path, fmt=fmt, kind=args.kind)
    print(f"wrote {n} run{'s' if n != 1 else ''} to {out} ({fmt})")
    return EXIT_OK


def cmd_datasets(args: argparse.Namespace) -> int:
    from core.data import describe_datasets

    rows = describe_datasets()
    if args.json:
        _json_out(rows)
        return EXIT_OK
    table = [
        {**r, "attributes": ", ".join(r["attributes"]), "available": "yes" if r["available"] else "no"}
        for r in rows
    ]
    print(_table(table, ["name", "kind", "source", "available", "task", "attributes", "description"]))
    return EXIT_OK


# -------------------------------------------------------------------------------------------
# parser and entry point


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog=PROG, description="privlab: utility-privacy tradeoff lab (engine CLI)")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def cache_dir(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--cache-dir", metavar="DIR", default=None,
                        help="result store directory (default: $PRIVLAB_CACHE_DIR or the user cache dir)")

    sp = sub.add_parser("run", help="run a config (or fetch its result from the cache)")
    sp.add_argument("config", metavar="CONFIG", help="YAML or JSON config file")
    sp.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="override a config field, e.g. --set method=tsne --set data.name=mnist5k")
    sp.add_argument("--json", action="store_true", help="print {key, kind, from_cache, metrics} as JSON")
    sp.add_argument("--no-cache", action="store_true", help="compute afresh; neither read nor write the store")
    sp.add_argument("--progress", choices=["auto", "bar", "lines", "off"], default="auto",
                    help="progress on stderr: auto = a bar on a terminal, nothing otherwise")
    cache_dir(sp)
    sp.set_defaults(func=cmd_run)

    sp = sub.add_parser("list", help="stored runs, newest first")
    sp.add_argument("--kind", default=None, help="only runs of this kind")
    sp.add_argument("--limit", type=int, default=None, help="at most N runs")
    sp.add_argument("--json", action="store_true")
    cache_dir(sp)
    sp.set_defaults(func=cmd_list)

    sp = sub.add_parser("show", help="one stored run by key or unique key prefix")
    sp.add_argument("key", metavar="KEY")
    sp.add_argument("--json", action="store_true")
    cache_dir(sp)
    sp.set_defaults(func=cmd_show)

    sp = sub.add_parser("delete", help="delete one stored run by key or unique key prefix")
    sp.add_argument("key", metavar="KEY")
    cache_dir(sp)
    sp.set_defaults(func=cmd_delete)

    sp = sub.add_parser("export", help="write all stored runs as a CSV or JSON table")
    sp.add_argument("path", metavar="PATH")
    sp.add_argument("--format", choices=["csv", "json"], default=None,
                    help="default: json for a .json path, else csv")
    sp.add_argument("--kind", default=None, help="only runs of this kind")
    cache_dir(sp)
    sp.set_defaults(func=cmd_export)

    sp = sub.add_parser("datasets", help="the data sets and whether they are available")
    sp.add_argument("--json", action="store_true")
    sp.set_defaults(func=cmd_datasets)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code (0 ok, 2 bad input, 130 interrupted)."""
    parser = build_parser()
    try:
        args = parser.parse_args(None if argv is None else list(argv))
    except UsageError as exc:
        _err(str(exc))
        return EXIT_USAGE
    except SystemExit as exc:  # --help
        return int(exc.code or 0)

    from core.config import ConfigError
    from core.progress import Cancelled

    try:
        return int(args.func(args))
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted; nothing stored", file=sys.stderr, flush=True)
        return EXIT_INTERRUPTED
    except Cancelled:
        print(f"{PROG}: cancelled; nothing stored", file=sys.stderr, flush=True)
        return EXIT_INTERRUPTED
    except (UsageError, ConfigError, ValueError) as exc:  # DataError is a ValueError
        _err(str(exc))
        return EXIT_USAGE
    except BrokenPipeError:  # pragma: no cover - e.g. `privlab list | head`
        return EXIT_OK
    except OSError as exc:
        where = f" ({exc.filename})" if getattr(exc, "filename", None) else ""
        _err(f"{exc.strerror or exc}{where}")
        return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
