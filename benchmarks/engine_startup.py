"""Startup time of a run and of the first page: ``python -m benchmarks.engine_startup`` prints
JSON; :func:`measure` returns the same dict (``benchmarks/engine_bench.py`` reads it).

- ``tiny_run_over_torch_floor``: a tiny membership run (:data:`TINY`, the golden config)
  through ``privlab run`` in a fresh process, against the floor of a fresh process that imports
  torch and builds one Adam optimiser (which imports torch._dynamo: every run pays it).
  Alternating repeats, the ratio of the medians.
- ``first_page_open_s``: headless Chromium opens the Membership page on a freshly started
  ``streamlit run dashboard/server.py`` (empty store, no page opened before) the moment the
  server answers its health check, its background start (dashboard.warmup, the local pool's
  workers) still running: seconds from navigation until the page has drawn its content (its
  heading and Run button shown, its script run ended); ``first_page.spawn_to_drawn_s`` from
  the server's spawn. ``first_page.settled_s``: the same on another fresh server once it has
  settled (it and its pool's workers used no CPU for 1.5 s, as a user who opens the page a
  while after starting the server finds it).
- ``compare_cold_from_navigation_s``: the same for Compare on a settled fresh server, until
  its teaching comparison (run by the page itself on the server's local pool) is drawn: the
  plane plotted and the page's ``computed now in X s`` line shown (``points_s``: that X).
  ``compare_cold.cpu_s``: the CPU seconds the server and each pool worker used meanwhile, and
  ``quiet_estimate_s`` the wall time they imply with the cores to the page alone.

The browser is started before the server, so none of its start-up hides the server's.

The machine is shared: each figure carries ``/proc/loadavg`` before and after.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
#: the tiny membership run (benchmarks.golden's MEMBERSHIP config)
TINY: dict[str, Any] = {"kind": "membership", "data": {"name": "digits"}, "projection_points": 0,
                        "train": {"members": 80, "epochs": 4, "batch_size": 32},
                        "attack": {"shadows": 4, "rmia_references": 1}}
FLOOR = "import torch; torch.optim.Adam(torch.nn.Linear(2, 2).parameters())"
TARGETS = {"tiny_run_over_torch_floor": "<= 1.3", "first_page_open_s": "<= 3",
           "compare_cold_from_navigation_s": "<= 20"}
#: the Membership page's content has drawn: its heading, and Streamlit's script run ended
_SCRIPT_DONE = ("() => { const a = document.querySelector('[data-testid=\"stApp\"]');"
                " const s = a && a.getAttribute('data-test-script-state');"
                " return s === 'notRunning'; }")


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


#: the subprocesses cache bytecode as Python does by default (a sandbox may set
#: PYTHONDONTWRITEBYTECODE, and then every fresh process compiles privlab's modules again while
#: torch's come compiled); ``tiny_run(bytecode_cache=False)`` keeps the environment's setting
BYTECODE_ENV = "PYTHONDONTWRITEBYTECODE"


def _env(bytecode_cache: bool = True) -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    if bytecode_cache:
        env.pop(BYTECODE_ENV, None)
    return env


def _wall(cmd: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU (user + system) seconds of ``cmd`` in a fresh process."""
    import resource

    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, env=env, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)


def tiny_run(repeats: int = 5, bytecode_cache: bool = True) -> dict[str, Any]:
    """Fresh-process walls of the tiny run through the CLI and of the torch floor, alternating
    (floor, run) ``repeats`` times; the ratio of their medians. The same for their CPU seconds
    (``cpu_ratio``), which a loaded machine skews less than walls."""
    env = _env(bytecode_cache)
    load_start = load()
    runs, floors, run_cpu, floor_cpu = [], [], [], []
    with tempfile.TemporaryDirectory(prefix="privlab_startup_") as tmp:
        cfg = Path(tmp) / "tiny.yaml"
        cfg.write_text(json.dumps(TINY))  # JSON is YAML
        run = [sys.executable, "-m", "cli.main", "run", str(cfg), "--no-cache",
               "--cache-dir", str(Path(tmp) / "store"), "--progress", "off"]
        _wall(run, ROOT, env)  # the file and bytecode caches warm for both (not counted)
        for _ in range(repeats):
            for walls, cpus, cmd, cwd in ((floors, floor_cpu, [sys.executable, "-c", FLOOR],
                                           Path(tmp)), (runs, run_cpu, run, ROOT)):
                wall, cpu = _wall(cmd, cwd, env)
                walls.append(wall)
                cpus.append(cpu)
    run_s, floor_s = statistics.median(runs), statistics.median(floors)

    def r3(xs: list[float]) -> list[float]:
        return [round(x, 3) for x in xs]

    return {"tiny_run_over_torch_floor": round(run_s / floor_s, 3),
            "tiny_run_s": round(run_s, 3), "torch_floor_s": round(floor_s, 3),
            "cpu_ratio": round(statistics.median(run_cpu) / statistics.median(floor_cpu), 3),
            "tiny_run_walls_s": r3(runs), "torch_floor_walls_s": r3(floors),
            "tiny_run_cpu_s": r3(run_cpu), "torch_floor_cpu_s": r3(floor_cpu),
            "repeats": repeats, "bytecode_cache": BYTECODE_ENV not in env,
            "load_start": load_start, "load_end": load()}


def _settle(pid: int, quiet_s: float = 1.5, timeout_s: float = 300.0) -> None:
    """Until the server ``pid`` and its pool's workers used no CPU for ``quiet_s``."""
    from benchmarks.compare_server_bench import _children, _cpu_ticks

    t0, last, still = time.monotonic(), -1, None
    while time.monotonic() - t0 < timeout_s:
        ticks = _cpu_ticks([pid, *_children(pid)])
        if ticks != last:
            last, still = ticks, time.monotonic()
        elif time.monotonic() - still >= quiet_s:
            return
        time.sleep(0.25)
    raise TimeoutError(f"the server did not settle within {timeout_s:.0f} s")


def _open(page_path: str, ready, *, settle: bool = True,
          timeout_s: float = 600.0) -> dict[str, Any]:
    """A fresh server (empty store), Chromium started first; ``page_path`` opened once the
    server has settled (``settle``) or the moment it answers; ``ready(page)`` waits until the
    page counts as drawn. Seconds from navigation, from the server's spawn to its first answer
    and to the navigation, and from its spawn to the page drawn."""
    from playwright.sync_api import sync_playwright

    from benchmarks.compare_server_bench import _children, _cpu_ticks
    from dashboard import browser_check as B

    exe = shutil.which("chromium")
    if exe is None:
        raise RuntimeError("Debian's chromium is not installed (apt-get install -y chromium)")
    load_start = load()
    with tempfile.TemporaryDirectory(prefix="privlab_first_page_") as tmp, \
            sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=exe, args=B.CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 1000})
            page.set_default_timeout(timeout_s * 1000)
            server: dict[str, subprocess.Popen] = {}
            t_spawn = time.monotonic()
            with B.serve(Path(tmp) / "store", Path(tmp) / "server.log",
                         env_extra={"PRIVLAB_PREWARM": "1"}, drop=(BYTECODE_ENV,),
                         on_start=lambda p: server.update(proc=p)) as url:
                t_answer = time.monotonic()
                if settle:
                    _settle(server["proc"].pid)
                pids = [server["proc"].pid, *_children(server["proc"].pid)]
                ticks = [_cpu_ticks([p]) for p in pids]
                t_nav = time.monotonic()
                page.goto(url + page_path, wait_until="commit")
                ready(page)
                t_done = time.monotonic()
                cpu = [round((_cpu_ticks([p]) - t) / os.sysconf("SC_CLK_TCK"), 1)
                       for p, t in zip(pids, ticks)]
                error = B.exception_text(page)
                text = page.inner_text("body")
        finally:
            browser.close()
    return {"seconds": round(t_done - t_nav, 2), "server_answered_s": round(t_answer - t_spawn, 2),
            "navigated_s": round(t_nav - t_spawn, 2), "spawn_to_drawn_s": round(t_done - t_spawn, 2),
            # CPU seconds from navigation to drawn: the server's own process, then each pool
            # worker (on a loaded machine the wall time follows the others' load; these do not)
            "cpu_s": {"server": cpu[0], "workers": cpu[1:]},
            "page_exception": error, "text": text, "load_start": load_start, "load_end": load()}


def _membership_drawn(page) -> None:
    page.get_by_role("heading", name="Membership").first.wait_for(state="visible")
    page.get_by_role("button", name="Run").first.wait_for(state="visible")
    page.wait_for_function(_SCRIPT_DONE, polling=50)


def first_page_open() -> dict[str, Any]:
    """The Membership page on a fresh server opened as it answers, and on one settled."""
    out = _open("/membership", _membership_drawn, settle=False)
    out.pop("text")
    settled = _open("/membership", _membership_drawn)
    settled.pop("text")
    out.update(settled_s=settled["seconds"], settled=settled)
    return out


def compare_cold() -> dict[str, Any]:
    """Compare on a fresh server: its teaching comparison's plane drawn and its ``computed now
    in X s`` line shown (the job's own seconds are kept as ``points_s``)."""
    import re

    def ready(page) -> None:
        page.locator(".st-key-cmp_plane .js-plotly-plot").wait_for(state="visible")
        page.wait_for_function(
            "() => /computed now in [0-9.]+ s/.test(document.body.innerText)", polling=100)

    out = _open("/compare", ready)
    m = re.search(r"computed now in ([0-9.]+) s", out.pop("text"))
    out["points_s"] = float(m.group(1)) if m else None
    # the wall time the measured CPU implies with the cores to this page alone: the busiest
    # worker, or all of it spread over the workers, whichever is longer (an estimate)
    cpu = out["cpu_s"]
    out["quiet_estimate_s"] = round(max(max(cpu["workers"], default=0.0),
                                        (cpu["server"] + sum(cpu["workers"]))
                                        / max(1, len(cpu["workers"]))), 1)
    return out


def measure(repeats: int = 5, browser: bool = True) -> dict[str, Any]:
    """The three headline figures, their raw timings and the load around each."""
    run = tiny_run(repeats)
    out: dict[str, Any] = {"tiny_run_over_torch_floor": run["tiny_run_over_torch_floor"],
                           "first_page_open_s": None, "compare_cold_from_navigation_s": None,
                           "tiny_run": run}
    if browser:
        first = first_page_open()
        cmp = compare_cold()
        out.update(first_page_open_s=first["seconds"], first_page=first,
                   compare_cold_from_navigation_s=cmp["seconds"], compare_cold=cmp)
    out.update(targets=TARGETS, cores=os.cpu_count(), python=sys.version.split()[0])
    return out


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5, help="alternating tiny-run repeats")
    ap.add_argument("--no-browser", action="store_true", help="only the tiny run")
    ap.add_argument("--env-bytecode", action="store_true",
                    help=f"the tiny run keeps the environment's {BYTECODE_ENV}")
    ap.add_argument("--only", choices=("tiny", "first_page", "compare"), default=None)
    args = ap.parse_args()
    if args.only == "first_page":
        res: dict[str, Any] = first_page_open()
    elif args.only == "compare":
        res = compare_cold()
    elif args.only == "tiny":
        res = tiny_run(args.repeats, not args.env_bytecode)
    else:
        res = measure(args.repeats, not args.no_browser)
    print(json.dumps(res, indent=1))
