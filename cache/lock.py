"""Inter-process lock per cache key: ``fcntl.flock`` on ``root/locks/<key>.lock``.

flock locks belong to an open file description, so two processes (or two threads that each
open the file) exclude each other. Lock files are never deleted: unlinking a lock file while
another process waits on it would let two holders in at once.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from core.foundation.progress import CancelToken


@contextmanager
def key_lock(
    path: Path,
    *,
    blocking: bool = True,
    cancel: CancelToken | None = None,
    poll_s: float = 0.05,
) -> Iterator[bool]:
    """Hold an exclusive flock on ``path`` for the ``with`` body; yields whether it was taken.

    ``blocking=False`` yields ``False`` at once if another holder has it. With a ``cancel``
    token the wait polls, so a cancelled caller stops waiting (raises ``Cancelled``). A lock
    file that cannot be opened (read-only mount) raises :class:`cache.errors.StoreIOError`.
    """
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:  # a read-only mount, a full disk (a new lock file), permissions
        from cache.errors import io_error

        raise io_error(exc, "take the lock", path) from None
    locked = False
    try:
        if blocking and cancel is None:
            fcntl.flock(fd, fcntl.LOCK_EX)
            locked = True
        else:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    locked = True
                    break
                except BlockingIOError:
                    if not blocking:
                        break
                    cancel.raise_if_cancelled()  # type: ignore[union-attr]
                    time.sleep(poll_s)
        yield locked
    finally:
        if locked:
            fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
