"""The process's one local pool (DESIGN: Architecture / Sweeps: "a local pool that is safe
inside the Streamlit server"); :mod:`core.runs.sweep`'s ``local`` executor runs its points here.

Three things made a pool started inside the Streamlit server hang, and each has its guard:

- Streamlit's script runner installs its own ``__main__`` (``__file__`` = the app script) and
  never restores it; a spawned or forkserver worker re-runs ``__main__``'s file as
  ``__mp_main__`` (``multiprocessing.spawn.prepare``) before its first task, and a worker stuck
  there is alive, so the pool never breaks. Workers are started *eagerly*, all of them, while
  ``sys.modules["__main__"]`` is a clean module (no ``__file__``, no ``__spec__``): nothing is
  re-run. Point functions must therefore live in importable modules, not in ``__main__``.
- The forkserver imports its preloaded modules with its own ``sys.path`` (``''`` = the working
  directory first) and ignores the one it is sent, so a ``cache/`` folder in the working
  directory shadowed the engine's package in every worker forked from it. Workers use
  ``spawn``: each gets the parent's ``sys.path`` (``''`` made the parent's starting directory)
  and working directory before it imports anything (``spawn.prepare``), so it finds what the
  parent found; the start check compares the file ``core`` was imported from in the worker
  with this process's, and refuses the pool in one line if they differ.
- Every wait has a deadline: each worker must report (engine imported) within
  :data:`START_TIMEOUT_S`, every point within :data:`POINT_TIMEOUT_S`; past it the pool is
  killed and the caller gets :class:`PoolError`, one line, instead of waiting forever.
"""

from __future__ import annotations

import contextlib
import importlib
import multiprocessing
import os
import sys
import threading
import time
import types
from collections.abc import Iterator
from concurrent.futures import Future, ProcessPoolExecutor, wait
from typing import Any

#: modules a worker imports before its first point (so no point pays them): the engine, and
#: what a first training step pulls in lazily (torch's optimisers import torch._dynamo, with
#: sympy and triton: about 1.2 CPU-s; Opacus for DP-SGD 0.4 s), which every worker paid again
WARM_MODULES = ("torch", "sklearn.linear_model", "core.runs.experiments", "core.runs.attribute_privacy",
                "core.runs.projection", "core.data", "torch._dynamo", "opacus")
START_ENV, POINT_ENV, PREWARM_ENV = ("PRIVLAB_POOL_START_S", "PRIVLAB_POINT_TIMEOUT_S",
                                     "PRIVLAB_PREWARM")


def _seconds(env: str, default: float) -> float:
    """``$env`` as positive seconds, else ``default`` (a bad value is said once, not used)."""
    raw = os.environ.get(env, "").strip()
    if not raw:
        return default
    try:
        v = float(raw)
        if v > 0:
            return v
    except ValueError:
        pass
    import warnings

    warnings.warn(f"{env}: got {raw!r}; allowed: seconds > 0. Using {default:g}.", RuntimeWarning,
                  stacklevel=3)
    return default


def start_timeout_s() -> float:
    """Seconds every worker has to start and import the engine (``$PRIVLAB_POOL_START_S``,
    default 180: two workers importing torch on two busy cores take 10-30 s)."""
    return _seconds(START_ENV, 180.0)


def point_timeout_s() -> float:
    """Seconds one point may run on a worker (``$PRIVLAB_POINT_TIMEOUT_S``, default 3600)."""
    return _seconds(POINT_ENV, 3600.0)


class PoolError(RuntimeError):
    """The local pool failed (a worker did not start or a point did not come back in time);
    the message is one line."""


def usable_cores() -> int:
    """CPU cores this process may run on (its affinity mask, not the machine's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


_MAIN_LOCK = threading.Lock()


@contextlib.contextmanager
def clean_main() -> Iterator[types.ModuleType]:
    """``sys.modules["__main__"]`` is a bare module while the block runs, so processes started
    in it re-run no script; the previous one is put back unless someone (Streamlit's next script
    run) installed another meanwhile."""
    with _MAIN_LOCK:
        saved = sys.modules.get("__main__")
        clean = types.ModuleType("__main__", "stand-in while pool workers start")
        sys.modules["__main__"] = clean
        try:
            yield clean
        finally:
            if sys.modules.get("__main__") is clean:
                if saved is None:
                    del sys.modules["__main__"]
                else:
                    sys.modules["__main__"] = saved


#: how often a worker checks that the process that started it is still there
PARENT_POLL_S = 1.0


def _exit_with(parent: int) -> None:
    """Exit this worker once ``parent`` is gone. An executor's workers wait on a pipe whose
    writing end they hold themselves, so a parent killed without shutting its pool down (a
    server stopped with SIGTERM or SIGKILL) would leave them waiting for ever."""
    while True:
        time.sleep(PARENT_POLL_S)
        if os.getppid() != parent:
            os._exit(0)


def warm_worker(threads: int, modules: tuple[str, ...], parent: int | None = None) -> None:
    """Worker initializer: leave with ``parent`` (:func:`_exit_with`), one thread per worker
    (core.foundation.threads' budget; several workers share the cores) and the engine imported before
    the first point."""
    if parent is not None:
        threading.Thread(target=_exit_with, args=(parent,), name="privlab-parent-watch",
                         daemon=True).start()
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, str(threads))
    for m in modules:
        importlib.import_module(m)


def _ready() -> tuple[int, str | None]:
    """What a started worker reports: its pid and the file it imported ``core`` from."""
    core = sys.modules.get("core")
    return os.getpid(), getattr(core, "__file__", None)


def _core_file() -> str | None:
    core = sys.modules.get("core")
    return getattr(core, "__file__", None)


class LocalPool:
    """A :class:`~concurrent.futures.ProcessPoolExecutor` of ``workers`` spawned processes,
    all started (engine imported) before the constructor returns, or :class:`PoolError`."""

    def __init__(self, workers: int, modules: tuple[str, ...] = WARM_MODULES,
                 start_timeout: float | None = None) -> None:
        from core.foundation.threads import compute_threads

        self.workers = int(workers)
        self.modules = tuple(modules)
        self.broken: str | None = None
        t0 = time.perf_counter()
        self._executor = ProcessPoolExecutor(
            self.workers, mp_context=multiprocessing.get_context("spawn"),
            initializer=warm_worker, initargs=(compute_threads(), self.modules, os.getpid()))
        limit = start_timeout_s() if start_timeout is None else float(start_timeout)
        futures: list[Future] = []
        with clean_main():
            # the executor starts a process per submit while none is idle: one no-op per
            # worker starts them all now, under the clean __main__ (none later, elsewhere)
            for _ in range(3 * self.workers):
                if len(self.processes()) >= self.workers:
                    break
                futures.append(self._executor.submit(_ready))
        done, pending = wait(futures, timeout=limit)
        if pending or len(self.processes()) < self.workers:
            self.kill("did not start")
            raise PoolError(f"local pool: {len(pending)} of {self.workers} workers did not start "
                            f"within {limit:g} s ({START_ENV}); use executor: serial")
        here = _core_file()
        for f in done:
            try:
                _, there = f.result()
            except BaseException as exc:  # noqa: BLE001 - an initializer failing (an import)
                self.kill("failed to start")
                raise PoolError(f"local pool: a worker failed to start: {type(exc).__name__}: "
                                f"{' '.join(str(exc).split())}; use executor: serial") from None
            if here is not None and there is not None and os.path.realpath(there) != os.path.realpath(here):
                self.kill("imports another engine")
                raise PoolError(f"local pool: a worker imports core from {there}, this process "
                                f"from {here}; start from the project's directory or set "
                                "PYTHONPATH")
        self.start_s = time.perf_counter() - t0

    def processes(self) -> dict[int, Any]:
        return dict(getattr(self._executor, "_processes", None) or {})

    @property
    def usable(self) -> bool:
        return self.broken is None and not getattr(self._executor, "_broken", False)

    def submit(self, fn: Any, *args: Any) -> Future:
        """``fn(*args)`` on a worker (``fn`` importable by name: not from ``__main__``)."""
        if self.broken is not None:
            raise PoolError(f"local pool: {self.broken}; run the sweep again")
        return self._executor.submit(fn, *args)

    def kill(self, why: str) -> None:
        """Stop the pool now: queued points are dropped, running workers terminated (a stuck
        worker never returns on its own)."""
        self.broken = self.broken or why
        procs = self.processes()
        self._executor.shutdown(wait=False, cancel_futures=True)
        for p in procs.values():
            with contextlib.suppress(Exception):
                p.terminate()
        for p in procs.values():
            with contextlib.suppress(Exception):
                p.join(5.0)

    def shutdown(self) -> None:
        self._executor.shutdown(wait=True, cancel_futures=True)


# ---------------------------------------------------------------------------------------------
# the process's one pool

_LOCK = threading.Lock()
_POOL: dict[str, LocalPool] = {}


def get_pool(workers: int, modules: tuple[str, ...] = WARM_MODULES) -> LocalPool:
    """The process's pool with at least ``workers`` processes, started now (``modules``
    imported first) if there is none or it is smaller or broken; kept across sweeps (a module
    it did not import ahead is imported by the first task that needs it). A second caller waits
    for a start in progress (bounded by its start deadline)."""
    with _LOCK:
        pool = _POOL.get("pool")
        if pool is not None and (pool.workers < workers or not pool.usable):
            _POOL.pop("pool")
            pool.kill("replaced")
            pool = None
        if pool is None:
            pool = _POOL["pool"] = LocalPool(workers, tuple(dict.fromkeys((*WARM_MODULES, *modules))))
        return pool


def current_pool() -> LocalPool | None:
    return _POOL.get("pool")


def shutdown_pool() -> None:
    """Shut the process's pool down (at exit; tests)."""
    with _LOCK:
        pool = _POOL.pop("pool", None)
    if pool is not None:
        if pool.usable:
            pool.shutdown()
        else:
            pool.kill("shut down")


_PREWARM: dict[str, threading.Thread] = {}
_PREWARM_LOCK = threading.Lock()


def prewarm_in_background(workers: int | None = None, modules: tuple[str, ...] = WARM_MODULES,
                          *, nice: int = 0) -> threading.Thread | None:
    """Start the pool in a daemon thread, once per process, unless ``$PRIVLAB_PREWARM`` is
    ``0`` (the dashboard server calls this at start, so the first comparison does not pay the
    workers' imports). ``nice``: added to the starting thread's nice value, which the workers
    inherit (the dashboard's runs are background work: its job threads run niced, and a pool a
    job thread starts would be too). A start that fails leaves no pool; the first sweep then
    tries again."""
    if os.environ.get(PREWARM_ENV, "1").strip().lower() in ("0", "false", "no", "off"):
        return None
    with _PREWARM_LOCK:  # not _LOCK: that one is held while a pool starts
        t = _PREWARM.get("thread")
        if t is not None:
            return t

        def start() -> None:
            if nice > 0 and hasattr(os, "setpriority"):
                with contextlib.suppress(OSError):  # per thread on Linux; children inherit it
                    tid = threading.get_native_id()
                    os.setpriority(os.PRIO_PROCESS, tid,
                                   min(os.getpriority(os.PRIO_PROCESS, tid) + nice, 19))
            with contextlib.suppress(PoolError):
                get_pool(workers or usable_cores(), modules)

        t = _PREWARM["thread"] = threading.Thread(target=start, name="privlab-pool-start",
                                                  daemon=True)
        t.start()
        return t
