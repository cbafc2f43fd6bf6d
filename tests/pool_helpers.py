"""Functions pool workers import by name in tests/test_pool.py (not a test module)."""

from __future__ import annotations

import os
import time

if os.environ.get("PRIVLAB_TEST_BLOCK_IMPORT"):  # a worker whose start never ends
    time.sleep(600)


def add(a: int, b: int) -> int:
    return a + b


def never_answers(*args: object) -> dict:
    """A point worker stuck for good (alive, never returning)."""
    time.sleep(600)
    return {}
