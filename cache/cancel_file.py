"""Cancellation across a process boundary as a file (pool and Ray workers; :mod:`core.runs.sweep`).

The sweep's process creates a temporary directory and, to cancel, touches ``cancel_path`` in
it; each worker watches that path and cancels its point's :class:`~core.foundation.progress.CancelToken`
when the file appears, so the point stops and stores nothing. The worker itself is
:func:`cache.store.run_point` (this module imports nothing from the store: one direction).
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator

from core.foundation.progress import Cancelled, CancelToken

#: how often a worker looks for the cancel file
POLL_S = 0.2


@contextlib.contextmanager
def cancel_token_for(cancel_path: str | None) -> Iterator[CancelToken]:
    """A CancelToken set when ``cancel_path`` appears (watched while the block runs);
    :class:`~core.foundation.progress.Cancelled` at once if it exists already. ``None``: never set."""
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
        yield token
    finally:
        stop.set()
