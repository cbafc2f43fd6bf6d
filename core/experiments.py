"""The single experiment entry point: ``run(config, progress=None, cancel=None) -> Result``.

Runners are registered by ``kind`` and imported lazily (so importing the engine stays cheap
and the dashboard starts fast). Each runner lives in ``core/runs/<kind>.py`` and has the
signature ``runner(config, progress: Progress) -> Result``.
"""

from __future__ import annotations

import importlib
import os
import time
from collections.abc import Callable
from contextlib import contextmanager
from typing import Any

from core.config import cache_key, parse_config
from core.device import seed_everything
from core.progress import CancelToken, Progress, ProgressCallback, as_progress
from core.result import Result

Runner = Callable[[Any, Progress], Result]

RUNNERS: dict[str, str] = {
    "projection": "core.runs.projection:run_projection",
    "tappfl": "core.runs.tappfl:run_tappfl",
}


def get_runner(kind: str) -> Runner:
    if kind not in RUNNERS:
        raise ValueError(f"kind: got {kind!r}; allowed: {', '.join(RUNNERS)}")
    module, func = RUNNERS[kind].split(":")
    return getattr(importlib.import_module(module), func)


def compute_threads() -> int:
    """Threads for BLAS / OpenMP / torch inside a run: ``$PRIVLAB_THREADS``, default 1.

    Our problems are small (MLPs, logistic fits on ≤ 25k rows, t-SNE on ≤ 5k points): measured
    on the 2-core machines, one thread was 3–15× faster than two whenever anything else ran
    (spin-waiting OpenMP/OpenBLAS workers), and never much slower when idle.
    """
    try:
        return max(1, int(os.environ.get("PRIVLAB_THREADS", "1")))
    except ValueError:
        return 1


@contextmanager
def thread_limits(n: int | None = None):
    """Limit BLAS/OpenMP (threadpoolctl) and torch intra-op threads to ``n``, restoring after."""
    from threadpoolctl import threadpool_limits

    n = compute_threads() if n is None else n
    torch = None
    try:
        import torch
        before = torch.get_num_threads()
        torch.set_num_threads(n)
    except ImportError:  # pragma: no cover - torch is a dependency
        pass
    try:
        with threadpool_limits(limits=n):
            yield
    finally:
        if torch is not None:
            torch.set_num_threads(before)


def run(
    config: Any,
    progress: Progress | ProgressCallback | None = None,
    cancel: CancelToken | None = None,
) -> Result:
    """Validate ``config`` (a model or a mapping), seed everything, run its kind's runner.

    Raises :class:`core.config.ConfigError` on bad input and :class:`core.progress.Cancelled`
    when ``cancel`` is set mid-run; a cancelled run returns nothing and stores nothing.
    """
    cfg = parse_config(config)
    prog = as_progress(progress, cancel)
    seed_everything(cfg.seed)
    t0 = time.perf_counter()
    prog.update(0.0, f"starting {cfg.kind}")
    with thread_limits():
        result = get_runner(cfg.kind)(cfg, prog)
    result.timings.setdefault("total_s", time.perf_counter() - t0)
    result.key = cache_key(cfg)
    result.config = cfg.model_dump(mode="json")
    result.seed = cfg.seed
    prog.update(1.0, "done")
    return result
