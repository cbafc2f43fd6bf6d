"""The background-job runner: run an experiment with progress and cancel (no plots here:
figures are in :mod:`dashboard.base.plots`, components that draw a Result in
:mod:`dashboard.components`); the Streamlit layer over :mod:`dashboard.base.jobs`.

:func:`run_with_progress` is the one way a page gets a Result. It takes the config's model as
it is (a mapping is validated here, once per script run: :func:`typed`), shows a
cached Result at once (``store.peek``, without touching the queue), and otherwise submits
``store.get_or_run`` to the process-wide :class:`dashboard.base.jobs.JobQueue`, shared by every
browser session: at most ``$PRIVLAB_MAX_JOBS`` (default: the usable cores) run at once, the
same config asked for by two sessions runs once (the second follows the first's job).

- waiting: the page shows its place in line ("queued: 3rd in line") and a Cancel button, and
  goes on rendering; a fragment polls the line and reruns the page when the run starts;
- running: ``st.progress`` with the runner's message and a Cancel button while it polls;
- Cancel withdraws this session's ticket: a waiting run then never starts, a running one is
  cancelled (:class:`core.foundation.progress.CancelToken`) unless another session still follows it.

Streamlit reruns the script on every interaction, so the session's tickets live in
``st.session_state`` keyed by the cache key: a rerun that asks for the same config picks its job
up again instead of submitting another. Bad input (ConfigError, DataError) and cancellation
are shown as messages; nothing is stored.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import streamlit as st

from core.config.schema import CONFIG_MODELS, ConfigError, cache_key, parse_config
from core.foundation.progress import Cancelled
from core.foundation.result import Result
from dashboard.base.jobs import QUEUED, Job, Ticket, get_queue, ordinal

__all__ = [
    "Job", "Ticket", "get_store", "is_data_error", "is_running", "peek", "queue_caption",
    "run_job_with_progress", "run_many_with_progress", "run_with_progress", "running_jobs_panel",
    "typed", "validate",
]

_JOBS = "_privlab_jobs"  # cache key -> Ticket of this session (waiting, running or just done)
_SLOTS = "_privlab_slots"  # label -> cache key of the slot's newest job
_CANCELLED = "_privlab_cancelled"  # keys the user cancelled (not auto-restarted)
_ERRORS = "_privlab_errors"  # key -> (kind, message, traceback) of a failed run
_NOTES = "_privlab_notes"  # key -> what the last Cancel did (shown once after the rerun)
_SHOWN = "_privlab_shown"  # key -> the full run (app.py's counter) whose page showed its line
_RUN = "_privlab_run"  # app.py counts the session's full runs here
_TYPED = "_privlab_typed"  # (full run, {mapping's JSON: its model}) of this script run
MAX_TYPED = 512
POLL_S = 0.25
QUEUE_POLL_S = 1.0


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


def _state(name: str, factory: Callable[[], Any]) -> Any:
    if name not in st.session_state:
        st.session_state[name] = factory()
    return st.session_state[name]


def _jobs() -> dict[str, Ticket]:
    return _state(_JOBS, dict)


def _submit(key: str, label: str, work: Callable[[Job], Any], slot: str | None = None) -> Ticket:
    """Queue ``work(job)`` (or follow the job already doing ``key``); a newer job in the same
    slot withdraws this session from the older one (e.g. a projection superseded by another
    method)."""
    jobs, slots = _jobs(), _state(_SLOTS, dict)
    slot = slot or label
    old_key = slots.get(slot)
    if old_key and old_key != key and old_key in jobs and not jobs[old_key].done.is_set():
        jobs.pop(old_key).cancel()
    ticket = get_queue().submit(key, work, label=label)
    jobs[key] = ticket
    slots[slot] = key
    return ticket


def _describe(exc: BaseException) -> tuple[str, str]:
    if isinstance(exc, Cancelled):
        return "cancelled", "cancelled"
    if isinstance(exc, ConfigError):
        return "config", f"Invalid settings: {exc}"
    if is_data_error(exc):
        return "data", f"Data problem: {exc}"
    from cache.errors import StoreError
    from core.foundation.finite import NonFiniteMetric

    if isinstance(exc, StoreError):  # full disk, read-only store: said as such, no traceback
        return "store", str(exc)
    if isinstance(exc, NonFiniteMetric):
        return "config", f"Numeric failure: {exc}"
    return "crash", f"{type(exc).__name__}: {exc}"


def _one_line(text: str, limit: int = 300) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _show_error(kind: str, message: str, trace: str, label: str) -> None:
    """One line for every visitor; the traceback in an expander only for a visitor on
    loopback (dashboard.base.auth.show_details): a shared server never shows its internals."""
    from dashboard.base.auth import show_details

    if kind in ("config", "data", "store"):
        st.error(f"{label}: {_one_line(message)} Nothing was stored.")
        return
    st.error(f"{label} failed: {_one_line(message)} Nothing was stored.")
    if trace and show_details():
        with st.expander("details (shown on this machine only)"):
            st.code(trace)


def _finish(ticket: Ticket) -> Any:
    """Turn a finished job into its result, or a message (and remember why it failed)."""
    _jobs().pop(ticket.key, None)
    ticket.release()
    if ticket.error is None:
        return ticket.result
    kind, message = _describe(ticket.error)
    if kind == "cancelled":
        _state(_CANCELLED, set).add(ticket.key)
        st.warning(f"{ticket.label}: cancelled after {ticket.elapsed:.0f} s; nothing was stored.")
        return None
    _state(_ERRORS, dict)[ticket.key] = (kind, message, ticket.trace)
    _show_error(kind, message, ticket.trace, ticket.label)
    return None


def _withdraw(ticket: Ticket) -> str:
    """What the Cancel button does: withdraw this session's ticket; the message to show."""
    others = ticket.others
    waiting = ticket.state == QUEUED
    ticket.cancel()
    _jobs().pop(ticket.key, None)
    _state(_CANCELLED, set).add(ticket.key)
    if others:
        return (f"{ticket.label}: you stopped following this run; it goes on for {others} other "
                "session(s) and is stored when it finishes.")
    if waiting:
        return f"{ticket.label}: cancelled while waiting in the queue; it never started."
    return f"{ticket.label}: cancelled; nothing was stored."


def queue_caption() -> str:
    """``2 of 2 run slots busy · 3 waiting`` (the process-wide queue)."""
    c = get_queue().counts()
    text = f"{c['running']} of {c['max_jobs']} run slots busy"
    return text + (f" · {c['queued']} waiting" if c["queued"] else "")


def _line_text(ticket: Ticket) -> str:
    pos = ticket.position
    where = f"queued: {ordinal(pos)} in line" if pos else "queued"
    shared = f" · followed by {ticket.others} other session(s)" if ticket.others else ""
    return f"{ticket.label}: {where} ({queue_caption()}){shared}"


def _show_queued(ticket: Ticket) -> None:
    """The waiting run's place in line and a Cancel button, refreshed every second; the page
    reruns when the run starts (it then shows progress) or ends."""
    key = ticket.key
    run = st.session_state.get(_RUN)
    if run is not None:  # the background panel then leaves it out (shown here already)
        _state(_SHOWN, dict)[key] = run

    @st.fragment(run_every=QUEUE_POLL_S)
    def _line() -> None:
        if _jobs().get(key) is not ticket:  # cancelled or collected meanwhile
            return
        if ticket.state != QUEUED:
            st.rerun()
        with st.container(border=True):
            left, right = st.columns([6, 1], vertical_alignment="center")
            left.info(_line_text(ticket), icon=":material/hourglass_top:")
            if right.button("Cancel", key=f"privlab-qcancel-{key[:16]}"):
                _state(_NOTES, dict)[key] = _withdraw(ticket)
                st.rerun()

    _line()


def _await(ticket: Ticket) -> Any:
    """A waiting run: its place in line (no waiting here: the page goes on, None). A running
    one: progress + Cancel, polled until it ends (a rerun interrupts and resumes)."""
    if ticket.state == QUEUED:
        _show_queued(ticket)
        return None
    if ticket.done.is_set():
        return _finish(ticket)
    holder = st.empty()
    with holder.container(border=True):
        left, right = st.columns([6, 1], vertical_alignment="center")
        bar = left.progress(ticket.fraction, text=f"{ticket.label}: {ticket.message}")
        clicked = right.button("Cancel", key=f"privlab-cancel-{ticket.key[:16]}")
    if clicked:
        holder.empty()
        st.warning(_withdraw(ticket))
        return None
    while not ticket.done.wait(POLL_S):
        shared = f" · followed by {ticket.others} other session(s)" if ticket.others else ""
        bar.progress(ticket.fraction,
                     text=f"{ticket.label}: {ticket.message} · {ticket.elapsed:.0f} s{shared}")
    holder.empty()
    return _finish(ticket)


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
        note = _state(_NOTES, dict).pop(key, None)
        st.info(note or f"{label}: the last run of these settings was cancelled.")
        if st.button("Run again", key=f"privlab-again-{key[:16]}"):
            cancelled.discard(key)
            return True
        return False
    if not start:
        other = get_queue().active(key)
        if other is not None:
            st.caption(f"{label}: another session is computing these settings right now "
                       f"({'waiting in the queue' if other.state == QUEUED else f'{other.fraction:.0%}'}); "
                       "press Run to follow it.")
    return start


def _json(config: Any) -> str | None:
    try:
        return json.dumps(config, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError):  # not plain data: validated, not remembered
        return None


def _typed_memo() -> dict[str, Any] | None:
    """This script run's mapping -> model memo (None outside app.py's numbered runs)."""
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    if get_script_run_ctx(suppress_warning=True) is None:  # plain Python: no session
        return None
    run = st.session_state.get(_RUN)
    if run is None:
        return None
    held = st.session_state.get(_TYPED)
    if held is None or held[0] != run:
        held = st.session_state[_TYPED] = (run, {})
    return held[1]


def typed(config: Any) -> Any:
    """The validated model of ``config`` (ConfigError if invalid).

    A config model is already validated and is returned as it is. A mapping is validated at
    this boundary, once per script run: the page's config, its dumped form and every grid point
    a page peeks are remembered for the rest of the run (a page's later peeks of the same
    settings, e.g. a lesson's undefended reference, find the model instead of validating it
    again). The memo starts afresh on every full run, so a data folder or a registered data
    set that went away is seen on the next rerun."""
    if type(config) in _MODEL_TYPES:
        return config
    memo = _typed_memo() if isinstance(config, Mapping) else None
    key = _json(config) if memo is not None else None
    if key is not None and key in memo:
        return memo[key]
    cfg = parse_config(config)
    if key is not None and len(memo) < MAX_TYPED:
        memo[key] = cfg
        dumped = _json(cfg.model_dump(mode="json"))
        if dumped is not None:
            memo.setdefault(dumped, cfg)
    return cfg


_MODEL_TYPES = frozenset(CONFIG_MODELS.values())


def validate(config: Any, *, label: str = "settings") -> Any | None:
    """The validated model of ``config`` (:func:`typed`: a model as it is, a mapping validated
    once per script run); shows the ConfigError and returns None if bad."""
    try:
        return typed(config)
    except ConfigError as exc:
        from dashboard.base.format import titled

        kind = config.get("kind") if isinstance(config, Mapping) else getattr(config, "kind", None)
        st.error(f"{label}: invalid settings: {titled(str(exc), kind)}\n\nNothing was stored.")
        return None


_PEEKED: OrderedDict[tuple[str, str], tuple[tuple, Result]] = OrderedDict()
_PEEKED_LOCK = threading.Lock()
MAX_PEEKED = 256


def _peek(store: Any, cfg: Any) -> Result | None:
    """``store.peek(cfg)``, remembered in this process while the run's index row keeps its
    checksums: a page that shows the same stored runs on every rerun (a λ grid, the undefended
    point) reads and verifies their files once, not on every visit. A deleted or rewritten run
    is read again (its row is gone or its checksums changed); hits still count for the
    store's least-recently-used clean-up."""
    key = cache_key(cfg)
    lookup = getattr(store.index, "lookup", None)
    row = lookup(key) if lookup is not None else None
    if row is None:
        return store.peek(cfg)
    memo_key = (str(store.root), key)
    with _PEEKED_LOCK:
        hit = _PEEKED.get(memo_key)
        if hit is not None and hit[0] == tuple(row[:2]):
            _PEEKED.move_to_end(memo_key)
        else:
            hit = None
    if hit is None:
        result = store.peek(cfg)
        if result is not None:
            with _PEEKED_LOCK:
                _PEEKED[memo_key] = (tuple(row[:2]), result)
                while len(_PEEKED) > MAX_PEEKED:
                    _PEEKED.popitem(last=False)
        return result
    touch, every = getattr(store.index, "touch", None), getattr(store, "touch_every_s", None)
    now = time.time()
    if touch is not None and every is not None and (row[2] is None or now - row[2] >= every):
        touch(key, now)
    return hit[1]


def peek(config: Any) -> Result | None:
    """The cached Result of a (valid) config, or None; never computes (nor queues)."""
    return _peek(get_store(), typed(config))


def is_running(config: Any) -> bool:
    """True while this session waits for or follows a run of ``config``."""
    return cache_key(typed(config)) in _jobs()


def run_with_progress(
    config: Any, *, label: str, start: bool = True, slot: str | None = None
) -> Result | None:
    """Result of ``config`` through the store and the shared job queue.

    - cached: returned at once (``result.from_cache`` is True), without touching the queue;
    - waiting or running for this session: its place in line, or its progress, again;
    - otherwise, when ``start`` is True: submitted to the queue (or following the job of
      another session that asked for the same config); a running job is awaited with
      progress, a waiting one shows its place in line and returns None;
      when ``start`` is False: return None (the page shows its Run button).
    A new run in the same ``slot`` (default: the label) withdraws the slot's older run, e.g. a
    projection superseded by a change of method.
    Invalid configs, data errors and cancellation show a message and return None.
    """
    cfg = validate(config, label=label)
    if cfg is None:
        return None
    key = cache_key(cfg)
    ticket = _jobs().get(key)
    if ticket is None:
        store = get_store()
        cached = _peek(store, cfg)
        if cached is not None:
            return cached
        if not _gate(key, label, start):
            return None
        ticket = _submit(
            key, label, lambda j: store.get_or_run(cfg, progress=j.report, cancel=j.token),
            slot=slot)
    return _await(ticket)


def run_many_with_progress(
    configs: Sequence[Any], *, label: str, start: bool = True
) -> list[Result] | None:
    """Run a grid of configs one after the other through the store, one progress bar for all.

    The grid is one job of the shared queue (one run slot; two sessions asking for the same
    grid share it). Every grid point is stored on its own, so a slider over the grid then shows
    cached points at once. Returns the Results in order, or None when not started / waiting /
    cancelled / failed.
    """
    cfgs = []
    for c in configs:
        cfg = validate(c, label=label)
        if cfg is None:
            return None
        cfgs.append(cfg)
    keys = [cache_key(c) for c in cfgs]
    key = "grid-" + hashlib.sha256("|".join(keys).encode()).hexdigest()
    store = get_store()
    if key not in _jobs():
        cached = [_peek(store, c) for c in cfgs]
        if all(r is not None for r in cached):
            return cached

    def work(j: Job) -> list[Result]:
        out = []
        n = len(cfgs)
        for i, cfg in enumerate(cfgs):
            j.token.raise_if_cancelled()

            def cb(f: float, msg: str = "", i: int = i) -> None:
                j.report((i + f) / n, f"point {i + 1}/{n}: {msg}")

            out.append(store.get_or_run(cfg, progress=cb, cancel=j.token))
        return out

    return run_job_with_progress(key, work, label=label, start=start)


def run_job_with_progress(key: str, work: Callable[[Job], Any], *, label: str,
                          start: bool = True) -> Any | None:
    """``work(job)`` as one job of the shared queue under ``key`` (two sessions asking for the
    same key share it), with the page's progress bar and Cancel button; ``work`` reports
    through ``job.report`` and stops when ``job.token`` is cancelled. The caller checks the
    store first: this always queues (when ``start``). Returns the work's value, or None when
    not started / waiting / cancelled / failed (the message is shown)."""
    ticket = _jobs().get(key)
    if ticket is None:
        if not _gate(key, label, start):
            return None
        ticket = _submit(key, label, work)
    return _await(ticket)


def running_jobs_panel() -> None:
    """Runs of this session waiting or going on in the background (e.g. after a slider moved
    on), with the shared queue's load; refreshed every second while there are any."""
    run, shown = st.session_state.get(_RUN), _state(_SHOWN, dict)

    def background() -> list[Ticket]:
        return [t for k, t in _jobs().items()
                if not t.done.is_set() and (run is None or shown.get(k) != run)]

    if not background():
        return

    @st.fragment(run_every=1.0)
    def _panel() -> None:
        live = background()
        if not live:  # all stored now (or started and shown by the page): rerun the page
            st.rerun()
        st.caption("Your runs in the background (results are stored when they finish) · "
                   + queue_caption() + ":")
        for t in live:
            left, right = st.columns([6, 1], vertical_alignment="center")
            if t.state == QUEUED:
                left.caption(_line_text(t))
            else:
                left.progress(t.fraction, text=f"{t.label}: {t.message} · {t.elapsed:.0f} s")
            if right.button("Cancel", key=f"privlab-bg-cancel-{t.key[:16]}"):
                _state(_NOTES, dict)[t.key] = _withdraw(t)
                st.rerun()

    _panel()

