"""Runner for ``kind: sweep`` (DESIGN: Architecture / Sweeps): run the points of a grid that
are missing from the store, serially, on a local process pool or on Ray, and tabulate them.

:func:`run_points` is the executor behind both ``privlab sweep`` and the comparisons
(:func:`core.runs.compare.run_comparison`): it runs given points on one executor.

Points go through the injected point store (:class:`core.config.sweeps.PointStore`, the result store
handed in by ``cache.store.ResultStore.get_or_run``), so each point is stored under its own
key the moment it finishes: a cancelled or failed sweep keeps its finished points and stores
nothing of its own. Pool and Ray workers run the store's ``point_worker`` (they open the store
at its ``root`` themselves) and send back a small summary (:func:`core.config.sweeps.summarise`).

- ``serial``: in this process, one point after another, with each point's own progress.
- ``local``: the process's one pool (:mod:`core.runs.pool`: spawned workers, all started
  before the first point under a clean ``__main__``, safe inside the Streamlit server), kept
  warm across sweeps; every point has a deadline (:func:`core.runs.pool.point_timeout_s`).
- ``ray``: ``ray.init`` once per process (``ray_address``, else ``$RAY_ADDRESS``, else a local
  Ray), one task per point with ``num_cpus=1``.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from core.config.schema import ConfigError, SweepConfig, cache_key, parse_config
from core.config.sweeps import Point, PointStore, columns_of, expand, point_row, summarise
from core.foundation.progress import CancelToken, Progress, ProgressCallback
from core.foundation.result import Result
from core.foundation.stages import Stages, StageStore
from core.runs.pool import (
    WARM_MODULES,
    LocalPool,
    PoolError,
    get_pool,
    point_timeout_s,
    usable_cores,
)
from core.runs.pool import shutdown_pool as _shutdown_pool

#: how often the parent checks its cancel token while pool or Ray workers run
POLL_S = 0.2
#: how long a cancelled sweep waits for its running points to stop before giving up on them
STOP_WAIT_S = 30.0
__all__ = ["EXECUTORS", "WARM_MODULES", "MemoryPointStore", "Placement", "PoolError",
           "local_pool", "prewarm_pool", "ray_init", "run_points", "run_sweep", "shutdown_pool",
           "usable_cores"]


@dataclass(frozen=True)
class Placement:
    """Where points run: ``executor`` (serial, local, ray), ``workers`` (None: the usable
    cores for a pool, one task per point on Ray) and ``ray_address``."""

    executor: str = "serial"
    workers: int | None = None
    ray_address: str | None = None


def run_sweep(cfg: SweepConfig, progress: Progress, stages: Stages | None = None, *,
              points: PointStore | None = None) -> Result:
    """Run ``cfg``'s missing points on its executor; a ``sweep`` Result whose ``info["rows"]``
    holds one row per point (:func:`core.config.sweeps.point_row`), ``info["columns"]`` their order."""
    t0 = time.perf_counter()
    store = points if points is not None else MemoryPointStore(stages.store if stages else None)
    plan = expand(cfg)
    n = len(plan)
    progress.update(0.0, f"sweep of {n} points: looking them up in the store")
    tracker = _Tracker(progress, n)
    for i, p in enumerate(plan):
        progress.check_cancel()
        hit = store.peek(p.config)
        if hit is not None:
            tracker.summaries[i] = {**summarise(hit), "from_cache": True}
    todo = [(i, p) for i, p in enumerate(plan) if i not in tracker.summaries]
    summaries, workers = run_points(todo, store, progress, Placement(cfg.executor, cfg.workers,
                                                                     cfg.ray_address),
                                    total=n, done=len(tracker.summaries))
    tracker.summaries.update(summaries)
    rows = [point_row(p, tracker.summaries[i]) for i, p in enumerate(plan)]
    n_run = sum(not s["from_cache"] for s in tracker.summaries.values())
    seconds = time.perf_counter() - t0
    metrics = {"points_total": float(n), "points_run": float(n_run),
               "points_cached": float(n - n_run), "seconds": seconds}
    info = {"rows": rows, "columns": columns_of(rows, list(cfg.grid)), "base_kind": cfg.base["kind"],
            "executor": cfg.executor, "workers": workers}
    return Result(kind="sweep", config=cfg.model_dump(mode="json"), seed=cfg.seed, metrics=metrics,
                  info=info, timings={"total_s": seconds})


def run_points(todo: list[tuple[int, Point]], store: PointStore, progress: Progress,
               placement: Placement, *, total: int | None = None, done: int = 0
               ) -> tuple[dict[int, dict[str, Any]], int]:
    """Run ``todo`` ((index, point) pairs: the points missing from ``store``) on
    ``placement``'s executor, each stored under its own key as it finishes. Progress counts
    ``done`` points already stored out of ``total`` (default: ``done`` + the points to run).
    Returns each index's summary (:func:`core.config.sweeps.summarise`) and the workers used."""
    n = total if total is not None else done + len(todo)
    tracker = _Tracker(progress, max(n, 1))
    tracker.done = done
    if not todo:
        return {}, 0
    progress.update(done / max(n, 1), f"{done} of {n} points stored; running {len(todo)} "
                    f"({placement.executor})")
    workers = EXECUTORS[placement.executor](placement, todo, store, tracker)
    return tracker.summaries, workers


class _Tracker:
    """Progress across the grid: fraction = finished points / all points."""

    def __init__(self, progress: Progress, n: int) -> None:
        self.progress, self.n, self.done = progress, n, 0
        self.summaries: dict[int, dict[str, Any]] = {}

    def point_progress(self, p: Point) -> ProgressCallback:
        k = self.done

        def cb(fraction: float, message: str = "") -> None:
            self.progress.update((k + fraction) / self.n, f"point {k + 1}/{self.n} ({p.label}): {message}")

        return cb

    def finished(self, i: int, p: Point, summary: dict[str, Any]) -> None:
        if summary["key"] != p.key:
            # a worker with other engine source (core/ edited while the sweep ran) keys points
            # differently: its rows would not be this sweep's
            raise RuntimeError(f"sweep point {p.label}: the worker stored it under key "
                               f"{str(summary['key'])[:12]}, this process expects {p.key[:12]}: "
                               "the engine's source (core/) changed since this process started; "
                               "restart it and run the sweep again")
        self.summaries[i] = summary
        self.done += 1
        how = "stored meanwhile" if summary["from_cache"] else "computed"
        self.progress.update(self.done / self.n, f"point {self.done}/{self.n} done ({p.label}): {how}")


# ---------------------------------------------------------------------------------------------
# executors: (cfg, [(index, point)], store, tracker) -> number of workers used


def _serial(cfg: Placement, todo: list[tuple[int, Point]], store: PointStore, tracker: _Tracker) -> int:
    for i, p in todo:
        result = store.get_or_run(p.config, progress=tracker.point_progress(p),
                                  cancel=tracker.progress.cancel)
        tracker.finished(i, p, summarise(result))
    return 1


def _worker_of(store: PointStore, executor: str) -> tuple[Callable[..., dict[str, Any]], str]:
    worker, root = getattr(store, "point_worker", None), getattr(store, "root", None)
    if worker is None or root is None:
        raise ConfigError([f"executor: got {executor!r}; it needs a result store other processes "
                           + "can open (cache.store.ResultStore.get_or_run, `privlab sweep`); "
                           + "use executor: serial"])
    return worker, str(root)


def _local(cfg: Placement, todo: list[tuple[int, Point]], store: PointStore, tracker: _Tracker) -> int:
    worker, root = _worker_of(store, "local")
    size = cfg.workers or usable_cores()
    pool = local_pool(size, worker.__module__)  # started (or reused) with every worker up
    workers = min(size, len(todo))
    deadline_s = point_timeout_s()
    flag_dir = tempfile.mkdtemp(prefix="privlab-sweep-")
    flag = os.path.join(flag_dir, "cancel")
    queue, running = list(todo), {}
    try:
        while queue or running:
            tracker.progress.check_cancel()
            while queue and len(running) < workers:  # this sweep's share of the shared pool
                i, p = queue.pop(0)
                f = pool.submit(worker, root, p.config.model_dump(mode="json"), flag)
                running[f] = (i, p, time.monotonic() + deadline_s)
            finished, _ = wait(list(running), timeout=POLL_S, return_when=FIRST_COMPLETED)
            for f in finished:
                i, p, _ = running.pop(f)
                tracker.finished(i, p, f.result())
            now = time.monotonic()
            late = next(((i, p) for i, p, d in running.values() if now > d), None)
            if late is not None:
                # a worker that never answers (stuck, not dead) would hold the sweep forever:
                # its pool is killed, the sweep fails with one line
                pool.kill(f"a point ran past {deadline_s:g} s")
                running.clear()
                raise PoolError(f"sweep point {late[1].label}: no answer from its pool worker "
                                f"within {deadline_s:g} s (PRIVLAB_POINT_TIMEOUT_S); the pool "
                                "was stopped, finished points are kept")
    except BaseException:
        Path(flag).touch()  # running points stop (storing nothing); finished ones are kept
        _drain(running)
        raise
    finally:
        shutil.rmtree(flag_dir, ignore_errors=True)
    return workers


def _drain(running: dict[Future, Any]) -> None:
    for f in running:
        f.cancel()
    wait([f for f in running if not f.cancelled()], timeout=STOP_WAIT_S)


def _ray(cfg: Placement, todo: list[tuple[int, Point]], store: PointStore, tracker: _Tracker) -> int:
    worker, root = _worker_of(store, "ray")
    ray = ray_init(cfg.ray_address)
    task = _remote(ray, worker)
    limit = cfg.workers or len(todo)
    flag_dir = tempfile.mkdtemp(prefix="privlab-sweep-")
    flag = os.path.join(flag_dir, "cancel")
    queue, running = list(todo), {}
    try:
        while queue or running:
            tracker.progress.check_cancel()
            while queue and len(running) < limit:
                i, p = queue.pop(0)
                running[task.remote(root, p.config.model_dump(mode="json"), flag)] = (i, p)
            ready, _ = ray.wait(list(running), num_returns=1, timeout=POLL_S)
            for ref in ready:
                i, p = running.pop(ref)
                tracker.finished(i, p, ray.get(ref))
    except BaseException:
        Path(flag).touch()  # workers on this machine stop cleanly; elsewhere ray.cancel does
        refs = list(running)
        if refs:
            _, left = ray.wait(refs, num_returns=len(refs), timeout=5.0)
            for ref in left:
                ray.cancel(ref)
            if left:
                ray.wait(left, num_returns=len(left), timeout=STOP_WAIT_S)
        raise
    finally:
        shutil.rmtree(flag_dir, ignore_errors=True)
    return min(limit, len(todo))


EXECUTORS: dict[str, Callable[[Placement, list[tuple[int, Point]], PointStore, _Tracker], int]] = {
    "serial": _serial, "local": _local, "ray": _ray,
}


# ---------------------------------------------------------------------------------------------
# the process's pool and Ray connection

_RAY_LOCK = threading.Lock()
_RAY_TASKS: dict[Callable[..., Any], Any] = {}


def local_pool(workers: int, worker_module: str | None = None) -> LocalPool:
    """The process's one pool (:func:`core.runs.pool.get_pool`), at least ``workers``
    processes, every one started with the engine (and ``worker_module``) imported."""
    return get_pool(workers, WARM_MODULES + ((worker_module,) if worker_module else ()))


def prewarm_pool(workers: int | None = None, worker_module: str | None = None) -> float:
    """Start the process's pool now, ``workers`` processes (default: the usable cores) with the
    engine imported, so that the first local sweep does not pay the start-up; returns the
    seconds it took (0 for a pool already up; the lessons benchmark times the pool apart)."""
    t0 = time.perf_counter()
    local_pool(workers or usable_cores(), worker_module)
    return time.perf_counter() - t0


def shutdown_pool() -> None:
    """Shut the process's pool down (at exit; tests)."""
    _shutdown_pool()


atexit.register(shutdown_pool)


def ray_init(address: str | None = None):
    """Connect to Ray once per process: ``address``, else ``$RAY_ADDRESS``, else start a local
    Ray on the usable cores. Returns the ``ray`` module."""
    try:
        import ray
    except ImportError:
        raise ConfigError(["executor: got 'ray'; Ray is not installed (pip install 'privlab[scale]')"]) from None
    with _RAY_LOCK:
        if not ray.is_initialized():
            address = address or os.environ.get("RAY_ADDRESS") or None
            local = {} if address else {"num_cpus": usable_cores(), "include_dashboard": False}
            ray.init(address=address, ignore_reinit_error=True, log_to_driver=False, **local)
    return ray


def _remote(ray, worker: Callable[..., Any]):
    with _RAY_LOCK:
        task = _RAY_TASKS.get(worker)
        if task is None:
            # a failed point is an error to report, not to retry
            task = _RAY_TASKS[worker] = ray.remote(num_cpus=1, max_retries=0)(worker)
        return task


# ---------------------------------------------------------------------------------------------
# a point store without a result store


class MemoryPointStore:
    """Points kept in this process (``core.runs.experiments.run`` of a sweep given no result
    store): a dict of Results, runs through :func:`core.runs.experiments.run`; serial only."""

    root = None
    point_worker = None

    def __init__(self, stages: StageStore | None = None) -> None:
        self._stages = stages
        self._results: dict[str, Result] = {}
        self._lock = threading.Lock()

    def peek(self, config: Any) -> Result | None:
        with self._lock:
            hit = self._results.get(cache_key(parse_config(config)))
        return None if hit is None else replace(hit, from_cache=True)

    def get_or_run(self, config: Any, *, progress: Progress | ProgressCallback | None = None,
                   cancel: CancelToken | None = None) -> Result:
        from core.runs.experiments import run

        hit = self.peek(config)
        if hit is not None:
            return hit
        result = run(config, progress=progress, cancel=cancel, stages=self._stages)
        with self._lock:
            self._results[result.key] = result
        return result
