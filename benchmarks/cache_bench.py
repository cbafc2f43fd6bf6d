"""Result-store latency: cache hits and misses through ``ResultStore.get_or_run``.

Hits go through the whole path (validate, key, index lookup, read both files, verify both
sha256 checksums, decode JSON + npz). Misses use a trivial runner, so they measure the store's
own overhead (tmp dir, fsync, rename, index transaction). The reference row reads the same
files with plain ``json.loads`` + ``np.load`` and no store, so ``hit / reference`` is the
store's overhead as a same-process ratio (DESIGN: Benchmarks). One miss through the real
``core.runs.experiments.run`` (PCA on ``digits``) is added when that runner exists.
"""

from __future__ import annotations

import io
import json
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from cache.store import ResultStore
from core.config.schema import DataSpec, ProjectionConfig
from core.foundation.result import Result

HIT_TARGET_MS = 50.0


def _trivial_runner(artifacts: Callable[[Any], dict[str, np.ndarray]]):
    def run(cfg, progress=None, cancel=None) -> Result:
        return Result(
            kind=cfg.kind, config={}, seed=cfg.seed,
            metrics={"max_points": float(cfg.max_points), "seed": float(cfg.seed)},
            artifacts=artifacts(cfg),
        )

    return run


def _small(cfg) -> dict[str, np.ndarray]:
    return {"a": np.arange(3)}


def _dashboard_sized(cfg) -> dict[str, np.ndarray]:
    """About what a TAPPFL run keeps: a 2-D projection and 1000 x 128 representations."""
    rng = np.random.default_rng(cfg.seed)
    return {
        "embedding": rng.standard_normal((2000, 2)).astype(np.float32),
        "representations": rng.standard_normal((1000, 128)).astype(np.float32),
        "labels": rng.integers(0, 10, 2000),
    }


def _stats(case: str, times_s: list[float], **extra: Any) -> dict[str, Any]:
    ms = np.asarray(times_s) * 1000.0
    return {
        "case": case,
        "ms_median": round(float(np.median(ms)), 3),
        "ms_p95": round(float(np.percentile(ms, 95)), 3),
        "n": len(ms),
        **extra,
    }


def _time(fn: Callable[[], Any], n: int) -> list[float]:
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def _raw_read(entry_dir: Path) -> None:
    meta = json.loads((entry_dir / "result.json").read_bytes())
    with np.load(io.BytesIO((entry_dir / "artifacts.npz").read_bytes()), allow_pickle=False) as z:
        {k: z[k] for k in z.files}
    assert meta["key"]


def main(quick: bool = False) -> dict[str, Any]:
    n_hit, n_miss, n_big = (50, 10, 20) if quick else (200, 50, 100)
    rows: list[dict[str, Any]] = []
    notes: list[str] = []
    with tempfile.TemporaryDirectory(prefix="privlab-cache-bench-") as tmp:
        store = ResultStore(tmp)
        small = _trivial_runner(_small)

        # misses: each a distinct trivial config (different seeds), trivial runner
        miss_t = []
        for seed in range(n_miss):
            cfg = ProjectionConfig(seed=1000 + seed, max_points=50)
            t0 = time.perf_counter()
            r = store.get_or_run(cfg, runner=small)
            miss_t.append(time.perf_counter() - t0)
            assert not r.from_cache
        rows.append(_stats("miss (trivial config)", miss_t))

        # hits on a small entry, via a fresh mapping each time (as the CLI/dashboard pass it)
        cfg = ProjectionConfig(seed=1000, max_points=50)
        as_dict = cfg.model_dump(mode="json")
        hit_t = _time(lambda: store.get_or_run(dict(as_dict), runner=small), n_hit)
        assert store.get_or_run(cfg, runner=small).from_cache
        rows.append(_stats("hit", hit_t))

        ref_dir = store.entry_dir(store.peek(cfg).key)
        ref_t = _time(lambda: _raw_read(ref_dir), n_hit)
        rows.append(_stats("reference: raw json+npz read, no store", ref_t))

        # hits on a dashboard-sized entry (~1.3 MB of float32 arrays)
        big = _trivial_runner(_dashboard_sized)
        big_cfg = ProjectionConfig(seed=7, max_points=2000)
        t0 = time.perf_counter()
        store.get_or_run(big_cfg, runner=big)
        big_miss = time.perf_counter() - t0
        big_t = _time(lambda: store.get_or_run(big_cfg, runner=big), n_big)
        npz_kb = (store.entry_dir(store.peek(big_cfg).key) / "artifacts.npz").stat().st_size / 1024
        rows.append(_stats("hit (2000x2 + 1000x128 float32 artifacts)", big_t, npz_kb=round(npz_kb)))
        rows.append(_stats("miss (same, trivial runner)", [big_miss]))

        # peek (what the dashboard calls to show a cached result at once)
        rows.append(_stats("peek (hit)", _time(lambda: store.peek(cfg), n_hit)))

        # one real miss through core.runs.experiments.run (PCA on digits), if the runner exists
        try:
            import core.runs.projection  # noqa: F401
        except ImportError as exc:
            notes.append(f"real PCA miss skipped: core.runs.projection not importable ({exc})")
        else:
            real = ProjectionConfig(data=DataSpec(name="digits"), method="pca", max_points=2000)
            t0 = time.perf_counter()
            r = store.get_or_run(real)
            real_miss = time.perf_counter() - t0
            assert not r.from_cache
            rows.append(_stats("miss (real run: PCA on digits, cold: imports + data load)",
                               [real_miss]))
            warm = real.model_copy(update={"seed": 1})
            t0 = time.perf_counter()
            assert not store.get_or_run(warm).from_cache
            rows.append(_stats("miss (real run: PCA on digits, warm)", [time.perf_counter() - t0]))
            rows.append(_stats("hit (real run: PCA on digits, 2000 points)",
                               _time(lambda: store.get_or_run(real), n_big)))

        # a cached trained stage (encoder weights + curves) of a tiny attribute-privacy run
        from core.config.schema import AttributePrivacyConfig
        from core.foundation.device import get_device
        from core.foundation.stages import stage_key
        from core.runs.attribute_stages import train_part

        ap = AttributePrivacyConfig.model_validate({
            "data": {"name": "synthetic", "n_samples": 600}, "pretrain_epochs": 0,
            "projection_points": 0, "fl": {"num_devices": 3, "rounds": 1, "fraction_fit": 1.0},
            "attack": {"attackers": ["logreg"]}})
        store.get_or_run(ap)
        tkey = stage_key("train", train_part(ap, get_device(ap.device).type))
        assert store.stages.load("train", tkey) is not None
        rows.append(_stats("stage hit (trained encoder: weights + curves)",
                           _time(lambda: store.stages.load("train", tkey), n_big)))

    order = ["hit", "miss (trivial config)"]
    rows.sort(key=lambda r: order.index(r["case"]) if r["case"] in order else len(order))
    by_case = {r["case"]: r for r in rows}
    hit_med = by_case["hit"]["ms_median"]
    ref_med = by_case["reference: raw json+npz read, no store"]["ms_median"]
    notes.insert(0, (
        f"hit median {hit_med:.2f} ms vs target {HIT_TARGET_MS:.0f} ms "
        f"({'met' if by_case['hit']['ms_p95'] < HIT_TARGET_MS else 'MISSED'} at p95); "
        f"hit / raw read = {hit_med / ref_med:.1f}x (validation, key, SQLite lookup, 2x sha256). "
        "Misses include fsync of both files and the dir, rename and an index transaction; "
        "time depends on the disk."
    ))
    headline = {"hit_ms_median": round(hit_med, 3),
                "stage_hit_ms_median": round(by_case["stage hit (trained encoder: weights + curves)"]["ms_median"], 3)}
    return {"name": "cache", "headline": headline, "rows": rows, "notes": " ".join(notes)}


if __name__ == "__main__":
    import sys

    res = main(quick="--quick" in sys.argv)
    for row in res["rows"]:
        print(f"{row['case']:<45} median {row['ms_median']:>9.3f} ms   p95 {row['ms_p95']:>9.3f} ms   n={row['n']}")
    print(res["notes"])
