"""The Compare page's teaching preset, cold, in a running Streamlit server (issue: "Compare runs
on the pool"): ``python -m benchmarks.compare_server_bench [--port 8610]``.

`streamlit run dashboard/server.py` with an empty temporary store; the server starts its local
pool in the background (``PRIVLAB_PREWARM``), and the benchmark waits until the pool's workers
are up and idle (their CPU time still) before it opens ``/compare`` in headless Chromium, where
the teaching preset starts by itself. Measured:

- ``compare_teaching_cold_s``: the page's job from its start to its end, as the page reports it
  (``N computed now in X s``: :attr:`core.runs.compare.Comparison.seconds`, run_comparison inside
  the job);
- ``browser_job_s``: the same seen from the browser, from the progress bar's first appearance
  to the plane drawn; ``browser_open_to_plot_s``: from opening the page to the plane drawn;
- ``serial_reference``: the same preset serially in this process afterwards (wall, CPU);
- ``pool_ready_s``: from the server answering to its pool's workers being idle;
- ``cpu_s``: CPU seconds each pool worker, the server's own process and this whole session
  (server, workers, Chromium) used meanwhile. On a machine shared with other users the wall
  time follows their load (the kernel's autogroup scheduler gives each session one share,
  however many processes it runs); CPU seconds do not. ``quiet_estimate_s`` is the wall time
  these imply with the usable cores to this session alone (an estimate).

Writes ``benchmarks/results/compare_server.json``; ``python -m benchmarks.lessons_bench
--merge`` takes its figure into ``lessons.json``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"
ROOT = Path(__file__).resolve().parents[1]
SPAWNED = "from multiprocessing.spawn import spawn_main"
DONE = re.compile(r"(\d+) points \((\d+) computed now in ([0-9.]+) s")


def _children(pid: int) -> list[int]:
    """Pool workers of the server: its child processes started by multiprocessing's spawn."""
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            stat = (d / "stat").read_text()
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            if ppid == pid and SPAWNED in (d / "cmdline").read_bytes().replace(b"\0", b" ").decode():
                out.append(int(d.name))
        except (OSError, ValueError, IndexError):
            continue
    return out


def _cpu_ticks(pids: list[int]) -> int:
    total = 0
    for p in pids:
        try:
            f = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
            total += int(f[11]) + int(f[12])  # utime + stime
        except (OSError, ValueError, IndexError):
            continue
    return total


def _session_ticks(sid: int) -> int:
    """CPU ticks of every process now in session ``sid`` (the server, its pool, Chromium, this
    benchmark: with the kernel's autogroup scheduling they share one session's CPU share)."""
    pids = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if int((d / "stat").read_text().rsplit(")", 1)[1].split()[3]) == sid:
                    pids.append(int(d.name))
            except (OSError, ValueError, IndexError):
                continue
    return _cpu_ticks(pids)


def wait_pool_idle(pid: int, workers: int, timeout: float = 180.0) -> float:
    """Seconds until ``workers`` spawned children of ``pid`` exist and used no CPU for 1.5 s
    (their imports done); TimeoutError past ``timeout``."""
    t0 = time.monotonic()
    last, still_since = -1, None
    while time.monotonic() - t0 < timeout:
        kids = _children(pid)
        # a spawn worker, plus multiprocessing's resource tracker (not a spawn_main child)
        if len(kids) >= workers:
            ticks = _cpu_ticks(kids)
            if ticks == last:
                still_since = still_since or time.monotonic()
                if time.monotonic() - still_since >= 1.5:
                    return time.monotonic() - t0 - 1.5
            else:
                last, still_since = ticks, None
        time.sleep(0.25)
    raise TimeoutError(f"the server's pool: {workers} idle workers not seen within {timeout:.0f} s")


def serial_reference() -> dict[str, Any]:
    """The same preset serially in this process (engine imported first, an empty store of its
    own): wall and CPU seconds, the load around it."""
    from benchmarks.lessons_bench import _warm
    from cache.store import ResultStore
    from core.runs import compare

    _warm()
    load = [round(x, 2) for x in os.getloadavg()]
    with tempfile.TemporaryDirectory(prefix="privlab_compare_serial_") as tmp:
        t0, c0 = time.perf_counter(), time.process_time()
        cmp = compare.run_comparison(compare.teaching_spec(executor="serial"),
                                     ResultStore(Path(tmp)))
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return {"wall_s": round(wall, 2), "cpu_s": round(cpu, 1), "points": cmp.points_run,
            "load_start": load, "load_end": [round(x, 2) for x in os.getloadavg()]}


def main(port: int = 8610, job_nice: int | None = None, serial: bool = True) -> dict[str, Any]:
    from playwright.sync_api import sync_playwright

    from core.runs.pool import usable_cores
    from dashboard import browser_check as B

    exe = shutil.which("chromium")
    if exe is None:
        raise RuntimeError("Debian's chromium is not installed (apt-get install -y chromium)")
    workers = usable_cores()
    load_start = [round(x, 2) for x in os.getloadavg()]
    server: dict[str, subprocess.Popen] = {}
    with tempfile.TemporaryDirectory(prefix="privlab_compare_server_") as tmp:
        store_dir = Path(tmp) / "store"
        env = {"PYTHONPATH": str(ROOT), "PRIVLAB_PREWARM": "1"}
        if job_nice is not None:  # the runs' priority (dashboard.base.jobs; the pool inherits it)
            env["PRIVLAB_JOB_NICE"] = str(job_nice)
        with B.serve(store_dir, Path(tmp) / "server.log", env_extra=env, port=port,
                     on_start=lambda p: server.update(proc=p)) as url, \
                sync_playwright() as pw:
            pool_ready = wait_pool_idle(server["proc"].pid, workers)
            print(f"pool: {workers} workers idle {pool_ready:.1f} s after the server answered",
                  flush=True)
            browser = pw.chromium.launch(executable_path=exe, args=B.CHROMIUM_ARGS)
            pool_pids = _children(server["proc"].pid)
            sid = os.getsid(0)
            cpu0 = {"server": _cpu_ticks([server["proc"].pid]), "session": _session_ticks(sid),
                    **{f"worker_{i}": _cpu_ticks([p]) for i, p in enumerate(pool_pids)}}
            try:
                page = browser.new_page(viewport={"width": 1280, "height": 1000})
                t_open = time.monotonic()
                page.goto(url + "/compare", wait_until="domcontentloaded")
                page.wait_for_selector("[data-testid='stProgress']", timeout=120_000)
                t_start = time.monotonic()
                page.wait_for_function(
                    "() => /computed now in [0-9.]+ s/.test(document.body.innerText)",
                    timeout=600_000, polling=200)
                t_end = time.monotonic()
                cpu1 = {"server": _cpu_ticks([server["proc"].pid]), "session": _session_ticks(sid),
                        **{f"worker_{i}": _cpu_ticks([p]) for i, p in enumerate(pool_pids)}}
                text = page.inner_text("body")
                error = B.exception_text(page)
            finally:
                browser.close()
        log = (Path(tmp) / "server.log").read_text(errors="replace")
    cpu = {k: round((cpu1[k] - cpu0[k]) / os.sysconf("SC_CLK_TCK"), 1) for k in cpu0}
    m = DONE.search(text)
    if m is None:
        raise RuntimeError(f"the Compare page did not report its run: {text[:500]!r}")
    total, computed, seconds = int(m.group(1)), int(m.group(2)), float(m.group(3))
    load_end = [round(x, 2) for x in os.getloadavg()]
    loaded = max(load_start[0], load_end[0]) > 1.5
    result = {
        "name": "compare_server",
        "headline": {"compare_teaching_cold_s": round(seconds, 2)},
        "points_total": total, "points_computed": computed, "workers": workers,
        "browser_job_s": round(t_end - t_start, 2),
        "browser_open_to_plot_s": round(t_end - t_open, 2),
        "pool_ready_s": round(pool_ready, 2), "page_exception": error,
        # CPU seconds spent from opening the page to the plane drawn: the pool's workers (the
        # points) and the server's own process (Streamlit, the job thread, the page's reruns)
        "cpu_s": cpu,
        # what the same work would take with the usable cores to itself: the busiest worker's
        # CPU time, or all of this session's CPU time spread over the cores, whichever is
        # longer (an estimate from measured CPU time, not a measured wall time)
        "quiet_estimate_s": round(max(cpu["session"] / workers,
                                      max((v for k, v in cpu.items() if k.startswith("worker_")),
                                          default=0.0)), 1),
        "job_nice": job_nice if job_nice is not None else os.environ.get("PRIVLAB_JOB_NICE", "10 (default)"),
        "server_log_errors": [ln for ln in log.splitlines() if "Traceback" in ln or "Error" in ln][:10],
        "load_start": load_start, "load_end": load_end, "loaded_machine": loaded,
        "target": {"compare_teaching_cold_s": "<= 20"},
        "notes": (f"Taken on a {'LOADED' if loaded else 'quiet'} {os.cpu_count()}-core machine "
                  f"(load average at the start {load_start}, at the end {load_end}). "
                  "`streamlit run dashboard/server.py` on port "
                  f"{port}, empty store; the server's local pool ({workers} spawned workers) "
                  "started in the background and was idle before the page opened; the Compare "
                  "page's teaching preset started by itself and ran as one run_comparison job "
                  "on that pool. compare_teaching_cold_s is the job's own time (the page's "
                  "'computed now in X s'); browser_job_s the progress bar's first appearance "
                  "to the plane drawn. job_nice: the nice value of the server's runs and pool "
                  "workers (PRIVLAB_JOB_NICE)."),
    }
    if serial:
        ref = serial_reference()
        result["serial_reference"] = ref
        result["notes"] += (f" serial_reference: the same preset serially in the benchmark's own "
                            f"process right after: {ref['wall_s']} s wall, {ref['cpu_s']} CPU-s "
                            "(the page's path before the pool).")
    return result


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=8610)
    ap.add_argument("--job-nice", type=int, default=None,
                    help="PRIVLAB_JOB_NICE for the server (default: its own, 10); 0 on a machine "
                         "shared with other users' work, which runs at 0")
    ap.add_argument("--no-serial", action="store_true",
                    help="skip the serial reference run after the server's")
    args = ap.parse_args()
    res = main(args.port, args.job_nice, not args.no_serial)
    out = RESULTS / "compare_server.json"
    out.write_text(json.dumps(res, indent=1))
    print(json.dumps({k: res[k] for k in ("headline", "browser_job_s", "browser_open_to_plot_s",
                                          "pool_ready_s", "cpu_s", "quiet_estimate_s",
                                          "load_start", "load_end")}))
    print(json.dumps(res.get("serial_reference")))
