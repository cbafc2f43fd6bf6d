"""The dashboard's process-wide job queue (dashboard/base/jobs.py), without Streamlit.

Fake runners block on an Event (or loop until cancelled), so every state of the queue can be
held still and looked at; store-backed jobs use a real ResultStore in a tmp dir, so "nothing
stored" is checked exactly.
"""

from __future__ import annotations

import threading
import time

import pytest

from cache.store import ResultStore
from core.config.schema import cache_key, parse_config
from core.foundation.progress import Cancelled
from core.foundation.result import Result
from dashboard.base.jobs import DONE, QUEUED, RUNNING, JobQueue, default_max_jobs, ordinal

WAIT = 10.0


def until(cond, timeout: float = WAIT) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        time.sleep(0.01)


def config(max_points: int = 200) -> dict:
    return {"kind": "projection", "data": {"name": "digits"}, "max_points": max_points}


class FakeRunner:
    """The store's runner signature; counts calls, blocks until ``release`` is set (or raises
    Cancelled when its token is cancelled while it waits)."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.started = threading.Event()
        self.release = threading.Event()
        self._lock = threading.Lock()

    def __call__(self, cfg, progress=None, cancel=None) -> Result:
        with self._lock:
            self.calls.append(cache_key(cfg))
        self.started.set()
        while not self.release.wait(0.01):
            if cancel is not None:
                cancel.raise_if_cancelled()
            if progress is not None:
                progress(0.5, "halfway")
        return Result(kind=cfg.kind, config={}, seed=cfg.seed, metrics={"n": float(cfg.max_points)})


@pytest.fixture
def store(tmp_path) -> ResultStore:
    return ResultStore(tmp_path / "store")


@pytest.fixture
def gate():
    ev = threading.Event()
    yield ev
    ev.set()  # never leave a worker blocked


def blocker(gate: threading.Event, log: list | None = None):
    def work(job):
        if log is not None:
            log.append(job.key)
        gate.wait(WAIT)
        return job.key

    return work


def test_limit_is_honoured_third_job_waits(gate):
    q = JobQueue(max_jobs=2)
    log: list[str] = []
    a, b, c = (q.submit(k, blocker(gate, log), label=k) for k in ("a", "b", "c"))
    until(lambda: len(log) == 2)
    time.sleep(0.1)
    assert sorted(log) == ["a", "b"]
    assert (a.state, b.state, c.state) == (RUNNING, RUNNING, QUEUED)
    assert q.counts() == {"running": 2, "queued": 1, "max_jobs": 2}
    assert c.position == 1 and a.position is None
    gate.set()
    assert q.wait_idle(WAIT)
    assert sorted(log) == ["a", "b", "c"]
    assert [t.result for t in (a, b, c)] == ["a", "b", "c"]
    assert all(t.state == DONE and t.error is None for t in (a, b, c))


def test_position_in_line_is_reported_and_moves_up(gate):
    q = JobQueue(max_jobs=1)
    first = q.submit("run", blocker(gate), label="run")
    until(lambda: first.state == RUNNING)
    waiting = [q.submit(f"w{i}", blocker(gate), label=f"w{i}") for i in range(3)]
    assert [t.position for t in waiting] == [1, 2, 3]
    assert [ordinal(t.position) for t in waiting] == ["1st", "2nd", "3rd"]
    assert waiting[0].cancel()  # leaves the line: the others move up
    assert [t.position for t in waiting[1:]] == [1, 2]
    gate.set()
    assert q.wait_idle(WAIT)


def test_same_config_runs_once_and_both_get_the_result(store):
    q = JobQueue(max_jobs=2)
    runner = FakeRunner()
    one = q.submit_run(config(), store=store, label="session 1", runner=runner)
    two = q.submit_run(config(), store=store, label="session 2", runner=runner)
    assert one.job is two.job and one.others == 1
    assert runner.started.wait(WAIT)
    until(lambda: one.message == "halfway")  # the second session sees the first's progress
    assert (two.state, two.fraction, two.message) == (RUNNING, 0.5, "halfway")
    runner.release.set()
    assert one.wait(WAIT) and two.wait(WAIT)
    assert len(runner.calls) == 1
    assert one.result is two.result and one.result.metrics["n"] == 200.0
    assert len(store.list()) == 1
    # both collected: the key is free again (a later submit is a new job; the store has it)
    one.release()
    two.release()
    assert q.get(cache_key(parse_config(config()))) is None


def test_cancel_while_waiting_never_runs_and_stores_nothing(store, gate):
    q = JobQueue(max_jobs=1)
    busy = q.submit("busy", blocker(gate), label="busy")
    until(lambda: busy.state == RUNNING)
    runner = FakeRunner()
    runner.release.set()  # would finish at once if it ever started
    waiting = q.submit_run(config(), store=store, label="projection", runner=runner)
    assert waiting.state == QUEUED and waiting.position == 1
    assert waiting.cancel() is True
    assert waiting.done.is_set() and isinstance(waiting.error, Cancelled)
    assert waiting.position is None and q.counts()["queued"] == 0
    gate.set()
    assert q.wait_idle(WAIT)
    assert runner.calls == []
    assert store.list() == []


def test_cancel_while_running_raises_cancelled_and_stores_nothing(store):
    q = JobQueue(max_jobs=2)
    runner = FakeRunner()
    ticket = q.submit_run(config(), store=store, label="projection", runner=runner)
    assert runner.started.wait(WAIT)
    until(lambda: ticket.message == "halfway")
    assert ticket.cancel() is True
    assert ticket.wait(WAIT)
    assert isinstance(ticket.error, Cancelled) and ticket.result is None
    assert store.list() == []
    assert q.wait_idle(WAIT)


def test_a_followed_job_is_not_cancelled_by_one_follower(store):
    q = JobQueue(max_jobs=1)
    runner = FakeRunner()
    one = q.submit_run(config(), store=store, label="s1", runner=runner)
    two = q.submit_run(config(), store=store, label="s2", runner=runner)
    assert runner.started.wait(WAIT)
    assert one.cancel() is False  # session 2 still follows it
    assert not one.token.cancelled
    runner.release.set()
    assert two.wait(WAIT) and two.error is None
    assert len(store.list()) == 1 and len(runner.calls) == 1


def test_a_token_cancelled_while_waiting_is_skipped(gate):
    q = JobQueue(max_jobs=1)
    q.submit("busy", blocker(gate))
    log: list[str] = []
    waiting = q.submit("later", blocker(gate, log))
    waiting.token.cancel()
    gate.set()
    assert waiting.wait(WAIT) and isinstance(waiting.error, Cancelled)
    assert q.wait_idle(WAIT) and log == []


def test_a_failed_job_reaches_every_follower_and_a_new_submit_retries(gate):
    q = JobQueue(max_jobs=1)
    calls = []

    def boom(job):
        calls.append(1)
        gate.wait(WAIT)
        raise ValueError("bad")

    one, two = q.submit("k", boom), q.submit("k", boom)  # the second follows the first
    gate.set()
    assert one.wait(WAIT) and two.wait(WAIT)
    assert isinstance(one.error, ValueError) and one.error is two.error and "bad" in one.trace
    again = q.submit("k", boom)  # a failed job is not followed: it runs again
    assert again.job is not one.job
    assert again.wait(WAIT) and len(calls) == 2


def test_max_jobs_default_and_env(monkeypatch):
    import os

    monkeypatch.delenv("PRIVLAB_MAX_JOBS", raising=False)
    assert default_max_jobs() == len(os.sched_getaffinity(0))
    monkeypatch.setenv("PRIVLAB_MAX_JOBS", "3")
    assert default_max_jobs() == 3 and JobQueue().max_jobs == 3
    monkeypatch.setenv("PRIVLAB_MAX_JOBS", "zero")
    with pytest.warns(RuntimeWarning, match="PRIVLAB_MAX_JOBS"):
        assert default_max_jobs() == len(os.sched_getaffinity(0))


def test_raising_the_limit_starts_waiting_jobs(gate):
    q = JobQueue(max_jobs=1)
    a, b = q.submit("a", blocker(gate)), q.submit("b", blocker(gate))
    until(lambda: a.state == RUNNING)
    assert b.state == QUEUED
    q.max_jobs = 2
    until(lambda: b.state == RUNNING)
    gate.set()
    assert q.wait_idle(WAIT)


def test_workers_run_at_a_lower_priority_than_the_pages():
    import os

    here = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    q = JobQueue(max_jobs=1, nice=5)
    t = q.submit("nice", lambda job: os.getpriority(os.PRIO_PROCESS, threading.get_native_id()))
    assert t.wait(WAIT) and t.result == min(here + 5, 19)
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == here
    t0 = JobQueue(max_jobs=1, nice=0).submit(
        "same", lambda job: os.getpriority(os.PRIO_PROCESS, threading.get_native_id()))
    assert t0.wait(WAIT) and t0.result == here


def test_ordinal():
    assert [ordinal(n) for n in (1, 2, 3, 4, 11, 12, 13, 21, 22, 23, 101, 111)] == [
        "1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "22nd", "23rd", "101st",
        "111th"]
