"""Runner for ``kind: sweep`` (DESIGN: Architecture / Sweeps): run the points of a grid that
are missing from the store, serially, on a local process pool or on Ray, and tabulate them.

Points go through the injected point store (:class:`core.sweeps.PointStore`, the result store
handed in by ``cache.store.ResultStore.get_or_run``), so each point is stored under its own
key the moment it finishes: a cancelled or failed sweep keeps its finished points and stores
nothing of its own. Pool and Ray workers run the store's ``point_worker`` (they open the store
at its ``root`` themselves) and send back a small summary (:func:`core.sweeps.summarise`).

- ``serial``: in this process, one point after another, with each point's own progress.
- ``local``: :class:`~concurrent.futures.ProcessPoolExecutor` on forkserver (forking a process
  that has threads, like the dashboard, is unsafe), one per process, kept warm across sweeps.
- ``ray``: ``ray.init`` once per process (``ray_address``, else ``$RAY_ADDRESS``, else a local
  Ray), one task per point with ``num_cpus=1``.
"""

from __future__ import annotations

import atexit
import importlib
import multiprocessing
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import replace
from pathlib import Path
from typing import Any

from core.config import ConfigError, SweepConfig, cache_key, parse_config
from core.progress import CancelToken, Progress, ProgressCallback
from core.result import Result
from core.stages import Stages, StageStore
from core.sweeps import Point, PointStore, columns_of, expand, point_row, summarise
from core.threads import compute_threads

#: how often the parent checks its cancel token while pool or Ray workers run
POLL_S = 0.2
#: how long a cancelled sweep waits for its running points to stop before giving up on them
STOP_WAIT_S = 30.0
#: modules a pool worker imports before its first point (so no point pays them)
WARM_MODULES = ("torch", "sklearn.linear_model", "core.experiments", "core.runs.attribute_privacy",
                "core.runs.projection", "core.data")


def run_sweep(cfg: SweepConfig, progress: Progress, stages: Stages | None = None, *,
              points: PointStore | None = None) -> Result:
    """Run ``cfg``'s missing points on its executor; a ``sweep`` Result whose ``info["rows"]``
    holds one row per point (:func:`core.sweeps.point_row`), ``info["columns"]`` their order."""
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
    tracker.done = len(tracker.summaries)
    todo = [(i, p) for i, p in enumerate(plan) if i not in tracker.summaries]
    progress.update(tracker.done / n, f"{tracker.done} of {n} points stored; running "
                    f"{len(todo)} ({cfg.executor})")
    workers = EXECUTORS[cfg.executor](cfg, todo, store, tracker) if todo else 0
    rows = [point_row(p, tracker.summaries[i]) for i, p in enumerate(plan)]
    n_run = sum(not s["from_cache"] for s in tracker.summaries.values())
    seconds = time.perf_counter() - t0
    metrics = {"points_total": float(n), "points_run": float(n_run),
               "points_cached": float(n - n_run), "seconds": seconds}
    info = {"rows": rows, "columns": columns_of(rows, list(cfg.grid)), "base_kind": cfg.base["kind"],
            "executor": cfg.executor, "workers": workers}
    return Result(kind="sweep", config=cfg.model_dump(mode="json"), seed=cfg.seed, metrics=metrics,
                  info=info, timings={"total_s": seconds})


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


def _serial(cfg: SweepConfig, todo: list[tuple[int, Point]], store: PointStore, tracker: _Tracker) -> int:
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


def _local(cfg: SweepConfig, todo: list[tuple[int, Point]], store: PointStore, tracker: _Tracker) -> int:
    worker, root = _worker_of(store, "local")
    size = cfg.workers or usable_cores()
    pool = local_pool(size, worker.__module__)  # processes start on demand: no cost to size it
    workers = min(size, len(todo))
    flag_dir = tempfile.mkdtemp(prefix="privlab-sweep-")
    flag = os.path.join(flag_dir, "cancel")
    queue, running = list(todo), {}
    try:
        while queue or running:
            tracker.progress.check_cancel()
            while queue and len(running) < workers:  # this sweep's share of the shared pool
                i, p = queue.pop(0)
                running[pool.submit(worker, root, p.config.model_dump(mode="json"), flag)] = (i, p)
            finished, _ = wait(list(running), timeout=POLL_S, return_when=FIRST_COMPLETED)
            for f in finished:
                i, p = running.pop(f)
                tracker.finished(i, p, f.result())
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


def _ray(cfg: SweepConfig, todo: list[tuple[int, Point]], store: PointStore, tracker: _Tracker) -> int:
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


EXECUTORS: dict[str, Callable[[SweepConfig, list[tuple[int, Point]], PointStore, _Tracker], int]] = {
    "serial": _serial, "local": _local, "ray": _ray,
}


# ---------------------------------------------------------------------------------------------
# the process's pool and Ray connection

_POOL_LOCK = threading.Lock()
_POOL: dict[str, Any] = {}
_RAY_LOCK = threading.Lock()
_RAY_TASKS: dict[Callable[..., Any], Any] = {}


def usable_cores() -> int:
    """CPU cores this process may run on (its affinity mask, not the machine's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def warm_worker(threads: int, modules: tuple[str, ...]) -> None:
    """Pool initializer: one thread per worker (core.threads' budget; several workers share the
    cores) and the engine imported before the first point."""
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, str(threads))
    for m in modules:
        importlib.import_module(m)


def local_pool(workers: int, worker_module: str | None = None) -> ProcessPoolExecutor:
    """The process's one pool, at least ``workers`` processes (started on demand, kept warm
    across sweeps, shut down at exit); a broken or smaller one is replaced (a sweep still using
    the old one finishes its points there)."""
    with _POOL_LOCK:
        pool = _POOL.get("pool")
        if pool is not None and (_POOL["workers"] < workers or getattr(pool, "_broken", False)):
            pool.shutdown(wait=False)
            pool = None
        if pool is None:
            modules = WARM_MODULES + ((worker_module,) if worker_module else ())
            ctx = multiprocessing.get_context("forkserver")
            # the fork server imports the engine once and each worker forks from it, instead of
            # every worker importing torch on its own (no effect once the server is running)
            ctx.set_forkserver_preload(list(modules))
            pool = ProcessPoolExecutor(workers, mp_context=ctx, initializer=warm_worker,
                                       initargs=(compute_threads(), modules))
            _POOL.update(pool=pool, workers=workers)
        return pool


def _ready() -> int:
    return os.getpid()


def prewarm_pool(workers: int | None = None, worker_module: str | None = None) -> float:
    """Start the process's pool now, ``workers`` processes (default: the usable cores) with the
    engine imported, so that the first local sweep does not pay
    the start-up; returns the seconds it took (the lessons benchmark times the pool apart)."""
    t0 = time.perf_counter()
    n = workers or usable_cores()
    pool = local_pool(n, worker_module)
    # submitted before any worker is idle, the tasks start all n processes; each answers once
    # its initializer (the engine's imports) has run
    for f in [pool.submit(_ready) for _ in range(2 * n)]:
        f.result()
    return time.perf_counter() - t0


def shutdown_pool() -> None:
    """Shut the process's pool down (at exit; tests)."""
    with _POOL_LOCK:
        pool = _POOL.pop("pool", None)
        _POOL.pop("workers", None)
    if pool is not None:
        pool.shutdown(wait=True, cancel_futures=True)


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
    """Points kept in this process (``core.experiments.run`` of a sweep given no result
    store): a dict of Results, runs through :func:`core.experiments.run`; serial only."""

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
        from core.experiments import run

        hit = self.peek(config)
        if hit is not None:
            return hit
        result = run(config, progress=progress, cancel=cancel, stages=self._stages)
        with self._lock:
            self._results[result.key] = result
        return result
