"""Sweeps on one machine: 5 λ × 3 seeds of the quick TAPPFL preset on ``synthetic``
(``examples/sweep_tappfl_lambda.yaml``) run serially, on the warmed local process pool and on a
local Ray, each into its own empty store (so every point is computed), then the same sweep again
when every point is cached (timed in process). Rows of Ray and the pool are compared with
serial's (knob values, seeds, point keys and headline metrics).

The dashboard-sessions figures come from :mod:`benchmarks.sessions_bench` (websocket clients: the
server's share; its rows also hold Chromium tabs on the same cores).
"""

from __future__ import annotations

import math
import tempfile
import time
from pathlib import Path
from typing import Any

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "sweep_tappfl_lambda.yaml"


def _sweep_config(executor: str, quick: bool) -> dict[str, Any]:
    import yaml

    cfg = yaml.safe_load(EXAMPLE.read_text())
    cfg["executor"] = executor
    if quick:  # 2 λ × 2 seeds, fewer rounds
        cfg["grid"] = {"defense.tradeoff_lambda": [0.0, 1.0]}
        cfg["seeds"] = [0, 1]
        cfg["base"]["fl"]["rounds"] = 2
    return cfg


def _timed(store, cfg) -> tuple[Any, float]:
    t0 = time.perf_counter()
    r = store.get_or_run(cfg)
    return r, time.perf_counter() - t0


def _comparable(rows: list[dict[str, Any]]) -> list[tuple]:
    def norm(v):
        return round(v, 9) if isinstance(v, float) and math.isfinite(v) else v

    drop = {"from_cache", "seconds"}
    return sorted(tuple(sorted((k, norm(v)) for k, v in row.items() if k not in drop)) for row in rows)


def main(quick: bool = False) -> dict[str, Any]:
    from cache.store import ResultStore
    from core.runs.sweep import local_pool, ray_init, usable_cores

    cores = usable_cores()
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="privlab-sweep-bench-") as tmp:
        # warm the pool (workers started, torch/sklearn/engine imported) on a throw-away store
        t0 = time.perf_counter()
        warm = _sweep_config("local", True)
        warm["grid"] = {"defense.tradeoff_lambda": [0.0, 1.0]}
        warm["seeds"] = list(range(cores))
        warm["base"]["fl"]["rounds"] = 1
        warm["base"]["projection_points"] = 0
        local_pool(cores)
        ResultStore(Path(tmp) / "warm").get_or_run(warm)
        rows.append({"case": "warm-up: pool start + imports + tiny sweep", "seconds": time.perf_counter() - t0})

        serial_r, t_serial = _timed(ResultStore(Path(tmp) / "serial"), _sweep_config("serial", quick))
        n = int(serial_r.metrics["points_total"])
        rows.append({"case": f"serial ({n} points)", "executor": "serial", "seconds": t_serial,
                     "points_run": serial_r.metrics["points_run"]})
        local_r, t_local = _timed(ResultStore(Path(tmp) / "local"), _sweep_config("local", quick))
        rows.append({"case": f"local pool, {cores} workers (warmed)", "executor": "local",
                     "seconds": t_local, "points_run": local_r.metrics["points_run"]})

        t0 = time.perf_counter()
        ray_init(None)
        t_ray_init = time.perf_counter() - t0
        rows.append({"case": "ray.init (local Ray)", "seconds": t_ray_init})
        ray_r, t_ray = _timed(ResultStore(Path(tmp) / "ray"), _sweep_config("ray", quick))
        rows.append({"case": f"Ray (local, {cores} CPUs)", "executor": "ray", "seconds": t_ray,
                     "points_run": ray_r.metrics["points_run"]})

        store = ResultStore(Path(tmp) / "serial")
        cached: list[float] = []
        for _ in range(5):
            again, t = _timed(store, _sweep_config("serial", quick))
            assert again.from_cache
            cached.append(t)
        # the same points under a new sweep key (other executor: same key; other grid order)
        regrid = _sweep_config("local", quick)
        regrid["grid"] = {"defense.tradeoff_lambda": list(reversed(regrid["grid"]["defense.tradeoff_lambda"]))}
        rebuilt, t_rebuilt = _timed(store, regrid)
        rows.append({"case": "same sweep, all points cached (median of 5)", "seconds": sorted(cached)[2]})
        rows.append({"case": "reordered grid, every point cached (new sweep entry)", "seconds": t_rebuilt,
                     "points_run": rebuilt.metrics["points_run"]})

    ray_equal = _comparable(ray_r.info["rows"]) == _comparable(serial_r.info["rows"])
    local_equal = _comparable(local_r.info["rows"]) == _comparable(serial_r.info["rows"])
    headline: dict[str, Any] = {
        "speedup_local_vs_serial": round(t_serial / t_local, 3),
        "ray_overhead_s": round(t_ray - t_local, 2),
        "cached_sweep_s": round(sorted(cached)[2], 4),
        "ray_rows_equal_serial": int(ray_equal),
    }
    try:  # the 8-session render figures, measured by the sessions benchmark
        import json

        sess = json.loads((Path(__file__).parent / "results" / "sessions.json").read_text())["headline"]
        headline["sessions8_p95_render_s"] = sess["sessions8_p95_render_s"]
        headline["sessions8_p95_render_s_with_long_run"] = sess["sessions8_p95_render_s_with_long_run"]
    except (OSError, KeyError, ValueError):
        headline["sessions8_p95_render_s"] = None
        headline["sessions8_p95_render_s_with_long_run"] = None
    notes = (f"{n} points of the quick TAPPFL preset on synthetic; {cores} usable cores, one thread per "
             f"worker; each executor into its own empty store. Local pool rows equal serial: {local_equal}; "
             f"Ray rows equal serial: {ray_equal}. ray_overhead_s = Ray wall − local-pool wall for the same "
             f"points (Ray already started; its start took {t_ray_init:.1f} s). Session figures from "
             "benchmarks/results/sessions.json (python -m benchmarks sessions).")
    return {"name": "sweep", "headline": headline, "rows": rows, "notes": notes,
            "targets": {"local_ge_1.6x_serial": t_serial / t_local >= 1.6,
                        "cached_sweep_under_1_s": sorted(cached)[2] < 1.0,
                        "ray_rows_equal_serial": ray_equal}}
