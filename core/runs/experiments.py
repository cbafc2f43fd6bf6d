"""The single experiment entry point: ``run(config, progress=None, cancel=None) -> Result``.

Runners are registered by ``kind`` (:data:`RUNNERS`, a :class:`core.foundation.registry.Registry` of
``"module:function"`` paths) and imported lazily (so importing the engine stays cheap and the
dashboard starts fast). Each runner lives in ``core/runs/<kind>.py`` and has the signature
``runner(config, progress: Progress, stages: Stages) -> Result``; ``stages`` is the stage
cache (:mod:`core.foundation.stages`), which the result store hands in. The ``sweep`` runner also takes
``points``, the store its points go through (:class:`core.config.sweeps.PointStore`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from core.config.schema import cache_key, parse_config
from core.config.sweeps import PointStore
from core.foundation.finite import check_metrics
from core.foundation.progress import CancelToken, Progress, ProgressCallback, as_progress
from core.foundation.registry import Registry, load_object
from core.foundation.result import Result
from core.foundation.stages import Stages, StageStore
from core.foundation.threads import compute_threads, thread_limits

__all__ = ["RUNNERS", "Runner", "compute_threads", "get_runner", "run", "thread_limits"]

Runner = Callable[[Any, Progress], Result]

RUNNERS: Registry[str] = Registry("kind")
RUNNERS.register("projection", "core.runs.projection:run_projection")
RUNNERS.register("attribute_privacy", "core.runs.attribute_privacy:run_attribute_privacy")
RUNNERS.register("gradient_leakage", "core.runs.gradient_leakage:run_gradient_leakage")
RUNNERS.register("membership", "core.runs.membership:run_membership")
RUNNERS.register("fisher_information", "core.runs.fisher_information:run_fisher_information")
RUNNERS.register("property", "core.runs.property:run_property")
RUNNERS.register("repr_reconstruction", "core.runs.repr_reconstruction:run_repr_reconstruction")
RUNNERS.register("sweep", "core.runs.sweep:run_sweep")
#: kinds whose runner takes ``points`` (the store each point goes through)
TAKES_POINTS = frozenset({"sweep"})


def get_runner(kind: str) -> Runner:
    if kind not in RUNNERS:
        raise ValueError(RUNNERS.unknown(kind))
    return load_object(RUNNERS.get(kind))


def run(
    config: Any,
    progress: Progress | ProgressCallback | None = None,
    cancel: CancelToken | None = None,
    *,
    stages: StageStore | None = None,
    points: PointStore | None = None,
) -> Result:
    """Run ``config``'s kind's runner: a config model as it is (validated once, where it was
    made; :func:`core.config.schema.parse_config` hands it back), a mapping validated (and migrated)
    first. Nothing global is
    seeded: every draw comes from a local generator of the run's seed (:mod:`core.foundation.seeds`), so
    runs in threads of one process do not disturb each other.

    ``stages``: where trained models, releases and attack outputs are cached between runs
    (``cache.store.ResultStore.stages`` on disk, :class:`core.foundation.stages.MemoryStageStore` in a
    notebook; None = no stage cache). ``points``: the result store a sweep's points go through
    (``cache.store.ResultStore`` hands itself in; None = points kept in memory, serial only).
    Raises :class:`core.config.schema.ConfigError` on bad input, :class:`core.foundation.finite.NonFiniteMetric`
    when a metric is NaN or infinite where a number belongs (:mod:`core.foundation.finite`), and
    :class:`core.foundation.progress.Cancelled` when ``cancel`` is set mid-run; a run that raises returns
    nothing and stores nothing.
    """
    notes: list[str] = []
    cfg = parse_config(config, notes)
    prog = as_progress(progress, cancel)
    t0 = time.perf_counter()
    prog.update(0.0, f"starting {cfg.kind}")
    view = Stages(stages)
    with thread_limits():  # the run's one thread budget (core.foundation.threads); nothing below sets threads
        extra = {"points": points} if cfg.kind in TAKES_POINTS else {}
        result = get_runner(cfg.kind)(cfg, prog, view, **extra)
    check_metrics(cfg.kind, result.metrics)  # NaN / inf where a number belongs: nothing stored
    if view.notes:  # cached stages that failed their checksums and were recomputed
        listed = result.info.get("notes")
        result.info["notes"] = [*(listed if isinstance(listed, list) else []), *view.notes]
    if notes:
        result.info.setdefault("config_migrated", notes)
    result.timings.setdefault("total_s", time.perf_counter() - t0)
    result.key = cache_key(cfg)
    result.config = cfg.model_dump(mode="json")
    result.seed = cfg.seed
    prog.update(1.0, "done")
    return result
