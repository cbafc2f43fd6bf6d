"""The browser pass shared by ``tests/test_browser.py`` and ``benchmarks/browser_bench.py``
(issue #20, Tests and items 6, 8, 9): start the dashboard server (``streamlit run
dashboard/server.py``) on a free loopback port with a private result store, drive Debian's
headless chromium through playwright, and check one page after its default run: no exception,
the lesson panel, no raw metric key in the visible text, no request leaving the machine, no
failed response, no console error.

Imports neither Streamlit nor the engine at module level (the test and the benchmark start the
server in a subprocess); playwright is imported by the caller.
"""

from __future__ import annotations

import contextlib
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# one list of flags for the browser checks and the PDF print (re-exported for them)
from core.report.pdf import CHROMIUM_ARGS  # noqa: F401

ROOT = Path(__file__).resolve().parents[1]
#: a sentence core.report.teaching._move wrote: the lesson measured from stored runs
MEASURED = re.compile(r"beyond the 95 % intervals|within the 95 % intervals|"
                      r"one seed and no interval")
LESSON_TITLES = ("What this page teaches", "What this comparison teaches")

_LOCAL = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # localhost: no proxy


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_healthy(url: str, proc: subprocess.Popen, timeout: float = 90.0) -> None:
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


@contextlib.contextmanager
def serve(cache_dir: Path, log: Path, *, host: str = "127.0.0.1",
          env_extra: dict[str, str] | None = None, drop: tuple[str, ...] = (),
          timeout: float = 90.0, port: int | None = None,
          on_start: Callable[[subprocess.Popen], None] | None = None) -> Iterator[str]:
    """``streamlit run dashboard/server.py`` on ``port`` (default: a free one) with
    ``PRIVLAB_CACHE_DIR`` = ``cache_dir``, its output in ``log``; yields the loopback URL. No
    proxy (localhost). ``on_start(process)`` is called once the server answers."""
    port = port or free_port()
    env = dict(os.environ, PRIVLAB_CACHE_DIR=str(cache_dir), **(env_extra or {}))
    for var in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", *drop):
        env.pop(var, None)
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", "dashboard/server.py",
             "--server.address", host, "--server.port", str(port),
             "--server.headless", "true", "--browser.gatherUsageStats", "false",
             "--server.fileWatcherType", "none"],
            cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
        )
        url = f"http://127.0.0.1:{port}"
        try:
            wait_healthy(url, proc, timeout)
            if on_start is not None:
                on_start(proc)
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

    def console_errors(self) -> list[str]:
        """Console errors and uncaught page errors (warnings are kept apart)."""
        return [c for c in self.console if c.startswith("error:")] + self.errors

    def snapshot(self) -> dict[str, int]:
        return {"external": len(self.external), "failed": len(self.failed),
                "console": len(self.console), "errors": len(self.errors)}

    def since(self, mark: dict[str, int]) -> dict[str, list[str]]:
        """What was recorded after ``mark`` (a :meth:`snapshot`)."""
        return {"external": self.external[mark["external"]:],
                "failed": self.failed[mark["failed"]:],
                "console": self.console[mark["console"]:],
                "errors": self.errors[mark["errors"]:]}

    def assert_quiet(self) -> None:
        """No request left the machine, nothing failed, the console stayed clean."""
        assert not self.external, self.external
        assert not self.failed, self.failed
        assert not self.console, self.console
        assert not self.errors, self.errors


def exception_text(page) -> str | None:
    """The first Streamlit exception box's text, or None."""
    exc = page.locator('[data-testid="stException"]')
    return exc.first.inner_text() if exc.count() else None


def wait_idle(page, timeout_ms: int = 60_000) -> None:
    """Until the script run ends (Streamlit marks the app ``data-test-script-state``)."""
    with contextlib.suppress(Exception):
        page.wait_for_function(
            "() => { const a = document.querySelector('[data-testid=\"stApp\"]');"
            " const s = a && a.getAttribute('data-test-script-state');"
            " return !a || (s !== 'running' && s !== 'rerunRequested'); }",
            timeout=timeout_ms)
    page.wait_for_timeout(500)


def visible_text(page) -> str:
    """What a reader sees: the body's text plus the plots' SVG text (axis titles, legends,
    annotations: innerText leaves some of it out)."""
    body = page.inner_text("body")
    svg = page.evaluate(
        "() => [...document.querySelectorAll('.js-plotly-plot .main-svg')]"
        ".map(e => e.textContent).join('\\n')")
    return body + "\n" + (svg or "")


def reader_text(page) -> str:
    """:func:`visible_text` without code and JSON blocks (a stored config, a YAML or CLI
    line to copy: the names a user types, where registered names belong)."""
    body = page.evaluate(
        "() => { const hid = [...document.querySelectorAll("
        "'pre, code, [data-testid=\"stJson\"]')].filter(e => e.style.display !== 'none');"
        " hid.forEach(e => { e.dataset.ptDisplay = e.style.display; e.style.display = 'none'; });"
        " const t = document.body.innerText;"
        " hid.forEach(e => { e.style.display = e.dataset.ptDisplay; delete e.dataset.ptDisplay; });"
        " return t; }")
    svg = page.evaluate(
        "() => [...document.querySelectorAll('.js-plotly-plot .main-svg')]"
        ".map(e => e.textContent).join('\\n')")
    return (body or "") + "\n" + (svg or "")


def raw_keys(page) -> list[str]:
    from dashboard.base.format import raw_metric_keys_visible

    return raw_metric_keys_visible(visible_text(page))


#: where a cut label hides words: widget labels, metric tiles, table cells and headers, the
#: multiselect's chips, tab titles, buttons, captions
OVERFLOW_SELECTORS = (
    '[data-testid="stWidgetLabel"]', '[data-testid="stMetricLabel"]',
    '[data-testid="stMetricValue"]', '[data-testid="stTable"] th',
    '[data-testid="stTable"] td', '[data-baseweb="tag"]', '[data-baseweb="tab"]',
    '[data-testid="stCaptionContainer"]', '[data-testid="stBaseButton-secondary"]',
    '[data-testid="stBaseButton-primary"]', '[data-testid="stExpander"] summary',
    '[data-testid="stMultiSelect"]', '[data-testid="stTable"]', '[data-testid="stSidebarNav"]',
    '[data-testid="stPageLink"]')

_OVERFLOW_JS = """(sels) => {
  const out = [];
  const seen = new Set();
  for (const root of document.querySelectorAll(sels.join(','))) {
    for (const el of [root, ...root.querySelectorAll('*')]) {
      if (seen.has(el) || !el.offsetParent) continue;
      seen.add(el);
      const cs = getComputedStyle(el);
      // a box that cuts its text, or scrolls it sideways out of sight (chips, wide tables)
      const clips = cs.textOverflow === 'ellipsis'
        || ['hidden', 'clip', 'auto', 'scroll'].includes(cs.overflowX);
      if (clips && el.clientWidth > 0 && el.scrollWidth > el.clientWidth + 1
          && (el.innerText || '').trim()) {
        out.push((el.innerText || '').trim().slice(0, 80));
      }
    }
  }
  return out;
}"""


#: what the page draws outside the DOM's text boxes: a data grid (a canvas in a scroller), a
#: segmented control's buttons (cut by their column), a select's value (an <input>)
_CUT_WIDGETS_JS = """() => {
  const out = [];
  const txt = (e) => (e.innerText || e.value || '').trim().slice(0, 80);
  // a grid wider than its box: the columns past its right edge, headers included, are cut
  for (const g of document.querySelectorAll('[data-testid="stDataFrame"]')) {
    const sc = g.querySelector('.dvn-scroller');
    if (!sc || !g.offsetParent || sc.scrollWidth <= sc.clientWidth + 1) continue;
    const heads = [...g.querySelectorAll('th, [role="columnheader"]')].map(txt).filter(Boolean);
    out.push('table header: ' + (heads.slice(-2).join(' | ') || 'a data grid')
             + ` (${sc.scrollWidth - sc.clientWidth} px past the table's box)`);
  }
  // a segmented button past the right edge of its column (or of a box that clips it)
  for (const b of document.querySelectorAll('[data-testid="stButtonGroup"] button')) {
    if (!b.offsetParent || !txt(b)) continue;
    const r = b.getBoundingClientRect();
    for (let a = b.parentElement; a && a !== document.body; a = a.parentElement) {
      const cs = getComputedStyle(a);
      const bound = a.matches('[data-testid="stColumn"]') || cs.overflowX !== 'visible';
      if (!bound) continue;
      const ar = a.getBoundingClientRect();
      if (r.right > ar.right + 1 || r.left < ar.left - 1) out.push('segmented button: ' + txt(b));
      break;
    }
  }
  // a select's (or text box's) value wider than the box it is typed in
  const ctx = document.createElement('canvas').getContext('2d');
  for (const i of document.querySelectorAll(
      '[data-testid="stSelectbox"] input, [data-testid="stTextInput"] input')) {
    if (!i.offsetParent || !i.value) continue;
    const cs = getComputedStyle(i);
    ctx.font = cs.font;
    const room = i.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight);
    const need = ctx.measureText(i.value).width;
    if (need > room + 1) {
      out.push(`select value: ${i.value} (${Math.ceil(need)} px in ${Math.floor(room)} px)`);
    }
  }
  return out;
}"""


def overflowing(page) -> list[str]:
    """Texts cut by their box at the page's current viewport (the pass uses 1280 px): an
    element of :data:`OVERFLOW_SELECTORS` that clips or scrolls sideways (``text-overflow:
    ellipsis``, overflow-x hidden / clip / auto / scroll) with ``scrollWidth > clientWidth +
    1``; a data grid whose columns run past its box (its last headers cut); a segmented
    button past its column's edge; a select's value wider than its box (measured in the
    input's own font)."""
    cut = page.evaluate(_OVERFLOW_JS, list(OVERFLOW_SELECTORS)) + page.evaluate(_CUT_WIDGETS_JS)
    return sorted(set(cut))


#: emoji drawn only by an emoji font (Unicode's Emoji_Presentation ranges and anything asking
#: for emoji presentation with U+FE0F): a box where the browser has no emoji font
_EMOJI = re.compile(
    "[\U0001F000-\U0001FAFF\u231A\u231B\u23E9-\u23EC\u23F0\u23F3\u25FD\u25FE"
    "\u2614\u2615\u2648-\u2653\u267F\u2693\u26A1\u26AA\u26AB\u26BD\u26BE\u26C4"
    "\u26C5\u26CE\u26D4\u26EA\u26F2\u26F3\u26F5\u26FA\u26FD\u2705\u270A\u270B"
    "\u2728\u274C\u274E\u2753-\u2755\u2757\u2795-\u2797\u27B0\u27BF\u2B1B\u2B1C"
    "\u2B50\u2B55]|.\uFE0F")


def undrawable(text: str) -> list[str]:
    """The characters of ``text`` that need an emoji font (:data:`_EMOJI`), each once."""
    return sorted(set(_EMOJI.findall(text)))


def raw_identifiers(page) -> list[str]:
    """Registered identifiers (metric keys, attack, defense and family names) where a title
    exists, in the visible text, tables included
    (:func:`dashboard.base.format.raw_identifiers_visible`)."""
    return raw_identifiers_text(reader_text(page))


def raw_identifiers_text(text: str) -> list[str]:
    """:func:`raw_identifiers` of a text already read (a report's, a note's)."""
    from dashboard.base.format import raw_identifiers_visible

    return raw_identifiers_visible(text)


def lesson_text(page) -> str | None:
    """The lesson panel's text (the innermost bordered block under its title), or None."""
    for title in LESSON_TITLES:
        block = page.locator('[data-testid="stVerticalBlock"]').filter(has_text=title)
        if block.count():
            return block.last.inner_text()
    return None


def measured_sentence(text: str | None) -> str | None:
    """The first measured lesson sentence in ``text`` (a line :data:`MEASURED` matches)."""
    for line in (text or "").splitlines():
        if MEASURED.search(line):
            return line.strip()
    return None


def screenshot(page, path: Path, *, width: int = 1280, max_height: int = 5000,
               colors: int = 256) -> dict[str, Any]:
    """The whole page (Streamlit scrolls inside its own container, so the viewport grows to
    the content's height first, capped at ``max_height``), saved as a palette PNG when Pillow
    is there (a README image: a few hundred KB, not megabytes). Returns its size."""
    height = page.evaluate(
        "() => Math.max(...[...document.querySelectorAll('[data-testid=\"stMain\"], section.main')]"
        ".map(e => e.scrollHeight), document.body.scrollHeight)")
    h = min(int(height) + 40, max_height)
    page.set_viewport_size({"width": width, "height": h})
    page.wait_for_timeout(1200)
    path.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(path), full_page=False)
    page.set_viewport_size({"width": width, "height": 1000})
    with contextlib.suppress(ImportError):
        from PIL import Image

        with Image.open(path) as im:
            small = im.convert("RGB").quantize(colors=colors, method=Image.Quantize.MEDIANCUT)
        small.save(path, optimize=True)
    return {"height": h, "content_height": int(height), "bytes": path.stat().st_size}


@dataclass(frozen=True)
class PageCheck:
    """One page of the pass: its URL path, heading, Run button (None: the page has none, or
    runs by itself), what marks its result, and whether it has a teaching sweep."""

    name: str
    path: str
    heading: str
    run: str | None
    result: str
    knob: bool
    shot: str
    #: the page runs its default by itself on opening (no click; seconds from opening)
    auto: bool = False


PAGES: tuple[PageCheck, ...] = (
    PageCheck("home", "/", "privlab", None, '[data-testid="stTable"]', False, "landing"),
    PageCheck("data", "/data", "Data & projections", None,
              ".st-key-data_projection .js-plotly-plot", False, "data_projections"),
    PageCheck("attribute_privacy", "/attribute_privacy", "Attribute privacy in federated learning",
              "Run", "h3:has-text('Attacks on the private attribute')", True,
              "attribute_privacy"),
    PageCheck("membership", "/membership", "Membership inference", "Run",
              ".st-key-mi_roc_log .js-plotly-plot", True, "membership"),
    PageCheck("property", "/property", "Property inference", "Run",
              ".st-key-pr_attack_bars .js-plotly-plot", True, "property"),
    PageCheck("reconstruction", "/reconstruction",
              "Reconstruction: gradient leakage and the κ channel", "Run",
              ".st-key-gl_gallery .js-plotly-plot", True, "reconstruction"),
    PageCheck("repr_reconstruction", "/repr_reconstruction", "Reconstruction: from representations",
              "Run", ".st-key-rr_gallery .js-plotly-plot", True, "repr_reconstruction"),
    PageCheck("fisher_information", "/fisher_information", "Fisher information", "Run",
              ".st-key-fi_hist .js-plotly-plot", True, "fisher_information", auto=True),
    PageCheck("compare", "/compare", "Compare defenses", "Run the comparison",
              ".st-key-cmp_plane .js-plotly-plot", True, "compare", auto=True),
    PageCheck("history", "/history", "History", None, "h1:has-text('History')", False, "history"),
)
PAGE = {p.name: p for p in PAGES}


def open_page(page, server: str, check: PageCheck) -> float:
    """Go to ``check``'s page and wait for its heading and the end of its first script run;
    returns the monotonic time of the ``goto``."""
    t_open = time.monotonic()
    page.goto(server + check.path, wait_until="domcontentloaded")
    page.get_by_role("heading", name=check.heading).first.wait_for(timeout=120_000)
    wait_idle(page, 120_000)
    return t_open


def page_config(page) -> dict[str, Any]:
    """The config the page would run now, read from its "Copy this run as YAML" block."""
    import yaml

    box = page.locator('[data-testid="stExpander"]').filter(has_text="Copy this run as YAML")
    box.first.locator("summary").click()
    codes = box.first.locator("pre code")
    codes.first.wait_for(timeout=30_000)
    texts = [c.text_content() or "" for c in codes.all()]
    box.first.locator("summary").click()
    for text in texts:
        try:
            cfg = yaml.safe_load(text)
        except yaml.YAMLError:
            continue
        if isinstance(cfg, dict) and "kind" in cfg:
            return cfg
    raise ValueError("no YAML config in the page's 'Copy this run' block: "
                     + " | ".join(t[:80] for t in texts))


def open_and_run(page, server: str, check: PageCheck, *, timeout_ms: int,
                 click: bool = True, before: Callable[[Any], None] | None = None
                 ) -> dict[str, Any]:
    """Open ``check``'s page, press its Run button with the defaults untouched (when it has
    one and ``click`` is set; Fisher information and Compare run their default by themselves
    on opening: ``auto``), wait for its result. ``before(page)`` runs between opening and the
    click. Returns ``seconds`` (from the click, or from opening for an ``auto`` page) and
    ``clicked``. (A page may show a stored neighbour before Run, e.g. the nearest grid point:
    the click is what runs the default.)"""
    t_open = open_page(page, server, check)
    if before is not None:
        before(page)
    result = page.locator(check.result).first
    t0, clicked = t_open, False
    if check.run is not None and click and not check.auto:
        button = page.get_by_role("button", name=check.run, exact=True)
        button.wait_for(timeout=60_000)
        if button.is_enabled():
            t0, clicked = time.monotonic(), True
            button.click()
            page.wait_for_timeout(300)
            # the script runs while the job does (the page polls it): its end is the result's
            wait_idle(page, timeout_ms)
    result.wait_for(state="visible", timeout=timeout_ms)
    seconds = time.monotonic() - t0
    wait_idle(page, timeout_ms)
    return {"seconds": seconds, "clicked": clicked}


def run_teaching_sweep(page, *, timeout_ms: int) -> str | None:
    """Press the lesson panel's "Run the teaching sweep" and wait for a measured sentence."""
    page.get_by_role("button", name=re.compile(r"^Run the teaching sweep")).first.click()
    page.wait_for_timeout(300)
    deadline = time.monotonic() + timeout_ms / 1000
    while time.monotonic() < deadline:
        sentence = measured_sentence(lesson_text(page))
        if sentence:
            wait_idle(page, timeout_ms)
            return sentence
        page.wait_for_timeout(500)
    return None


def text_fit(page, width: int = 1280) -> dict[str, list[str]]:
    """At ``width`` px: the texts cut by their box (:func:`overflowing`), the registered
    identifiers shown where a title exists (:func:`raw_identifiers`) and the glyphs that need
    an emoji font (:func:`undrawable`)."""
    page.set_viewport_size({"width": width, "height": 1000})
    page.wait_for_timeout(800)
    return {"overflowing": overflowing(page), "raw_identifiers": raw_identifiers(page),
            "undrawable": undrawable(visible_text(page))}  # code blocks included: drawn too


def fit_pass(browser, server: str, checks: tuple[PageCheck, ...] = PAGES, *,
             run: bool = True, timeout_ms: int = 300_000) -> list[dict[str, Any]]:
    """Every page at 1280 px, after its default run where it has one (``run``; a run that
    does not finish within ``timeout_ms`` is recorded and the page measured as it stands):
    :func:`text_fit` per page, with any exception box."""
    rows = []
    for check in checks:
        page = browser.new_page(viewport={"width": 1280, "height": 1000})
        row: dict[str, Any] = {"page": check.name}
        try:
            if run and check.run is not None:
                row["seconds"] = round(open_and_run(page, server, check,
                                                    timeout_ms=timeout_ms)["seconds"], 1)
            else:
                open_page(page, server, check)
        except Exception as exc:  # noqa: BLE001 - recorded in its row, the other pages go on
            row["error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0]}"
        row.update(text_fit(page))
        row["exception"] = exception_text(page)
        rows.append(row)
        page.close()
    return rows
