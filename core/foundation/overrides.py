"""Process-wide changes to training that no config field records (a test's deliberately broken
DP-SGD): while one is active, its name enters every cache key and stage key, so a run trained
under it is never served as, or from, a run trained without it.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

_active: list[str] = []
_lock = threading.Lock()


def active() -> tuple[str, ...]:
    """The names of the overrides in force, sorted (empty: training as the config says)."""
    with _lock:
        return tuple(sorted(_active))


@contextlib.contextmanager
def training_override(name: str) -> Iterator[None]:
    """Mark ``name`` as in force for the block's duration (nested and repeated names stack)."""
    with _lock:
        _active.append(name)
    try:
        yield
    finally:
        with _lock:
            _active.remove(name)
