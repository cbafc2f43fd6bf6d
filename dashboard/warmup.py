"""The dashboard server's warm start: the modules its pages import, then those a run imports,
imported once in a background thread when the server starts, so the first page a user opens
does not pay them (torch, pydantic's models, pandas and pyarrow, plotly: seconds of CPU).

Two phases, in one daemon thread per process:

1. **pages**: the top-level imports of ``dashboard/app.py`` and of every page script in
   ``dashboard/views/`` (read from their source, so a page's new import is warmed without a
   list to keep), and :data:`PAGE_LAZY`, the heavy modules a page's first draw imports
   inside functions. ``app.py`` waits for this phase (:func:`wait_pages`) before it imports
   anything itself: the page and the thread never import the same modules at once (two
   threads importing one circular group of modules can stop each other: Python's import locks
   then raise a deadlock error in one of them).
2. **runs**: what a run imports lazily (:data:`core.runs.pool.WARM_MODULES`: the engine, the
   runners, torch._dynamo, which the first optimiser pulls in, and Opacus), so a first Run
   does not pay them either. It starts once a page has been drawn (:func:`page_drawn`) or
   :data:`RUNS_AFTER_S` after the pages phase, whichever comes first: a page opened while
   the server starts is not drawn beside these imports (they hold the GIL). A job that starts
   meanwhile imports what it needs itself.

``PRIVLAB_PREWARM=0`` turns it off (as it does the local pool's start). A module that fails
to import here is skipped and kept in :func:`status`; the page that needs it then raises the
error itself, as it would without the warm start.
"""

from __future__ import annotations

import ast
import importlib
import os
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

DASHBOARD = Path(__file__).resolve().parent
PREWARM_ENV = "PRIVLAB_PREWARM"
#: seconds a page waits for the pages phase before it imports for itself
PAGE_WAIT_S = 120.0
#: the page a server is most often opened on comes first (Home is the default page)
FIRST_VIEWS = ("home.py", "membership.py", "compare.py")
#: imported inside functions by a page's first draw: its figures (plotly's graph objects), and
#: torch._dynamo, which building a model on the meta device for a cost estimate pulls in
#: (torch._refs; Membership's LiRA panel): about 1.2 s of CPU of Membership's first draw
PAGE_LAZY = ("plotly.graph_objects", "plotly.subplots", "torch._dynamo")
#: seconds after the pages phase at which the runs phase starts if no page was drawn before
RUNS_AFTER_S = 10.0

_LOCK = threading.Lock()
_STATE: dict[str, Any] = {}
_PAGES_DONE = threading.Event()
_PAGE_DRAWN = threading.Event()


def enabled() -> bool:
    """False when ``$PRIVLAB_PREWARM`` is 0 / false / no / off."""
    return os.environ.get(PREWARM_ENV, "1").strip().lower() not in ("0", "false", "no", "off")


def script_imports(path: Path) -> list[str]:
    """Modules a script imports at its top level (``import a.b``, ``from a.b import c``:
    ``a.b``), in order; relative imports are left out."""
    out: list[str] = []
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Import):
            out.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            out.append(node.module)
    return out


def page_modules(root: Path = DASHBOARD) -> tuple[str, ...]:
    """The pages phase's modules: ``app.py``'s imports, then every view's, then
    :data:`PAGE_LAZY`, each once."""
    first = [root / "views" / n for n in FIRST_VIEWS]
    views = [*first, *sorted(set((root / "views").glob("*.py")) - set(first))]
    mods = [m for p in (root / "app.py", *views) if p.exists() for m in script_imports(p)]
    return tuple(dict.fromkeys(m for m in (*mods, *PAGE_LAZY) if m != "__future__"))


def run_modules() -> tuple[str, ...]:
    """The runs phase's modules: what a pool worker imports before its first point."""
    from core.runs.pool import WARM_MODULES

    return WARM_MODULES


def _import_all(names: Iterable[str], phase: str) -> None:
    t0 = time.perf_counter()
    for name in names:
        try:
            importlib.import_module(name)
        except Exception as exc:  # noqa: BLE001 - the page that needs it raises it itself
            _STATE.setdefault("failed", {})[name] = f"{type(exc).__name__}: {exc}"
    _STATE[f"{phase}_s"] = round(time.perf_counter() - t0, 3)


def _warm() -> None:
    try:
        _import_all(page_modules(), "pages")
    finally:
        _PAGES_DONE.set()
    _PAGE_DRAWN.wait(RUNS_AFTER_S)
    _import_all(run_modules(), "runs")
    _STATE["done"] = True


def start() -> threading.Thread | None:
    """Start the warm start, once per process (None when :func:`enabled` is False)."""
    if not enabled():
        return None
    with _LOCK:
        t = _STATE.get("thread")
        if t is None:
            t = _STATE["thread"] = threading.Thread(target=_warm, name="privlab-warm-imports",
                                                    daemon=True)
            t.start()
        return t


def wait_pages(timeout: float = PAGE_WAIT_S) -> bool:
    """Block until the pages phase has ended (at once when no warm start runs); False when
    ``timeout`` passed first."""
    if _STATE.get("thread") is None:
        return True
    return _PAGES_DONE.wait(timeout)


def page_drawn() -> None:
    """A script run has ended (app.py says so after each page): the runs phase may start."""
    _PAGE_DRAWN.set()


def status() -> dict[str, Any]:
    """Seconds each phase took, whether the runs phase ended, the modules that failed."""
    return {k: v for k, v in _STATE.items() if k != "thread"}
