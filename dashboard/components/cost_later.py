"""An architecture's cost line drawn after the page: counting its FLOPs
(:func:`core.models.forward_flops`, torch's FLOP counter, which imports torch._dynamo) and
timing its training step on this machine (:mod:`core.engine.calibration`) cost seconds the
first time, so a page whose cost is not yet at hand draws everything else at once, with a
line saying what is being counted where the cost goes, while one background thread does that
work; a fragment polls for it and reruns the page, whose cost line is then computed in place
(:func:`core.engine.costs.arch_cost`, the same line as ever: what was measured here says so).
"""

from __future__ import annotations

import atexit
import queue
import sys
import threading
from collections.abc import Callable
from typing import Any

import streamlit as st

#: seconds between the placeholder's checks for the background work
POLL_S = 0.5
#: what counting and timing import: the warm start imports them (two threads importing one
#: circular group of modules can stop each other), the job waits for it
COST_MODULES = ("torch", "torch._dynamo", "torch.utils.flop_counter", "core.models",
                "core.models.common", "core.models.nn", "core.engine.calibration",
                "core.engine.costs")

#: seconds the work waits for the pages being drawn to end before it starts beside them
IDLE_WAIT_S = 30.0

#: the server's warm start (dashboard.warmup, handed over by app.py: this module sits below
#: it): ``wait_idle(seconds)`` until no page draws, ``need(modules)`` imported by its thread
HOOKS: dict[str, Callable[..., Any]] = {}

Key = tuple[str, float, tuple[int, ...], int, bool]

_LOCK = threading.Lock()
_QUEUE: queue.Queue[Key] = queue.Queue()
_THREAD: list[threading.Thread] = []
#: seconds a process that exits waits for the cost work in flight
EXIT_WAIT_S = 30.0
_STARTED: set[Key] = set()
_DONE: set[Key] = set()


def _key(arch: str, width: float, shape: tuple[int, ...], classes: int, timed: bool) -> Key:
    return (str(arch), float(width), tuple(int(s) for s in shape), int(classes), bool(timed))


def ready(arch: str, width: float, shape: tuple[int, ...], classes: int, timed: bool) -> bool:
    """Whether the cost can be computed in the page at no more than a kept file's read:
    torch._dynamo imported and (``timed``: a training time is shown) this machine's step rate
    kept for every device it prices, or the background work for it done in this process."""
    key = _key(arch, width, shape, classes, timed)
    if key in _DONE:
        return True
    if "torch._dynamo" not in sys.modules:
        return False
    from core.engine.costs import timed_here

    if not timed or not timed_here(arch):
        return True
    from core.engine.calibration import cached_rate

    devices = ["cpu"] + (["cuda"] if sys.modules["torch"].cuda.is_available() else [])
    return all(cached_rate(arch, width, key[2], classes, d) is not None for d in devices)


def _warm(key: Key) -> None:
    """Once no page is drawing, import what the cost needs (through the warm start), count the
    network and time its step (kept on disk by :mod:`core.engine.calibration`, the counts by
    :func:`core.engine.costs.arch_cost`'s cache). A failure is left for the page: its own
    computation raises it as it would have."""
    try:
        if "wait_idle" in HOOKS:
            HOOKS["wait_idle"](IDLE_WAIT_S)
        from core.foundation.parts import architecture

        builder = architecture(key[0]).builder
        own = (builder.partition(":")[0],) if isinstance(builder, str) else ()
        if "need" in HOOKS:
            HOOKS["need"]((*COST_MODULES, *own))
        from core.engine.costs import arch_cost

        arch_cost(key[0], key[1], key[2], key[3], 1.0 if key[4] else None)
    except Exception:  # noqa: BLE001, S110 - the page computes it again and shows the error
        pass
    finally:
        with _LOCK:
            _DONE.add(key)


def start(arch: str, width: float, shape: tuple[int, ...], classes: int, timed: bool) -> None:
    """Start the background work for this cost (once per process and cost)."""
    key = _key(arch, width, shape, classes, timed)
    with _LOCK:
        if key in _STARTED:
            return
        _STARTED.add(key)
        _QUEUE.put(key)
        if not _THREAD:  # a daemon: a process that exits waits at most EXIT_WAIT_S for it
            _THREAD.append(threading.Thread(target=_serve, name="privlab-cost", daemon=True))
            _THREAD[0].start()
            # a daemon thread inside torch's C++ code when the interpreter finalises aborts
            # the process (std::terminate): let a timing in flight finish first
            atexit.register(settle, EXIT_WAIT_S)


def _serve() -> None:
    while True:
        _warm(_QUEUE.get())


def cost_or_placeholder(where: Any, compute: Callable[[], str], *, arch: str, width: float,
                        shape: tuple[int, ...], classes: int, timed: bool,
                        draw: Callable[[str], Any]) -> None:
    """``draw(compute())`` in ``where`` when the cost is at hand (:func:`ready`); else a
    caption saying what is being counted, the work started in the background, and a fragment
    that reruns the page once it is done."""
    if ready(arch, width, shape, classes, timed):
        with where:
            draw(compute())
        return
    from core.engine.calibration import cached_rate
    from core.engine.costs import timed_here
    from core.foundation.parts import architecture

    title = architecture(arch).title
    text = f"Counting the parameters and FLOPs of {title}"
    if timed and timed_here(arch) and cached_rate(arch, width, shape, classes) is None:
        text += (" and timing a few of its training steps on this machine (once per machine "
                 "and engine)")
    start(arch, width, shape, classes, timed)
    key = _key(arch, width, shape, classes, timed)

    @st.fragment(run_every=POLL_S)
    def _wait() -> None:
        if key in _DONE:
            st.rerun()
        st.caption(text + " ...")

    with where:
        _wait()


def settle(timeout: float = 300.0) -> bool:
    """Block until the background work started so far is done (False when ``timeout`` passed
    first): a test, or a caller that wants the page's next run to draw every cost line."""
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with _LOCK:
            if _STARTED <= _DONE:
                return True
        time.sleep(0.05)
    return False
