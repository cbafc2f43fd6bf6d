"""The local pool (core/runs/pool.py) inside a server-like process: workers start under a clean
``__main__`` (a script-like ``__main__`` that blocks on import is not re-run in them), import
the engine the parent imported even from a working directory that shadows it, and every wait
has a deadline that fails in one line."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import types
from pathlib import Path

import pytest

import core
from cache.store import ResultStore
from core.config.schema import parse_config
from core.config.sweeps import expand
from core.foundation.progress import Progress
from core.runs import pool as P
from core.runs.sweep import Placement, prewarm_pool, run_points, shutdown_pool

TINY = {"kind": "attribute_privacy", "data": {"name": "synthetic", "n_samples": 400},
        "fl": {"num_devices": 2, "rounds": 1, "fraction_fit": 1.0, "local_epochs": 1},
        "attack": {"attackers": ["logreg"]}, "projection_points": 0, "pretrain_epochs": 0,
        "representation_dim": 8, "hidden_dim": 16, "critic_hidden": 16}
ROOT = Path(__file__).resolve().parents[1]
SWEEP = {"kind": "sweep", "base": TINY, "grid": {"defense.tradeoff_lambda": [0.0, 1.0]},
         "seeds": [0], "executor": "local", "workers": 2}


def one_line(exc: BaseException) -> str:
    text = str(exc)
    assert "\n" not in text and len(text) < 300, text
    return text


def test_a_sweep_finishes_under_a_blocking_main_and_a_shadowing_working_directory(
        tmp_path, monkeypatch):
    """Streamlit's __main__ (a script that never returns when re-run) and a working directory
    holding a cache/ folder and a core/ package (first on the path): the workers neither
    re-run the script nor import the impostors, and the sweep finishes."""
    script = tmp_path / "app.py"
    script.write_text("import time\ntime.sleep(600)\n")
    fake = types.ModuleType("__main__")
    fake.__file__ = str(script)
    here = tmp_path / "cwd"
    (here / "cache").mkdir(parents=True)  # a plain folder: a namespace package to the finder
    (here / "core").mkdir()
    (here / "core" / "__init__.py").write_text("raise ImportError('the core impostor')\n")
    shutdown_pool()
    monkeypatch.setitem(sys.modules, "__main__", fake)
    monkeypatch.chdir(here)
    monkeypatch.syspath_prepend("")  # as `python -c` and `streamlit run` have it
    monkeypatch.setenv(P.START_ENV, "90")  # a broken start fails the test, never hangs it
    t0 = time.monotonic()
    r = ResultStore(tmp_path / "store").get_or_run(SWEEP)
    assert r.metrics["points_run"] == 2 and r.info["workers"] == 2
    assert time.monotonic() - t0 < 120
    assert sys.modules["__main__"] is fake  # put back after the start
    pool = P.current_pool()
    pid, core_file = pool.submit(P._ready).result(timeout=30)
    assert core_file == core.__file__ and pid in pool.processes()


def test_a_point_that_never_answers_fails_the_sweep_in_one_line_within_its_deadline(
        tmp_path, monkeypatch):
    class StuckStore:
        """A point store whose pool worker never returns."""

        root = str(tmp_path)
        point_worker = staticmethod(__import__("pool_helpers").never_answers)

        def peek(self, config):
            return None

    prewarm_pool(1)  # the pool's start is not what this test times
    pool = P.current_pool()
    monkeypatch.setenv(P.POINT_ENV, "2")
    todo = list(enumerate(expand(parse_config({**SWEEP, "grid": {}}))))
    t0 = time.monotonic()
    with pytest.raises(P.PoolError) as err:
        run_points(todo, StuckStore(), Progress(), Placement("local", 1))
    elapsed = time.monotonic() - t0
    assert 2.0 <= elapsed < 15.0, elapsed
    assert "no answer from its pool worker within 2 s" in one_line(err.value)
    assert not pool.usable and not any(p.is_alive() for p in pool.processes().values())
    assert P.current_pool() is pool  # replaced by the next sweep, not reused
    shutdown_pool()


def test_a_worker_that_does_not_start_in_time_is_one_line_and_leaves_no_process(monkeypatch):
    monkeypatch.setenv("PRIVLAB_TEST_BLOCK_IMPORT", "1")  # pool_helpers sleeps when imported
    t0 = time.monotonic()
    with pytest.raises(P.PoolError) as err:
        P.LocalPool(1, ("pool_helpers",), start_timeout=3.0)
    assert time.monotonic() - t0 < 15.0
    assert "1 of 1 workers did not start within 3 s" in one_line(err.value)


def test_clean_main_hides_the_script_and_puts_it_back():
    before = sys.modules["__main__"]
    with P.clean_main() as m:
        assert sys.modules["__main__"] is m
        assert not hasattr(m, "__file__") and m.__spec__ is None
    assert sys.modules["__main__"] is before


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def test_workers_leave_when_their_parent_is_killed(tmp_path):
    """A server stopped with SIGKILL never shuts its pool down: its workers notice and exit."""
    code = ("import os, signal\n"
            "from core.runs.pool import LocalPool\n"
            "pool = LocalPool(2, ('pool_helpers',), start_timeout=60)\n"
            "print(*pool.processes(), flush=True)\n"
            "os.kill(os.getpid(), signal.SIGKILL)\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "tests")])}
    log = tmp_path / "out.txt"  # a file, not a pipe: workers left behind would hold a pipe open
    with log.open("w") as out:
        subprocess.run([sys.executable, "-c", code], check=False, stdout=out,
                       stderr=subprocess.STDOUT, timeout=120, env=env, cwd=ROOT)
    pids = [int(p) for p in log.read_text().split()[:2] if p.isdigit()]
    assert len(pids) == 2, log.read_text()[-2000:]
    deadline = time.monotonic() + 15
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.2)
    left = [p for p in pids if _alive(p)]
    for p in left:  # not left running on the machine if the test fails
        os.kill(p, 9)
    assert not left
