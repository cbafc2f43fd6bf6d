"""One process-wide, bounded job queue for the dashboard's runs (no Streamlit here).

A classroom server runs one Streamlit process for every browser session. Every run a page
starts goes through the same :class:`JobQueue`, which lets at most ``max_jobs`` run at once
(default: the usable cores, ``len(os.sched_getaffinity(0))``; ``$PRIVLAB_MAX_JOBS`` overrides)
in worker threads; the others wait in line, first come first served.

- :meth:`JobQueue.submit` returns a :class:`Ticket`: one session's handle on a :class:`Job`.
  The same key (for a run: :func:`core.config.schema.cache_key` of the config) submitted again while
  its job is waiting, running or finished without error attaches a second ticket to that job:
  it runs once, and every ticket sees its progress and its result.
- :meth:`Ticket.position` is the place in line (1 = next to start) while the job waits.
- :meth:`JobQueue.cancel` withdraws a ticket. When no other ticket follows the job, a waiting
  job leaves the line and never starts; a running one gets its
  :class:`core.foundation.progress.CancelToken` cancelled and ends with :class:`core.foundation.progress.Cancelled`
  (the result store then stores nothing). A job whose token is cancelled directly while it
  waits is skipped when its turn comes.
- Finished jobs stay attached to their key until every ticket has been released (or, for
  tickets nobody collects, e.g. a closed browser tab, ``keep_done_s`` seconds).
- Worker threads run at a lower CPU priority (``nice``, default ``$PRIVLAB_JOB_NICE`` or 10;
  Linux sets it per thread): a run is background work, and drawing a page for someone is not,
  so on a saturated server the pages get the cores first and the runs take what is left.

The queue's lock only guards bookkeeping (a few list operations); work runs outside it, so a
page script never waits on the queue for long, and a cached result never touches it.
"""

from __future__ import annotations

import itertools
import os
import threading
import time
import traceback
import warnings
from collections import deque
from collections.abc import Callable
from typing import Any

from core.foundation.progress import Cancelled, CancelToken

__all__ = [
    "DONE", "ENV_JOB_NICE", "ENV_MAX_JOBS", "QUEUED", "RUNNING", "Job", "JobQueue", "Ticket",
    "default_max_jobs", "default_nice", "get_queue", "ordinal", "reset_queue",
]

ENV_MAX_JOBS = "PRIVLAB_MAX_JOBS"
ENV_JOB_NICE = "PRIVLAB_JOB_NICE"
DEFAULT_NICE = 10
QUEUED, RUNNING, DONE = "queued", "running", "done"
Work = Callable[["Job"], Any]


def default_max_jobs() -> int:
    """``$PRIVLAB_MAX_JOBS`` when set to a positive integer, else the usable cores."""
    env = os.environ.get(ENV_MAX_JOBS, "").strip()
    if env:
        try:
            n = int(env)
            if n >= 1:
                return n
        except ValueError:
            pass
        warnings.warn(f"{ENV_MAX_JOBS}: got {env!r}; allowed: an integer >= 1. Using the usable "
                      "cores instead.", RuntimeWarning, stacklevel=2)
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def default_nice() -> int:
    """``$PRIVLAB_JOB_NICE`` (0 = same priority as the pages) or :data:`DEFAULT_NICE`."""
    try:
        return min(max(int(os.environ.get(ENV_JOB_NICE, DEFAULT_NICE)), 0), 19)
    except ValueError:
        return DEFAULT_NICE


def _lower_priority(nice: int) -> None:
    """Raise this thread's nice value by ``nice`` (Linux: priorities are per thread);
    quietly nothing where that is not possible."""
    if nice <= 0 or not hasattr(os, "setpriority"):
        return
    try:
        tid = threading.get_native_id()
        now = os.getpriority(os.PRIO_PROCESS, tid)
        os.setpriority(os.PRIO_PROCESS, tid, min(now + nice, 19))
    except OSError:  # pragma: no cover - not permitted here
        pass


def ordinal(n: int) -> str:
    """1 -> '1st', 2 -> '2nd', 3 -> '3rd', 11 -> '11th', 22 -> '22nd'."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


class Job:
    """One unit of work: its key, state, progress, cancel token and outcome."""

    _ids = itertools.count(1)

    def __init__(self, key: str, work: Work, label: str = "") -> None:
        self.id = next(Job._ids)
        self.key = key
        self.label = label or key[:12]
        self.work = work
        self.token = CancelToken()
        self.state = QUEUED
        self.fraction = 0.0
        self.message = "waiting in the queue"
        self.result: Any = None
        self.error: BaseException | None = None
        self.trace = ""
        self.submitted = time.time()
        self.started: float | None = None
        self.finished: float | None = None
        self.done = threading.Event()
        self.watchers = 0  # tickets that still follow this job

    def report(self, fraction: float, message: str = "") -> None:
        """Progress callback ``(fraction, message)`` handed to the engine (worker thread)."""
        self.fraction = min(max(float(fraction), 0.0), 1.0)
        if message:
            self.message = message

    @property
    def elapsed(self) -> float:
        """Seconds running (or waiting, before it starts)."""
        start = self.started if self.started is not None else self.submitted
        return (self.finished or time.time()) - start

    @property
    def ok(self) -> bool:
        return self.state == DONE and self.error is None

    @property
    def cancelled(self) -> bool:
        return isinstance(self.error, Cancelled)

    def __repr__(self) -> str:
        return f"Job({self.label!r}, {self.state}, {self.fraction:.0%}, key={self.key[:12]})"


class Ticket:
    """One follower's (a browser session's) handle on a :class:`Job`."""

    def __init__(self, queue: JobQueue, job: Job) -> None:
        self.queue = queue
        self.job = job
        self.withdrawn = False  # cancelled or released by this follower

    # the job's state, seen through the ticket
    key = property(lambda self: self.job.key)
    label = property(lambda self: self.job.label)
    token = property(lambda self: self.job.token)
    state = property(lambda self: self.job.state)
    fraction = property(lambda self: self.job.fraction)
    message = property(lambda self: self.job.message)
    done = property(lambda self: self.job.done)
    result = property(lambda self: self.job.result)
    error = property(lambda self: self.job.error)
    trace = property(lambda self: self.job.trace)
    elapsed = property(lambda self: self.job.elapsed)

    @property
    def position(self) -> int | None:
        """Place in line (1 = next to start) while waiting; None once started."""
        return self.queue.position(self.job)

    @property
    def others(self) -> int:
        """How many other tickets follow the same job."""
        return max(self.job.watchers - (0 if self.withdrawn else 1), 0)

    def wait(self, timeout: float | None = None) -> bool:
        return self.job.done.wait(timeout)

    def cancel(self) -> bool:
        return self.queue.cancel(self)

    def release(self) -> None:
        self.queue.release(self)

    def __repr__(self) -> str:
        return f"Ticket({self.job!r})"


class JobQueue:
    """At most ``max_jobs`` jobs run at once, each in its own worker thread; the rest wait."""

    def __init__(self, max_jobs: int | None = None, *, keep_done_s: float = 600.0,
                 nice: int | None = None, name: str = "privlab-job") -> None:
        self._lock = threading.Lock()
        self._max = max(1, int(max_jobs)) if max_jobs is not None else default_max_jobs()
        self.nice = default_nice() if nice is None else int(nice)
        self._waiting: deque[Job] = deque()
        self._running: list[Job] = []
        self._by_key: dict[str, Job] = {}
        self._keep_done_s = keep_done_s
        self._name = name
        self._idle = threading.Condition(self._lock)

    # -- settings and inspection ----------------------------------------------------------

    @property
    def max_jobs(self) -> int:
        return self._max

    @max_jobs.setter
    def max_jobs(self, n: int) -> None:
        with self._lock:
            self._max = max(1, int(n))
            starts = self._take_startable()
        self._start(starts)

    def position(self, job: Job) -> int | None:
        with self._lock:
            if job.state != QUEUED:
                return None
            for i, j in enumerate(self._waiting, start=1):
                if j is job:
                    return i
        return None

    def get(self, key: str) -> Job | None:
        """The newest job of ``key`` still known to the queue (waiting, running or unreleased)."""
        with self._lock:
            return self._by_key.get(key)

    def active(self, key: str) -> Job | None:
        """The job of ``key`` if it is waiting or running (and not cancelled)."""
        job = self.get(key)
        return job if job is not None and job.state != DONE and not job.token.cancelled else None

    def counts(self) -> dict[str, int]:
        with self._lock:
            return {"running": len(self._running), "queued": len(self._waiting),
                    "max_jobs": self._max}

    def jobs(self) -> list[Job]:
        """Running jobs, then waiting ones in line order."""
        with self._lock:
            return [*self._running, *self._waiting]

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Block until nothing runs or waits (tests, shutdown); False on timeout."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._idle:
            while self._running or self._waiting:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self._idle.wait(left)
        return True

    # -- submit, cancel, release ----------------------------------------------------------

    def submit(self, key: str, work: Work, *, label: str = "") -> Ticket:
        """Queue ``work(job)`` under ``key``, or attach to the job already doing that key."""
        with self._lock:
            self._prune()
            job = self._by_key.get(key)
            if job is None or job.token.cancelled or (job.state == DONE and job.error is not None):
                job = Job(key, work, label)
                self._by_key[key] = job
                self._waiting.append(job)
            job.watchers += 1
            ticket = Ticket(self, job)
            starts = self._take_startable()
        self._start(starts)
        return ticket

    def submit_run(self, config: Any, *, store: Any, label: str = "",
                   runner: Callable | None = None) -> Ticket:
        """Queue ``store.get_or_run(config)`` under the config's cache key (``runner``: the
        store's runner argument, default the engine)."""
        from core.config.schema import cache_key, parse_config

        cfg = parse_config(config)

        def work(job: Job) -> Any:
            return store.get_or_run(cfg, runner=runner, progress=job.report, cancel=job.token)

        return self.submit(cache_key(cfg), work, label=label)

    def cancel(self, ticket: Ticket) -> bool:
        """Withdraw ``ticket``; the job itself is cancelled when no other ticket follows it.
        True when the job was cancelled (or had already ended cancelled)."""
        job = ticket.job
        with self._lock:
            if not ticket.withdrawn:
                ticket.withdrawn = True
                job.watchers -= 1
            if job.state == DONE:
                self._forget_if_unwatched(job)
                return job.cancelled
            if job.watchers > 0:
                return False
            job.token.cancel()
            if job.state == QUEUED:
                self._waiting.remove(job)
                self._finish_locked(job, Cancelled("cancelled while waiting in the queue"), "")
                self._forget_if_unwatched(job)
                self._notify_if_idle()
            return True

    def release(self, ticket: Ticket) -> None:
        """The follower is done with ``ticket`` (it has shown the outcome, or left)."""
        job = ticket.job
        with self._lock:
            if not ticket.withdrawn:
                ticket.withdrawn = True
                job.watchers -= 1
            self._forget_if_unwatched(job)

    # -- internals (callers hold the lock unless said otherwise) ----------------------------

    def _take_startable(self) -> list[Job]:
        starts = []
        while self._waiting and len(self._running) < self._max:
            job = self._waiting.popleft()
            if job.token.cancelled:  # cancelled through its token while it waited
                self._finish_locked(job, Cancelled("cancelled while waiting in the queue"), "")
                self._forget_if_unwatched(job)
                continue
            job.state = RUNNING
            job.started = time.time()
            job.message = "starting"
            self._running.append(job)
            starts.append(job)
        self._notify_if_idle()
        return starts

    def _notify_if_idle(self) -> None:
        if not self._running and not self._waiting:
            self._idle.notify_all()

    def _start(self, jobs: list[Job]) -> None:
        """Start worker threads (called without the lock)."""
        for job in jobs:
            t = threading.Thread(target=self._work, args=(job,), daemon=True,
                                 name=f"{self._name}-{job.id}-{job.key[:8]}")
            t.start()

    def _work(self, job: Job) -> None:
        _lower_priority(self.nice)
        result, error, trace = None, None, ""
        try:
            job.token.raise_if_cancelled()
            result = job.work(job)
        except BaseException as exc:  # noqa: BLE001 - handed to every follower
            error, trace = exc, ("" if isinstance(exc, Cancelled) else traceback.format_exc())
        with self._lock:
            job.result = result
            if job in self._running:
                self._running.remove(job)
            self._finish_locked(job, error, trace)
            self._forget_if_unwatched(job)
            starts = self._take_startable()
        self._start(starts)

    def _finish_locked(self, job: Job, error: BaseException | None, trace: str) -> None:
        job.error, job.trace = error, trace
        if error is None:
            job.fraction, job.message = 1.0, "done"
        elif isinstance(error, Cancelled):
            job.message = "cancelled"
        else:
            job.message = f"failed: {type(error).__name__}"
        job.state = DONE
        job.finished = time.time()
        job.done.set()

    def _forget_if_unwatched(self, job: Job) -> None:
        if job.state == DONE and job.watchers <= 0 and self._by_key.get(job.key) is job:
            del self._by_key[job.key]

    def _prune(self) -> None:
        """Drop finished jobs nobody collected within ``keep_done_s`` (closed tabs)."""
        now = time.time()
        for key, job in list(self._by_key.items()):
            if job.state == DONE and now - (job.finished or now) > self._keep_done_s:
                del self._by_key[key]


_QUEUE: JobQueue | None = None
_QUEUE_LOCK = threading.Lock()


def get_queue() -> JobQueue:
    """The process-wide queue every dashboard session shares (created on first use)."""
    global _QUEUE
    with _QUEUE_LOCK:
        if _QUEUE is None:
            _QUEUE = JobQueue()
        return _QUEUE


def reset_queue(max_jobs: int | None = None) -> JobQueue:
    """Replace the process-wide queue by a fresh one (tests; jobs of the old one keep going)."""
    global _QUEUE
    with _QUEUE_LOCK:
        _QUEUE = JobQueue(max_jobs)
        return _QUEUE
