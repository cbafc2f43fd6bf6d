"""The ``privlab`` command line (console script ``privlab = cli.main:main``).

::

    privlab run CONFIG [--set key=value ...] [--json] [--no-cache] [--cache-dir DIR]
                       [--progress auto|bar|lines|off]
    privlab sweep CONFIG [--set key=value ...] [--executor serial|local|ray] [--workers N]
                         [--csv PATH] [--json] [--cache-dir DIR] [--progress ...]
    privlab list [--kind K] [--limit N] [--json]
    privlab show KEY [--json]
    privlab delete KEY
    privlab export PATH [--format csv|json] [--kind K] [--force]
    privlab bundle KEY -o NAME.zip [--no-figures] [--force]
    privlab bundle --comparison SPEC.yaml -o NAME.zip [--no-figures] [--force]
    privlab import NAME.zip [--read-only] [--json]
    privlab datasets [--json]
    privlab parts [--family F] [--json]
    privlab papers [--json] [--preset ID]
    privlab audit --weights FILE --data NAME (--members FILE | --members-column COL)
                  [--model ARCH] [--epochs N] [--optimizer O] [--lr X] [--batch-size N] ...
    privlab data add NAME --csv PATH --task COL --private COL [--private COL ...] [--ignore COL ...]
    privlab data add NAME --images DIR [--size 28] [--color gray|rgb] [--attributes CSV]
    privlab data list [--json]
    privlab data remove NAME
    privlab model add NAME --from FILE.py:FACTORY --data D [--data D ...] [--groupnorm] ...
    privlab model list [--json] | privlab model remove NAME
    privlab du [--json]
    privlab gc [--older-engines] [--max-size 2GB] [--grace SECONDS] [--dry-run] [--json]
    privlab verify [--repair] [--json] | privlab verify --recompute KEY [--json]

Data flows as everywhere else: config file -> ``core.config.schema`` (validate) ->
``cache.store.ResultStore.get_or_run`` -> ``core.runs.experiments.run``. Bad input of any kind
(missing file, invalid YAML, unknown key, out-of-range value, bad ``--set``, missing data)
prints one line ``privlab: error: ...`` on stderr and exits 2 with nothing stored; a store that
cannot be read or written (full disk, read-only mount, permission, a corrupt entry asked for by
``show``) prints one line and exits 1, with nothing already stored changed; any other failure is
one line too and exits 1 (``PRIVLAB_DEBUG=1`` shows the traceback); Ctrl-C exits 130 with
nothing stored. Results live in ``--cache-dir``, else ``$PRIVLAB_CACHE_DIR``, else the
user cache dir. Heavy modules are imported only by the commands that need them.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cli.audit import add_command as add_audit_command
from cli.output import (
    EXIT_FAILURE,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    UsageError,
    _fmt_num,
    _json_out,
    _table,
)

PROG = "privlab"
DEBUG_ENV = "PRIVLAB_DEBUG"


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


def _fitted(rows: list[dict[str, Any]], cols: list[str], width: int | None) -> str:
    """:func:`_table` when it fits ``width`` columns (None: always); else one record per row,
    its first two columns on a line and the others as ``column: value`` wrapped below them,
    since narrowing a wide table's columns would break its names and values mid-word."""
    table = _table(rows, cols)
    if width is None or max(map(len, table.splitlines()), default=0) <= width:
        return table
    out = []
    for r in rows:
        out.append(_wrapped("  ".join(_fmt_num(r.get(c)) for c in cols[:2]), width))
        rest = "; ".join(f"{c}: {_fmt_num(r.get(c))}" for c in cols[2:])
        if rest:
            out.append(_wrapped(f"  {rest}", width, hang=0))
    return "\n".join(out)


def _width(args: argparse.Namespace) -> int | None:
    """The columns a table may take: the terminal's (``$COLUMNS``, else 100 when not a
    terminal), or None for ``--wide`` (one line per row, however long)."""
    import shutil

    if getattr(args, "wide", False):
        return None
    return max(40, shutil.get_terminal_size((100, 24)).columns)


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
    """The store at ``--cache-dir``; what opening it found (an index rebuilt from the
    entries) is one ``privlab: note:`` line each on stderr."""
    import warnings

    from cache.store import default_store

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="result store:", category=RuntimeWarning)
        store = default_store(getattr(args, "cache_dir", None))
    while store.notes:
        print(f"{PROG}: note: {_one_line(store.notes.pop(0))}", file=sys.stderr, flush=True)
    return store


def _check_overrides(items: list[str]) -> None:
    """Reject malformed ``--set`` items before anything else runs (names the item)."""
    from core.config.files import ConfigFileError, parse_value
    from core.config.schema import ConfigError

    for item in items:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError([f"--set: got {item!r}; expected key=value, e.g. method=tsne"])
        try:
            parse_value(raw, f"--set {key.strip()}")
        except ConfigFileError as exc:
            raise ConfigError([f"--set: got {item[:60]!r}; {exc}"]) from None


def _notes_and_caveats(result: Any) -> tuple[list[str], list[dict[str, Any]]]:
    """The run's notes and its caveats (:mod:`core.foundation.caveats`; derived from the numbers for a
    run stored before caveats were recorded), as ``run`` and ``show`` print them."""
    from core.foundation import caveats

    info = result.info if isinstance(result.info, dict) else {}
    return [str(n) for n in info.get("notes", [])], caveats.of_result(result)


def cmd_run(args: argparse.Namespace) -> int:
    from core.config.schema import load_config

    _check_overrides(args.set)
    return _run_config(load_config(args.config, args.set), args)[0]


def _run_config(cfg: Any, args: argparse.Namespace) -> tuple[int, str | None]:
    """Compute (or fetch) a validated config and print its metrics, notes and caveats (``run``
    and ``audit``); returns the exit code and the stored key (None with ``--no-cache``)."""
    from core.config.schema import cache_key

    bar = ProgressBar(args.progress)
    try:
        if args.no_cache:
            from core.runs.experiments import run

            result = run(cfg, progress=bar)
        else:
            result = _store(args).get_or_run(cfg, progress=bar)
    finally:
        bar.close()
    key = result.key or cache_key(cfg)
    metrics = {k: _clean(float(v)) for k, v in result.metrics.items()}
    notes, caveats = _notes_and_caveats(result)
    stored = None if args.no_cache else key
    if args.json:
        _json_out({"key": key, "kind": result.kind, "from_cache": bool(result.from_cache),
                   "metrics": metrics, "notes": notes, "caveats": caveats})
        return EXIT_OK, stored
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
    for note in notes:
        print(f"  note: {note}")
    for c in caveats:
        print(f"  caveat [{c['label']}] {', '.join(c['metrics']) or '-'}: {c['text']}")
    print(f"key: {key}")
    return EXIT_OK, stored


def cmd_sweep(args: argparse.Namespace) -> int:
    """Run the missing points of a ``kind: sweep`` config and print its table (one row per
    point); ``--executor`` / ``--workers`` choose where points run, which changes no key."""
    from core.config.schema import ConfigError, load_config, parse_config
    from core.config.sweeps import columns_of, rows_to_csv

    _check_overrides(args.set)
    cfg = load_config(args.config, args.set)
    if cfg.kind != "sweep":
        raise ConfigError([f"kind: got {cfg.kind!r}; `privlab sweep` runs kind: sweep "
                           + "(base, grid, seeds); use `privlab run` for one run"])
    where = {k: v for k, v in (("executor", args.executor), ("workers", args.workers)) if v is not None}
    if where:
        cfg = parse_config({**cfg.model_dump(mode="json"), **where})
    bar = ProgressBar(args.progress)
    try:
        result = _store(args).get_or_run(cfg, progress=bar)
    finally:
        bar.close()
    rows = result.info.get("rows", [])
    cols = result.info.get("columns") or columns_of(rows)
    if args.csv:
        Path(args.csv).write_text(rows_to_csv(rows, cols))
    metrics = {k: _clean(float(v)) for k, v in result.metrics.items()}
    if args.json:
        _json_out({"key": result.key, "kind": result.kind, "from_cache": bool(result.from_cache),
                   "metrics": metrics, "columns": cols,
                   "rows": [{c: _clean(r.get(c)) for c in cols} for r in rows]})
        return EXIT_OK
    how = "from cache" if result.from_cache else f"{cfg.executor}, {metrics['seconds']:.1f} s"
    print(f"sweep {result.key[:12]} ({how}): {metrics['points_total']:.0f} points, "
          f"{metrics['points_run']:.0f} run, {metrics['points_cached']:.0f} from the store")
    shown = [c for c in cols if not c.endswith(("_lo", "_hi"))]
    print(_table([{**r, "key": str(r.get("key", ""))[:12]} for r in rows], shown))
    if args.csv:
        print(f"wrote {len(rows)} rows to {args.csv}")
    print(f"key: {result.key}")
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
    from cache.bundle.origin import origin_text

    table = []
    for r in rows:
        shown = list(r["metrics"].items())[:4]
        table.append({
            "key": r["key"][:12], "kind": r["kind"], "created": str(r.get("created", ""))[:19],
            "seconds": r.get("seconds"), "label": r.get("label") or "",
            "metrics": ", ".join(f"{k}={_fmt_num(v)}" for k, v in shown),
            "origin": origin_text(r.get("origin")),
        })
    cols = ["key", "kind", "created", "seconds", "label", "metrics"]
    print(_table(table, cols + (["origin"] if any(t["origin"] for t in table) else [])))
    return EXIT_OK


def cmd_show(args: argparse.Namespace) -> int:
    import yaml

    from cache.entry import CorruptEntry
    from cache.errors import StoreError

    try:
        result = _store(args).get(args.key, strict=True)
    except CorruptEntry as exc:
        raise StoreError(f"run {exc}: the stored entry is corrupt and is never served; it is "
                         "left in place (`privlab verify --repair` removes it, `privlab run` "
                         "of its config recomputes it)") from None
    if result is None:
        raise UsageError(f"key: no stored run matches {args.key!r} (see `privlab list`)")
    arts = {k: {"shape": list(v.shape), "dtype": str(v.dtype)} for k, v in sorted(result.artifacts.items())}
    notes, caveats = _notes_and_caveats(result)
    if args.json:
        d = result.to_json_dict()
        d["artifacts"] = arts
        d.pop("artifact_names", None)
        d["notes"], d["caveats"] = notes, caveats
        _json_out(d)
        return EXIT_OK
    print(f"key      {result.key}")
    print(f"kind     {result.kind}")
    print(f"seed     {result.seed}")
    print(f"engine   {result.engine_version}")
    from cache.bundle.origin import origin_text

    origin = next((origin_text(r.origin) for r in _store(args).list(kind=result.kind)
                   if r.key == result.key), "")
    if origin:
        print(f"origin   {origin}")
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
    if notes:
        print("notes:")
        for n in notes:
            print(f"  {n}")
    if caveats:
        print("caveats:")
        for c in caveats:
            print(f"  [{c['label']}] {', '.join(c['metrics']) or '-'}: {c['text']}")
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
    out = store.export(args.path, fmt=fmt, kind=args.kind, force=args.force)
    print(f"wrote {n} run{'s' if n != 1 else ''} to {out} ({fmt})")
    return EXIT_OK


def cmd_bundle(args: argparse.Namespace) -> int:
    """A run, a sweep or a comparison as one zip (:func:`cache.bundle.write_bundle`)."""
    from cache.bundle import write_bundle
    from core.runs.compare import load_spec

    if (args.key is None) == (args.comparison is None):
        raise UsageError("bundle: give a run or sweep KEY, or --comparison SPEC.yaml (one of them)")
    out = Path(args.output).expanduser()
    if out.exists() and not args.force:
        raise UsageError(f"bundle: {out} exists; give --force to overwrite it")
    target = args.key if args.comparison is None else load_spec(args.comparison)
    figures = not args.no_figures
    if figures:
        import dashboard.components.bundle_figures  # noqa: F401 -- registers the figures
    info = write_bundle(target, out, store=_store(args), figures=figures)
    print(f"wrote {info.sentence}")
    for note in info.notes:
        print(f"{PROG}: note: {_one_line(note)}", file=sys.stderr)
    return EXIT_OK


def cmd_import(args: argparse.Namespace) -> int:
    """Runs from a bundle into the store (:func:`cache.bundle.import_bundle`)."""
    from cache.bundle import import_bundle

    report = import_bundle(args.path, store=_store(args), read_only=args.read_only)
    if args.json:
        _json_out({"source": report.source, "kind": report.kind, "keys": report.keys,
                   "imported": report.imported, "already": report.already,
                   "read_only": report.read_only, "engine": report.engine,
                   "notes": report.notes})
    else:
        print(report.sentence)
        for note in report.notes:
            print(f"{PROG}: note: {_one_line(note)}", file=sys.stderr)
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
    if not any(r["source"] == "user" for r in rows):
        print("(add your own CSV or image folder: privlab data add NAME --csv PATH ... / --images DIR)")
    return EXIT_OK


def cmd_papers(args: argparse.Namespace) -> int:
    """The paper-check table (:mod:`core.paper_check.papers`): each claim, the paper's citation, quote and
    number, ours at every scale measured and the verdict (holds / does not hold / not resolved,
    from the 95 % interval at the largest scale measured), our own findings apart, and the
    three counts; ``--preset ID`` prints that paper-scale preset's config as YAML instead."""
    from core.paper_check import arch as paper_arch
    from core.paper_check import papers

    if args.preset is not None:
        from core.attacks import lira_reference

        if args.preset == lira_reference.PRESET_ID:
            print(lira_reference.preset_yaml(), end="")
            return EXIT_OK
        if args.preset not in papers.PRESETS:
            raise UsageError(f"--preset: got {args.preset!r}; allowed: "
                             f"{', '.join([*papers.PRESETS, lira_reference.PRESET_ID])}")
        import yaml

        cfg = papers.preset_config(args.preset).model_dump(mode="json")
        p = papers.PRESETS[args.preset]
        print(f"# {args.preset}: {p.paper} at the paper's data and epochs; the paper's model: "
              f"{p.paper_model}; this config trains "
              f"{p.our_model or 'it: model.arch ' + str(cfg.get('model', {}).get('arch'))}; "
              f"needs {p.data}/ under "
              f"$PRIVLAB_DATA_DIR; the claim's direction needs --set {p.grid}")
        print(yaml.safe_dump(cfg, sort_keys=False, allow_unicode=True), end="")
        return EXIT_OK
    from cache.errors import StoreError

    try:  # preset runs made on CUDA answer the largest-preset column
        runs = papers.runs_from_records(_store(args).list())
    except StoreError as exc:
        print(f"{PROG}: note: result store not read ({_one_line(str(exc))}); "
              "stored preset runs not shown", file=sys.stderr, flush=True)
        runs = []
    rows = papers.build_table(runs=runs)
    head = papers.headline(rows)
    if args.json:
        _json_out({"headline": head, "rows": rows})
        return EXIT_OK
    for origin, title in ((papers.PAPER, "Paper claims"),
                          (papers.OWN, "Our own findings (no paper makes these claims)")):
        print(f"== {title} ==")
        for r in (r for r in rows if r["origin"] == origin):
            print(f"{r['paper']} · {r['claim_id']}: {r['verdict']}"
                  + (f" (decided at: {r['decided_by']})" if len(r["cells"]) > 1 else ""))
            print(f"  claim    {r['statement']}")
            if r["citation"]:
                print(f"  paper    {r['citation']}: \"{r['quote']}\"")
            print(f"  number   {r['paper_number']}")
            for c in r["cells"]:
                print(f"  ours     {c['text']} — {r['metric']}; {c['setting']}")
            big = r["ours_largest"]
            if big not in r["cells"]:
                print(f"  largest  {big['text']}" + (f"\n           run: {big['command']}"
                                                      if big.get("command") else ""))
            if r.get("paper_arch"):
                print(f"  arch     {paper_arch.short(r)}")
            if r["note"]:
                print(f"  note     {r['note']}")
    print(paper_arch.summary_sentence(rows, papers.PAPER))
    print(papers.counts_sentence(head))
    return EXIT_OK


def _wrapped(line: str, width: int | None, hang: int = 2) -> str:
    """An indented line of prose wrapped to ``width`` (None: as it is), its continuation
    lines indented ``hang`` more columns."""
    import textwrap

    if width is None or len(line) <= width:
        return line
    indent = " " * (len(line) - len(line.lstrip()) + hang)
    return textwrap.fill(line, width, subsequent_indent=indent, break_on_hyphens=False)


def _parts_models(args: argparse.Namespace) -> int:
    """``privlab parts --family models``: every registered architecture, its inputs, widths,
    parameters and forward cost at its reference input (full and CPU width)."""
    from core.models import describe_costs

    models = describe_costs()
    if args.json:
        _json_out({"models": models})
        return EXIT_OK

    def mega(n: int) -> str:
        return f"{n / 1e6:.3f} M" if n >= 1e5 else f"{n:,}"

    rows = []
    for m in models:
        ref = m["reference"]
        rows.append({
            "model": m["name"], "title": m["title"], "inputs": ", ".join(m["inputs"]),
            "resize": "-" if m["side"] is None else f"{m['resize']} to {m['side']}",
            "roles": ", ".join(m["roles"]),
            "reference": "×".join(map(str, ref["in_shape"])) + f", {ref['n_classes']} classes",
            "params": mega(m["params"]["classifier"]),
            "MFLOPs/fwd": f"{m['forward_flops'] / 1e6:.2f}",
            "CPU width": f"{m['cpu_width']:g}",
            "params at CPU width": mega(m["params_cpu_width"]["classifier"])})
    print(_fitted(rows, list(rows[0]) if rows else ["model"], _width(args)))
    for m in models:
        if len(m["roles"]) > 1:
            print(_wrapped(f"  {m['name']}: " + "; ".join(f"{r} {mega(n)}"
                                                           for r, n in m["params"].items()),
                           _width(args)))
    return EXIT_OK


def cmd_parts(args: argparse.Namespace) -> int:
    """Every registered defense and attack: family, release, knob, threat model."""
    from core.foundation.parts import FAMILIES, describe

    if args.family == "models":
        return _parts_models(args)
    parts = describe()
    if args.family is not None:
        if args.family not in FAMILIES:
            raise UsageError(f"--family: got {args.family!r}; allowed: "
                             f"{', '.join(FAMILIES)}, models")
        parts = {"defenses": [d for d in parts["defenses"] if args.family in d["families"]],
                 "attacks": [a for a in parts["attacks"] if a["family"] == args.family]}
    if args.json:
        _json_out(parts)
        return EXIT_OK
    rows = []
    for d in parts["defenses"]:
        k = d["knob"]
        knob = "-" if k is None else (f"{k['symbol']} = {k['field']} in [{k['low']:g}, "
                                      f"{k['high']:g}] {k['scale']}, "
                                      f"{k['direction'].replace('_', ' ')}")
        releases = "; ".join(f"{f}: {' + '.join(r)}" for f, r in d["release"].items())
        rows.append({"defense": d["name"], "title": d["title"], "release": releases,
                     "knob": knob, "accounting": d["accounting"]})
    width = _width(args)
    if width is not None:
        print("defenses (--wide: one line each; --json: everything):")
    print(_fitted(rows, ["defense", "title", "release", "knob", "accounting"], width))
    for family in dict.fromkeys(a["family"] for a in parts["attacks"]):
        atts = [a for a in parts["attacks"] if a["family"] == family]
        print(f"\nattacks of {family} ({FAMILIES.get(family).title}):")
        print(_fitted([{"attack": a["config_name"], "title": a["title"],
                        "registered as": a["name"], "accepts": ", ".join(a["accepts"]),
                        "needs": ", ".join(a["needs"]) or "-", "role": a["role"],
                        "listed": "yes" if a["selectable"] else "always / switch",
                        "pools targets": "yes" if a["pools_targets"] else "no"} for a in atts],
                      ["attack", "title", "registered as", "accepts", "needs", "role", "listed",
                       "pools targets"], width))
        for a in atts:
            t = a["threat"]
            print(_wrapped(f"  {a['config_name']}: sees {t['sees']}; knows {t['knows']}; "
                           f"goal: {t['goal']}", width))
    return EXIT_OK


def cmd_data_add(args: argparse.Namespace) -> int:
    from core.data import user

    if args.csv is not None:
        for flag, val in (("--size", args.size), ("--color", args.color), ("--attributes", args.attributes)):
            if val is not None:
                raise UsageError(f"{flag}: only for --images; a CSV set takes --task, --private, --ignore")
        if not args.task:
            raise UsageError("--task: required with --csv (the column to predict)")
        if not args.private:
            raise UsageError("--private: required with --csv (one or more private attribute columns)")
        entry = user.add_csv(args.name, args.csv, args.task, args.private, args.ignore,
                             replace=args.replace)
        what = (f"tabular, {entry['rows']:,} rows, task {entry['task']} "
                f"({len(entry['classes'])} classes), private {', '.join(entry['private'])}, "
                f"{entry['features']} feature columns")
    else:
        for flag, val in (("--task", args.task), ("--private", args.private), ("--ignore", args.ignore)):
            if val:
                raise UsageError(f"{flag}: only for --csv; an image set takes --size, --color, --attributes")
        entry = user.add_images(args.name, args.images, size=28 if args.size is None else args.size,
                                color=args.color or "gray", attributes=args.attributes,
                                replace=args.replace)
        what = (f"images, {entry['rows']:,} images {entry['size']}x{entry['size']} {entry['color']}, "
                f"{len(entry['classes'])} classes, private {', '.join(entry['private'])}")
    print(f"registered {entry['name']}: {what}")
    for note in entry.get("notes", []):  # cells imputed, columns left out, images converted
        print(f"  note: {note}")
    print(f"  fingerprint {entry['fingerprint'][:12]}; use it as data: {{name: {entry['name']}}}")
    return EXIT_OK


def cmd_data_list(args: argparse.Namespace) -> int:
    from core.data import user

    rows = []
    for name, e in user.entries(with_broken=True).items():
        if "error" in e:
            rows.append({"name": name, "status": "broken", "error": e["error"]})
            continue
        rows.append({
            "name": name, "kind": e["kind"], "status": user.status(e), "rows": e["rows"],
            "classes": len(e["classes"]), "private": list(e["private"]), "path": e["path"],
            "fingerprint": e["fingerprint"], "registered": e.get("registered"),
        })
    if args.json:
        _json_out(rows)
        return EXIT_OK
    if not rows:
        print(f"no registered data sets in {user.registry_dir()} (privlab data add NAME ...)")
        return EXIT_OK
    table = [{**r, "private": ", ".join(r.get("private", [])),
              "fingerprint": r.get("fingerprint", "")[:12], "path": r.get("path", r.get("error"))}
             for r in rows]
    print(_table(table, ["name", "kind", "status", "rows", "classes", "private", "fingerprint", "path"]))
    if any(r["status"] == "changed" for r in rows):
        print("changed: size or modification time differ from the registration; a run refuses "
              "files whose contents changed until they are registered again (privlab data add "
              "... --replace)")
    return EXIT_OK


def cmd_data_remove(args: argparse.Namespace) -> int:
    from core.data import user

    path = user.remove(args.name)
    print(f"removed {args.name} ({path}; the data files are untouched)")
    return EXIT_OK


def cmd_du(args: argparse.Namespace) -> int:
    from cache.gc import format_bytes, store_usage

    u = store_usage(_store(args))
    if args.json:
        _json_out(u)
        return EXIT_OK
    from core.foundation.wording import counted

    print(f"store {u['root']}: {format_bytes(u['total_bytes'])} ({counted(u['runs_count'], 'run')} "
          f"{format_bytes(u['runs_bytes'])}, {u['stage_entries']} stage entries "
          f"{format_bytes(u['stages_bytes'])}, index {format_bytes(u['index_bytes'])}, "
          f"other {format_bytes(u['other_bytes'])}); running engine {u['engine']}")

    def rows(rs: list[dict[str, Any]], n: str) -> list[dict[str, Any]]:
        return [{**r, "engine": r["engine"] + ("" if r["current"] else " (older)"),
                 "size": format_bytes(r["bytes"]), n: r[n]} for r in rs]

    if u["runs"]:
        print("\nruns by kind and engine:")
        print(_table(rows(u["runs"], "runs"), ["kind", "engine", "runs", "size"]))
    if u["stages"]:
        print("\nstage entries by stage and engine:")
        print(_table(rows(u["stages"], "entries"), ["stage", "engine", "entries", "size"]))
    return EXIT_OK


def cmd_gc(args: argparse.Namespace) -> int:
    from cache.gc import collect, format_bytes, parse_size

    max_bytes = None if args.max_size is None else parse_size(args.max_size)
    from core.foundation.checks import check_range

    check_range("--grace", args.grace, 0.0, float("inf"), hi_open=True, note="seconds")
    report = collect(_store(args), older_engines=args.older_engines, max_bytes=max_bytes,
                     dry_run=args.dry_run, grace_s=args.grace)
    if args.json:
        _json_out(report.to_dict())
        return EXIT_OK
    shown = 20
    for r in report.removed[:shown]:
        print(f"  {r['what']:5}  {r['key'][:12]}  {r['kind']:<18} {r['engine']:<22} "
              f"{format_bytes(r['bytes']):>9}  {r['reason']}")
    if len(report.removed) > shown:
        print(f"  ... and {len(report.removed) - shown} more")
    for k in report.skipped_locked:
        print(f"  skipped {k[:12]}: locked by another process (being computed or repaired)")
    print(report.summary() + (" (dry run: nothing removed)" if args.dry_run else ""))
    return EXIT_OK


def cmd_recompute(args: argparse.Namespace) -> int:
    """``privlab verify --recompute KEY``: an imported run computed here, each metric compared
    with the bundle's within their intervals (:mod:`cache.bundle.recompute`). Exit 0 when all
    agree, 1 otherwise."""
    from cache.bundle.recompute import recompute

    got = recompute(_store(args), args.recompute)
    if args.json:
        _json_out(got.to_dict())
        return EXIT_OK if got.agree else EXIT_FAILURE
    rows = [{"metric": c.name, "bundle": "-" if c.imported is None else f"{c.imported:.6g}",
             "here": "-" if c.here is None else f"{c.here:.6g}",
             "interval": "-" if c.interval is None else
             f"[{c.interval[0]:.4g}, {c.interval[1]:.4g}]",
             "agrees": "yes" if c.agrees else "NO", "how": c.how} for c in got.checks]
    print(_table(rows, ["metric", "bundle", "here", "interval", "agrees", "how"]))
    print(got.sentence)
    return EXIT_OK if got.agree else EXIT_FAILURE


def add_recompute(sp: argparse.ArgumentParser) -> None:
    """``--recompute KEY`` on ``privlab verify``."""
    sp.add_argument("--recompute", metavar="KEY", default=None,
                    help="compute an imported run here and say whether its numbers agree with "
                         "the bundle's within their intervals (exit 1 when they do not)")


def cmd_verify(args: argparse.Namespace) -> int:
    """Check the index, every run and every stage entry; ``--repair`` removes or rebuilds only
    what fails. Exit 0 when nothing is (left) wrong, 1 otherwise."""
    if getattr(args, "recompute", None):
        return cmd_recompute(args)
    report = _store(args).verify(repair=args.repair)
    if args.json:
        _json_out(report.to_dict())
        return EXIT_OK if report.clean else EXIT_FAILURE
    shown = 20
    problems = ([("index", report.index)] if report.index != "ok" else []) + [
        (what, line) for what, lines in (
            ("corrupt", report.entries_corrupt), ("damaged row", report.rows_damaged),
            ("no row, sound", report.orphans_sound), ("no row, corrupt", report.orphans_corrupt),
            ("corrupt stage", report.stages_corrupt), ("unreadable", report.unreadable),
            ("in use", report.skipped_locked))
        for line in lines]
    for what, line in problems[:shown]:
        print(f"  {what:15}  {_one_line(line)}")
    if len(problems) > shown:
        print(f"  ... and {len(problems) - shown} more")
    print(report.summary())
    return EXIT_OK if report.clean else EXIT_FAILURE


# -------------------------------------------------------------------------------------------
# parser and entry point


def cmd_report(args: argparse.Namespace) -> int:
    """The privacy report of a stored run, sweep or comparison (:mod:`core.report`)."""
    from core.report import build_report
    from core.runs.compare import load_spec as load_comparison

    if (args.key is None) == (args.comparison is None):
        raise UsageError("report: give a stored run or sweep KEY, or --comparison SPEC.yaml")
    target = load_comparison(args.comparison) if args.comparison else args.key
    report = build_report(target, store=_store(args), level=args.level)
    print(report.recommendation.sentence)
    print(f"report: {report.save(args.output)}")
    if args.pdf:
        # --pdf alone: beside the HTML file, under its name
        pdf = Path(args.output).with_suffix(".pdf") if args.pdf is True else Path(args.pdf)
        print(f"pdf: {pdf} ({report.to_pdf(pdf)} pages)")
    return EXIT_OK


def _cache_dir(sp: argparse.ArgumentParser) -> None:
    """The ``--cache-dir`` option every store command takes."""
    sp.add_argument("--cache-dir", metavar="DIR", default=None,
                    help="result store directory (default: $PRIVLAB_CACHE_DIR or the user cache dir)")


def _add_run_commands(sub: Any) -> None:
    """``run`` and ``sweep``: compute configs (or fetch them from the store)."""
    sp = sub.add_parser("run", help="run a config (or fetch its result from the cache)")
    sp.add_argument("config", metavar="CONFIG", help="YAML or JSON config file")
    sp.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="override a config field, e.g. --set method=tsne --set data.name=mnist5k")
    sp.add_argument("--json", action="store_true", help="print {key, kind, from_cache, metrics} as JSON")
    sp.add_argument("--no-cache", action="store_true", help="compute afresh; neither read nor write the store")
    sp.add_argument("--progress", choices=["auto", "bar", "lines", "off"], default="auto",
                    help="progress on stderr: auto = a bar on a terminal, nothing otherwise")
    _cache_dir(sp)
    sp.set_defaults(func=cmd_run)

    sp = sub.add_parser("sweep", help="run a sweep config's missing points; print one row per point")
    sp.add_argument("config", metavar="CONFIG", help="YAML or JSON config of kind sweep")
    sp.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="override a field, e.g. --set base.fl.rounds=2 --set seeds=[0,1] "
                         "--set 'grid={defense.tradeoff_lambda: [0, 1]}'")
    sp.add_argument("--executor", choices=["serial", "local", "ray"], default=None,
                    help="where points run (default: the config's); part of no cache key")
    sp.add_argument("--workers", type=int, default=None, metavar="N",
                    help="local: processes (default: usable cores); ray: tasks in flight")
    sp.add_argument("--csv", metavar="PATH", default=None, help="also write the rows as CSV")
    sp.add_argument("--json", action="store_true", help="print {key, metrics, columns, rows} as JSON")
    sp.add_argument("--progress", choices=["auto", "bar", "lines", "off"], default="auto",
                    help="progress on stderr: auto = a bar on a terminal, nothing otherwise")
    _cache_dir(sp)
    sp.set_defaults(func=cmd_sweep)


def _add_store_commands(sub: Any) -> None:
    """The stored runs: ``list``, ``show``, ``delete``, ``export``, ``bundle``, ``import``,
    ``report``."""
    sp = sub.add_parser("list", help="stored runs, newest first")
    sp.add_argument("--kind", default=None, help="only runs of this kind")
    sp.add_argument("--limit", type=int, default=None, help="at most N runs")
    sp.add_argument("--json", action="store_true")
    _cache_dir(sp)
    sp.set_defaults(func=cmd_list)

    sp = sub.add_parser("show", help="one stored run by key or unique key prefix")
    sp.add_argument("key", metavar="KEY")
    sp.add_argument("--json", action="store_true")
    _cache_dir(sp)
    sp.set_defaults(func=cmd_show)

    sp = sub.add_parser("delete", help="delete one stored run by key or unique key prefix")
    sp.add_argument("key", metavar="KEY")
    _cache_dir(sp)
    sp.set_defaults(func=cmd_delete)

    sp = sub.add_parser("export", help="write all stored runs as a CSV or JSON table")
    sp.add_argument("path", metavar="PATH")
    sp.add_argument("--format", choices=["csv", "json"], default=None,
                    help="default: json for a .json path, else csv")
    sp.add_argument("--kind", default=None, help="only runs of this kind")
    sp.add_argument("--force", action="store_true",
                    help="replace an existing file (a symbolic link is replaced, never followed)")
    _cache_dir(sp)
    sp.set_defaults(func=cmd_export)

    sp = sub.add_parser("bundle", help="write a stored run, sweep or comparison as one zip "
                        "(configs, results, arrays, figures, checksums)")
    sp.add_argument("key", metavar="KEY", nargs="?", default=None,
                    help="a run or sweep key, or a unique prefix")
    sp.add_argument("--comparison", metavar="SPEC", default=None,
                    help="a comparison spec (YAML or JSON) whose points are stored")
    sp.add_argument("-o", "--output", metavar="NAME.zip", required=True)
    sp.add_argument("--no-figures", action="store_true", help="leave the figures out")
    sp.add_argument("--force", action="store_true", help="replace an existing file")
    _cache_dir(sp)
    sp.set_defaults(func=cmd_bundle)

    sp = sub.add_parser("import", help="add the runs of a bundle to the store (checksums, "
                        "engine and keys checked first)")
    sp.add_argument("path", metavar="NAME.zip")
    sp.add_argument("--read-only", action="store_true",
                    help="accept a bundle of another engine: its runs become read-only history")
    sp.add_argument("--json", action="store_true")
    _cache_dir(sp)
    sp.set_defaults(func=cmd_import)

    sp = sub.add_parser("report", help="privacy report of a stored run, sweep or comparison "
                        "(HTML, optionally PDF) with a release recommendation")
    sp.add_argument("key", metavar="KEY", nargs="?", default=None,
                    help="a stored run or sweep key (or unique prefix)")
    sp.add_argument("--comparison", metavar="SPEC", default=None,
                    help="a comparison (YAML/JSON: family, data, utility, privacy, defenses) "
                         "whose points are stored, instead of KEY")
    sp.add_argument("-o", "--output", metavar="PATH", default="report.html",
                    help="the HTML file (default report.html)")
    sp.add_argument("--pdf", metavar="PATH", nargs="?", const=True, default=None,
                    help="also print it to this PDF (default: the HTML file's name with .pdf)")
    sp.add_argument("--level", type=float, default=0.05,
                    help="release only when the strongest attack's upper 95 %% bound on TPR at "
                         "1 %% FPR is at most this (default 0.05)")
    _cache_dir(sp)
    sp.set_defaults(func=cmd_report)


def _add_catalog_commands(sub: Any) -> None:
    """What privlab offers: ``datasets``, ``parts``, ``papers`` and the user's ``data``."""
    sp = sub.add_parser("datasets", help="the data sets and whether they are available")
    sp.add_argument("--json", action="store_true")
    sp.set_defaults(func=cmd_datasets)

    sp = sub.add_parser("parts", help="every registered defense and attack: family, release, "
                        "knob and threat model")
    sp.add_argument("--family", default=None, metavar="F",
                    help="only this attack family, or 'models' for the architectures")
    sp.add_argument("--json", action="store_true", help="print every part as JSON")
    sp.add_argument("--wide", action="store_true",
                    help="one line per part, however long (default: fit the terminal)")
    sp.set_defaults(func=cmd_parts)

    sp = sub.add_parser("papers", help="paper check: each paper's headline claims, the paper's "
                        "number, ours, whether the direction holds")
    sp.add_argument("--json", action="store_true", help="print {headline, rows} as JSON")
    sp.add_argument("--preset", metavar="ID", default=None,
                    help="print a paper-scale preset's config (YAML) for privlab run")
    _cache_dir(sp)
    sp.set_defaults(func=cmd_papers)

    sp = sub.add_parser("data", help="your own data sets: add, list, remove")
    dsub = sp.add_subparsers(dest="data_command", required=True, metavar="ACTION")
    a = dsub.add_parser("add", help="register a CSV table or a folder of images by name")
    a.add_argument("name", metavar="NAME", help="lowercase a-z, 0-9, _ and -, not a built-in name")
    src = a.add_mutually_exclusive_group(required=True)
    src.add_argument("--csv", metavar="PATH", help="a CSV file with a header line")
    src.add_argument("--images", metavar="DIR", help="a folder with one sub-folder of PNG/JPEG per class")
    a.add_argument("--task", metavar="COL", help="CSV: the column to predict")
    a.add_argument("--private", action="append", default=[], metavar="COL",
                   help="CSV: a private attribute column (repeat for more; the first is the default)")
    a.add_argument("--ignore", action="append", default=[], metavar="COL",
                   help="CSV: a column to leave out of the features (e.g. an id)")
    a.add_argument("--size", type=int, default=None, metavar="N",
                   help="images: resize to N x N (default 28)")
    a.add_argument("--color", choices=["gray", "rgb"], default=None, help="images: default gray")
    a.add_argument("--attributes", metavar="CSV", default=None,
                   help="images: CSV with a 'file' column and one column per private attribute "
                        "(default: derived 'bright', mean intensity above the median)")
    a.add_argument("--replace", action="store_true", help="replace a registration of this name")
    a.set_defaults(func=cmd_data_add)
    a = dsub.add_parser("list", help="registered data sets and whether their files changed")
    a.add_argument("--json", action="store_true")
    a.set_defaults(func=cmd_data_list)
    a = dsub.add_parser("remove", help="forget a registration (the files stay)")
    a.add_argument("name", metavar="NAME")
    a.set_defaults(func=cmd_data_remove)


def _add_maintenance_commands(sub: Any) -> None:
    """The store's upkeep: ``du``, ``gc``, ``verify``."""
    sp = sub.add_parser("du", help="store size by kind, stage and engine fingerprint")
    sp.add_argument("--json", action="store_true")
    _cache_dir(sp)
    sp.set_defaults(func=cmd_du)

    sp = sub.add_parser("gc", help="remove temporary leftovers, runs of older engines and/or "
                                   "least recently used runs beyond a size")
    sp.add_argument("--older-engines", action="store_true",
                    help="remove runs and stage entries computed by another engine version or source")
    sp.add_argument("--max-size", metavar="SIZE", default=None,
                    help="then remove the least recently used until the store is at most SIZE (500MB, 2GB)")
    sp.add_argument("--grace", type=float, default=3600.0, metavar="SECONDS",
                    help="temporary leftovers of killed writers older than this go (default 3600)")
    sp.add_argument("--dry-run", action="store_true", help="report what would be removed; remove nothing")
    sp.add_argument("--json", action="store_true")
    _cache_dir(sp)
    sp.set_defaults(func=cmd_gc)

    sp = sub.add_parser("verify", help="check the index, every run and every stage entry")
    sp.add_argument("--repair", action="store_true",
                    help="remove or rebuild only what fails (a damaged index is rebuilt from "
                         "the runs, a damaged row from its run, corrupt runs and stages removed)")
    sp.add_argument("--json", action="store_true")
    add_recompute(sp)
    _cache_dir(sp)
    sp.set_defaults(func=cmd_verify)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog=PROG, description="privlab: utility-privacy tradeoff lab (engine CLI)")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _add_run_commands(sub)
    add_audit_command(sub, run=_run_config, store=_store, cache_dir=_cache_dir)
    _add_store_commands(sub)
    _add_catalog_commands(sub)
    _add_maintenance_commands(sub)
    __import__("cli.models").models.add_commands(sub)  # privlab model add / list / remove
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code (0 ok, 1 store or internal failure, 2 bad input,
    130 interrupted)."""
    parser = build_parser()
    try:
        args = parser.parse_args(None if argv is None else list(argv))
    except UsageError as exc:
        _err(str(exc))
        return EXIT_USAGE
    except SystemExit as exc:  # --help
        return int(exc.code or 0)

    import os
    import sqlite3

    from cache.errors import StoreError
    from core.config.schema import ConfigError
    from core.foundation.progress import Cancelled

    try:
        return int(args.func(args))
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted; nothing stored", file=sys.stderr, flush=True)
        return EXIT_INTERRUPTED
    except Cancelled:
        print(f"{PROG}: cancelled; nothing stored", file=sys.stderr, flush=True)
        return EXIT_INTERRUPTED
    except StoreError as exc:  # full disk, read-only, corrupt entry: history unchanged
        _err(str(exc))
        return EXIT_FAILURE
    except (UsageError, ConfigError, ValueError) as exc:  # DataError is a ValueError
        _err(str(exc))
        return EXIT_USAGE
    except BrokenPipeError:  # pragma: no cover - e.g. `privlab list | head`
        return EXIT_OK
    except sqlite3.Error as exc:  # pragma: no cover - the store classifies its own
        _err(f"result store: {exc}")
        return EXIT_FAILURE
    except OSError as exc:
        where = f" ({exc.filename})" if getattr(exc, "filename", None) else ""
        _err(f"{exc.strerror or exc}{where}")
        return EXIT_USAGE
    except Exception as exc:  # never a traceback for a user: one line instead
        if os.environ.get(DEBUG_ENV) == "1":
            raise
        _err(f"{type(exc).__name__}: {exc} (an internal error; {DEBUG_ENV}=1 shows the "
             "traceback)")
        return EXIT_FAILURE


if __name__ == "__main__":
    sys.exit(main())
