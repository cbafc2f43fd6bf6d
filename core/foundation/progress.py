"""Progress reporting and cooperative cancellation (DESIGN: Contracts / Progress).

``run(config, progress, cancel)`` takes a callback ``progress(fraction, message)`` with
fraction in [0, 1] and an optional :class:`CancelToken`. Long loops call
:meth:`Progress.update` and :meth:`CancelToken.raise_if_cancelled` between steps.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

ProgressCallback = Callable[[float, str], None]


class Cancelled(Exception):
    """Raised inside a run when its :class:`CancelToken` was cancelled; nothing is stored."""


class CancelToken:
    """A thread-safe flag a UI thread sets and a worker polls."""

    def __init__(self) -> None:
        self._event = threading.Event()

    def cancel(self) -> None:
        self._event.set()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def raise_if_cancelled(self) -> None:
        if self._event.is_set():
            raise Cancelled("run cancelled")


class Progress:
    """Maps sub-steps of a run onto ``[start, end]`` of the caller's progress bar.

    ``Progress(cb).sub(0.2, 0.8)`` gives a child whose ``update(0.5, msg)`` reports 0.5 to the
    parent callback. A ``None`` callback makes every call a no-op, and every ``update``
    also polls the cancel token so loops need only one call per step.
    """

    def __init__(
        self,
        callback: ProgressCallback | None = None,
        cancel: CancelToken | None = None,
        start: float = 0.0,
        end: float = 1.0,
    ) -> None:
        self._callback = callback
        self.cancel = cancel
        self._start = start
        self._end = end

    def update(self, fraction: float, message: str = "") -> None:
        if self.cancel is not None:
            self.cancel.raise_if_cancelled()
        if self._callback is None:
            return
        f = min(max(float(fraction), 0.0), 1.0)
        self._callback(self._start + f * (self._end - self._start), message)

    def sub(self, start: float, end: float) -> Progress:
        span = self._end - self._start
        return Progress(
            self._callback, self.cancel, self._start + start * span, self._start + end * span
        )

    def check_cancel(self) -> None:
        if self.cancel is not None:
            self.cancel.raise_if_cancelled()


def as_progress(progress: Progress | ProgressCallback | None, cancel: CancelToken | None) -> Progress:
    """Normalise what callers pass to ``run`` into a :class:`Progress`."""
    if isinstance(progress, Progress):
        if cancel is not None and progress.cancel is None:
            progress.cancel = cancel
        return progress
    return Progress(progress, cancel)
