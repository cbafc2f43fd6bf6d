"""The background-job runner: run an experiment with progress and cancel (no plots here:
figures are in :mod:`dashboard.plots`, components that draw a Result in
:mod:`dashboard.components`).

:func:`run_with_progress` is the one way a page gets a Result. It validates the config, shows a
cached Result at once (``store.peek``), and otherwise runs ``store.get_or_run`` in a background
thread with a :class:`core.progress.CancelToken`, drawing ``st.progress`` with the runner's
message and a Cancel button while it polls. Streamlit reruns the script on every interaction,
so the worker and its token live in ``st.session_state`` keyed by the cache key: a rerun that
asks for the same config picks the running job up again instead of starting a second one.
Bad input (ConfigError, DataError) and cancellation are shown as messages; nothing is stored.
"""

from __future__ import annotations

import hashlib
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import streamlit as st

from core.config import ConfigError, cache_key, parse_config
from core.progress import Cancelled, CancelToken
from core.result import Result

__all__ = [
    "Job", "get_store", "is_data_error", "is_running", "peek", "run_many_with_progress",
    "run_with_progress", "running_jobs_panel", "validate",
]

_JOBS = "_privlab_jobs"  # cache key -> Job (running or just finished)
_SLOTS = "_privlab_slots"  # label -> cache key of the slot's newest job
_CANCELLED = "_privlab_cancelled"  # keys the user cancelled (not auto-restarted)
_ERRORS = "_privlab_errors"  # key -> (kind, message, traceback) of a failed run
POLL_S = 0.25


def get_store():
    """The result store (``cache.store.default_store()``; honours ``PRIVLAB_CACHE_DIR``)."""
    from cache.store import default_store

    return default_store()


def is_data_error(exc: BaseException) -> bool:
    """True for the data layer's DataError (missing/corrupt real data, bad data combination)."""
    try:
        from core.data import DataError
    except ImportError:  # pragma: no cover - the data package always defines it
        return any(c.__name__ == "DataError" for c in type(exc).__mro__)
    return isinstance(exc, DataError)


@dataclass
class Job:
    """One background run: its thread, cancel token and last progress report."""

    key: str
    label: str
    token: CancelToken = field(default_factory=CancelToken)
    started: float = field(default_factory=time.time)
    fraction: float = 0.0
    message: str = "starting"
    result: Any = None
    error: BaseException | None = None
    trace: str = ""
    done: threading.Event = field(default_factory=threading.Event)
    thread: threading.Thread | None = None

    def report(self, fraction: float, message: str = "") -> None:
        """Progress callback ``(fraction, message)`` handed to the engine (worker thread)."""
        self.fraction = min(max(float(fraction), 0.0), 1.0)
        if message:
            self.message = message

    @property
    def elapsed(self) -> float:
        return time.time() - self.started


def _state(name: str, factory: Callable[[], Any]) -> Any:
    if name not in st.session_state:
        st.session_state[name] = factory()
    return st.session_state[name]


def _jobs() -> dict[str, Job]:
    return _state(_JOBS, dict)


def _start(key: str, label: str, work: Callable[[Job], Any], slot: str | None = None) -> Job:
    """Start ``work(job)`` in a daemon thread; a newer job in the same slot cancels the older."""
    jobs, slots = _jobs(), _state(_SLOTS, dict)
    slot = slot or label
    old_key = slots.get(slot)
    if old_key and old_key != key and old_key in jobs and not jobs[old_key].done.is_set():
        jobs.pop(old_key).token.cancel()
    job = Job(key=key, label=label)

    def target() -> None:
        try:
            job.result = work(job)
        except BaseException as exc:  # noqa: BLE001 - reported to the page by _finish
            job.error = exc
            job.trace = traceback.format_exc()
        finally:
            job.done.set()

    job.thread = threading.Thread(target=target, name=f"privlab-{label}-{key[:8]}", daemon=True)
    jobs[key] = job
    slots[slot] = key
    job.thread.start()
    return job


def _describe(exc: BaseException) -> tuple[str, str]:
    if isinstance(exc, Cancelled):
        return "cancelled", "cancelled"
    if isinstance(exc, ConfigError):
        return "config", f"Invalid settings: {exc}"
    if is_data_error(exc):
        return "data", f"Data problem: {exc}"
    return "crash", f"{type(exc).__name__}: {exc}"


def _show_error(kind: str, message: str, trace: str, label: str) -> None:
    if kind in ("config", "data"):
        st.error(f"{label}: {message}\n\nNothing was stored.")
    else:
        st.error(f"{label} failed: {message}\n\nNothing was stored.")
        if trace:
            with st.expander("traceback"):
                st.code(trace)


def _finish(job: Job) -> Any:
    """Turn a finished job into its result, or a message (and remember why it failed)."""
    _jobs().pop(job.key, None)
    if job.error is None:
        return job.result
    kind, message = _describe(job.error)
    if kind == "cancelled":
        _state(_CANCELLED, set).add(job.key)
        st.warning(f"{job.label}: cancelled after {job.elapsed:.0f} s; nothing was stored.")
        return None
    _state(_ERRORS, dict)[job.key] = (kind, message, job.trace)
    _show_error(kind, message, job.trace, job.label)
    return None


def _await(job: Job) -> Any:
    """Draw progress + Cancel and poll until the job ends (a rerun interrupts and resumes)."""
    holder = st.empty()
    with holder.container(border=True):
        left, right = st.columns([6, 1], vertical_alignment="center")
        bar = left.progress(job.fraction, text=f"{job.label}: {job.message}")
        clicked = right.button("Cancel", key=f"privlab-cancel-{job.key[:16]}")
    if clicked:
        job.token.cancel()
        _jobs().pop(job.key, None)
        _state(_CANCELLED, set).add(job.key)
        holder.empty()
        st.warning(f"{job.label}: cancelled; nothing was stored.")
        return None
    while not job.done.wait(POLL_S):
        bar.progress(job.fraction, text=f"{job.label}: {job.message} · {job.elapsed:.0f} s")
    holder.empty()
    return _finish(job)


def _gate(key: str, label: str, start: bool) -> bool:
    """Decide whether a not-cached, not-running key may start now.

    A key that failed or was cancelled is not restarted on its own: its message stays, with a
    button to try again.
    """
    errors, cancelled = _state(_ERRORS, dict), _state(_CANCELLED, set)
    if key in errors:
        kind, message, trace = errors[key]
        _show_error(kind, message, trace, label)
        if st.button("Retry", key=f"privlab-retry-{key[:16]}"):
            errors.pop(key, None)
            return True
        return False
    if key in cancelled:
        st.info(f"{label}: the last run of these settings was cancelled.")
        if st.button("Run again", key=f"privlab-again-{key[:16]}"):
            cancelled.discard(key)
            return True
        return False
    return start


def validate(config: Any, *, label: str = "settings") -> Any | None:
    """Validate a config (model or mapping); show the ConfigError and return None if bad."""
    try:
        return parse_config(config)
    except ConfigError as exc:
        st.error(f"{label}: invalid settings: {exc}\n\nNothing was stored.")
        return None


def peek(config: Any) -> Result | None:
    """The cached Result of a (valid) config, or None; never computes."""
    return get_store().peek(parse_config(config))


def is_running(config: Any) -> bool:
    return cache_key(parse_config(config)) in _jobs()


def run_with_progress(
    config: Any, *, label: str, start: bool = True, slot: str | None = None
) -> Result | None:
    """Result of ``config`` through the store, showing progress and a Cancel button.

    - cached: returned at once (``result.from_cache`` is True);
    - already running in this session: progress is shown again and the run awaited;
    - otherwise, when ``start`` is True: run in a background thread and await it;
      when ``start`` is False: return None (the page shows its Run button).
    A new run in the same ``slot`` (default: the label) cancels the slot's older run, e.g. a
    projection superseded by a change of method.
    Invalid configs, data errors and cancellation show a message and return None.
    """
    cfg = validate(config, label=label)
    if cfg is None:
        return None
    key = cache_key(cfg)
    job = _jobs().get(key)
    if job is None:
        store = get_store()
        cached = store.peek(cfg)
        if cached is not None:
            return cached
        if not _gate(key, label, start):
            return None
        job = _start(key, label, lambda j: store.get_or_run(cfg, progress=j.report, cancel=j.token),
                     slot=slot)
    return _await(job)


def run_many_with_progress(
    configs: Sequence[Any], *, label: str, start: bool = True
) -> list[Result] | None:
    """Run a grid of configs one after the other through the store, one progress bar for all.

    Every grid point is stored on its own, so a slider over the grid then shows cached points at
    once. Returns the Results in order, or None when not started / cancelled / failed.
    """
    cfgs = []
    for c in configs:
        cfg = validate(c, label=label)
        if cfg is None:
            return None
        cfgs.append(cfg)
    keys = [cache_key(c) for c in cfgs]
    key = "grid-" + hashlib.sha256("|".join(keys).encode()).hexdigest()
    job = _jobs().get(key)
    if job is None:
        store = get_store()
        cached = [store.peek(c) for c in cfgs]
        if all(r is not None for r in cached):
            return cached
        if not _gate(key, label, start):
            return None

        def work(j: Job) -> list[Result]:
            out = []
            n = len(cfgs)
            for i, cfg in enumerate(cfgs):
                j.token.raise_if_cancelled()

                def cb(f: float, msg: str = "", i: int = i) -> None:
                    j.report((i + f) / n, f"point {i + 1}/{n}: {msg}")

                out.append(store.get_or_run(cfg, progress=cb, cancel=j.token))
            return out

        job = _start(key, label, work)
    return _await(job)


def running_jobs_panel() -> None:
    """Runs of this session still going in the background (e.g. after a slider moved on)."""
    jobs = [j for j in _jobs().values() if not j.done.is_set()]
    if not jobs:
        return

    @st.fragment(run_every=1.0)
    def _panel() -> None:
        live = [j for j in _jobs().values() if not j.done.is_set()]
        if not live:  # all stored now: rerun the page so it shows them
            st.rerun()
        st.caption("Running in the background (results are stored when they finish):")
        for j in live:
            left, right = st.columns([6, 1], vertical_alignment="center")
            left.progress(j.fraction, text=f"{j.label}: {j.message} · {j.elapsed:.0f} s")
            if right.button("Cancel", key=f"privlab-bg-cancel-{j.key[:16]}"):
                j.token.cancel()
                _jobs().pop(j.key, None)
                _state(_CANCELLED, set).add(j.key)
                st.rerun()

    _panel()
