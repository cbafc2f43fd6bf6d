"""One sweep point in a worker process (local pool or Ray; :mod:`core.runs.sweep`).

The worker opens the result store at the sweep's root itself and runs the point through
:meth:`cache.store.ResultStore.get_or_run`, so the point is stored (or found) under its own
key exactly as a serial sweep or a plain run would store it, and returns only a small summary
(:func:`core.sweeps.summarise`). Cancellation crosses the process boundary as a file: when
``cancel_path`` exists the point's CancelToken is set and the point stores nothing.
"""

from __future__ import annotations

import os
import threading
from typing import Any

#: how often a worker looks for the cancel file
POLL_S = 0.2


def run_point(root: str, config: dict[str, Any], cancel_path: str | None = None) -> dict[str, Any]:
    """Get or run ``config`` in the store at ``root``; returns the point's summary."""
    from cache.store import default_store
    from core.progress import Cancelled, CancelToken
    from core.sweeps import summarise

    if cancel_path and os.path.exists(cancel_path):
        raise Cancelled("sweep cancelled before this point started")
    token, stop = CancelToken(), threading.Event()

    def watch() -> None:
        while not stop.wait(POLL_S):
            if os.path.exists(cancel_path):
                token.cancel()
                return

    if cancel_path:
        threading.Thread(target=watch, name="privlab-sweep-cancel", daemon=True).start()
    try:
        result = default_store(root).get_or_run(config, cancel=token)
    finally:
        stop.set()
    return summarise(result)
