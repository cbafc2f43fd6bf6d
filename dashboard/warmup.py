"""The dashboard server's warm start: the modules its pages import, then those a run imports,
imported in one background thread from the server's start, so the first page a user opens
pays only for its own imports, and those mostly done already (torch, pydantic's models, pandas
and pyarrow, plotly: seconds of CPU).

One daemon thread per process imports, one module at a time, from one queue:

1. **asked for**: the modules a page needs now (:func:`need`): ``app.py``'s own imports
   when a script run starts, then the imports of the page it is about to run and the modules
   that page's first draw imports inside functions (:func:`view_modules`). These jump the
   queue, and the page waits for them alone. The page never imports them beside the thread
   (two threads importing one circular group of modules can stop each other: Python's import
   locks then raise a deadlock error in one of them): it waits until the thread has.
2. **pages**: the rest of ``app.py``'s and every page script's top-level imports (read from
   their source, so a page's new import is warmed without a list to keep) and their lazy
   modules, the default page first. Only while no script run is drawing a page
   (:func:`drawing`): a background import holds the GIL and would slow the page by as much.
3. **runs**: what a run imports lazily (:data:`core.runs.pool.WARM_MODULES`: the engine, the
   runners, torch._dynamo, which the first optimiser pulls in, and Opacus), so a first Run
   does not pay them either. It starts once a page has been drawn or :data:`RUNS_AFTER_S`
   after the pages phase, whichever comes first, and also pauses while a page draws. A job
   that starts meanwhile imports what it needs itself.

``PRIVLAB_PREWARM=0`` turns it off (as it does the local pool's start); a page then imports
for itself. A module that fails to import here is skipped and kept in :func:`status`; the page
that needs it then raises the error itself, as it would without the warm start.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import importlib
import os
import threading
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

DASHBOARD = Path(__file__).resolve().parent
PREWARM_ENV = "PRIVLAB_PREWARM"
#: seconds a page waits for the modules it asked for before it imports for itself
PAGE_WAIT_S = 120.0
#: the page a server is most often opened on comes first (Home is the default page)
FIRST_VIEWS = ("home.py", "membership.py", "compare.py")
#: imported inside functions by every page's first draw: its figures (plotly's graph objects)
PAGE_LAZY = ("plotly.graph_objects", "plotly.subplots")
#: imported inside functions by the first draw of a page that imports the key. None today: the
#: architecture's cost (torch's FLOP counter, torch._dynamo) is drawn after the page
#: (dashboard.components.cost_later), which a page's first draw does not wait for
LAZY_BY_IMPORT: dict[str, tuple[str, ...]] = {}
#: seconds after the pages phase at which the runs phase starts if no page was drawn before
RUNS_AFTER_S = 10.0

_LOCK = threading.Lock()
_STATE: dict[str, Any] = {}
#: the thread's queue and what it has imported (or failed on), guarded by _COND
_COND = threading.Condition()
_ASKED: list[str] = []
_DONE: set[str] = set()
_DRAWING = [0]  # script runs drawing a page now
_PAGES_DONE = threading.Event()
_RUNS_DONE = threading.Event()  # set once the runs phase ended (the thread goes on serving asks)
_PAGE_DRAWN = threading.Event()


def enabled() -> bool:
    """False when ``$PRIVLAB_PREWARM`` is 0 / false / no / off."""
    return os.environ.get(PREWARM_ENV, "1").strip().lower() not in ("0", "false", "no", "off")


def script_imports(path: Path) -> list[str]:
    """Modules a script imports outside its functions and classes (``import a.b``,
    ``from a.b import c``: ``a.b``), in order, those in a ``with``, ``try`` or ``if`` block
    included; relative imports are left out. Read once per version of the file (every script
    run asks)."""
    return list(_imports_of(Path(path), Path(path).stat().st_mtime_ns))


@functools.lru_cache(maxsize=64)
def _imports_of(path: Path, mtime_ns: int) -> tuple[str, ...]:
    out: list[str] = []

    def visit(nodes: list[ast.stmt]) -> None:
        for node in nodes:
            if isinstance(node, ast.Import):
                out.extend(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                out.append(node.module)
            elif isinstance(node, ast.With | ast.Try | ast.If):
                for field in ("body", "handlers", "orelse", "finalbody"):
                    for child in getattr(node, field, []):
                        visit(child.body if isinstance(child, ast.ExceptHandler) else [child])

    visit(ast.parse(path.read_text(encoding="utf-8")).body)
    return tuple(m for m in dict.fromkeys(out) if m != "__future__")


def view_modules(view: str, root: Path = DASHBOARD) -> tuple[str, ...]:
    """What the page script ``views/<view>`` needs before it draws: its imports, then the
    modules its first draw imports inside functions (:data:`PAGE_LAZY`,
    :data:`LAZY_BY_IMPORT`)."""
    mods = script_imports(root / "views" / view)
    lazy = [m for key in mods for m in LAZY_BY_IMPORT.get(key, ())]
    return tuple(dict.fromkeys((*mods, *PAGE_LAZY, *lazy)))


def app_modules(root: Path = DASHBOARD) -> tuple[str, ...]:
    """``app.py``'s own imports (what every script run needs before its page)."""
    return tuple(script_imports(root / "app.py"))


def page_modules(root: Path = DASHBOARD) -> tuple[str, ...]:
    """The pages phase's modules: ``app.py``'s imports, then every view's
    (:func:`view_modules`, :data:`FIRST_VIEWS` first), each once."""
    first = [root / "views" / n for n in FIRST_VIEWS]
    views = [*first, *sorted(set((root / "views").glob("*.py")) - set(first))]
    mods = [*app_modules(root), *(m for p in views if p.exists()
                                  for m in view_modules(p.name, root))]
    return tuple(dict.fromkeys(mods))


def run_modules() -> tuple[str, ...]:
    """The runs phase's modules: what a pool worker imports before its first point."""
    from core.runs.pool import WARM_MODULES

    return WARM_MODULES


def _import(name: str) -> None:
    try:
        importlib.import_module(name)
    except Exception as exc:  # noqa: BLE001 - the page that needs it raises it itself
        _STATE.setdefault("failed", {})[name] = f"{type(exc).__name__}: {exc}"
    with _COND:
        _DONE.add(name)
        _COND.notify_all()


def _next(background: list[str]) -> str | None:
    """The next module to import: the first one asked for, else (while no page draws) the
    first of ``background`` not imported yet; None when ``background`` is used up."""
    with _COND:
        while True:
            while _ASKED:
                name = _ASKED.pop(0)
                if name not in _DONE:
                    return name
            while background and background[0] in _DONE:
                background.pop(0)
            if not background:
                return None
            if not _DRAWING[0]:
                return background.pop(0)
            _COND.wait()


def _import_all(names: Iterable[str], phase: str) -> None:
    """Import ``names`` in order (what pages ask for first), timing the phase."""
    t0 = time.perf_counter()
    background = list(names)
    while (name := _next(background)) is not None:
        _import(name)
    _STATE[f"{phase}_s"] = round(time.perf_counter() - t0, 3)


def _serve_asks(until: threading.Event, timeout: float | None) -> None:
    """Import what pages ask for until ``until`` is set or ``timeout`` seconds passed (None:
    for ever)."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while not until.is_set():
        with _COND:
            if not _ASKED:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return
                _COND.wait(left)
                continue
            name = _ASKED.pop(0)
        if name not in _DONE:
            _import(name)


def _warm() -> None:
    try:
        _import_all(page_modules(), "pages")
    finally:
        _PAGES_DONE.set()
    _serve_asks(_PAGE_DRAWN, RUNS_AFTER_S)
    _import_all(run_modules(), "runs")
    _STATE["done"] = True
    _RUNS_DONE.set()
    _serve_asks(threading.Event(), None)  # a module of no list a page asks for later


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


def need(modules: Iterable[str], timeout: float = PAGE_WAIT_S) -> bool:
    """Block until the warm start has imported ``modules`` (put first in its queue; at once
    when no warm start runs): the page then imports them from ``sys.modules``. False when
    ``timeout`` passed first or the thread has stopped (the page then imports what is left
    itself)."""
    thread = _STATE.get("thread")
    if thread is None:
        return True
    wanted = list(dict.fromkeys(modules))
    deadline = time.monotonic() + timeout
    with _COND:
        _ASKED[:0] = [m for m in wanted if m not in _DONE]
        _COND.notify_all()
        while not all(m in _DONE for m in wanted):
            left = deadline - time.monotonic()
            if left <= 0 or not thread.is_alive():  # a thread that died imports nothing more
                return False
            _COND.wait(min(left, 1.0))
    return True


def wait_pages(timeout: float = PAGE_WAIT_S) -> bool:
    """Block until the pages phase has ended (at once when no warm start runs); False when
    ``timeout`` passed first."""
    if _STATE.get("thread") is None:
        return True
    return _PAGES_DONE.wait(timeout)


@contextlib.contextmanager
def drawing() -> Iterator[None]:
    """A script run drawing a page: meanwhile the warm start imports only what a page asks
    for (:func:`need`); once it ends, the runs phase need not wait for a page any more."""
    with _COND:
        _DRAWING[0] += 1
    try:
        yield
    finally:
        with _COND:
            _DRAWING[0] -= 1
        page_drawn()


def wait_idle(timeout: float = PAGE_WAIT_S) -> bool:
    """Block until no script run is drawing a page (False when ``timeout`` passed first): work
    a page leaves to the background starts after its draw, not beside it."""
    deadline = time.monotonic() + timeout
    with _COND:
        while _DRAWING[0] > 0:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            _COND.wait(min(left, 1.0))
    return True


def page_drawn() -> None:
    """A page has been drawn: the runs phase may start."""
    with _COND:
        _PAGE_DRAWN.set()
        _COND.notify_all()


def wait_runs(timeout: float) -> bool:
    """Wait until the runs phase has ended (the thread itself never exits: it goes on
    importing what a page asks for); False after ``timeout`` seconds."""
    return _RUNS_DONE.wait(timeout)


def status() -> dict[str, Any]:
    """Seconds each phase took, whether the runs phase ended, the modules that failed."""
    return {k: v for k, v in _STATE.items() if k != "thread"}
