"""The thread budget of a run: the one place that sets BLAS / OpenMP / torch thread counts.

:func:`core.runs.experiments.run` wraps every runner in :func:`thread_limits`; engine code below it
(FedAvg, TAPPFL, attacks, projections) sets no thread counts of its own. The only other user is
the Flower client (:mod:`core.fl.flower`), which runs in a Ray worker process outside
``run``.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

ENV_THREADS = "PRIVLAB_THREADS"

_LOCK = threading.Lock()
#: the blocks now inside thread_limits (a token and its n each), oldest first
_ACTIVE: list[tuple[object, int]] = []
#: while any block is active: torch's thread count and threadpoolctl's originals from before
_SAVED: dict[str, Any] = {}


def compute_threads() -> int:
    """Threads for BLAS / OpenMP / torch inside a run: ``$PRIVLAB_THREADS``, default 1.

    Our problems are small (MLPs, logistic fits on ≤ 25k rows, t-SNE on ≤ 5k points): measured
    on the 2-core machines, one thread was 3–15× faster than two whenever anything else ran
    (spin-waiting OpenMP/OpenBLAS workers), and never much slower when idle.
    """
    try:
        return max(1, int(os.environ.get(ENV_THREADS, "1")))
    except ValueError:
        return 1


def _set(n: int) -> None:
    import torch
    from threadpoolctl import threadpool_limits

    limits = threadpool_limits(limits=n)  # applies now; records the limits it replaced
    _SAVED.setdefault("pools", limits)  # the first one holds the limits from before any block
    torch.set_num_threads(n)  # after: it also sets torch's own OpenMP pool


@contextmanager
def thread_limits(n: int | None = None) -> Iterator[int]:
    """Limit BLAS/OpenMP (threadpoolctl) and torch intra-op threads to ``n`` (None: the budget,
    :func:`compute_threads`) for the block; yields ``n``.

    These settings are process-wide, and the dashboard runs jobs in concurrent threads, so the
    blocks are counted: the first one to enter saves the previous settings and the last one to
    leave restores them; in between the most recently entered active block's ``n`` applies.
    (With one budget for every run, as :func:`core.runs.experiments.run` uses, that is simply ``n``.)
    OpenMP's setting is per OS thread: a block sets it in the thread that enters it.
    The torch setting also applies when the run computes on CUDA, where it is harmless.
    """
    import torch

    n = compute_threads() if n is None else max(1, int(n))
    token = object()
    with _LOCK:
        if not _ACTIVE:
            _SAVED["torch"] = torch.get_num_threads()
        _ACTIVE.append((token, n))
        _set(n)
    try:
        yield n
    finally:
        with _LOCK:
            was_last = _ACTIVE[-1][0] is token
            _ACTIVE[:] = [a for a in _ACTIVE if a[0] is not token]
            if not _ACTIVE:
                _SAVED.pop("pools").restore_original_limits()
                torch.set_num_threads(_SAVED.pop("torch"))
            elif was_last:
                _set(_ACTIVE[-1][1])
