"""Dashboard responsiveness under concurrent sessions: time to a fully rendered cached page.

Two kinds of client: websocket clients speaking Streamlit's protocol (the server's share
alone; the headline) and headless Chromium tabs (server and browser on the same cores; below).

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


# --------------------------------------------------------------------------------------------
# websocket clients: the server's share alone (no browser on the server's cores)


async def _ws_visit(ws, path: str, title: str, must: tuple[str, ...]) -> tuple[float, int]:
    """One page run through Streamlit's websocket protocol, as the browser's navigation sends
    it (a ``rerun_script`` BackMsg naming the page); timed until the server's
    ``script_finished`` (FINISHED_SUCCESSFULLY), after every delta of the page has arrived.
    Checks that the page's title and its main elements' keys were in what arrived."""
    from streamlit.proto.BackMsg_pb2 import BackMsg
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    msg = BackMsg()
    msg.rerun_script.query_string = ""
    msg.rerun_script.page_name = path.strip("/")
    t0 = time.perf_counter()
    await ws.send(msg.SerializeToString())
    blob, n = bytearray(), 0
    while True:
        raw = await ws.recv()
        blob += raw
        n += 1
        fm = ForwardMsg()
        fm.ParseFromString(raw)
        if fm.WhichOneof("type") == "script_finished" and fm.script_finished == \
                ForwardMsg.ScriptFinishedStatus.FINISHED_SUCCESSFULLY:
            break
    seconds = time.perf_counter() - t0
    missing = [t for t in (title, *must) if t.encode() not in blob]
    if missing:
        raise RuntimeError(f"{path}: the page arrived without {missing}")
    return seconds, n


#: what must arrive for each page in websocket mode (the keys of its main elements)
WS_MUST = {"/": (), "/data": ("data_projection",),
           "/attribute_privacy": ("ap_attack_bars", "ap_tradeoff"), "/history": ()}


async def _ws_session(url: str, rounds: int, sid: int, out: list[dict], phase: str) -> None:
    import websockets

    ws_url = url.replace("http://", "ws://") + "/_stcore/stream"
    async with websockets.connect(ws_url, subprotocols=["streamlit"], max_size=None,
                                  ping_interval=None) as ws:
        for r in range(rounds):
            for name, path, title, _ in PAGES:
                secs, n = await _ws_visit(ws, path, title, WS_MUST.get(path, ()))
                out.append({"phase": phase, "session": sid, "round": r, "page": name,
                            "seconds": secs, "messages": n})


async def _drive_ws(url: str, *, sessions: list[int], rounds: int, long_run: bool,
                    long_rounds: int) -> tuple[list[dict], list[str]]:
    """N websocket sessions per phase; the long run is started in one headless Chromium tab
    (pressing Run, as a person does) and left running while the 8 clients visit."""
    notes: list[str] = []
    rows: list[dict] = []
    for n in sessions:
        # one warm-up visit per page first (the server's first imports), then the phase
        if n == sessions[0]:
            await _ws_session(url, 1, -1, [], "warmup")
        got: list[dict] = []
        await asyncio.gather(*(_ws_session(url, rounds, i, got, f"sessions{n}") for i in range(n)))
        rows += got
    if long_run:
        from playwright.async_api import async_playwright

        n = max(sessions)
        async with async_playwright() as pw:
            browser = await pw.chromium.launch(executable_path=shutil.which("chromium"),
                                               args=CHROMIUM_ARGS)
            ctx = await browser.new_context(viewport={"width": 1400, "height": 1000})
            try:
                page = await _start_long_run(ctx, url, long_rounds)
                # the clients start once the run is in its training rounds (past its imports
                # and data loading), so that every visit of the phase meets the training load
                deadline = time.monotonic() + 180
                while "round" not in await _long_run_state(page) and time.monotonic() < deadline:
                    await page.wait_for_timeout(500)
                notes.append(f"long run at start: {await _long_run_state(page)}")
                got = []
                await asyncio.gather(*(_ws_session(url, rounds, i, got, f"sessions{n}_with_long_run")
                                       for i in range(n)))
                rows += got
                notes.append(f"long run at end: {await _long_run_state(page)}")
                cancel = page.get_by_role("button", name="Cancel")
                if await cancel.count():
                    await cancel.first.click()
                    await page.wait_for_timeout(1000)
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
            keep: Path | None = None, clients: str = "websocket") -> dict[str, Any]:
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
        if clients == "websocket":
            rows, notes = asyncio.run(_drive_ws(url, sessions=list(sessions), rounds=rounds,
                                                long_run=long_run, long_rounds=long_rounds))
        else:
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
    """Both measurements: websocket clients (the headline: the server's time from the page
    request to its last delta, no browser on the server's cores) and Chromium tabs on the same
    cores (server + browser rendering; rows prefixed ``browser:``)."""
    rounds = 1 if quick else 2
    ws = measure(root, sessions=(1, 8), rounds=rounds, long_run=True,
                 long_rounds=LONG_RUN_ROUNDS, clients="websocket")
    br = measure(root, sessions=(1, 8), rounds=rounds, long_run=True,
                 long_rounds=LONG_RUN_ROUNDS, clients="browser")

    def p95(rows: list[dict], phase: str) -> float | None:
        xs = [r["seconds"] for r in rows if r["phase"] == phase]
        return round(_pct(xs, 95), 3) if xs else None

    table = summarise(ws["rows"]) + [{**r, "phase": "browser:" + r["phase"]}
                                     for r in summarise(br["rows"])]
    b1, b8, b8l = (p95(br["rows"], p) for p in ("sessions1", "sessions8",
                                                 "sessions8_with_long_run"))
    notes = ("Headline: websocket clients speaking Streamlit's protocol (a rerun_script "
             "BackMsg naming the page, as the browser's navigation sends it), timed from the "
             "request to the server's script_finished after the page's last delta (title and "
             "main elements' keys checked), over Home, Data & projections, Attribute privacy "
             f"and History, {rounds} round(s) per session: the server's share alone, with no "
             "browser on its cores. Browser rows: Chromium tabs on the same "
             f"{len(os.sched_getaffinity(0))} cores, from the click to every plotly chart drawn: "
             f"p95 {b1} s (1 session), {b8} s (8), {b8l} s (8 + long run) — there 8 renderers "
             "share the server's 2 cores, which a classroom's own laptops do not. The long run: a "
             f"real attribute_privacy run on synthetic, {LONG_RUN_ROUNDS} rounds, started by Run "
             "in a Chromium tab. " + " | ".join(ws["notes"]) + " | browser: "
             + " | ".join(br["notes"]))
    return {
        "name": "sessions",
        "headline": {"sessions1_p95_render_s": p95(ws["rows"], "sessions1"),
                     "sessions8_p95_render_s": p95(ws["rows"], "sessions8"),
                     "sessions8_p95_render_s_with_long_run": p95(ws["rows"],
                                                                 "sessions8_with_long_run")},
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
    ap.add_argument("--clients", choices=("websocket", "browser"), default="websocket",
                    help="websocket: the server's time alone; browser: Chromium tabs on the "
                         "same cores (server + browser)")
    ap.add_argument("--json", type=Path, help="write rows and notes here")
    args = ap.parse_args()
    if args.populate:
        print(populate(args.populate))
        return
    got = measure(args.root, sessions=tuple(int(s) for s in args.sessions.split(",")),
                  rounds=args.rounds, long_run=not args.no_long_run, long_rounds=args.long_rounds,
                  reload=args.reload, clients=args.clients)
    for row in summarise(got["rows"]):
        print(json.dumps(row))
    for note in got["notes"]:
        print("note:", note)
    if args.json:
        args.json.write_text(json.dumps(got, indent=1))


if __name__ == "__main__":
    _cli()
