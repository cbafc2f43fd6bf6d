"""The comparison engine and its presets (issue #12): ``python -m benchmarks compare``.

In a fresh result store (cold means cold):

1. the teaching comparison (:func:`core.runs.compare.teaching_spec`: membership on ``digits``,
   Inf2Guard λ, DP-SGD ε, the Natural and White κ channels, two or three knob values each,
   three seeds, plus the undefended point) serially, in a store of its own: the reference for
   the local pool's speedup;
2. the same comparison on the sweep's local process pool (one worker per usable core), cold:
   ``teaching_cold_s``; then again, every point read from the store: ``teaching_cached_s``;
3. one comparison per attack family (attribute inference on ``adult``, membership and
   gradient reconstruction on ``mnist5k``, and the families added since: property inference,
   reconstruction from representations, FIL's training-attribute reconstruction), cold on the
   pool and then from the store.

Headline (the issue's names): ``teaching_cold_s``, ``teaching_cached_s``, ``families_compared``
(attack families with at least one comparison), ``defenses_compared`` (registered defenses,
not counting ``none``, drawn on some plane), ``pareto_points`` (Pareto-optimal seed-mean points,
summed over the comparisons). The rows hold each comparison's timings, the local pool's
speedup, its Pareto points and its equal-privacy table; ``missing_defenses`` lists registered
defenses no comparison drew. Timings on a shared machine are contaminated by its load (the
machine facts record it); the quality figures are not.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from dataclasses import replace
from typing import Any

TEACHING = "teaching: membership on digits"
KEEP_ENV = "PRIVLAB_COMPARE_BENCH_STORE"


def _timed(spec, store) -> tuple[Any, float]:
    from core.runs.compare import run_comparison

    t0 = time.perf_counter()
    cmp = run_comparison(spec, store)
    return cmp, time.perf_counter() - t0


def _row(name: str, cmp, cold: float, cached: float | None, **extra: Any) -> dict[str, Any]:
    front = cmp.pareto()
    pts = cmp.points()
    return {
        "comparison": name, "family": cmp.spec.family, "data": cmp.spec.data,
        "utility": cmp.spec.utility, "privacy": cmp.spec.privacy,
        "defenses": [c.name for c in cmp.defended], "points": len(pts),
        "points_run_cold": cmp.points_run, "cold_s": round(cold, 2),
        "cached_s": None if cached is None else round(cached, 3),
        "pareto_points": int(front.sum()),
        "pareto": [{"defense": p[0], "knob": p[1], "utility": round(p[2], 4),
                    "privacy": round(p[3], 4)} for p, on in zip(pts, front, strict=True) if on],
        "undefended": None if cmp.undefended is None else {
            "utility": round(float(cmp.undefended.utility_mean[0]), 4),
            "privacy": round(float(cmp.undefended.leakage_mean[0]), 4)},
        "chance_privacy": cmp.chance_leakage,
        "curves": [{"defense": c.name, "knob": [float(k) for k in c.knob],
                    "utility": [round(float(u), 4) for u in c.utility_mean],
                    "privacy": [round(float(a), 4) for a in c.leakage_mean]} for c in cmp.defended],
        "equal_privacy": [{k: (round(v, 4) if isinstance(v, float) else v) for k, v in r.items()}
                          for r in cmp.table()],
        "refused": cmp.refused, **extra,
    }


def main(quick: bool = False) -> dict[str, Any]:
    from cache.store import ResultStore
    from core.foundation.parts import DEFENSES
    from core.runs.compare import PRESETS
    from core.runs.sweep import shutdown_pool, usable_cores

    os.environ.setdefault("PRIVLAB_DATA_DIR", "/work/shared/data")
    t_all = time.perf_counter()
    tmp = tempfile.mkdtemp(prefix="privlab-compare-bench-")
    rows: list[dict[str, Any]] = []
    notes: list[str] = []
    try:
        serial_store = ResultStore(os.path.join(tmp, "serial"))
        # $PRIVLAB_COMPARE_BENCH_STORE: keep the comparisons' store there (an empty directory),
        # e.g. to open the Compare page on them afterwards
        store = ResultStore(os.environ.get(KEEP_ENV) or os.path.join(tmp, "pool"))
        teaching = PRESETS[TEACHING]()
        if quick:  # one seed, two knob values per defense
            teaching = replace(teaching, seeds=(0,), defenses=tuple(
                replace(d, grid=d.grid[:2]) for d in teaching.defenses))
        _, serial_s = _timed(teaching, serial_store)
        print(f"  teaching serial cold: {serial_s:.1f} s", flush=True)
        workers = usable_cores()
        pooled = replace(teaching, executor="local", workers=workers)
        cmp, cold_s = _timed(pooled, store)
        print(f"  teaching local pool ({workers} workers) cold: {cold_s:.1f} s", flush=True)
        again, cached_s = _timed(pooled, store)
        assert again.points_run == 0, "the cached comparison ran points"
        print(f"  teaching from the store: {cached_s:.3f} s", flush=True)
        rows.append(_row(TEACHING, cmp, cold_s, cached_s, serial_cold_s=round(serial_s, 2),
                         workers=workers, pool_speedup=round(serial_s / cold_s, 2)))
        comparisons = {TEACHING: cmp}
        for name, build in PRESETS.items():
            if name == TEACHING or quick:
                continue
            spec = build(executor="local", workers=workers)
            try:
                cmp, cold = _timed(spec, store)
                again, cached = _timed(spec, store)
            except Exception as exc:  # noqa: BLE001 - a missing data set is a note, not a crash
                first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                notes.append(f"{name} skipped: {type(exc).__name__}: {first[:300]}")
                print(f"  {name}: skipped ({first[:120]})", flush=True)
                continue
            comparisons[name] = cmp
            rows.append(_row(name, cmp, cold, cached))
            print(f"  {name}: cold {cold:.1f} s, from the store {cached:.3f} s, "
                  f"{int(cmp.pareto().sum())} Pareto points", flush=True)
    finally:
        shutdown_pool()
        shutil.rmtree(tmp, ignore_errors=True)
    drawn = sorted({c.defense for cmp in comparisons.values() for c in cmp.defended})
    registered = sorted(n for n in DEFENSES.names() if n != "none")
    missing = [n for n in registered if n not in drawn]
    families = sorted({cmp.spec.family for cmp in comparisons.values()})
    headline = {
        "teaching_cold_s": round(cold_s, 2),
        "teaching_cached_s": round(cached_s, 4),
        "families_compared": len(families),
        "defenses_compared": len(drawn),
        "pareto_points": int(sum(int(c.pareto().sum()) for c in comparisons.values())),
    }
    notes += [
        (f"{len(comparisons)} comparisons, {time.perf_counter() - t_all:.0f} s in all; families: "
         f"{', '.join(families)}; defenses drawn: {', '.join(drawn)}; registered but not drawn: "
         f"{', '.join(missing) or 'none'}."),
        ("teaching_cold_s: the teaching comparison on the sweep's local pool in an empty store; "
         "the serial run (its own empty store) gives the pool's speedup (rows[0].pool_speedup); "
         "teaching_cached_s: the same comparison again, every sweep and point read back from the "
         "store. pareto_points: Pareto-optimal seed-mean points summed over the comparisons "
         "(undefended points included)."),
    ]
    return {"name": "compare", "headline": headline, "rows": rows, "notes": " ".join(notes),
            "missing_defenses": missing, "families": families, "defenses": drawn,
            "targets": {"teaching_cold_s": "< 180 on 2 cores", "teaching_cached_s": "< 1",
                        "defenses_compared": f"every registered defense ({len(registered)})"}}
