"""The report printed to PDF by Chromium (Debian's ``chromium``, headless, driven by
playwright): the page is loaded from a file, every plotly figure is waited for, then printed on
A4 with its backgrounds. Any request leaving ``file://`` is refused, so a PDF never depends on
the network; :func:`external_requests` counts them for the tests and the benchmark."""

from __future__ import annotations

import re
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

#: headless Chromium's flags, for the PDF print here and the dashboard's browser test
#: (dashboard/browser_check.py): no GPU, no first-run, no background traffic; plotly's
#: scattergl needs WebGL, which SwiftShader provides without a GPU
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--use-angle=swiftshader", "--enable-unsafe-swiftshader",
]
#: how long a page may take to draw its figures
RENDER_TIMEOUT_MS = 60_000
_PAGE = re.compile(rb"/Type\s*/Page(?![a-zA-Z])")
_LOCAL = ("file:", "data:", "blob:", "about:")


def chromium_path() -> str:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        raise RuntimeError("report PDF: Chromium not found on PATH (apt-get install -y chromium)")
    return exe


def count_pages(pdf: bytes) -> int:
    """The pages of a PDF: its ``/Type /Page`` objects (not ``/Pages``, the tree's nodes)."""
    return len(_PAGE.findall(pdf))


@contextmanager
def _page(html: str) -> Iterator[tuple[Any, list[str]]]:
    """A Chromium page with ``html`` loaded from a temporary file and its figures drawn; yields
    (page, URLs of the requests that tried to leave ``file://``, each refused)."""
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory(prefix="privlab-report-") as tmp:
        src = Path(tmp) / "report.html"
        src.write_text(html, encoding="utf-8")
        external: list[str] = []
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
            try:
                page = browser.new_page(viewport={"width": 1000, "height": 1400})

                def route(r: Any) -> None:
                    if r.request.url.startswith(_LOCAL):
                        r.continue_()
                    else:
                        external.append(r.request.url)
                        r.abort()

                page.route("**/*", route)
                page.goto(src.as_uri(), wait_until="load")
                n = html.count('class="plotly-graph-div"')
                if n:
                    page.wait_for_function(
                        f"document.querySelectorAll('.plotly-graph-div .main-svg').length >= {n}",
                        timeout=RENDER_TIMEOUT_MS)
                yield page, external
            finally:
                browser.close()


def html_to_pdf(html: str, path: Path) -> int:
    """Print ``html`` to ``path`` (A4, backgrounds on); the number of pages written."""
    with _page(html) as (page, _):
        page.emulate_media(media="print")
        page.pdf(path=str(path), format="A4", print_background=True,
                 margin={"top": "14mm", "bottom": "14mm", "left": "14mm", "right": "14mm"})
    return count_pages(Path(path).read_bytes())


def external_requests(html: str) -> list[str]:
    """The URLs ``html`` asked for outside ``file://`` / ``data:`` / ``blob:`` while loading and
    drawing in Chromium (each refused)."""
    with _page(html) as (_, external):
        return list(external)


def screenshot(html: str, path: Path, *, width: int = 1000) -> None:
    """A full-page PNG of ``html`` as Chromium draws it on screen."""
    with _page(html) as (page, _):
        page.set_viewport_size({"width": width, "height": 1400})
        page.screenshot(path=str(path), full_page=True)
