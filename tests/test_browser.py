"""Real-browser tests: `streamlit run dashboard/server.py` (the app behind its base-URL
middleware) driven by Debian's headless chromium.

Starts the server on a free 127.0.0.1 port with a private result store, opens the landing page
and the Data & projections page, waits for the plotly projection to render, checks it is
visible and saves screenshots to test-artifacts/ (gitignored). Never runs `playwright install`:
it uses the system chromium (`make test` installs it). PRIVLAB_SKIP_BROWSER=1 skips it.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    # plotly's scattergl needs WebGL; without a GPU chromium provides it through SwiftShader
    "--use-angle=swiftshader", "--enable-unsafe-swiftshader",
]


_LOCAL = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # localhost: no proxy


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_healthy(url: str, proc: subprocess.Popen, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"streamlit exited with code {proc.returncode}")
        try:
            with _LOCAL.open(url + "/_stcore/health", timeout=2) as r:
                if r.status == 200 and r.read().strip() == b"ok":
                    return
        except OSError:
            pass
        time.sleep(0.3)
    raise TimeoutError(f"streamlit did not answer {url}/_stcore/health within {timeout:.0f} s")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    port = _free_port()
    log = tmp_path_factory.mktemp("streamlit") / "server.log"
    env = dict(os.environ, PRIVLAB_CACHE_DIR=str(tmp_path_factory.mktemp("browser-cache")))
    for var in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY"):
        env.pop(var, None)
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", "dashboard/server.py",
             "--server.address", "127.0.0.1", "--server.port", str(port),
             "--server.headless", "true", "--browser.gatherUsageStats", "false",
             "--server.fileWatcherType", "none"],
            cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
        )
        url = f"http://127.0.0.1:{port}"
        try:
            _wait_healthy(url, proc)
            yield url
        except Exception:
            print(log.read_text(errors="replace")[-4000:])
            raise
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)


@pytest.fixture(scope="module")
def browser():
    if os.environ.get("PRIVLAB_SKIP_BROWSER") == "1":
        pytest.skip("PRIVLAB_SKIP_BROWSER=1")
    exe = shutil.which("chromium")
    if exe is None:
        pytest.fail("Debian's chromium is not installed (`make test` installs it: "
                    "apt-get install -y chromium); set PRIVLAB_SKIP_BROWSER=1 to skip this test")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=exe, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


class Watch:
    """What a page asked the network for and said in its console: requests leaving the server,
    responses >= 400, console errors and warnings, uncaught page errors."""

    def __init__(self, page, server: str) -> None:
        self.external: list[str] = []
        self.failed: list[str] = []
        self.console: list[str] = []
        self.errors: list[str] = []

        def on_request(req) -> None:
            if not req.url.startswith((server, "data:", "blob:", "about:")):
                self.external.append(req.url)

        page.on("request", on_request)
        page.on("response", lambda r: self.failed.append(f"{r.status} {r.url}")
                if r.status >= 400 else None)
        page.on("console", lambda m: self.console.append(f"{m.type}: {m.text}")
                if m.type in ("error", "warning") else None)
        page.on("pageerror", lambda e: self.errors.append(str(e)))

    def assert_quiet(self) -> None:
        """No request left the machine, nothing failed, the console stayed clean."""
        assert not self.external, self.external
        assert not self.failed, self.failed
        assert not self.console, self.console
        assert not self.errors, self.errors


def _no_exception(page) -> None:
    exc = page.locator('[data-testid="stException"]')
    assert exc.count() == 0, exc.first.inner_text()


def _screenshot(page, path: Path) -> None:
    """The whole page: Streamlit scrolls inside its own container, so grow the viewport to the
    content's height first."""
    height = page.evaluate(
        "() => Math.max(...[...document.querySelectorAll('[data-testid=\"stMain\"], section.main')]"
        ".map(e => e.scrollHeight), document.body.scrollHeight)")
    page.set_viewport_size({"width": 1400, "height": min(int(height) + 40, 6000)})
    page.wait_for_timeout(800)
    page.screenshot(path=str(path), full_page=True)
    page.set_viewport_size({"width": 1400, "height": 1000})


def test_landing_and_data_projection_render(browser, server):
    ARTIFACTS.mkdir(exist_ok=True)
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    watch = Watch(page, server)

    page.goto(server + "/", wait_until="domcontentloaded")
    page.get_by_role("heading", name="privlab").wait_for(timeout=60_000)
    page.locator('[data-testid="stTable"]').first.wait_for(timeout=30_000)
    assert page.get_by_role("link", name="Data & projections").first.is_visible()
    sidebar = page.locator('[data-testid="stSidebar"]')
    assert sidebar.get_by_text("Data set").first.is_visible()
    _no_exception(page)
    _screenshot(page, ARTIFACTS / "landing.png")

    page.goto(server + "/data", wait_until="domcontentloaded")
    page.get_by_role("heading", name="Data & projections").wait_for(timeout=60_000)
    chart = page.locator(".st-key-data_projection .js-plotly-plot")
    chart.wait_for(state="visible", timeout=120_000)
    chart.locator(".main-svg").first.wait_for(state="visible", timeout=30_000)
    box = chart.bounding_box()
    assert box is not None and box["width"] > 300 and box["height"] > 300, box
    # the scatter's legend lists the ten digit classes
    assert chart.locator(".legend .traces").count() == 10
    assert page.get_by_text("WebGL is not supported").count() == 0
    _no_exception(page)
    _screenshot(page, ARTIFACTS / "data_projections.png")
    # the sidebar is still there after navigating (shared settings)
    assert sidebar.get_by_text("Seed").first.is_visible()
    # offline and quiet: a local favicon, no font host, no 404 from a page opened at its own
    # address (dashboard/server.py), nothing in the console
    watch.assert_quiet()


def test_every_page_renders_in_the_browser(browser, server):
    """Attribute privacy (no run yet: controls and the Run buttons) and History, on a live server."""
    ARTIFACTS.mkdir(exist_ok=True)
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    watch = Watch(page, server)
    page.goto(server + "/attribute_privacy", wait_until="domcontentloaded")
    page.get_by_role("heading", name="Attribute privacy in federated learning").wait_for(timeout=60_000)
    page.get_by_role("button", name="Run λ sweep").wait_for(timeout=30_000)
    assert page.get_by_role("button", name="Run", exact=True).is_visible()
    _no_exception(page)
    _screenshot(page, ARTIFACTS / "attribute_privacy.png")
    page.goto(server + "/history", wait_until="domcontentloaded")
    page.get_by_role("heading", name="History").wait_for(timeout=60_000)
    _no_exception(page)
    watch.assert_quiet()


def test_reconstruction_page_runs_and_draws_the_gallery(browser, server):
    """Reconstruction → gradient leakage: the live closed-form panel draws before any run; Run
    on a tiny setting draws the originals / noisy / reconstructions gallery."""
    ARTIFACTS.mkdir(exist_ok=True)
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(server + "/reconstruction", wait_until="domcontentloaded")
    page.get_by_role("heading", name="Reconstruction: gradient leakage and the κ channel").wait_for(
        timeout=60_000)
    page.locator(".st-key-gl_spectrum .js-plotly-plot").wait_for(state="visible", timeout=60_000)
    page.locator(".st-key-gl_bounds .js-plotly-plot").wait_for(state="visible", timeout=60_000)
    targets = page.get_by_role("textbox", name="Targets")
    targets.fill("2")
    targets.press("Enter")
    page.get_by_role("button", name="Run", exact=True).click()
    gallery = page.locator(".st-key-gl_gallery .js-plotly-plot")
    gallery.wait_for(state="visible", timeout=180_000)
    box = gallery.bounding_box()
    assert box is not None and box["width"] > 300, box
    _no_exception(page)
    _screenshot(page, ARTIFACTS / "reconstruction.png")
    assert not errors, errors


def test_membership_page_runs_and_draws_the_rocs(browser, server):
    """Membership: Run on a small setting draws the linear and log-log ROC curves."""
    ARTIFACTS.mkdir(exist_ok=True)
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(server + "/membership", wait_until="domcontentloaded")
    page.get_by_role("heading", name="Membership inference").wait_for(timeout=60_000)
    for label, value in (("Members", "80"), ("Epochs", "10"), ("RMIA refs", "1"),
                         ("Targets pooled", "4"), ("Shadows", "4")):
        box = page.get_by_role("textbox", name=label)
        box.fill(value)
        box.press("Enter")
        page.wait_for_timeout(500)
    page.get_by_role("button", name="Run", exact=True).click()
    roc = page.locator(".st-key-mi_roc_log .js-plotly-plot")
    roc.wait_for(state="visible", timeout=180_000)
    page.locator(".st-key-mi_proj_member .js-plotly-plot").wait_for(state="visible", timeout=30_000)
    _no_exception(page)
    _screenshot(page, ARTIFACTS / "membership.png")
    assert not errors, errors


def test_property_page_runs_and_draws_the_attacks(browser, server):
    """Property: Run on digits (the embedded set; bold-digit share) draws the attack bars, the
    bound curve and the target subsets' projection."""
    ARTIFACTS.mkdir(exist_ok=True)
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(server + "/property", wait_until="domcontentloaded")
    page.get_by_role("heading", name="Property inference").wait_for(timeout=60_000)
    for label, value in (("Subsets per bin", "30"), ("Epochs", "3")):
        box = page.get_by_role("textbox", name=label)
        box.fill(value)
        box.press("Enter")
        page.wait_for_timeout(500)
    page.get_by_role("button", name="Run", exact=True).click()
    bars = page.locator(".st-key-pr_attack_bars .js-plotly-plot")
    bars.wait_for(state="visible", timeout=180_000)
    page.locator(".st-key-pr_proj_repr .js-plotly-plot").wait_for(state="visible", timeout=60_000)
    box = bars.bounding_box()
    assert box is not None and box["width"] > 300, box
    _no_exception(page)
    _screenshot(page, ARTIFACTS / "property.png")
    assert not errors, errors


def test_fisher_information_page_fits_and_draws_the_eta_histogram(browser, server):
    """Fisher information: digits fits by itself on opening; the η histogram by class, the
    most / least leaking images and, on the Cramér–Rao tab, the variance-vs-bound panel."""
    ARTIFACTS.mkdir(exist_ok=True)
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(server + "/fisher_information", wait_until="domcontentloaded")
    page.get_by_role("heading", name="Fisher information").wait_for(timeout=60_000)
    hist = page.locator(".st-key-fi_hist .js-plotly-plot")
    hist.wait_for(state="visible", timeout=180_000)
    box = hist.bounding_box()
    assert box is not None and box["width"] > 300, box
    page.locator(".st-key-fi_most .js-plotly-plot").wait_for(state="visible", timeout=30_000)
    _no_exception(page)
    _screenshot(page, ARTIFACTS / "fisher_information.png")
    page.get_by_role("tab", name="Cramér–Rao").click()
    page.locator(".st-key-fi_crb .js-plotly-plot").wait_for(state="visible", timeout=30_000)
    _no_exception(page)
    _screenshot(page, ARTIFACTS / "fisher_information_crb.png")
    assert not errors, errors


def test_repr_reconstruction_page_runs_and_draws_the_grid(browser, server):
    """Reconstruction from representations: Run on digits draws the reconstructions grid and
    the ε tradeoff plot's place (one ε stored: a sentence and the teaching-sweep button)."""
    ARTIFACTS.mkdir(exist_ok=True)
    page = browser.new_page(viewport={"width": 1400, "height": 1800})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(server + "/repr_reconstruction", wait_until="domcontentloaded")
    page.get_by_role("heading", name="Reconstruction: from representations").wait_for(timeout=60_000)
    for label, value in (("Epochs", "3"), ("Targets", "10")):
        box = page.get_by_role("textbox", name=label)
        box.fill(value)
        box.press("Enter")
        page.wait_for_timeout(500)
    page.get_by_role("button", name="Run", exact=True).click()
    grid = page.locator(".st-key-rr_gallery .js-plotly-plot")
    grid.wait_for(state="visible", timeout=180_000)
    # one ε stored: the tradeoff plot is a sentence and the teaching-sweep button, not axes
    page.get_by_text("needs at least two ε values").first.wait_for(timeout=60_000)
    assert page.locator(".st-key-rr_tradeoff .js-plotly-plot").count() == 0
    _no_exception(page)
    _screenshot(page, ARTIFACTS / "repr_reconstruction.png")
    assert not errors, errors


def test_compare_page_draws_four_defenses_on_one_plane(browser, server, tmp_path_factory):
    """Compare: the teaching preset (membership on digits) with its points stored beforehand
    (stand-in metrics from tests/test_compare_page.py, so the test trains nothing) draws the
    plane with four defenses, the undefended point and the Pareto front, and the table."""
    sys.path.insert(0, str(Path(__file__).parent))
    from test_compare_page import populate

    from cache.store import ResultStore
    from core.compare import teaching_spec

    (root,) = tmp_path_factory.getbasetemp().glob("browser-cache[0-9]*")  # the server's store
    populate(ResultStore(root), teaching_spec())
    ARTIFACTS.mkdir(exist_ok=True)
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(server + "/compare", wait_until="domcontentloaded")
    page.get_by_role("heading", name="Compare defenses").wait_for(timeout=60_000)
    plane = page.locator(".st-key-cmp_plane .js-plotly-plot")
    plane.wait_for(state="visible", timeout=120_000)
    box = plane.bounding_box()
    assert box is not None and box["width"] > 600 and box["height"] > 300, box
    legend = [t or "" for t in plane.locator(".legend .legendtext").all_text_contents()]
    defenses = [t for t in legend if t.startswith(("Inf2Guard", "DP-SGD", "κ channel"))]
    assert len(defenses) >= 4, legend
    assert any(t.startswith("Pareto front") for t in legend), legend
    page.get_by_text("Utility at equal privacy").wait_for(timeout=30_000)
    # at 1280 px the equal-privacy table is whole: its dominance column inside the window and
    # its verdicts wrapped, not cut (issue #20 item 6)
    page.set_viewport_size({"width": 1280, "height": 1000})
    page.wait_for_timeout(1500)
    table = page.locator('[data-testid="stTable"]').first
    head = table.locator("th", has_text="dominance test").first
    hb = head.bounding_box()
    assert hb is not None and hb["x"] + hb["width"] <= 1280, hb
    for cell in table.locator("tbody tr td").all():
        cb = cell.bounding_box()
        assert cb is not None and cb["x"] + cb["width"] <= 1280, cb
        assert cell.evaluate("e => e.scrollWidth <= e.clientWidth + 1"), cell.inner_text()
    _no_exception(page)
    _screenshot(page, ARTIFACTS / "compare.png")
    assert not errors, errors


@pytest.fixture(scope="module")
def gated_server(tmp_path_factory):
    """A server as `PRIVLAB_PASSWORD=... make run HOST=0.0.0.0` starts it: bound beyond loopback,
    with a password (reached here through 127.0.0.1)."""
    port = _free_port()
    log = tmp_path_factory.mktemp("gated") / "server.log"
    env = dict(os.environ, PRIVLAB_CACHE_DIR=str(tmp_path_factory.mktemp("gated-cache")),
               PRIVLAB_PASSWORD="correct horse battery")
    env.pop("PRIVLAB_INSECURE", None)
    for var in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY"):
        env.pop(var, None)
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", "dashboard/server.py",
             "--server.address", "0.0.0.0", "--server.port", str(port),
             "--server.headless", "true", "--browser.gatherUsageStats", "false",
             "--server.fileWatcherType", "none"],
            cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
        )
        url = f"http://127.0.0.1:{port}"
        try:
            _wait_healthy(url, proc)
            yield url
        except Exception:
            print(log.read_text(errors="replace")[-4000:])
            raise
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)


def test_password_gate_shows_only_the_prompt_before_login(browser, gated_server):
    """Before login: the password prompt and nothing of the lab (no sidebar, no page, not even
    through a page URL); a wrong password is refused; the right one opens the lab."""
    ARTIFACTS.mkdir(exist_ok=True)
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    for path in ("/", "/data", "/history"):
        page.goto(gated_server + path, wait_until="domcontentloaded")
        prompt = page.locator('input[type="password"]')
        prompt.wait_for(state="visible", timeout=60_000)
        page.wait_for_timeout(1000)  # anything else would have rendered by now
        assert page.locator('[data-testid="stSidebar"]').count() == 0, path
        assert page.get_by_role("link", name="Data & projections").count() == 0, path
        assert page.get_by_text("Data set").count() == 0, path
        assert page.locator(".js-plotly-plot").count() == 0, path
        _no_exception(page)
    _screenshot(page, ARTIFACTS / "password_prompt.png")
    prompt = page.locator('input[type="password"]')
    prompt.fill("not it")
    page.get_by_role("button", name="Sign in").click()
    page.get_by_text("Wrong password.").wait_for(timeout=30_000)
    assert page.locator('[data-testid="stSidebar"]').count() == 0
    page.locator('input[type="password"]').fill("correct horse battery")
    page.get_by_role("button", name="Sign in").click()
    sidebar = page.locator('[data-testid="stSidebar"]')
    sidebar.get_by_text("Data set").first.wait_for(timeout=60_000)
    page.locator('input[type="password"]').wait_for(state="detached", timeout=30_000)
    page.get_by_role("heading", name="privlab").wait_for(timeout=60_000)
    _no_exception(page)
    _screenshot(page, ARTIFACTS / "password_signed_in.png")
    assert not errors, errors
