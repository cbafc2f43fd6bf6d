"""Lessons benchmark (issue #20): each page's default config and teaching sweep, cold and
cached, and the lesson measured from the sweep (:mod:`core.report.teaching`).

``python -m benchmarks lessons [--quick]`` (or ``python -m benchmarks.lessons_bench``) writes
``benchmarks/results/lessons.json``. Per page: the default config's seconds in an empty store
(cold) and again from the store (cached); the teaching sweep's seconds cold and cached (the
sweep and its reference runs, then the lesson read back); the lesson: the main privacy metric
and utility at both ends of the knob with 95 % intervals and whether the move exceeds them.
The Compare page's teaching preset (:func:`core.runs.compare.teaching_spec`) runs cold and cached
on a warm local pool, as the page runs it, with the serial run as reference;
``compare_teaching_cold_s`` is taken from ``compare_server.json`` (the preset in a running
Streamlit server, :mod:`benchmarks.compare_server_bench`) when that exists, here or with
``--merge``.

``--pages P ...`` (without ``--quick``) reruns only those teaching pages (not Compare) and
merges their rows and details into the stored lessons.json (:func:`merge_pages`). Each page's
details hold its figures table and the lesson's number check (:func:`core.report.teaching.
check_numbers`); the README tour is written from this file (``python -m
benchmarks.readme_tour``).

``--quick``: one seed and only the two ends of each teaching grid (the lesson's intervals are
then the runs' own). Headline figures this benchmark does not measure (DLG / iDLG on
LeNet-sigmoid, caveat keys, browser checks) are merged from ``benchmarks/results/
dlg_lenet.json``, ``caveats.json`` and ``browser.json`` when those exist, else left null and
named in ``pending``.
"""

from __future__ import annotations

import json
import os
import re
import statistics
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"
#: headline keys other benchmarks fill: (file, key in that file's headline)
MERGED = {
    "dlg_lenet_sigmoid_psnr_median_32": ("dlg_lenet.json", "dlg_lenet_sigmoid_psnr_median_32"),
    "idlg_lenet_sigmoid_psnr_median_32": ("dlg_lenet.json", "idlg_lenet_sigmoid_psnr_median_32"),
    "caveat_keys_rendered": ("caveats.json", "caveat_keys_rendered"),
    "caveat_keys_total": ("caveats.json", "caveat_keys_total"),
    "browser_console_errors": ("browser.json", "browser_console_errors"),
    "browser_external_requests": ("browser.json", "browser_external_requests"),
    "raw_metric_keys_visible": ("browser.json", "raw_metric_keys_visible"),
}
HEADLINE_KEYS = ("pages_with_lesson", "pages_with_knob", "default_cold_s_max",
                 "default_cold_s_median", "compare_teaching_cold_s",
                 "dpsgd_utility_ratio_best_eps_le_8", *MERGED)


def _timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def _merged(results_dir: Path) -> tuple[dict[str, Any], list[str]]:
    """The headline keys other benchmarks measured (None and named as pending otherwise)."""
    out, pending = {}, []
    for key, (fname, src) in MERGED.items():
        path = results_dir / fname
        val = None
        if path.is_file():
            try:
                data = json.loads(path.read_text())
                val = (data.get("headline") or {}).get(src, data.get(src))
            except (OSError, ValueError):
                val = None
        out[key] = val
        if val is None:
            pending.append(key)
    return out, pending


def _load() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:  # pragma: no cover - not every platform has a load average
        return None


def _quick_spec(spec):
    grid = spec.values(64) if spec.dim_scaled else spec.values()
    ends = (grid[0], grid[-1])
    if spec.dim_scaled:
        raw = spec.grid or spec.knob.teaching_grid()
        return replace(spec, seeds=spec.seeds[:1], grid=(raw[0], raw[-1]))
    return replace(spec, seeds=spec.seeds[:1], grid=ends)


def _warm() -> None:
    """Import the engine first: a served page runs in a process that has torch and the runners
    imported already, so a cold run's seconds are the run's (data loading included), not
    Python's imports."""
    import importlib

    from core.runs.sweep import WARM_MODULES

    for m in (*WARM_MODULES, "core.runs.membership", "core.runs.property",
              "core.runs.gradient_leakage", "core.runs.repr_reconstruction",
              "core.runs.fisher_information", "core.attacks.membership"):
        importlib.import_module(m)


def page_row(page: str, store, quick: bool) -> tuple[dict[str, Any], dict[str, Any]]:
    """One page: default cold / cached seconds, teaching cold / cached seconds, the lesson."""
    from core.report import teaching

    spec = teaching.teaching_sweep(page)
    if quick:
        spec = _quick_spec(spec)
    dim = teaching.data_dim(spec.base) if spec.dim_scaled else None
    default = teaching.default_config(page)
    r, cold = _timed(lambda: store.get_or_run(default))
    _, cached = _timed(lambda: store.get_or_run(default))
    print(f"  {page}: default cold {cold:.1f} s, cached {cached:.3f} s", flush=True)

    def sweep():
        for c in spec.job_configs(dim):
            store.get_or_run(c)
        return teaching.figures(spec, store.peek, dim)

    fig, t_cold = _timed(sweep)
    fig, t_cached = _timed(sweep)
    les = teaching.lesson_from(spec, fig)
    checked, bad = teaching.check_numbers(les.sentences, fig.rows())
    print(f"  {page}: teaching sweep cold {t_cold:.1f} s, cached {t_cached:.3f} s", flush=True)
    for s in les.sentences:
        print(f"    {s}", flush=True)
    row = {"page": page, "default_cold_s": round(cold, 2), "default_cached_s": round(cached, 4),
           "default_run_total_s": round(float(r.timings.get("total_s", cold)), 2),
           "teaching_points": les.total, "teaching_cold_s": round(t_cold, 2),
           "teaching_cached_s": round(t_cached, 4), "lesson_ready": les.ready,
           "exceeds_intervals": les.exceeds, "lesson_numbers_checked": checked,
           "lesson_number_mismatches": len(bad)}
    if page == "membership":  # the page's first run: the strongest undefended attack
        row["default_best_auc"] = round(float(r.metrics["mia_auc_best"]), 4)
        row["default_best_auc_interval"] = [round(float(x), 4)
                                            for x in r.interval("mia_auc_best")]
    detail = {"default_timings": {k: round(float(v), 3) for k, v in r.timings.items()},
              "teaching_grid": list(spec.values(dim)), "seeds": list(spec.seeds),
              "lesson": les.summary(spec), "figures": fig.rows(), "number_mismatches": bad}
    return row, detail


def compare_row(store, quick: bool) -> tuple[dict[str, Any], dict[str, Any]]:
    from core.report import teaching
    from core.runs import compare
    from core.runs.sweep import prewarm_pool, usable_cores

    # what the page runs (dashboard/views/compare.py): one run_comparison on the process's
    # local pool over the usable cores, the pool started first (the server starts it in the
    # background), its seconds apart
    spec = compare.teaching_spec(executor="local")
    if quick:
        spec = replace(spec, seeds=spec.seeds[:1])
    pool_start = prewarm_pool(usable_cores(), "cache.store")
    cmp_, cold = _timed(lambda: compare.run_comparison(spec, store))
    # the reference: the same preset serially in this process, in a store of its own
    with tempfile.TemporaryDirectory(prefix="privlab_lessons_serial_") as tmp:
        from cache.store import ResultStore

        serial = replace(spec, executor="serial")
        _, serial_cold = _timed(lambda: compare.run_comparison(serial, ResultStore(Path(tmp))))
    print(f"  compare: serial {serial_cold:.1f} s (pool start {pool_start:.1f} s apart)",
          flush=True)
    cmp2, cached = _timed(lambda: compare.run_comparison(spec, store))
    les = teaching.compare_lesson(cmp2)
    rows = teaching.compare_figures(cmp2).rows()
    checked, bad = teaching.check_numbers(les.sentences, rows)
    print(f"  compare: teaching preset cold {cold:.1f} s on the pool, cached {cached:.3f} s",
          flush=True)
    for s in les.sentences:
        print(f"    {s}", flush=True)
    row = {"page": "compare", "default_cold_s": round(cold, 2), "default_cached_s": round(cached, 4),
           "pool_start_s": round(pool_start, 2), "serial_cold_s": round(serial_cold, 2),
           "pool_speedup_vs_serial": round(serial_cold / cold, 2) if cold else None,
           "teaching_points": cmp_.points_run + cmp_.points_cached,
           "teaching_cold_s": round(cold, 2), "teaching_cached_s": round(cached, 4),
           "lesson_ready": les.ready, "exceeds_intervals": les.exceeds,
           "lesson_numbers_checked": checked, "lesson_number_mismatches": len(bad)}
    return row, {"lesson": {"sentences": les.sentences, "contradictions": les.contradictions,
                            "exceeds_intervals": les.exceeds},
                 "figures": rows, "number_mismatches": bad, "comparison": cmp2.to_dict(),
                 "note": "Compare's default is its teaching preset: default = teaching."}


def _server_figure(results_dir: Path) -> tuple[float | None, str]:
    """compare_teaching_cold_s as measured in a running server (compare_server.json, written by
    benchmarks/compare_server_bench.py) and its note; (None, "") when it was not measured."""
    path = results_dir / "compare_server.json"
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None, ""
    val = (data.get("headline") or {}).get("compare_teaching_cold_s")
    cpu, est = data.get("cpu_s") or {}, data.get("quiet_estimate_s")
    workers = [v for k, v in sorted(cpu.items()) if k.startswith("worker_")]
    spent = (f"CPU seconds meanwhile: pool workers {' + '.join(map(str, workers))}, server "
             f"{cpu.get('server')}; with the cores to itself that is about {est} s (an estimate "
             "from CPU time; on this shared machine each user session gets one share of the "
             "cores, so the wall time follows the other sessions' load). ") if workers else ""
    return val, ("compare_teaching_cold_s: measured in a running Streamlit server "
                 f"(benchmarks/compare_server_bench.py, compare_server.json): {data.get('notes', '')} "
                 + spent)


COMPARE_NOTE = ("Compare: the page runs its preset as one run_comparison job on the server's "
                "local pool (workers started in the background, under a clean __main__); the "
                "compare row times that path in this process on a warm pool (pool_start_s "
                "apart) and, as the reference, the same preset serially (serial_cold_s). ")


def main(quick: bool = False, pages: tuple[str, ...] | None = None,
         results_dir: Path = RESULTS) -> dict[str, Any]:
    from cache.store import ResultStore
    from core.report import teaching

    pages = tuple(pages or teaching.PAGES)
    load_start = _load()
    _warm()
    rows, details = [], {}
    with tempfile.TemporaryDirectory(prefix="privlab_lessons_") as tmp:
        store = ResultStore(Path(tmp) / "store")
        for page in pages:
            try:
                row, det = page_row(page, store, quick)
            except Exception as exc:  # noqa: BLE001 - one page failing must not hide the others
                row, det = {"page": page, "error": f"{type(exc).__name__}: {exc}"}, {}
                print(f"  {page}: FAILED {row['error']}", flush=True)
            rows.append(row)
            details[page] = det
        try:
            row, det = compare_row(store, quick)
        except Exception as exc:  # noqa: BLE001 - reported in its row
            row, det = {"page": "compare", "error": f"{type(exc).__name__}: {exc}"}, {}
        rows.append(row)
        details["compare"] = det
    colds = [r["default_cold_s"] for r in rows if r["page"] != "compare" and "default_cold_s" in r]
    cmp_row = next(r for r in rows if r["page"] == "compare")
    ratio = ((details.get("membership") or {}).get("lesson") or {}).get(
        "utility_ratio_above_majority")
    merged, pending = _merged(results_dir)
    server_s, server_note = _server_figure(results_dir)
    headline = {
        "pages_with_lesson": sum(bool(r.get("lesson_ready")) for r in rows),
        "pages_with_knob": len(teaching.PAGES) + 1,
        "default_cold_s_max": round(max(colds), 2) if colds else None,
        "default_cold_s_median": round(statistics.median(colds), 2) if colds else None,
        "compare_teaching_cold_s": server_s if server_s is not None else cmp_row.get("teaching_cold_s"),
        "dpsgd_utility_ratio_best_eps_le_8": None if ratio is None else round(ratio, 3),
        **merged,
    }
    assert tuple(headline) == HEADLINE_KEYS
    load = _load()
    loaded = max(load_start[0], load[0]) > 1.5 if load and load_start else None
    notes = ((f"Timings taken on a {'LOADED' if loaded else 'quiet'} 2-core machine (load "
              f"average at the start {load_start}, at the end {load}). ")
             + COMPARE_NOTE + server_note
             + "default_cold_s: the page's default config (core.report.teaching.default_config) in an "
             "empty store, engine modules imported first (a served page's process has them), "
             "data loading included; the Compare page's default is its teaching preset "
             "(compare_teaching_cold_s). teaching_*: the page's teaching sweep (its knob's "
             "teaching grid from core.foundation.parts × seeds, plus the undefended reference where the "
             "lesson needs one), run through the store, then the lesson read back. "
             + ("QUICK: one seed, both ends of each grid only. " if quick else "")
             + ("Pending (filled by other branches' benchmarks, merged when their JSON "
                f"exists): {', '.join(pending)}." if pending else ""))
    return {"name": "lessons", "headline": headline, "rows": rows, "details": details,
            "pending": pending, "loaded_machine": loaded, "quick": quick, "notes": notes,
            "targets": {"pages_with_lesson": "= pages_with_knob", "default_cold_s_max": "<= 10",
                        "default_cold_s_median": "<= 5", "compare_teaching_cold_s": "<= 20",
                        "dpsgd_utility_ratio_best_eps_le_8": ">= 0.90",
                        "dlg_lenet_sigmoid_psnr_median_32": ">= 30",
                        "idlg_lenet_sigmoid_psnr_median_32": ">= 30"}}


def merge_pages(path: Path, pages: tuple[str, ...]) -> dict[str, Any]:
    """Rerun ``pages`` (not Compare) in an empty store and merge their rows and details into
    the stored ``path``; the headline figures they feed are recomputed from the merged rows and
    the run's load is recorded under ``reruns``."""
    from cache.store import ResultStore

    res = json.loads(path.read_text())
    load_start = _load()
    _warm()
    with tempfile.TemporaryDirectory(prefix="privlab_lessons_") as tmp:
        store = ResultStore(Path(tmp) / "store")
        for page in pages:
            row, det = page_row(page, store, quick=False)
            res["rows"] = [row if r["page"] == page else r for r in res["rows"]]
            res["details"][page] = det
    rows = res["rows"]
    colds = [r["default_cold_s"] for r in rows if r["page"] != "compare" and "default_cold_s" in r]
    ratio = ((res["details"].get("membership") or {}).get("lesson") or {}).get(
        "utility_ratio_above_majority")
    res["headline"].update({
        "pages_with_lesson": sum(bool(r.get("lesson_ready")) for r in rows),
        "default_cold_s_max": round(max(colds), 2) if colds else None,
        "default_cold_s_median": round(statistics.median(colds), 2) if colds else None,
        "dpsgd_utility_ratio_best_eps_le_8": None if ratio is None else round(ratio, 3)})
    res.setdefault("reruns", []).append({
        "pages": list(pages), "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "load_start": load_start, "load_end": _load()})
    path.write_text(json.dumps(res, indent=1))
    return res


def merge_compare(path: Path, results_dir: Path = RESULTS) -> dict[str, Any]:
    """Rerun the Compare row (its teaching preset cold on the pool and serially, the lesson and
    its figures) in an empty store and merge it into the stored ``path``; the headline's
    ``compare_teaching_cold_s`` is the running server's figure (compare_server.json) when that
    exists. The run's load is recorded under ``reruns``."""
    from cache.store import ResultStore

    res = json.loads(path.read_text())
    load_start = _load()
    _warm()
    with tempfile.TemporaryDirectory(prefix="privlab_lessons_") as tmp:
        row, det = compare_row(ResultStore(Path(tmp) / "store"), quick=False)
    res["rows"] = [row if r["page"] == "compare" else r for r in res["rows"]]
    res["details"]["compare"] = det
    server_s, _ = _server_figure(results_dir)
    res["headline"]["compare_teaching_cold_s"] = (server_s if server_s is not None
                                                  else row.get("teaching_cold_s"))
    res.setdefault("reruns", []).append({
        "pages": ["compare"], "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "load_start": load_start, "load_end": _load()})
    path.write_text(json.dumps(res, indent=1))
    return res


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--pages", nargs="*", default=None)
    ap.add_argument("--compare", action="store_true",
                    help="rerun only the Compare row and merge it into lessons.json")
    ap.add_argument("--merge", action="store_true",
                    help="only re-read the merged figures (dlg_lenet, caveats, browser, compare_server JSON) "
                         "into the existing lessons.json; its measured timings stay")
    args = ap.parse_args()
    if args.compare:  # the Compare row only, merged into lessons.json
        print(json.dumps(merge_compare(RESULTS / "lessons.json")["headline"], indent=1))
        raise SystemExit(0)
    if args.merge:
        out = RESULTS / "lessons.json"
        res = json.loads(out.read_text())
        merged, pending = _merged(RESULTS)
        res["headline"].update(merged)
        res["pending"] = pending
        server_s, server_note = _server_figure(RESULTS)
        if server_s is not None:  # the Compare figure as the page runs it, in a server
            res["headline"]["compare_teaching_cold_s"] = server_s
            note = ("Compare: the page runs its preset as one run_comparison job on the server's "
                    "local pool; the compare row below is from the last full run of this "
                    "benchmark (before the pool: its teaching_cold_s is the serial path). ")
            res["notes"] = re.sub(r"Compare: .*?(?=default_cold_s:)", lambda _: note + server_note,
                                  res["notes"], count=1, flags=re.DOTALL)
        res.setdefault("merged_at", []).append(time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
        out.write_text(json.dumps(res, indent=1))
        print(json.dumps(res["headline"], indent=1))
        raise SystemExit(0)
    if args.pages and not args.quick:  # rerun these pages only, merged into lessons.json
        out = RESULTS / "lessons.json"
        print(json.dumps(merge_pages(out, tuple(args.pages))["headline"], indent=1))
        raise SystemExit(0)
    res = main(quick=args.quick, pages=tuple(args.pages) if args.pages else None)
    out = RESULTS / ("lessons.quick.json" if args.quick else "lessons.json")
    from benchmarks.harness import _jsonable, machine_info

    out.write_text(json.dumps(_jsonable({**res, "machine": machine_info()}), indent=1))
    print(json.dumps(res["headline"], indent=1))
