"""Dashboard responsiveness under concurrent sessions: time to a fully rendered cached page.

Starts ``streamlit run dashboard/app.py`` on a free 127.0.0.1 port with a private result store
that holds a few cached runs (the Attribute privacy page's default settings over the λ grid and
the undefended point, through the contract runner of ``tests/_tappfl_contract.py``; the Data
page's default PCA through the real engine), then drives N concurrent headless Chromium
sessions (Debian's ``chromium``, Playwright's async API, one tab per session in one browser
profile, warmed up first so that the app's JavaScript is cached as in a returning visitor's
browser). Each session opens Home (a page load), then goes to Data & projections, Attribute
privacy, History and back to Home through the sidebar's links, as a person does (``--reload``:
a fresh page load for every visit instead), and a visit is timed from the click (or
``page.goto``) until

- the app says its script is not running (``[data-testid=stApp][data-test-script-state=
  notRunning]``, the flag behind the status widget), and
- the page's title and its main elements are visible (Home: the data-set table; Data: the
  projection plot; Attribute privacy: the attack bars and the tradeoff plot; History: the runs
  table), and every plotly chart on the page has drawn its SVG.

Three phases: 1 session, 8 sessions, and 8 sessions while a ninth session runs a long experiment
through the dashboard's job queue (a real ``attribute_privacy`` run on ``synthetic``, many
rounds, started by pressing Run on the page). Reported: p50 / p95 per phase over every visit.

``python -m benchmarks sessions`` runs it against this checkout; ``python -m
benchmarks.sessions_bench --root DIR`` against another checkout (e.g. an older commit exported
with ``git archive``), so before / after numbers come from the same machine and harness.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
#: (name, url path, title text, selectors that must be visible)
PAGES = [
    ("Home", "/", "privlab", ['[data-testid="stTable"]']),
    ("Data & projections", "/data", "Data & projections", [".st-key-data_projection .main-svg"]),
    ("Attribute privacy", "/attribute_privacy", "Attribute privacy in federated learning",
     [".st-key-ap_attack_bars .main-svg", ".st-key-ap_tradeoff .main-svg"]),
    ("History", "/history", "History", ['[data-testid="stDataFrame"]']),
]
READY_JS = """([title, sels]) => {
  const app = document.querySelector('[data-testid="stApp"]');
  if (!app || app.getAttribute('data-test-script-state') !== 'notRunning') return false;
  if (![...document.querySelectorAll('h1')].some(h => h.textContent.includes(title))) return false;
  const shown = e => e && e.getBoundingClientRect().width > 0 && e.getBoundingClientRect().height > 0;
  for (const s of sels) if (!shown(document.querySelector(s))) return false;
  for (const c of document.querySelectorAll('[data-testid="stPlotlyChart"]'))
    if (!c.querySelector('.main-svg')) return false;
  return true;
}"""
TARGET_P95_S = 3.0
LONG_RUN_ROUNDS = 200
_LOCAL = urllib.request.build_opener(urllib.request.ProxyHandler({}))


# --------------------------------------------------------------------------------------------
# the store and the server


def populate(cache_dir: str) -> int:
    """Fill ``cache_dir`` with what the pages show by default (runs in the served checkout)."""
    os.environ["PRIVLAB_CACHE_DIR"] = cache_dir
    sys.path.insert(0, str(Path.cwd() / "tests"))
    from _tappfl_contract import contract_runner

    from cache.store import default_store
    from core.data import DATASETS
    from dashboard.tappfl_settings import LAMBDA_GRID, build_config, preset_widgets, with_defense

    store = default_store()
    for name in ("digits", "synthetic"):  # the sidebar's default, and the page's own
        cfg = None
        for lam in LAMBDA_GRID:
            cfg = build_config(preset="quick", dataset=name, attribute=DATASETS[name].attributes[0],
                               seed=0, device="auto", defense="tappfl", lam=lam,
                               values=preset_widgets("quick"))
            store.get_or_run(cfg, runner=contract_runner)
        store.get_or_run(with_defense(cfg, {"kind": "none"}), runner=contract_runner)
    store.get_or_run({"kind": "projection", "seed": 0, "device": "auto", "data": {"name": "digits"},
                      "method": "pca", "split": "train", "max_points": 2000})
    return len(store.list())


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _clean_env(root: Path, cache_dir: str) -> dict[str, str]:
    env = dict(os.environ, PRIVLAB_CACHE_DIR=cache_dir, PYTHONPATH=str(root))
    for var in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY"):
        env.pop(var, None)
    return env


def start_server(root: Path, cache_dir: str, log: Path) -> tuple[subprocess.Popen, str]:
    port = _free_port()
    out = open(log, "wb")  # noqa: SIM115 - closed with the process
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "dashboard/app.py",
         "--server.address", "127.0.0.1", "--server.port", str(port),
         "--server.headless", "true", "--browser.gatherUsageStats", "false",
         "--server.fileWatcherType", "none"],
        cwd=root, env=_clean_env(root, cache_dir), stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"streamlit exited ({proc.returncode}): {log.read_text()[-2000:]}")
        try:
            with _LOCAL.open(url + "/_stcore/health", timeout=2) as r:
                if r.status == 200:
                    return proc, url
        except OSError:
            time.sleep(0.3)
    proc.kill()
    raise TimeoutError("streamlit did not become healthy in 90 s")


def stop_server(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)


# --------------------------------------------------------------------------------------------
# sessions


async def _visit(page, url: str, spec: tuple, *, load: bool) -> float:
    name, path, title, sels = spec
    t0 = time.perf_counter()
    if load:
        await page.goto(url + path, wait_until="commit")
    else:
        await page.locator('[data-testid="stSidebarNav"] a').filter(has_text=name).first.click()
    await page.wait_for_function(READY_JS, arg=[title, sels], polling=50, timeout=120_000)
    dt = time.perf_counter() - t0
    exc = page.locator('[data-testid="stException"]')
    if await exc.count():
        raise RuntimeError(f"{name}: exception on the page: {await exc.first.inner_text()}")
    return dt


async def _session(ctx, url: str, rounds: int, sid: int, out: list[dict],
                   reload: bool = False) -> None:
    page = await ctx.new_page()
    try:
        for r in range(rounds):
            for i, spec in enumerate(PAGES):
                load = reload or (r == 0 and i == 0)
                dt = await _visit(page, url, spec, load=load)
                out.append({"session": sid, "round": r, "page": spec[0], "seconds": dt,
                            "page_load": load})
    finally:
        await page.close()


async def _warm(ctx, url: str) -> None:
    """Untimed passes: the server imports its libraries, the browser caches (and compiles)
    the app's JavaScript, as in a returning visitor's browser."""
    await _session(ctx, url, 2, -1, [], reload=True)


async def _start_long_run(ctx, url: str, rounds: int):
    """A session that presses Run on the Attribute privacy page for a long synthetic run."""
    page = await ctx.new_page()
    await page.goto(url + "/attribute_privacy", wait_until="commit")
    ready = [PAGES[2][2], []]
    await page.wait_for_function(READY_JS, arg=ready, polling=100, timeout=120_000)
    await page.locator('.st-key-ap_dataset input[role="combobox"]').click()
    await page.get_by_role("option", name=re.compile(r"^synthetic")).click()
    await page.wait_for_timeout(300)
    await page.wait_for_function(READY_JS, arg=ready, polling=100, timeout=120_000)
    for key, value in (("ap_rounds", rounds),):
        box = page.locator(f".st-key-{key} input")
        await box.fill(str(value))
        await box.press("Enter")
        await page.wait_for_timeout(300)
        await page.wait_for_function(READY_JS, arg=ready, polling=100, timeout=120_000)
    await page.get_by_role("button", name="Run", exact=True).click()
    bar = page.locator('[data-testid="stProgress"]')
    await bar.first.wait_for(state="visible", timeout=60_000)
    await page.wait_for_timeout(3000)  # past data loading: into the training rounds
    return page


async def _long_run_state(page) -> str:
    bar = page.locator('[data-testid="stProgress"]')
    if await bar.count():
        return (await bar.first.inner_text()).strip().replace("\n", " ")[:120]
    return "not running"


async def _phase(ctx, url: str, n: int, rounds: int, phase: str,
                 reload: bool = False) -> list[dict]:
    rows: list[dict] = []
    await asyncio.gather(*(_session(ctx, url, rounds, i, rows, reload) for i in range(n)))
    for r in rows:
        r["phase"] = phase
    return rows


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    if not xs:
        return float("nan")
    k = (len(xs) - 1) * q / 100
    lo, hi = int(k), min(int(k) + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


async def _drive(url: str, *, sessions: list[int], rounds: int, long_run: bool,
                 long_rounds: int, reload: bool = False) -> tuple[list[dict], list[str]]:
    from playwright.async_api import async_playwright

    exe = shutil.which("chromium")
    if exe is None:
        raise RuntimeError("Debian's chromium is not installed (apt-get install -y chromium)")
    notes: list[str] = []
    rows: list[dict] = []
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=exe, args=CHROMIUM_ARGS)
        # one profile, one tab per session: the tabs share the HTTP and code caches, as the
        # tabs of a returning visitor's browser do (each tab is its own Streamlit session)
        ctx = await browser.new_context(viewport={"width": 1400, "height": 1000})
        try:
            await _warm(ctx, url)
            for n in sessions:
                rows += await _phase(ctx, url, n, rounds, f"sessions{n}", reload)
            if long_run:
                n = max(sessions)
                page = await _start_long_run(ctx, url, long_rounds)
                notes.append(f"long run at start: {await _long_run_state(page)}")
                rows += await _phase(ctx, url, n, rounds, f"sessions{n}_with_long_run", reload)
                notes.append(f"long run at end: {await _long_run_state(page)}")
                cancel = page.get_by_role("button", name="Cancel")
                if await cancel.count():
                    await cancel.first.click()
                    await page.wait_for_timeout(1000)
                await page.close()
        finally:
            await browser.close()
    return rows, notes


def summarise(rows: list[dict]) -> list[dict]:
    out = []
    for phase in dict.fromkeys(r["phase"] for r in rows):
        sel = [r for r in rows if r["phase"] == phase]
        groups = [("all pages", sel),
                  # a tab's first visits pay the browser's start-up of the app's and plotly's
                  # JavaScript; revisits are what a session sees afterwards
                  ("all pages, revisits", [r for r in sel if r["round"] > 0])]
        groups += [(page, [r for r in sel if r["page"] == page])
                   for page in dict.fromkeys(r["page"] for r in sel)]
        for page, rs in groups:
            xs = [r["seconds"] for r in rs]
            if xs:
                out.append({"phase": phase, "page": page, "visits": len(xs),
                            "p50_s": round(statistics.median(xs), 3),
                            "p95_s": round(_pct(xs, 95), 3), "max_s": round(max(xs), 3)})
    return out


def measure(root: Path = ROOT, *, sessions: tuple[int, ...] = (1, 8), rounds: int = 2,
            long_run: bool = True, long_rounds: int = LONG_RUN_ROUNDS, reload: bool = False,
            keep: Path | None = None) -> dict[str, Any]:
    """Populate a store, serve ``root``'s dashboard on it, drive the sessions; rows + notes."""
    root = Path(root).resolve()
    tmp = Path(tempfile.mkdtemp(prefix="privlab-sessions-"))
    cache_dir = str(tmp / "store")
    env = _clean_env(root, cache_dir)
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "benchmarks.sessions_bench", "--populate",
                           cache_dir], cwd=root, env=env, capture_output=True, text=True,
                          timeout=600, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"populating the store failed: {done.stderr[-3000:]}")
    populate_s = time.perf_counter() - t0
    proc, url = start_server(root, cache_dir, tmp / "server.log")
    try:
        rows, notes = asyncio.run(_drive(url, sessions=list(sessions), rounds=rounds,
                                         long_run=long_run, long_rounds=long_rounds,
                                         reload=reload))
    finally:
        stop_server(proc)
        log = (tmp / "server.log").read_text(errors="replace")
        if keep is not None:
            keep.write_text(log)
        shutil.rmtree(tmp, ignore_errors=True)
    notes.insert(0, f"store: {done.stdout.strip()} runs cached in {populate_s:.1f} s")
    if "Traceback" in log:
        notes.append("server log holds a traceback: " + log[log.index("Traceback"):][:600])
    return {"rows": rows, "notes": notes}


def main(quick: bool = False, root: Path = ROOT) -> dict[str, Any]:
    rounds = 1 if quick else 2
    got = measure(root, sessions=(1, 8), rounds=rounds, long_run=True,
                  long_rounds=LONG_RUN_ROUNDS)
    table = summarise(got["rows"])

    def p95(phase: str) -> float | None:
        xs = [r["seconds"] for r in got["rows"] if r["phase"] == phase]
        return round(_pct(xs, 95), 3) if xs else None

    s1, s8, s8l = p95("sessions1"), p95("sessions8"), p95("sessions8_with_long_run")
    notes = ("Time from the click on a sidebar link (a page load for a session's first visit) "
             "to a fully rendered cached page (script not running, title, main elements and "
             "every plotly chart drawn), over Home, Data & projections, Attribute privacy and "
             f"History, {rounds} round(s) per session, one Chromium tab per session in one "
             "warmed-up browser profile; server, browser and the long run share this machine's "
             f"{len(os.sched_getaffinity(0))} usable cores. The long run: a real "
             f"attribute_privacy run on synthetic, {LONG_RUN_ROUNDS} rounds, started by Run on "
             "the page in another tab. " + " | ".join(got["notes"]))
    return {
        "name": "sessions",
        "headline": {"sessions1_p95_render_s": s1, "sessions8_p95_render_s": s8,
                     "sessions8_p95_render_s_with_long_run": s8l},
        "rows": table,
        "notes": notes,
        "targets": {"sessions8_p95_render_s": f"< {TARGET_P95_S} s",
                    "sessions8_p95_render_s_with_long_run": "<= 1.5 x sessions8_p95_render_s"},
    }


def _cli() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--populate", metavar="DIR", help=argparse.SUPPRESS)
    ap.add_argument("--root", type=Path, default=ROOT, help="checkout whose dashboard is served")
    ap.add_argument("--sessions", default="1,8")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--no-long-run", action="store_true")
    ap.add_argument("--long-rounds", type=int, default=LONG_RUN_ROUNDS)
    ap.add_argument("--reload", action="store_true", help="a page load for every visit")
    ap.add_argument("--json", type=Path, help="write rows and notes here")
    args = ap.parse_args()
    if args.populate:
        print(populate(args.populate))
        return
    got = measure(args.root, sessions=tuple(int(s) for s in args.sessions.split(",")),
                  rounds=args.rounds, long_run=not args.no_long_run, long_rounds=args.long_rounds,
                  reload=args.reload)
    for row in summarise(got["rows"]):
        print(json.dumps(row))
    for note in got["notes"]:
        print("note:", note)
    if args.json:
        args.json.write_text(json.dumps(got, indent=1))


if __name__ == "__main__":
    _cli()
